/* Examples list: one row per (example, system), paged, with filters. Flips come precomputed
   (rr/metrics/flips.py via rr/reporting/site/): one character per cell, a bit per flip kind. */
"use strict";
(function () {
  var esc = RR.esc;
  var PAGE = 50;
  var idx = null;
  var rows = [];        // {ex, sys, sc, fl, acc, cb, pred}
  var ex = { id: [], ds: [], q: [], a: [], dt: [] };
  var loaded = 0;
  var page = 0;
  var matches = [];

  /* The filters, one entry each, in the form's order (adding a filter is adding an entry):
       id       its control's element id; label: its label
       key      its parameter in the URL hash (check boxes of one key: their values joined by ",")
       group    the fieldset: "rows", "cells" or "flips"
       options  () -> [[value, text], ...] of its select ("any" first: no filter; any: another
                text for it); search: a search box with this placeholder instead; check: a check
                box with this value
       test     (value, ctx) -> a predicate (r, cells) of a list row, or null (no filter);
                ctx: {state: every control's value, masks: cellMasks}; cells: {got: the flip bits
                of the row's selected cells}
       cell     (value, cell) -> whether a [k, retriever, order] cell is selected: the cell
                filters; accuracy and flips are taken over a row's selected cells
     An entry without test or cell qualifies another (f-pair-dir: f-pair's direction). The flip
     kinds' check boxes are made from the index where {flips: true} stands. */
  var FILTERS = [
    { id: "f-dataset", label: "dataset", key: "ds", group: "rows",
      options: function () { return idx.datasets.map(function (d) { return [d, d]; }); },
      test: function (v) { return function (r) { return ex.ds[r.ex] === v; }; } },
    { id: "f-system", label: "system", key: "sys", group: "rows",
      options: function () { return idx.systems.map(function (sys, i) { return [i, sys.label]; }); },
      test: function (v) { return function (r) { return r.sys === +v; }; } },
    { id: "f-search", label: "question, prediction or document title contains", key: "q", group: "rows", search: "words…",
      test: function (v) {
        var words = v.toLowerCase().split(/\s+/).filter(Boolean);
        if (!words.length) return null;
        return function (r) {
          var text = searchText(r);
          for (var w = 0; w < words.length; w++) if (text.indexOf(words[w]) < 0) return false;
          return true;
        };
      } },
    { id: "f-cb", label: "closed-book", key: "cb", group: "rows",
      options: function () { return [["right", "right"], ["wrong", "wrong"]]; },
      test: function (v) {
        return function (r) { return r.cb !== null && (v === "right" ? r.cb >= 1 : v === "wrong" ? r.cb <= 0 : true); };
      } },
    { id: "f-retriever", label: "retriever", key: "r", group: "cells",
      options: function () { return uniq(ragCells().map(function (c) { return c[1]; })).sort().map(function (r) { return [r, r]; }); },
      cell: function (v, c) { return c[1] === v; } },
    { id: "f-k", label: "k", key: "k", group: "cells",
      options: function () {
        return uniq(idx.cells.map(function (c) { return c[0]; })).sort(function (a, b) { return a - b; })
          .map(function (k) { return [k, k === 0 ? "0 (closed-book)" : String(k)]; });
      },
      cell: function (v, c) { return String(c[0]) === v; } },
    { id: "f-order", label: "order", key: "o", group: "cells",
      options: function () { return uniq(ragCells().map(function (c) { return c[2]; })).sort().map(function (o) { return [o, o]; }); },
      cell: function (v, c) { return c[2] === v; } },
    { flips: true },
    { id: "f-helped", key: "flip", group: "flips", check: "helped", flip: function () { return idx.helped; },
      test: function () { return function (r, cells) { return cells.helped; }; } },
    { id: "f-orders", label: "verdict differs between orders", key: "orders", group: "flips",
      options: function () {
        var orders = uniq(ragCells().map(function (c) { return c[2]; })).sort(), out = [];
        orders.forEach(function (a, i) {
          orders.slice(i + 1).forEach(function (b) { out.push([a + "|" + b, a + " vs " + b]); });
        });
        return out;
      },
      test: ordersTest },
    { id: "f-pair", label: "McNemar pair", key: "pair", group: "flips",
      options: function () {
        return idx.pairs.map(function (pair, i) {
          return [i, pair.label + " (" + pair.differs_in + (idx.datasets.length > 1 ? ", " + pair.dataset : "") + ")"];
        });
      },
      test: pairTest },
    { id: "f-pair-dir", label: "discordant", key: "dir", group: "flips", any: "either way",
      options: function () { return [["a", "first right, second wrong"], ["b", "first wrong, second right"]]; } }
  ];
  var GROUPS = [
    ["rows", "Rows"],
    ["cells", 'Cells <span class="muted">(accuracy and flips over these)</span>'],
    ["flips", 'Flips <span class="muted">(as the metrics count them; all checked must hold)</span>']
  ];
  var filters = [];  // FILTERS with the flip kinds' check boxes in place (set by form())

  /* One check box per flip kind of the index. */
  function flipFilters() {
    return Object.keys(idx.flips).map(function (k) {
      var bit = idx.flip_bits[k];
      return { id: "f-flip-" + k, key: "flip", group: "flips", check: k, flip: function () { return idx.flips[k]; },
        test: function () { return function (r, cells) { return (cells.got & bit) !== 0; }; } };
    });
  }

  /* A McNemar pair's rows: its two systems at the examples (and selected cells) they disagree at. */
  function pairTest(v, ctx) {
    var pair = idx.pairs[+v];
    var pairEx = {};
    pair.ex.forEach(function (e, i) { pairEx[e] = [pair.a_right[i], pair.b_right[i]]; });
    var dir = ctx.state["f-pair-dir"];
    var masks = ctx.masks;
    return function (r) {
      if (r.sys !== pair.a && r.sys !== pair.b) return false;
      var d = pairEx[r.ex];
      if (!d) return false;
      var lists = dir === "a" ? [d[0]] : dir === "b" ? [d[1]] : [d[0], d[1]];
      for (var l = 0; l < lists.length; l++) {
        for (var j = 0; j < lists[l].length; j++) {
          if (!masks) return true;
          var pos = idx.systems[r.sys].cells.indexOf(lists[l][j]);
          if (pos >= 0 && masks[r.sys][pos]) return true;
        }
      }
      return false;
    };
  }

  /* Rows whose verdict at some (retriever, k) differs between two orders ("original|reversed"):
     the examples that flipped when the documents were reordered so. With cell filters, a
     (retriever, k) counts when either of its two cells is selected. */
  function ordersTest(v, ctx) {
    var two = v.split("|");
    var pairs = idx.systems.map(function (sys) {
      var at = {};
      sys.cells.forEach(function (c, pos) {
        var cell = idx.cells[c];
        if (cell[0] > 0) at[cell[1] + "\u0000" + cell[0] + "\u0000" + cell[2]] = pos;
      });
      var out = [];
      sys.cells.forEach(function (c, pos) {
        var cell = idx.cells[c];
        if (cell[0] === 0 || cell[2] !== two[0]) return;
        var other = at[cell[1] + "\u0000" + cell[0] + "\u0000" + two[1]];
        if (other !== undefined) out.push([pos, other]);
      });
      return out;
    });
    var masks = ctx.masks;
    return function (r) {
      var ps = pairs[r.sys], mask = masks ? masks[r.sys] : null;
      for (var i = 0; i < ps.length; i++) {
        var a = ps[i][0], b = ps[i][1];
        if (mask && !mask[a] && !mask[b]) continue;
        var x = RR.score(r.sc[a]), y = RR.score(r.sc[b]);
        if (x !== null && y !== null && x !== y) return true;
      }
      return false;
    };
  }

  /* What the search box looks in: the row's question, its predictions and its example's document
     titles, lower case (made once). */
  function searchText(r) {
    if (r.text === undefined) r.text = (ex.q[r.ex] + "\n" + r.pred.join("\n") + "\n" + ex.dt[r.ex]).toLowerCase();
    return r.text;
  }

  function ragCells() { return idx.cells.filter(function (c) { return c[0] > 0; }); }

  function options(id, label, values, any) {
    var h = '<label for="' + id + '">' + label + '</label><select id="' + id + '"><option value="">' + (any || "any") + "</option>";
    values.forEach(function (v) { h += '<option value="' + esc(v[0]) + '">' + esc(v[1]) + "</option>"; });
    return h + "</select>";
  }

  function uniq(list) {
    var seen = {}, out = [];
    list.forEach(function (v) { var k = String(v); if (!seen[k]) { seen[k] = 1; out.push(v); } });
    return out;
  }

  function control(f) {
    if (f.check) {
      var fc = f.flip();
      return '<span class="f check"><input type="checkbox" id="' + f.id + '" value="' + f.check + '"' + (fc.rows ? "" : " disabled") +
        '><label for="' + f.id + '" title="' + esc(fc.means) + '">' + esc(fc.label) + ' <span class="muted">' + esc(fc.metric) +
        ", " + fc.rows + "</span></label></span>";
    }
    if (f.search) {
      return '<span class="f"><label for="' + f.id + '">' + f.label + '</label><input id="' + f.id + '" type="search" placeholder="' +
        f.search + '" autocomplete="off"></span>';
    }
    return '<span class="f">' + options(f.id, f.label, f.options(), f.any) + "</span>";
  }

  function form() {
    filters = [];
    FILTERS.forEach(function (f) { filters = filters.concat(f.flips ? flipFilters() : [f]); });
    var h = '<form id="filters" class="filters" role="search" onsubmit="return false">';
    GROUPS.forEach(function (g) {
      h += "<fieldset><legend>" + g[1] + "</legend>";
      filters.forEach(function (f) { if (f.group === g[0]) h += control(f); });
      h += "</fieldset>";
    });
    h += '<p class="f"><button type="button" id="f-reset">Clear filters</button></p></form>';
    return h;
  }

  function state() {
    var s = {};
    filters.forEach(function (f) {
      var el = document.getElementById(f.id);
      if (!el) return;
      s[f.id] = el.type === "checkbox" ? el.checked : el.value;
    });
    return s;
  }

  function toHash(s) {
    var p = {};
    filters.forEach(function (f) {
      if (!s[f.id]) return;
      var v = f.check ? f.check : s[f.id];
      p[f.key] = f.check && p[f.key] ? p[f.key] + "," + v : v;
    });
    if (sortKey) p.sort = (sortDir < 0 ? "-" : "") + sortKey;
    if (page) p.page = page + 1;
    RR.setHash(p);
  }

  /* Every control from the address (one the address does not name goes back to "any"); a
     disabled check box (a flip kind no row has) is never checked. */
  function fromHash() {
    var p = RR.hashParams();
    filters.forEach(function (f) {
      var el = document.getElementById(f.id);
      if (!el) return;
      var v = p[f.key];
      if (f.check) el.checked = !el.disabled && v !== undefined && v.split(",").indexOf(f.check) >= 0;
      else el.value = v === undefined ? "" : v;
    });
    page = p.page ? Math.max(0, parseInt(p.page, 10) - 1) : 0;
    var sort = p.sort || "";
    sortDir = sort.charAt(0) === "-" ? -1 : 1;
    sortKey = sort.replace(/^-/, "");
  }

  /* Per system: which of its cells the cell filters select (null: all). */
  function cellMasks(s) {
    var on = filters.filter(function (f) { return f.cell && s[f.id] !== ""; });
    if (!on.length) return null;
    return idx.systems.map(function (sys) {
      return sys.cells.map(function (c) {
        var cell = idx.cells[c];
        return on.every(function (f) { return f.cell(s[f.id], cell); });
      });
    });
  }

  function filter() {
    var s = state();
    var masks = cellMasks(s);
    var ctx = { state: s, masks: masks };
    var tests = [];
    filters.forEach(function (f) {
      if (!f.test || !s[f.id]) return;
      var t = f.test(s[f.id], ctx);
      if (t) tests.push(t);
    });
    var out = [];
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      var mask = masks ? masks[r.sys] : null;
      if (mask && mask.indexOf(true) < 0) continue;
      var sum = 0, n = 0, got = 0, right = false;
      for (var c = 0; c < r.sc.length; c++) {
        if (mask && !mask[c]) continue;
        got |= RR.flipMask(r.fl[c]);
        if (idx.cells[idx.systems[r.sys].cells[c]][0] === 0) continue;
        var v = RR.score(r.sc[c]);
        if (v !== null) { sum += v; n++; if (v >= 1) right = true; }
      }
      /* RAG helped: wrong closed-book, right at some selected k > 0 cell (the NDR flip's converse) */
      var cells = { got: got, helped: r.cb !== null && r.cb <= 0 && right };
      var keep = true;
      for (var t = 0; t < tests.length && keep; t++) keep = tests[t](r, cells);
      if (keep) out.push({ r: r, acc: masks ? (n ? sum / n : null) : r.acc, n: masks ? n : null, got: got, helped: cells.helped, mask: mask });
    }
    return out;
  }

  /* The flips of a row at its selected cells (m.got: the cell filters apply, as the box says). */
  function badges(m) {
    var h = m.helped ? '<span class="badge helped" title="' + esc(idx.helped.means) + '">HELPED</span>' : "";
    Object.keys(idx.flips).forEach(function (k) {
      if (m.got & idx.flip_bits[k]) h += '<span class="badge flip-' + k + '" title="' + esc(idx.flips[k].means) + '">' + esc(k.toUpperCase()) + "</span>";
    });
    return h;
  }

  /* The list's columns: name, sort key (in the address: sort=key, or -key descending), the value it
     sorts by (null last either way), whether it shows (dataset: only with several). */
  var COLUMNS = [
    { name: "question", key: "q", value: function (m) { return ex.q[m.r.ex]; } },
    { name: "system", key: "sys", value: function (m) { return idx.systems[m.r.sys].label; } },
    { name: "dataset", key: "ds", value: function (m) { return ex.ds[m.r.ex]; },
      shown: function () { return idx.datasets.length > 1; } },
    { name: "gold answers", key: "a", value: function (m) { return (ex.a[m.r.ex] || []).join(" | "); } },
    { name: "predictions", key: "pred", value: function (m) { return predictions(m)[0] ? predictions(m)[0].text : null; } },
    { name: "closed-book", key: "cb", value: function (m) { return m.r.cb; } },
    { name: "accuracy", key: "acc", value: function (m) { return m.acc; } },
    { name: "flips", key: "flips", value: function (m) { return badgeCount(m); } }
  ];
  var sortKey = "", sortDir = 1;  // "" keeps the list in example order

  function columns() { return COLUMNS.filter(function (c) { return !c.shown || c.shown(); }); }

  function sortMatches() {
    var col = COLUMNS.filter(function (c) { return c.key === sortKey; })[0];
    if (!col) return;
    var keyed = matches.map(function (m, i) { return [col.value(m), i, m]; });
    keyed.sort(function (x, y) { return RR.compare(x[0], y[0], sortDir) || x[1] - y[1]; });
    matches = keyed.map(function (x) { return x[2]; });
  }

  /* A row's distinct predictions at its selected cells, in cell order: {text, cells: labels, v: score}. */
  function predictions(m) {
    if (m.preds) return m.preds;
    var r = m.r, sys = idx.systems[r.sys], seen = {}, out = [];
    for (var c = 0; c < r.pred.length; c++) {
      if (m.mask && !m.mask[c]) continue;
      var t = r.pred[c], label = RR.cellLabel(idx.cells[sys.cells[c]]);
      if (Object.prototype.hasOwnProperty.call(seen, t)) { out[seen[t]].cells.push(label); continue; }
      seen[t] = out.length;
      out.push({ text: t, cells: [label], v: RR.score(r.sc[c]) });
    }
    m.preds = out;
    return out;
  }

  var SHOWN_PREDICTIONS = 3, PREDICTION_CHARS = 80;
  function predictionsHtml(m) {
    var ps = predictions(m);
    var h = ps.slice(0, SHOWN_PREDICTIONS).map(function (p) {
      var t = p.text.length > PREDICTION_CHARS ? p.text.slice(0, PREDICTION_CHARS) + "…" : p.text;
      return '<span class="pred ' + RR.scoreClass(p.v) + '" title="' + esc(p.cells.join("; ") + (t === p.text ? "" : ": " + p.text)) +
        '"><bdi>' + (t ? esc(t) : '<span class="muted">(empty)</span>') + "</bdi></span>";
    }).join(" ");
    if (ps.length > SHOWN_PREDICTIONS) h += ' <span class="muted">+' + (ps.length - SHOWN_PREDICTIONS) + " more</span>";
    return h;
  }

  function badgeCount(m) {
    var n = m.helped ? 1 : 0;
    Object.keys(idx.flips).forEach(function (k) { if (m.got & idx.flip_bits[k]) n++; });
    return n;
  }

  function headHtml() {
    return "<tr>" + columns().map(function (c) {
      var sort = c.key === sortKey ? (sortDir > 0 ? "ascending" : "descending") : "none";
      return '<th scope="col" aria-sort="' + sort + '"><button type="button" class="sort" data-sort="' + c.key + '">' +
        esc(c.name) + '<span class="sort-mark" aria-hidden="true"></span></button></th>';
    }).join("") + "</tr>";
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
      /* labelled by its question; its id in the link's tooltip (and data-ex) */
      body += '<tr data-ex="' + esc(ex.id[r.ex]) + '" data-ds="' + esc(ex.ds[r.ex]) + '" data-sys="' + r.sys + '">' +
        '<td class="q"><a href="' + link + '" title="example ' + esc(ex.id[r.ex]) + '"><bdi>' + esc(ex.q[r.ex]) + "</bdi></a></td>" +
        "<td>" + esc(sys.label) + "</td>" + (idx.datasets.length > 1 ? "<td>" + esc(ex.ds[r.ex]) + "</td>" : "") +
        "<td>" + esc((ex.a[r.ex] || []).join(" | ")) + '</td><td class="preds">' + predictionsHtml(m) + "</td>" +
        "<td>" + cb + '</td><td class="num">' + (m.acc === null ? "–" : RR.fmt(m.acc)) + "</td><td>" + badges(m) + "</td></tr>";
    });
    document.getElementById("rows").innerHTML = body || '<tr><td colspan="' + columns().length + '" class="muted">No rows match.</td></tr>';
    document.getElementById("examples-head").innerHTML = headHtml();
    document.getElementById("count").textContent = total + " of " + rows.length + " rows" +
      (loaded < idx.row_chunks.length ? " (loading " + loaded + "/" + idx.row_chunks.length + " chunks)" : "") +
      "; page " + (page + 1) + " of " + pages;
    document.getElementById("pg-prev").disabled = page <= 0;
    document.getElementById("pg-next").disabled = page >= pages - 1;
  }

  function update(resetPage) {
    if (resetPage) page = 0;
    matches = filter();
    sortMatches();
    toHash(state());
    renderRows();
  }

  function render() {
    var h = "<h1>Examples</h1>";
    h += '<p class="lead">One row per example and system: the question, gold answers, the predictions, the closed-book verdict, ' +
      'accuracy over the selected k &gt; 0 cells and the flips. Click a column header to sort by it. Open an example (its question) ' +
      'for its cells, documents and outputs.</p>';
    h += form();
    h += '<p id="count" class="count" aria-live="polite"></p>';
    h += '<nav class="pager" aria-label="pages of rows"><button type="button" id="pg-prev">← previous</button>' +
      '<button type="button" id="pg-next">next →</button></nav>';
    h += '<div class="scroll"><table class="report" id="examples"><thead id="examples-head"></thead><tbody id="rows"></tbody></table></div>';
    document.getElementById("main").innerHTML = h;
    fromHash();
    filters.forEach(function (f) {
      var el = document.getElementById(f.id);
      if (!el) return;
      el.addEventListener(el.tagName === "INPUT" && el.type !== "checkbox" ? "input" : "change", function () { update(true); });
    });
    document.getElementById("f-reset").addEventListener("click", function () {
      document.getElementById("filters").reset();
      update(true);
    });
    document.getElementById("examples-head").addEventListener("click", function (ev) {
      var btn = ev.target.closest("button.sort");
      if (!btn) return;
      var key = btn.getAttribute("data-sort");
      sortDir = key === sortKey ? -sortDir : 1;
      sortKey = key;
      update(true);
      document.querySelector('#examples-head button[data-sort="' + key + '"]').focus();
    });
    document.getElementById("pg-prev").addEventListener("click", function () { page--; update(false); });
    document.getElementById("pg-next").addEventListener("click", function () { page++; update(false); });
  }

  function addChunk(chunk) {
    for (var j = 0; j < chunk.id.length; j++) {
      var e = chunk.ex0 + j;
      ex.id[e] = chunk.id[j]; ex.ds[e] = chunk.ds[j]; ex.q[e] = chunk.q[j]; ex.a[e] = chunk.a[j]; ex.dt[e] = chunk.dt[j];
    }
    for (var i = 0; i < chunk.ex.length; i++) {
      rows.push({ ex: chunk.ex[i], sys: chunk.sys[i], sc: chunk.sc[i], fl: chunk.fl[i], acc: chunk.acc[i], cb: chunk.cb[i], pred: chunk.pred[i] });
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

  /* An address changed by hand or by a link (#flip=ndr -> #flip=rsr): the controls follow it.
     setHash's own changes (history.replaceState) fire no hashchange. */
  window.addEventListener("hashchange", function () {
    if (!filters.length) return;
    fromHash();
    update(false);
  });

  RR.require("data/index.js", "index", null).then(function (d) {
    idx = d;
    return RR.require("data/pairs.js", "pairs", null);
  }).then(function (pairs) {
    pairs.forEach(function (p, i) { Object.assign(idx.pairs[i], p); });
    render();
    next(0);
  }).catch(RR.fail);
})();
