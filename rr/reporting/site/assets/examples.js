/* Examples list: one row per (example, system), paged, with filters. Flips come precomputed
   (rr/metrics/flips.py via rr/reporting/site/): one character per cell, a bit per flip kind. */
"use strict";
(function () {
  var esc = RR.esc;
  var PAGE = 50;
  var idx = null;
  var rows = [];        // {ex, sys, sc, fl, acc, cb}
  var ex = { id: [], ds: [], q: [], a: [] };
  var loaded = 0;
  var page = 0;
  var matches = [];
  var FILTERS = ["f-dataset", "f-system", "f-retriever", "f-k", "f-order", "f-cb", "f-search",
    "f-pair", "f-pair-dir"];

  function options(id, label, values, fmt) {
    var h = '<label for="' + id + '">' + label + '</label><select id="' + id + '"><option value="">any</option>';
    values.forEach(function (v) { h += '<option value="' + esc(v[0]) + '">' + esc(fmt ? fmt(v) : v[1]) + "</option>"; });
    return h + "</select>";
  }

  function uniq(list) {
    var seen = {}, out = [];
    list.forEach(function (v) { var k = String(v); if (!seen[k]) { seen[k] = 1; out.push(v); } });
    return out;
  }

  function form() {
    var cells = idx.cells;
    var retr = uniq(cells.filter(function (c) { return c[0] > 0; }).map(function (c) { return c[1]; })).sort();
    var ks = uniq(cells.map(function (c) { return c[0]; })).sort(function (a, b) { return a - b; });
    var orders = uniq(cells.filter(function (c) { return c[0] > 0; }).map(function (c) { return c[2]; })).sort();
    var h = '<form id="filters" class="filters" role="search" onsubmit="return false">';
    h += '<fieldset><legend>Rows</legend>';
    h += '<span class="f">' + options("f-dataset", "dataset", idx.datasets.map(function (d) { return [d, d]; })) + "</span>";
    h += '<span class="f">' + options("f-system", "system", idx.systems.map(function (s, i) { return [i, s.label]; })) + "</span>";
    h += '<span class="f"><label for="f-search">question contains</label><input id="f-search" type="search" placeholder="words…" autocomplete="off"></span>';
    h += '<span class="f"><label for="f-cb">closed-book</label><select id="f-cb"><option value="">any</option><option value="right">right</option><option value="wrong">wrong</option></select></span>';
    h += "</fieldset>";
    h += '<fieldset><legend>Cells <span class="muted">(accuracy and flips over these)</span></legend>';
    h += '<span class="f">' + options("f-retriever", "retriever", retr.map(function (r) { return [r, r]; })) + "</span>";
    h += '<span class="f">' + options("f-k", "k", ks.map(function (k) { return [k, k === 0 ? "0 (closed-book)" : String(k)]; })) + "</span>";
    h += '<span class="f">' + options("f-order", "order", orders.map(function (o) { return [o, o]; })) + "</span>";
    h += "</fieldset>";
    h += '<fieldset><legend>Flips <span class="muted">(as the metrics count them; all checked must hold)</span></legend>';
    Object.keys(idx.flips).forEach(function (k) {
      var f = idx.flips[k];
      FILTERS.push("f-flip-" + k);
      h += '<span class="f check"><input type="checkbox" id="f-flip-' + k + '" value="' + k + '"' + (f.rows ? "" : " disabled") +
        '><label for="f-flip-' + k + '" title="' + esc(f.means) + '">' + esc(f.label) + ' <span class="muted">' + esc(f.metric) +
        ", " + f.rows + "</span></label></span>";
    });
    h += '<span class="f">' + options("f-pair", "McNemar pair", idx.pairs.map(function (p, i) {
      return [i, p.label + " (" + p.differs_in + (idx.datasets.length > 1 ? ", " + p.dataset : "") + ")"];
    })) + "</span>";
    h += '<span class="f"><label for="f-pair-dir">discordant</label><select id="f-pair-dir"><option value="">either way</option>' +
      '<option value="a">first right, second wrong</option><option value="b">first wrong, second right</option></select></span>';
    h += "</fieldset>";
    h += '<p class="f"><button type="button" id="f-reset">Clear filters</button></p></form>';
    return h;
  }

  function state() {
    var s = {};
    FILTERS.forEach(function (id) {
      var el = document.getElementById(id);
      if (!el) return;
      s[id] = el.type === "checkbox" ? el.checked : el.value;
    });
    return s;
  }

  var HASH = { "f-dataset": "ds", "f-system": "sys", "f-retriever": "r", "f-k": "k", "f-order": "o", "f-cb": "cb",
    "f-search": "q", "f-pair": "pair", "f-pair-dir": "dir" };

  function toHash(s) {
    var p = {};
    Object.keys(HASH).forEach(function (id) { if (s[id]) p[HASH[id]] = s[id]; });
    var flips = Object.keys(idx.flips).filter(function (k) { return s["f-flip-" + k]; });
    if (flips.length) p.flip = flips.join(",");
    if (page) p.page = page + 1;
    RR.setHash(p);
  }

  function fromHash() {
    var p = RR.hashParams();
    Object.keys(HASH).forEach(function (id) {
      var el = document.getElementById(id);
      if (el && p[HASH[id]] !== undefined) el.value = p[HASH[id]];
    });
    (p.flip ? p.flip.split(",") : []).forEach(function (k) {
      var el = document.getElementById("f-flip-" + k);
      if (el) el.checked = true;
    });
    page = p.page ? Math.max(0, parseInt(p.page, 10) - 1) : 0;
  }

  /* Per system: which of its cells the cell filters select (null: all). */
  function cellMasks(s) {
    var any = s["f-retriever"] === "" && s["f-k"] === "" && s["f-order"] === "";
    if (any) return null;
    return idx.systems.map(function (sys) {
      return sys.cells.map(function (c) {
        var cell = idx.cells[c];
        if (s["f-k"] !== "" && String(cell[0]) !== s["f-k"]) return false;
        if (s["f-retriever"] !== "" && cell[1] !== s["f-retriever"]) return false;
        if (s["f-order"] !== "" && cell[2] !== s["f-order"]) return false;
        return true;
      });
    });
  }

  function filter() {
    var s = state();
    var masks = cellMasks(s);
    var bits = 0;
    Object.keys(idx.flips).forEach(function (k) { if (s["f-flip-" + k]) bits |= idx.flip_bits[k]; });
    var words = s["f-search"].toLowerCase().split(/\s+/).filter(Boolean);
    var pair = s["f-pair"] === "" ? null : idx.pairs[+s["f-pair"]];
    var pairEx = null;
    if (pair) {
      pairEx = {};
      pair.ex.forEach(function (e, i) { pairEx[e] = [pair.a_right[i], pair.b_right[i]]; });
    }
    var sysSel = s["f-system"] === "" ? -1 : +s["f-system"];
    var out = [];
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      if (sysSel >= 0 && r.sys !== sysSel) continue;
      if (s["f-dataset"] && ex.ds[r.ex] !== s["f-dataset"]) continue;
      if (s["f-cb"]) {
        if (r.cb === null) continue;
        if (s["f-cb"] === "right" && !(r.cb >= 1)) continue;
        if (s["f-cb"] === "wrong" && !(r.cb <= 0)) continue;
      }
      if (words.length) {
        var q = ex.q[r.ex].toLowerCase();
        var ok = true;
        for (var w = 0; w < words.length; w++) if (q.indexOf(words[w]) < 0) { ok = false; break; }
        if (!ok) continue;
      }
      var mask = masks ? masks[r.sys] : null;
      if (mask && mask.indexOf(true) < 0) continue;
      var sum = 0, n = 0, got = 0;
      for (var c = 0; c < r.sc.length; c++) {
        if (mask && !mask[c]) continue;
        var cell = idx.cells[idx.systems[r.sys].cells[c]];
        if (bits) got |= RR.flipMask(r.fl[c]);
        if (cell[0] === 0) continue;
        var v = RR.score(r.sc[c]);
        if (v !== null) { sum += v; n++; }
      }
      if (bits && (got & bits) !== bits) continue;
      if (pair) {
        if (r.sys !== pair.a && r.sys !== pair.b) continue;
        var d = pairEx[r.ex];
        if (!d) continue;
        var lists = s["f-pair-dir"] === "a" ? [d[0]] : s["f-pair-dir"] === "b" ? [d[1]] : [d[0], d[1]];
        var hit = false;
        lists.forEach(function (lst) {
          lst.forEach(function (cid) {
            if (hit) return;
            if (!masks) { hit = true; return; }
            var pos = idx.systems[r.sys].cells.indexOf(cid);
            if (pos >= 0 && masks[r.sys][pos]) hit = true;
          });
        });
        if (!hit) continue;
      }
      out.push({ r: r, acc: masks ? (n ? sum / n : null) : r.acc, n: masks ? n : null });
    }
    return out;
  }

  function badges(r) {
    var h = "";
    var all = 0;
    for (var c = 0; c < r.fl.length; c++) all |= RR.flipMask(r.fl[c]);
    Object.keys(idx.flips).forEach(function (k) {
      if (all & idx.flip_bits[k]) h += '<span class="badge flip-' + k + '" title="' + esc(idx.flips[k].means) + '">' + esc(k.toUpperCase()) + "</span>";
    });
    return h;
  }

  function renderRows() {
    var total = matches.length;
    var pages = Math.max(1, Math.ceil(total / PAGE));
    if (page >= pages) page = pages - 1;
    var start = page * PAGE;
    var body = "";
    matches.slice(start, start + PAGE).forEach(function (m) {
      var r = m.r;
      var sys = idx.systems[r.sys];
      var link = "example.html#e=" + r.ex + "&s=" + r.sys;
      var cb = r.cb === null ? '<span class="muted">–</span>' :
        '<span class="' + RR.scoreClass(r.cb) + '">' + (r.cb >= 1 ? "right" : r.cb <= 0 ? "wrong" : RR.fmt(r.cb)) + "</span>";
      body += '<tr data-ex="' + esc(ex.id[r.ex]) + '" data-ds="' + esc(ex.ds[r.ex]) + '" data-sys="' + r.sys + '">' +
        '<td><a href="' + link + '">' + esc(ex.id[r.ex]) + "</a></td>" +
        (idx.datasets.length > 1 ? "<td>" + esc(ex.ds[r.ex]) + "</td>" : "") +
        "<td>" + esc(sys.label) + '</td><td class="q">' + esc(ex.q[r.ex]) + "</td><td>" + esc((ex.a[r.ex] || []).join(" | ")) + "</td>" +
        "<td>" + cb + '</td><td class="num">' + (m.acc === null ? "–" : RR.fmt(m.acc)) + "</td><td>" + badges(r) + "</td></tr>";
    });
    document.getElementById("rows").innerHTML = body || '<tr><td colspan="8" class="muted">No rows match.</td></tr>';
    document.getElementById("count").textContent = total + " of " + rows.length + " rows" +
      (loaded < idx.row_chunks.length ? " (loading " + loaded + "/" + idx.row_chunks.length + " chunks)" : "") +
      "; page " + (page + 1) + " of " + pages;
    document.getElementById("pg-prev").disabled = page <= 0;
    document.getElementById("pg-next").disabled = page >= pages - 1;
  }

  function update(resetPage) {
    if (resetPage) page = 0;
    matches = filter();
    toHash(state());
    renderRows();
  }

  function render() {
    var h = "<h1>Examples</h1>";
    h += '<p class="lead">One row per example and system: the question, gold answers, the closed-book verdict, accuracy over the ' +
      'selected k &gt; 0 cells and the flips. Open an example for its cells, documents and outputs.</p>';
    h += form();
    h += '<p id="count" class="count" aria-live="polite"></p>';
    h += '<nav class="pager" aria-label="pages of rows"><button type="button" id="pg-prev">← previous</button>' +
      '<button type="button" id="pg-next">next →</button></nav>';
    h += '<div class="scroll"><table class="report" id="examples"><thead><tr><th scope="col">example</th>' +
      (idx.datasets.length > 1 ? '<th scope="col">dataset</th>' : "") +
      '<th scope="col">system</th><th scope="col">question</th><th scope="col">gold answers</th><th scope="col">closed-book</th>' +
      '<th scope="col">accuracy</th><th scope="col">flips</th></tr></thead><tbody id="rows"></tbody></table></div>';
    document.getElementById("main").innerHTML = h;
    fromHash();
    FILTERS.forEach(function (id) {
      var el = document.getElementById(id);
      if (!el) return;
      el.addEventListener(el.tagName === "INPUT" && el.type !== "checkbox" ? "input" : "change", function () { update(true); });
    });
    document.getElementById("f-reset").addEventListener("click", function () {
      document.getElementById("filters").reset();
      update(true);
    });
    document.getElementById("pg-prev").addEventListener("click", function () { page--; update(false); });
    document.getElementById("pg-next").addEventListener("click", function () { page++; update(false); });
  }

  function addChunk(chunk) {
    for (var j = 0; j < chunk.id.length; j++) {
      var e = chunk.ex0 + j;
      ex.id[e] = chunk.id[j]; ex.ds[e] = chunk.ds[j]; ex.q[e] = chunk.q[j]; ex.a[e] = chunk.a[j];
    }
    for (var i = 0; i < chunk.ex.length; i++) {
      rows.push({ ex: chunk.ex[i], sys: chunk.sys[i], sc: chunk.sc[i], fl: chunk.fl[i], acc: chunk.acc[i], cb: chunk.cb[i] });
    }
    loaded++;
  }

  function next(n) {
    if (n >= idx.row_chunks.length) {
      document.body.setAttribute("data-ready", "1");
      update(false);
      return;
    }
    RR.require("data/rows-" + RR.pad(n, 3) + ".js", "rows", n).then(function (d) {
      addChunk(d);
      if (n === 0 || n === idx.row_chunks.length - 1 || n % 8 === 0) update(false);
      next(n + 1);
    }).catch(RR.fail);
  }

  RR.require("data/index.js", "index", null).then(function (d) {
    idx = d;
    return RR.require("data/pairs.js", "pairs", null);
  }).then(function (pairs) {
    pairs.forEach(function (p, i) { Object.assign(idx.pairs[i], p); });
    render();
    next(0);
  }).catch(RR.fail);
})();
