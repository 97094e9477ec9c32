/* ragmeter view: sortable tables, keyboard navigation and the live run page. No network
   beyond this server's own /api/live endpoint (same origin). */
(function () {
  "use strict";
  var body = document.body;

  /* ---- sortable tables: click (or Enter on) a header; numbers sort as numbers */
  function cellKey(td) {
    var text = (td ? td.textContent : "").trim();
    var num = parseFloat(text.replace(/[^0-9eE+\-.]/g, " ").trim().split(" ")[0]);
    return { text: text, num: /^[\-+]?[0-9.]/.test(text) && !isNaN(num) ? num : null };
  }
  Array.prototype.forEach.call(document.querySelectorAll("table"), function (table) {
    var head = table.tHead;
    if (!head || !table.tBodies.length) { return; }
    Array.prototype.forEach.call(head.rows[0].cells, function (th, col) {
      th.classList.add("sortable");
      th.tabIndex = 0;
      th.setAttribute("aria-sort", "none");
      function sort() {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(head.rows[0].cells, function (x) {
          x.setAttribute("aria-sort", "none");
        });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var tb = table.tBodies[0];
        var rows = Array.prototype.slice.call(tb.rows);
        rows.sort(function (a, b) {
          var x = cellKey(a.cells[col]), y = cellKey(b.cells[col]);
          var c = (x.num !== null && y.num !== null) ? x.num - y.num
            : x.text.localeCompare(y.text);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { tb.appendChild(r); });
      }
      th.addEventListener("click", function (e) {
        if (e.target.tagName !== "INPUT" && e.target.tagName !== "A") { sort(); }
      });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  });

  /* ---- keyboard: j/k move through the main table's rows, Enter opens the row's link,
     "/" goes to the first filter field, [ and ] to the previous / next page */
  var current = -1;
  function mainRows() {
    /* the run page: the sample explorer's rows still shown by its filters */
    var explorer = document.querySelector("#rm-samples tbody");
    if (explorer) {
      return Array.prototype.filter.call(explorer.rows, function (r) {
        return r.classList.contains("rm-sample") && r.style.display !== "none" && !r.hidden;
      });
    }
    var t = document.querySelector("main table tbody, body > table tbody, .scroll table tbody");
    return t ? Array.prototype.slice.call(t.rows) : [];
  }
  function focusRow(i) {
    var rows = mainRows();
    if (!rows.length) { return; }
    current = Math.max(0, Math.min(rows.length - 1, i));
    rows.forEach(function (r) { r.classList.remove("kb-focus"); });
    rows[current].classList.add("kb-focus");
    rows[current].scrollIntoView({ block: "nearest" });
    body.setAttribute("data-kb-row", String(current));
  }
  document.addEventListener("keydown", function (e) {
    var tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || e.ctrlKey || e.metaKey ||
        e.altKey) { return; }
    if (e.key === "j") { focusRow(current + 1); e.preventDefault(); }
    else if (e.key === "k") { focusRow(current - 1); e.preventDefault(); }
    else if (e.key === "Enter" && current >= 0) {
      var link = mainRows()[current] && mainRows()[current].querySelector("a[href]");
      if (link) { window.location.href = link.getAttribute("href"); }
    } else if (e.key === "/") {
      var field = document.querySelector("form.filters input:not([type=hidden])");
      if (field) { field.focus(); e.preventDefault(); }
    } else if (e.key === "[" || e.key === "]") {
      var rel = document.querySelector(e.key === "[" ? "a[rel=prev]" : "a[rel=next]");
      if (rel) { window.location.href = rel.getAttribute("href"); }
    }
  });

  /* ---- runs page: the running runs' progress and state, refreshed in place */
  var liveRuns = document.getElementById("live-runs");
  if (liveRuns) {
    var runWords = JSON.parse(liveRuns.getAttribute("data-words") || "{}");
    var refresh = function () {
      fetch(liveRuns.getAttribute("data-src"), { cache: "no-store" }).then(function (r) {
        return r.json();
      }).then(function (data) {
        var byId = {};
        data.runs.forEach(function (x) { byId[x.run_id] = x; });
        Array.prototype.forEach.call(liveRuns.tBodies[0].rows, function (tr) {
          var x = byId[tr.getAttribute("data-run")];
          tr.cells[2].textContent = x ? (runWords["st_" + x.state] || x.state)
            + (x.error ? ": " + x.error : "") : (runWords.st_stored || "finished");
          if (x) { tr.cells[3].textContent = x.done + "/" + (x.total === null ? "?" : x.total); }
        });
        body.setAttribute("data-live-polls",
          String(+(body.getAttribute("data-live-polls") || 0) + 1));
        setTimeout(refresh, 3000);
      }).catch(function () { setTimeout(refresh, 10000); });
    };
    setTimeout(refresh, 2000);
  }

  /* ---- live run: poll the small JSON endpoint and redraw the progress in place */
  var live = document.getElementById("live");
  if (!live) { return; }
  var src = live.getAttribute("data-src");
  var polls = 0;
  function el(tag, text, cls) {
    var x = document.createElement(tag);
    if (text !== undefined && text !== null) { x.textContent = String(text); }
    if (cls) { x.className = cls; }
    return x;
  }
  /* the form of a counted word: English (one, many), Russian (one, few, many) */
  function plural(n, forms, lang) {
    if (forms.length < 3 || lang !== "ru") { return n === 1 ? forms[0] : forms[forms.length - 1]; }
    var a = Math.abs(n) % 100, b = a % 10;
    if (b === 1 && a !== 11) { return forms[0]; }
    if (b >= 2 && b <= 4 && (a < 12 || a > 14)) { return forms[1]; }
    return forms[2];
  }
  function fmt(v) { return v === null || v === undefined ? "–" : Number(v).toFixed(3); }
  function draw(run) {
    var words = JSON.parse(live.getAttribute("data-words") || "{}");
    document.getElementById("live-state").textContent = words["st_" + run.state] || run.state;
    live.setAttribute("data-state", run.state);
    live.setAttribute("data-done", String(run.done));
    var box = document.createDocumentFragment();
    run.tiers.forEach(function (tier) {
      var sec = el("section", null, "live-tier");
      sec.setAttribute("data-tier", tier.tier);
      sec.appendChild(el("h2", tier.tier));
      var bar = el("progress");
      bar.max = tier.total || Math.max(tier.done, 1);
      bar.value = tier.done;
      sec.appendChild(bar);
      sec.appendChild(el("span", " " + tier.done + " / " + (tier.total === null ? "?" : tier.total)
        + " · " + tier.batches + " " + plural(tier.batches, (words.batches || "batches")
          .split("|"), words.lang)
        + (tier.status ? " · " + (words["st_" + tier.status] || tier.status) : ""), "count"));
      if (tier.values.length) {
        var table = el("table", null, "live-values");
        var head = table.createTHead().insertRow();
        [words.system, words.metric, words.mean, "n", words.unscored].forEach(function (h, i) {
          head.appendChild(el("th", h, i >= 2 ? "num" : ""));
        });
        var tb = table.createTBody();
        tier.values.forEach(function (v) {
          var tr = tb.insertRow();
          tr.appendChild(el("td", v.system));
          tr.appendChild(el("td", v.metric));
          tr.appendChild(el("td", fmt(v.mean) + (v.ci_low === null || v.ci_low === undefined
            ? "" : " [" + fmt(v.ci_low) + ", " + fmt(v.ci_high) + "]"), "num"));
          tr.appendChild(el("td", v.n, "num"));
          tr.appendChild(el("td", v.n_unscored, "num"));
        });
        sec.appendChild(table);
      }
      if (tier.latency && tier.latency.length) {
        sec.appendChild(el("h3", words.latency_block || "Latency and throughput"));
        var lt = el("table", null, "live-latency");
        var lh = lt.createTHead().insertRow();
        [words.target, words.metric, words.value, "n", words.direction].forEach(function (h, i) {
          lh.appendChild(el("th", h, i === 2 || i === 3 ? "num" : ""));
        });
        var lb = lt.createTBody();
        tier.latency.forEach(function (v) {
          var tr = lb.insertRow();
          tr.setAttribute("data-metric", v.metric);
          tr.appendChild(el("td", v.system));
          tr.appendChild(el("td", v.metric));
          tr.appendChild(el("td", fmt(v.value) + " " + (words["unit_" + v.unit] || v.unit),
            "num"));
          tr.appendChild(el("td", v.n, "num"));
          tr.appendChild(el("td", v.higher_is_better ? words.higher_better
            : words.lower_better));
        });
        sec.appendChild(lt);
      }
      box.appendChild(sec);
    });
    var tiers = document.getElementById("live-tiers");
    tiers.textContent = "";
    tiers.appendChild(box);
    if (run.state === "stored") {
      var done = document.getElementById("live-stored");
      if (done) { done.hidden = false; }
    }
  }
  function poll() {
    fetch(src, { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (run) {
      polls += 1;
      body.setAttribute("data-polls", String(polls));
      draw(run);
      if (run.state !== "stored") { setTimeout(poll, 1500); }
    }).catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1000);
})();
