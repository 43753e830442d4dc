/* Overview: jobs and their config differences, sweep states, flip counts, McNemar pairs (and the
   pairs not compared, with the reason), every report table
   with its intervals, the figures. Loads data/overview.js only. */
"use strict";
(function () {
  var esc = RR.esc;

  function tableHtml(t) {
    var cols = t.columns;
    var has = {};
    cols.forEach(function (c) { has[c] = true; });
    var shown = cols.filter(function (c) {
      var m = /^(.*)_ci_(low|high)$/.exec(c);
      return !(m && has[m[1]]);
    });
    var idx = {};
    cols.forEach(function (c, i) { idx[c] = i; });
    var h = '<div class="scroll"><table class="report" id="t-' + esc(t.table) + '" data-table="' + esc(t.table) + '">';
    h += "<thead><tr>" + shown.map(function (c) { return '<th scope="col">' + esc(c) + "</th>"; }).join("") + "</tr></thead><tbody>";
    t.rows.forEach(function (r) {
      h += "<tr>";
      shown.forEach(function (c) {
        var v = r[idx[c]];
        var text = RR.fmt(v, t.digits);
        var lo = idx[c + "_ci_low"], hi = idx[c + "_ci_high"];
        if (c === "examples" && typeof v === "string" && v.indexOf("examples.html#") === 0) {
          text = '<a href="' + esc(v) + '">the examples</a>';  /* paper_values: the rows behind a matched value */
        } else if (lo !== undefined && hi !== undefined && typeof v === "number" && r[lo] !== null && r[hi] !== null) {
          text += ' <span class="ci">[' + RR.fmt(r[lo], t.digits) + ", " + RR.fmt(r[hi], t.digits) + "]</span>";
        } else {
          text = esc(text);
        }
        var num = typeof v === "number";
        h += "<td" + (num ? ' class="num"' : "") + ' data-col="' + esc(c) + '"' +
          (v === null ? "" : ' data-v="' + esc(v) + '"') + ">" + text + "</td>";
      });
      h += "</tr>";
    });
    h += "</tbody></table></div>";
    if (t.total_rows > t.rows.length) {
      h += '<p class="note">First ' + t.rows.length + " of " + t.total_rows + ' rows; all in <a href="tables/' +
        esc(t.table) + '.csv">tables/' + esc(t.table) + ".csv</a>.</p>";
    }
    return h;
  }

  function render(d) {
    var h = "<h1>Overview</h1>";
    h += '<p class="lead">' + RR.count(d.rows, "score row") + ", " + RR.count(d.examples, "example") + ", " +
      RR.count(d.systems, "system") + " from " + RR.count(d.jobs.length, "job") + ". Intervals: " + Math.round(d.confidence * 100) +
      "% example-level bootstrap, " + d.resamples + " resamples, seed " + d.seed + ". " +
      '<a href="examples.html">Browse the examples</a>.</p>';
    (d.notes || []).forEach(function (n) { h += '<p class="note">' + esc(n) + "</p>"; });
    var toc = ['<li><a href="#jobs">Jobs</a></li>', '<li><a href="#flips">Flips</a></li>', '<li><a href="#pairs">McNemar pairs</a></li>'];
    var ran = d.sections.filter(function (sec) { return !sec.skipped; });
    var skipped = d.sections.filter(function (sec) { return sec.skipped; });
    ran.forEach(function (sec) {
      toc.push('<li><a href="#sec-' + esc(sec.name) + '">' + esc(sec.title) + "</a>" +
        (sec.error ? ' <span class="bad">(failed)</span>' : "") + "</li>");
    });
    h += '<nav aria-label="contents" class="toc"><ul>' + toc.join("") + "</ul></nav>";
    /* the sections that did not run: one line, their reasons one click away */
    if (skipped.length) {
      h += '<details id="skipped" class="skipped"><summary>' + RR.count(skipped.length, "section") + " skipped: " +
        skipped.map(function (sec) { return esc(sec.title); }).join("; ") + "</summary><ul>" +
        skipped.map(function (sec) {
          return '<li id="sec-' + esc(sec.name) + '">' + esc(sec.title) + ' <span class="muted">(' + esc(sec.name) + ")</span>: " + esc(sec.skipped) + "</li>";
        }).join("") + "</ul></details>";
    }

    h += '<section id="jobs"><h2>Jobs</h2>';
    h += '<div class="scroll"><table class="report" id="jobs-table"><thead><tr><th scope="col">job</th><th scope="col">rows</th>' +
      '<th scope="col">accuracy (k &gt; 0)</th><th scope="col">closed-book</th><th scope="col">model calls</th>' +
      '<th scope="col">cache hits</th><th scope="col">wall s</th><th scope="col">environment</th>';
    d.config_keys.forEach(function (k) { h += '<th scope="col" class="cfg">' + esc(k) + "</th>"; });
    h += '<th scope="col">folder</th></tr></thead><tbody>';
    d.jobs.forEach(function (j) {
      h += "<tr><td><code>" + esc(j.job_id) + '</code></td><td class="num">' + j.rows + '</td><td class="num">' +
        RR.fmt(j.accuracy) + '</td><td class="num">' + RR.fmt(j.closed_book_accuracy) + '</td><td class="num">' +
        RR.fmt(j.model_calls) + '</td><td class="num">' + RR.fmt(j.cache_hits) + '</td><td class="num">' + RR.fmt(j.wall_s, 1) + "</td><td><code>" + esc(j.environment) + "</code></td>";
      d.config_keys.forEach(function (k) { h += "<td>" + esc(JSON.stringify(j.config[k])) + "</td>"; });
      h += '<td class="path">' + esc(j.folder) + "</td></tr>";
    });
    h += "</tbody></table></div>";
    h += '<p class="note">Environment: the lock the job\'s packages came from (<code>*</code>: the installed set differed from it; <code>?</code>: no record).</p>';
    if (d.environment_note) h += '<p class="note bad" id="environment-note">Note: ' + esc(d.environment_note) + ".</p>";
    if (d.config_keys.length) h += '<p class="note">Config columns: the settings in which the jobs\' config.yaml files differ.</p>';
    if (d.left_out.length) {
      h += '<div id="left-out"><h3>Not in this report</h3><p class="bad">' + esc(d.left_out_headline) +
        ". Their numbers are missing from every table; finish them and run <code>rr report</code> again.</p>";
      h += '<div class="scroll"><table class="report"><thead><tr><th scope="col">state</th><th scope="col">job</th>' +
        '<th scope="col">what happened</th><th scope="col">finish it with</th><th scope="col">folder</th></tr></thead><tbody>';
      d.left_out.forEach(function (lo) {
        h += '<tr><td class="state-' + esc(lo.state) + '">' + esc(lo.state) + "</td><td><code>" + esc(lo.job_id) +
          "</code></td><td>" + esc(lo.detail) + "</td><td>" + (lo.command ? "<code>" + esc(lo.command) + "</code>" : "") +
          '</td><td class="path">' + esc(lo.folder) + "</td></tr>";
      });
      h += "</tbody></table></div></div>";
    }
    d.sweeps.forEach(function (sw) {
      var counts = {};
      sw.jobs.forEach(function (sj) { counts[sj.state] = (counts[sj.state] || 0) + 1; });
      h += '<h3>Sweep <code>' + esc(sw.folder) + "</code></h3>";
      if (sw.error) { h += '<p class="bad">' + esc(sw.error) + "</p>"; return; }
      h += '<p class="sweep-counts">' + ["done", "partial", "missing"].map(function (k) { return (counts[k] || 0) + " " + k; }).join(", ") +
        ' <span class="muted">(as <code>rr status</code>: partial = started but cut off or failed; missing = never started)</span></p>';
      h += '<div class="scroll"><table class="report sweep"><thead><tr><th scope="col">job</th><th scope="col">state</th><th scope="col">detail</th></tr></thead><tbody>';
      sw.jobs.forEach(function (sj) {
        h += "<tr><td><code>" + esc(sj.job_id) + '</code></td><td class="state-' + esc(sj.state) + '">' + esc(sj.state) +
          "</td><td>" + esc(sj.detail) + "</td></tr>";
      });
      h += "</tbody></table></div>";
    });
    h += "</section>";

    h += '<section id="flips"><h2>Flips</h2><p>Examples the robustness metrics count against a system, by metric; each opens the filtered examples list.</p><ul class="flips">';
    Object.keys(d.flip_counts).forEach(function (k) {
      var f = d.flip_counts[k];
      h += "<li>" + (f.rows ? '<a href="examples.html#flip=' + esc(k) + '">' + esc(f.label) + "</a>" : esc(f.label)) +
        " (" + esc(f.metric) + "): " + RR.count(f.rows, "example × system row") + ". <span class=\"muted\">" + esc(f.means) + "</span>" +
        (f.errors.length ? ' <span class="bad">not computed for ' + f.errors.length + " group(s)</span>" : "") + "</li>";
    });
    h += "</ul></section>";

    var multi = d.pairs.concat(d.pairs_apart).some(function (p) { return p.dataset !== (d.pairs[0] || d.pairs_apart[0]).dataset; });
    function pairName(p) {
      return esc(p.label) + ' <span class="muted">(' + esc(p.differs_in) + (multi ? ", " + esc(p.dataset) : "") + ")</span>";
    }
    h += '<section id="pairs"><h2>McNemar pairs</h2><p>Pairs of systems the paired tests compare: the same dataset, one ' +
      "factor apart, measured on the same examples and the same (retriever, k, order) cells. Each opens the examples list " +
      "at the examples where one is right and the other wrong.</p>";
    h += d.pairs.length ? '<ul class="pairs" id="pairs-compared">' + d.pairs.map(function (p, i) {
      return '<li><a href="examples.html#pair=' + i + '">' + pairName(p) + "</a>: " + p.examples + " discordant example(s)</li>";
    }).join("") + "</ul>" : '<p class="muted">No pair of systems is comparable.</p>';
    if (d.pairs_apart.length) {
      h += '<h3>Not compared</h3><p>No McNemar filter for these pairs (the report does not test them either):</p>' +
        '<ul class="pairs" id="pairs-apart">' + d.pairs_apart.map(function (p) {
          return "<li>" + pairName(p) + ': <span class="reason">' + esc(p.reason) + "</span></li>";
        }).join("") + "</ul>";
    }
    h += "</section>";

    ran.forEach(function (sec) {
      h += '<section id="sec-' + esc(sec.name) + '" class="section"><h2>' + esc(sec.title) + "</h2>";
      if (sec.error) h += '<p class="bad">Failed (' + esc(sec.name) + "): <code>" + esc(sec.error) + "</code></p>";
      /* a section of verdicts (the paper's): one line of counts per table, its items one click away */
      var judged = sec.items.filter(function (it) { return it.verdicts; });
      judged.forEach(function (t) {
        var counts = Object.keys(t.verdicts).sort(function (a, b) { return t.verdicts[b] - t.verdicts[a]; });
        h += '<p class="verdicts" data-table="' + esc(t.table) + '"><strong>' + esc(t.title) + "</strong>: " +
          (counts.length ? counts.map(function (v) { return t.verdicts[v] + " " + esc(v); }).join(" · ") : '<span class="muted">no rows</span>') + "</p>";
      });
      if (judged.length) h += '<details class="fold"><summary>' + RR.count(sec.items.length, "table") + " of this section</summary>";
      sec.items.forEach(function (it) {
        if (it.table) {
          h += "<h3>" + esc(it.title) + "</h3>";
          if (it.caption) h += '<p class="caption">' + esc(it.caption) + "</p>";
          h += tableHtml(it);
          h += '<p class="links"><a href="tables/' + esc(it.table) + '.csv">csv</a></p>';
        } else {
          h += "<h3>" + esc(it.title) + "</h3>";
          if (it.caption) h += '<p class="caption">' + esc(it.caption) + "</p>";
          h += '<figure><img loading="lazy" src="figures/' + esc(it.figure) + '.png" alt="' + esc(it.title) + '"' +
            (it.width && it.height ? ' width="' + it.width + '" height="' + it.height + '"' : "") + "></figure>";
        }
      });
      if (judged.length) h += "</details>";
      h += "</section>";
    });
    document.getElementById("main").innerHTML = h;
    document.querySelectorAll("#main table.report").forEach(RR.sortable);
    document.body.setAttribute("data-ready", "1");
  }

  RR.require("data/overview.js", "overview", null).then(render).catch(RR.fail);
})();
