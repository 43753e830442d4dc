/* rr report site: shared helpers. Data files are scripts calling RR.load(kind, key, payload)
   (file:// pages cannot fetch() local files), added as <script> tags by RR.require. */
"use strict";
var RR = (function () {
  var data = {};
  var pending = {};

  function load(kind, key, payload) {
    data[kind + ":" + key] = payload;
  }

  /* Load a data script once; resolves with its payload. */
  function require(src, kind, key) {
    var id = kind + ":" + key;
    if (Object.prototype.hasOwnProperty.call(data, id)) return Promise.resolve(data[id]);
    if (pending[id]) return pending[id];
    pending[id] = new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src;
      s.async = true;
      s.onload = function () {
        if (Object.prototype.hasOwnProperty.call(data, id)) resolve(data[id]);
        else reject(new Error(src + " did not call RR.load(" + id + ")"));
      };
      s.onerror = function () {
        reject(new Error("could not load " + src));
      };
      document.head.appendChild(s);
    });
    return pending[id];
  }

  function pad(n, width) {
    var s = String(n);
    while (s.length < width) s = "0" + s;
    return s;
  }

  function esc(s) {
    return String(s === null || s === undefined ? "" : s)
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;");
  }

  function fmt(v, digits) {
    if (v === null || v === undefined || v === "") return "";
    if (typeof v === "number") {
      if (Number.isInteger(v)) return String(v);
      return v.toFixed(digits === undefined ? 3 : digits);
    }
    return String(v);
  }

  /* "1 system", "3 systems". */
  function count(n, noun) {
    return n + " " + noun + (n === 1 ? "" : "s");
  }

  /* Score characters (rr/reporting/site/): '0', '1', 'a'+round(20*s), '-' missing. */
  function score(ch) {
    if (ch === "0") return 0;
    if (ch === "1") return 1;
    if (ch === "-" || ch === undefined) return null;
    return (ch.charCodeAt(0) - 97) / 20;
  }

  var FLIP_CHARS = "0123456789abcdefghijklmnopqrstuv";
  function flipMask(ch) {
    return FLIP_CHARS.indexOf(ch);
  }

  function cellLabel(cell) {
    if (cell[0] === 0) return "closed-book (k = 0)";
    return cell[1] + ", k = " + cell[0] + ", " + cell[2];
  }

  function scoreClass(v) {
    if (v === null || v === undefined) return "s-missing";
    if (v >= 1) return "s-right";
    if (v <= 0) return "s-wrong";
    return "s-part";
  }

  function hashParams() {
    var out = {};
    var h = location.hash.replace(/^#/, "");
    if (!h) return out;
    h.split("&").forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf("=");
      var k = decodeURIComponent(i < 0 ? kv : kv.slice(0, i));
      out[k] = i < 0 ? "" : decodeURIComponent(kv.slice(i + 1));
    });
    return out;
  }

  function setHash(params) {
    var parts = [];
    Object.keys(params).forEach(function (k) {
      var v = params[k];
      if (v === "" || v === null || v === undefined || v === false) return;
      parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(v));
    });
    var h = parts.join("&");
    if (location.hash.replace(/^#/, "") !== h) history.replaceState(null, "", h ? "#" + h : location.pathname);
  }

  /* Gold answers highlighted in text: case-insensitive, longest first, escaped. One regular
     expression over the text (linear in its length, whatever the number of matches); its
     case-insensitive matching ("iu") keeps the indexes of the text itself, so a character whose
     lower case is longer (Turkish İ) shifts nothing. An answer shorter than SHORT characters is
     marked as a whole word only ("an" not in "banana"). */
  var SHORT = 4;
  function highlight(text, answers) {
    var t = String(text);
    var sorted = (answers || []).filter(function (a) { return a && String(a).trim(); })
      .map(String).sort(function (a, b) { return b.length - a.length; });
    if (!sorted.length) return esc(t);
    var alts = sorted.map(function (a) {
      var lit = a.replace(/[\\^$.*+?()[\]{}|\/]/g, "\\$&");
      return a.length < SHORT ? "(?<![\\p{L}\\p{N}_])" + lit + "(?![\\p{L}\\p{N}_])" : lit;
    });
    var re = new RegExp(alts.join("|"), "giu");
    var out = "", at = 0, m;
    while ((m = re.exec(t)) !== null) {
      if (!m[0].length) { re.lastIndex++; continue; }
      out += esc(t.slice(at, m.index)) + '<mark class="gold">' + esc(m[0]) + "</mark>";
      at = m.index + m[0].length;
    }
    return out + esc(t.slice(at));
  }

  /* Index of the shard holding item n, from each shard's first item (sorted). */
  function shardOf(firsts, n) {
    var lo = 0, hi = firsts.length - 1;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (firsts[mid] <= n) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  /* Order of two values of a column, dir 1 ascending or -1 descending: missing values (null, "",
     "–") last either way, numbers (and numeric strings) by value before text, text
     numeric-aware ("k 5" before "k 10") and case-insensitive. */
  var NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i;
  function sortValue(v) {
    if (v === null || v === undefined) return null;
    if (typeof v === "number") return isNaN(v) ? null : v;
    var t = String(v).trim();
    if (t === "" || t === "–" || t === "-") return null;
    return NUMBER.test(t) ? parseFloat(t) : t;
  }
  var collator = typeof Intl !== "undefined" ? new Intl.Collator(undefined, { numeric: true, sensitivity: "base" }) : null;
  function compare(a, b, dir) {
    var x = sortValue(a), y = sortValue(b);
    if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
    var nx = typeof x === "number", ny = typeof y === "number";
    var c = nx && ny ? x - y : nx ? -1 : ny ? 1 : collator ? collator.compare(x, y) : x < y ? -1 : x > y ? 1 : 0;
    return (dir < 0 ? -c : c);
  }

  /* Make a table's columns sortable: each header a button (keyboard: Tab, Enter/Space) that sorts
     its body rows by that column, ascending, then descending on a second press; aria-sort says
     which. A cell sorts by its data-v when it has one, else by its text. */
  function sortable(table) {
    var head = table.tHead && table.tHead.rows[0];
    var body = table.tBodies[0];
    if (!head || !body || table.getAttribute("data-sortable")) return;
    table.setAttribute("data-sortable", "1");
    Array.prototype.forEach.call(head.cells, function (th, col) {
      var btn = document.createElement("button");
      btn.type = "button";
      btn.className = "sort";
      while (th.firstChild) btn.appendChild(th.firstChild);
      var mark = document.createElement("span");
      mark.className = "sort-mark";
      mark.setAttribute("aria-hidden", "true");
      btn.appendChild(mark);
      th.appendChild(btn);
      th.setAttribute("aria-sort", "none");
      btn.addEventListener("click", function () {
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        Array.prototype.forEach.call(head.cells, function (o) { o.setAttribute("aria-sort", "none"); });
        th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows).map(function (tr, i) {
          var td = tr.cells[col];
          var v = !td ? null : td.hasAttribute("data-v") ? td.getAttribute("data-v") : td.textContent;
          return [v, i, tr];
        });
        rows.sort(function (x, y) { return compare(x[0], y[0], dir) || x[1] - y[1]; });
        rows.forEach(function (x) { body.appendChild(x[2]); });
      });
    });
  }

  function fail(err) {
    var main = document.getElementById("main");
    var p = document.createElement("p");
    p.className = "error";
    p.setAttribute("role", "alert");
    p.textContent = "Could not show this page: " + (err && err.message ? err.message : err);
    if (main) main.insertBefore(p, main.firstChild);
    throw err;
  }

  return {
    load: load,
    require: require,
    pad: pad,
    esc: esc,
    fmt: fmt,
    count: count,
    score: score,
    flipMask: flipMask,
    cellLabel: cellLabel,
    scoreClass: scoreClass,
    hashParams: hashParams,
    setHash: setHash,
    highlight: highlight,
    shardOf: shardOf,
    compare: compare,
    sortable: sortable,
    fail: fail,
    data: data
  };
})();
