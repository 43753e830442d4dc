/* One example: per system a grid of its cells coloured by score; a chosen cell's documents in
   prompt order (gold answers highlighted), raw output, prediction, verdict, marker; two cells side
   by side; a perturbed query as a character-level diff. Loads data/index.js, the example's shard
   and the passage shards its documents are in. */
"use strict";
(function () {
  var esc = RR.esc;
  var idx = null;
  var item = null;   // this example's data
  var target = "a";  // which panel a click fills
  var PANELS = ["a", "b", "c"];  // left, middle, right: each an address key "system.cell"
  var CELL = { id: 0, score: 1, pred: 2, raw: 3, marker: 4, refused: 5, over: 6, judge: 7, dp: 8, ref: 9, docs: 10, flips: 11, given: 12, row: 13 };

  /* A shard stores its rows column by column (exs.cells); a system's cells are its rows r[0]..r[1],
     each as the array CELL indexes. */
  function unpack(exs, item) {
    var col = exs.cells;
    item.sys.forEach(function (sysd) {
      if (sysd.cells) return;
      var out = [];
      for (var i = sysd.r[0]; i < sysd.r[1]; i++) {
        out.push([col.c[i], col.sc[i], col.pred[i], col.raw[i], col.mk[i], col.rf[i], col.ow[i], col.jd[i], col.dp[i], col.ref[i], col.docs[i], col.fl[i], col.ng[i], i]);
      }
      sysd.cells = out;
    });
  }

  function sysOf(s) {
    for (var i = 0; i < item.sys.length; i++) if (item.sys[i].s === s) return item.sys[i];
    return null;
  }

  function cellOf(sysd, cid) {
    for (var i = 0; i < sysd.cells.length; i++) if (sysd.cells[i][CELL.id] === cid) return sysd.cells[i];
    return null;
  }

  function diffHtml(ops) {
    return ops.map(function (op) {
      if (op[0] === "=") return esc(op[1]);
      if (op[0] === "-") return '<del title="only in the original">' + esc(op[1]) + "</del>";
      return '<ins title="only in the perturbed query">' + esc(op[1]) + "</ins>";
    }).join("");
  }

  function gridHtml(sysd) {
    var cells = sysd.cells.map(function (c) { return { c: c, cell: idx.cells[c[CELL.id]] }; });
    var closed = cells.filter(function (x) { return x.cell[0] === 0; });
    var rag = cells.filter(function (x) { return x.cell[0] > 0; });
    var orders = [], keys = [], seen = {};
    rag.forEach(function (x) {
      if (orders.indexOf(x.cell[2]) < 0) orders.push(x.cell[2]);
      var key = x.cell[1] + "\u0000" + x.cell[0];
      if (!seen[key]) { seen[key] = 1; keys.push([x.cell[1], x.cell[0]]); }
    });
    keys.sort(function (a, b) { return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]; });
    function button(x) {
      var v = x.c[CELL.score];
      var kinds = flipKinds(x.c[CELL.flips]);
      return '<button type="button" class="cell ' + RR.scoreClass(v) + '" data-s="' + sysd.s + '" data-c="' + x.c[CELL.id] +
        '" data-flips="' + kinds.join(" ") + '" aria-label="' + esc(RR.cellLabel(x.cell) + ": score " + RR.fmt(v) +
        (kinds.length ? "; counted by " + kinds.map(function (k) { return idx.flips[k].label; }).join(", ") : "")) + '">' + RR.fmt(v, 2) +
        kinds.map(function (k) { return ' <span class="cflip" title="' + esc(idx.flips[k].label + ": " + idx.flips[k].means) + '">' + esc(k.toUpperCase()) + "</span>"; }).join("") +
        "</button>";
    }
    var h = closed.length ? '<p class="closed-book">closed-book (k = 0, no documents): ' + button(closed[0]) + "</p>" : "";
    if (!rag.length) return h;
    h += '<table class="grid" data-sys="' + sysd.s + '"><caption class="sr">cells of ' + esc(idx.systems[sysd.s].label) + "</caption>";
    h += '<thead><tr><th scope="col">retriever</th><th scope="col">k</th>';
    orders.forEach(function (o) { h += '<th scope="col">' + esc(o) + "</th>"; });
    h += "</tr></thead><tbody>";
    keys.forEach(function (rk) {
      h += '<tr><th scope="row">' + esc(rk[0]) + '</th><th scope="row">' + rk[1] + "</th>";
      orders.forEach(function (o) {
        var x = rag.filter(function (y) { return y.cell[1] === rk[0] && y.cell[0] === rk[1] && y.cell[2] === o; })[0];
        h += "<td>" + (x ? button(x) : '<span class="muted">–</span>') + "</td>";
      });
      h += "</tr>";
    });
    return h + "</tbody></table>";
  }

  /* The flip kinds a cell's flip-mask character counts (a flip filter lists the row for them). */
  function flipKinds(ch) {
    var mask = RR.flipMask(ch);
    return Object.keys(idx.flip_bits).filter(function (k) { return mask > 0 && (mask & idx.flip_bits[k]) !== 0; });
  }

  /* A cell's passage numbers in prompt order: n / -n (its ranking's first n, or those reversed),
     {r: positions in its ranking} (another order of them), or the numbers themselves. */
  function docsOf(c) {
    var d = c[CELL.docs], ref = c[CELL.ref];
    var lst = ref >= 0 ? item.ranked[ref] : null;
    if (typeof d === "number") {
      if (d === 0 || !lst) return [];
      return d > 0 ? lst.slice(0, d) : lst.slice(0, -d).reverse();
    }
    if (d && d.r) return lst ? d.r.map(function (i) { return lst[i]; }) : [];
    return d || [];
  }

  function passage(p) {
    var shard = RR.shardOf(idx.p_shards, p);
    var ps = RR.data["p:" + shard];
    var i = p - ps.first;
    return { id: ps.id[i], c: ps.c[i], title: ps.title[i], text: ps.text[i] };
  }

  function loadPassages(pids) {
    var need = {};
    pids.forEach(function (p) { need[RR.shardOf(idx.p_shards, p)] = 1; });
    return Promise.all(Object.keys(need).map(function (n) {
      return RR.require("data/p/p-" + RR.pad(n, 4) + ".js", "p", +n);
    }));
  }

  function yesNo(v) {
    return v === null || v === undefined ? '<span class="muted">n/a</span>' : v ? "yes" : "no";
  }

  function panelHtml(which, s, cid) {
    var sysd = sysOf(s);
    var c = sysd && cellOf(sysd, cid);
    if (!c) return '<p class="muted">Choose a cell in a grid above.</p>';
    var cell = idx.cells[cid];
    var v = c[CELL.score];
    var verdict = v >= 1 ? "right" : v <= 0 ? "wrong" : "partly right";
    var h = '<h3 class="cell-title">' + esc(idx.systems[s].label) + " · " + esc(RR.cellLabel(cell)) + "</h3>";
    h += '<dl class="facts">';
    h += '<dt>verdict</dt><dd class="verdict ' + RR.scoreClass(v) + '">' + verdict + " (score " + RR.fmt(v) + ", judge " + esc(c[CELL.judge]) + ")</dd>";
    h += "<dt>prediction</dt><dd class=\"prediction\">" + (c[CELL.pred] === "" ? '<span class="muted">(empty)</span>' : RR.highlight(c[CELL.pred], item.a)) + "</dd>";
    h += "<dt>answer marker found</dt><dd class=\"marker\">" + yesNo(c[CELL.marker]) + "</dd>";
    h += "<dt>refused</dt><dd>" + yesNo(c[CELL.refused]) + "</dd>";
    if (c[CELL.over]) h += '<dt>over the window</dt><dd class="bad">yes: not sent, empty output</dd>';
    h += "</dl>";
    h += '<h4>Raw output</h4><pre class="raw">' + esc(c[CELL.raw]) + "</pre>";
    var docs = docsOf(c);
    h += promptHtml(c, docs.length || c[CELL.given]);  // no documents recorded: nothing to say was cut
    h += "<h4>Documents in prompt order (" + (docs.length || cell[0] === 0 ? docs.length : "not recorded") + ")</h4>";
    if (c[CELL.dp] && c[CELL.dp] !== "none") {
      h += '<p class="note">Document perturbation <code>' + esc(c[CELL.dp]) + "</code>: texts are shown as the corpus holds them; " +
        "the prompt below holds the perturbed documents (ids the perturbation made are not in the corpus).</p>";
    }
    if (!docs.length) {
      return h + (cell[0] === 0 ? '<p class="muted no-docs">No documents (closed-book).</p>'
        : '<p class="muted no-docs">Not recorded: this k = ' + cell[0] + " cell's score rows name no documents (doc_ids).</p>");
    }
    var ranked = c[CELL.ref] >= 0 ? item.ranked[c[CELL.ref]] : [];
    h += '<ol class="docs">';
    docs.forEach(function (p, i) {
      var d = passage(p);
      var rank = ranked.indexOf(p);
      h += '<li class="doc" data-pos="' + (i + 1) + '" data-id="' + esc(d.id) + '"><div class="doc-head"><span class="pos">#' + (i + 1) + "</span> " +
        '<span class="rank">' + (rank >= 0 ? "rank " + (rank + 1) : "rank ?") + "</span> <bdi class=\"id\"><code>" + esc(d.id) + "</code></bdi> " +
        (d.title ? '<bdi class="title">' + esc(d.title) + "</bdi>" : "") + "</div>";
      if (d.text === null) {
        var corpus = idx.corpora[d.c] || {};
        h += '<p class="unreadable">Text not available: ' + esc(corpus.status && corpus.status !== "ok" ? corpus.status : "not in the corpus " + (corpus.name || "")) + ".</p>";
      } else {
        h += '<p class="text">' + RR.highlight(d.text, item.a) + "</p>";
      }
      h += "</li>";
    });
    return h + "</ol>";
  }

  /* The final step's prompt as the model received it (stored by the job in its
     prompts.parquet), and what window fitting cut. The text is in data/pr/pr-NNNN.js (the
     example shard's number), loaded when the box is opened (loadPrompt). */
  function promptHtml(c, used) {
    var given = c[CELL.given];
    var h = '<h4>Prompt as sent</h4>';
    if (c[CELL.over]) h += '<p class="note bad over">Not sent: this prompt plus max_new_tokens is over the context window.</p>';
    else if (given !== null && given !== undefined && given > used) {
      h += '<p class="note fitted">Window fitting kept ' + used + " of the " + given + " documents given (the lowest-ranked dropped).</p>";
    }
    return h + '<details class="prompt" data-row="' + c[CELL.row] + '"><summary>the exact text, as rendered for the model</summary>' +
      '<pre class="prompt" aria-live="polite">Loading…</pre></details>';
  }

  function loadPrompt(box) {
    if (box.getAttribute("data-loaded") || !box.open) return;
    var shard = RR.shardOf(idx.ex_shards, item.e);
    RR.require("data/pr/pr-" + RR.pad(shard, 4) + ".js", "pr", shard).then(function (prs) {
      var pr = prs.pr[+box.getAttribute("data-row")];
      var pre = box.querySelector("pre.prompt");
      if (pr) {
        pre.innerHTML = RR.highlight(pr, item.a);
        box.querySelector("summary").textContent = "the exact text (" + pr.length + " characters, as rendered for the model)";
      } else {
        pre.outerHTML = '<p class="muted no-prompt">Not recorded (the job was run before rr stored prompts).</p>';
      }
      box.setAttribute("data-loaded", "1");
    }).catch(RR.fail);
  }

  function parseSel(v) {
    if (!v) return null;
    var p = v.split(".");
    return [+p[0], +p[1]];
  }

  var EMPTY = {
    a: "Choose a cell in a grid above.",
    b: 'Choose "second panel" above, then a cell, to compare two cells side by side.',
    c: 'Choose "third panel" above, then a cell, to compare three cells.'
  };

  function showPanels() {
    var p = RR.hashParams();
    var sels = PANELS.map(function (w) { return parseSel(p[w]); });
    var pids = [];
    sels.forEach(function (sel) {
      if (!sel) return;
      var sysd = sysOf(sel[0]);
      var c = sysd && cellOf(sysd, sel[1]);
      if (c) pids = pids.concat(docsOf(c));
    });
    document.querySelectorAll("button.cell").forEach(function (btn) {
      var key = btn.getAttribute("data-s") + "." + btn.getAttribute("data-c");
      PANELS.forEach(function (w) { btn.classList.toggle("sel-" + w, key === p[w]); });
      btn.setAttribute("aria-pressed", PANELS.some(function (w) { return key === p[w]; }) ? "true" : "false");
    });
    return loadPassages(pids).then(function () {
      PANELS.forEach(function (w, i) {
        var sel = sels[i];
        document.getElementById("panel-" + w).innerHTML = sel ? panelHtml(w, sel[0], sel[1]) : '<p class="muted">' + esc(EMPTY[w]) + "</p>";
      });
      document.getElementById("panels").classList.toggle("two", !!(sels[1] || sels[2]));
      document.getElementById("panels").classList.toggle("three", !!sels[2]);
      document.querySelectorAll("details.prompt").forEach(function (box) {
        box.addEventListener("toggle", function () { loadPrompt(box); });
      });
      document.body.setAttribute("data-ready", "1");
    });
  }

  function render() {
    var p = RR.hashParams();
    var h = '<nav class="pager" aria-label="examples"><a id="prev" href="example.html#e=' + Math.max(0, item.e - 1) + '">← previous example</a> ' +
      '<a id="next" href="example.html#e=' + Math.min(idx.n_examples - 1, item.e + 1) + '">next example →</a></nav>';
    /* labelled by its question; its id (and dataset) below it */
    h += '<h1 class="question" dir="auto">' + esc(item.q) + "</h1>";
    h += '<p class="muted small">example <bdi class="id"><code>' + esc(item.id) + "</code></bdi>" + (item.ds ? ' · <bdi>' + esc(item.ds) + "</bdi>" : "") + "</p>";
    h += '<p>Gold answers: <span class="answers">' + item.a.map(function (a) { return '<mark class="gold">' + esc(a) + "</mark>"; }).join(" ") + "</span></p>";
    h += '<fieldset class="target"><legend>A click on a cell fills</legend>' +
      '<input type="radio" name="target" id="target-a" value="a"' + (target === "a" ? " checked" : "") + '><label for="target-a">left panel</label>' +
      '<input type="radio" name="target" id="target-b" value="b"' + (target === "b" ? " checked" : "") + '><label for="target-b">second panel</label>' +
      '<input type="radio" name="target" id="target-c" value="c"' + (target === "c" ? " checked" : "") + '><label for="target-c">third panel</label>' +
      ' <button type="button" id="clear-b">close the second panel</button> <button type="button" id="clear-c">close the third panel</button></fieldset>';
    var only = p.s === undefined ? null : +p.s;
    var systems = item.sys.slice().sort(function (x, y) { return (x.s === only ? -1 : 0) - (y.s === only ? -1 : 0) || x.s - y.s; });
    h += '<div class="systems">';
    systems.forEach(function (sysd) {
      h += '<section class="system" id="sys-' + sysd.s + '"><h2>' + esc(idx.systems[sysd.s].label) + "</h2>";
      if (sysd.q !== undefined && sysd.diff === undefined) {
        h += '<p class="qdiff">Query: ' + esc(sysd.q) + "</p>";
      } else if (sysd.q !== undefined) {
        h += '<p class="qdiff">Query: <span class="diff">' + diffHtml(sysd.diff) + '</span></p><p class="muted small">perturbed: ' + esc(sysd.q) + "</p>";
      }
      h += gridHtml(sysd) + "</section>";
    });
    h += "</div>";
    h += '<p class="note flip-legend">A cell marked ' + Object.keys(idx.flips).map(function (k) { return '<span class="cflip">' + esc(k.toUpperCase()) + "</span>"; }).join(" / ") +
      " is a comparison that flip counts against the system (the examples list's flip filters): NDR below the closed-book score, " +
      "RSR below a smaller k, ROR orders that disagree, a perturbed query's or documents' verdict that differs.</p>";
    h += '<div id="panels" class="panels"><section id="panel-a" class="panel" aria-label="left cell"></section>' +
      '<section id="panel-b" class="panel" aria-label="second cell"></section>' +
      '<section id="panel-c" class="panel" aria-label="third cell"></section></div>';
    document.getElementById("main").innerHTML = h;
    document.title = "rr report: " + (item.q.length > 60 ? item.q.slice(0, 60) + "…" : item.q);
    document.querySelectorAll("input[name=target]").forEach(function (el) {
      el.addEventListener("change", function () { target = el.value; });
    });
    ["b", "c"].forEach(function (w) {
      document.getElementById("clear-" + w).addEventListener("click", function () {
        var q = RR.hashParams(); delete q[w]; RR.setHash(q); target = "a";
        document.getElementById("target-a").checked = true;
        showPanels().catch(RR.fail);
      });
    });
    document.querySelectorAll("button.cell").forEach(function (btn) {
      btn.addEventListener("click", function (ev) {
        var q = RR.hashParams();
        var which = ev.shiftKey ? "b" : target;
        q[which] = btn.getAttribute("data-s") + "." + btn.getAttribute("data-c");
        RR.setHash(q);
        showPanels().catch(RR.fail);
      });
    });
    var q = RR.hashParams();
    if (!q.a) {
      var first = systems[0];
      openingCells(first).forEach(function (c, i) { q[PANELS[i]] = first.s + "." + c[CELL.id]; });
      RR.setHash(q);
    }
    return showPanels();
  }

  /* The cells an example opens on (one system's): its closed-book cell beside its best and worst
     k > 0 cells (highest and lowest score, the first in grid order on a tie; the worst only where it
     scores below the best); without a closed-book cell, the best and the worst. */
  function openingCells(sysd) {
    var closed = sysd.cells.filter(function (c) { return idx.cells[c[CELL.id]][0] === 0; });
    var rag = sysd.cells.filter(function (c) { return idx.cells[c[CELL.id]][0] > 0 && c[CELL.score] !== null; });
    var best = null, worst = null;
    rag.forEach(function (c) {
      if (best === null || c[CELL.score] > best[CELL.score]) best = c;
      if (worst === null || c[CELL.score] < worst[CELL.score]) worst = c;
    });
    var out = closed.slice(0, 1);
    if (best) out.push(best);
    if (worst && worst[CELL.score] < best[CELL.score]) out.push(worst);
    return out.length ? out : sysd.cells.slice(0, 1);
  }

  function open() {
    var p = RR.hashParams();
    var e = Math.max(0, Math.min(idx.n_examples - 1, parseInt(p.e || "0", 10) || 0));
    var shard = RR.shardOf(idx.ex_shards, e);
    return RR.require("data/ex/e-" + RR.pad(shard, 4) + ".js", "ex", shard).then(function (exs) {
      item = null;
      for (var i = 0; i < exs.examples.length; i++) if (exs.examples[i].e === e) item = exs.examples[i];
      if (!item) throw new Error("example " + e + " is not in its shard");
      unpack(exs, item);
      return render();
    });
  }

  var current = null;
  window.addEventListener("hashchange", function () {
    var e = RR.hashParams().e;
    if (e !== current) { current = e; document.body.removeAttribute("data-ready"); open().catch(RR.fail); }
  });

  RR.require("data/index.js", "index", null).then(function (d) {
    idx = d;
    current = RR.hashParams().e;
    return open();
  }).catch(RR.fail);
})();
