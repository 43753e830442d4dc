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
    fail: fail,
    data: data
  };
})();
