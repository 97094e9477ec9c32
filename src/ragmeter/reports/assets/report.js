/* ragmeter report: marks rendered charts and drives the explorer's filters. No network. */
(function () {
  "use strict";
  var body = document.body;
  var data = { samples: [] };
  try {
    data = JSON.parse(document.getElementById("rm-data").textContent);
    body.setAttribute("data-json", "ok");
  } catch (e) {
    body.setAttribute("data-json", "error");
    console.error("ragmeter: cannot parse report data: " + e);
  }

  var charts = document.querySelectorAll("svg.rm-chart");
  var rendered = 0;
  Array.prototype.forEach.call(charts, function (chart) {
    var marks = chart.querySelectorAll("rect, line, circle, polyline, path").length;
    var box = chart.getBoundingClientRect();
    if (marks > 0 && box.width > 0 && box.height > 0) {
      chart.setAttribute("data-rendered", String(marks));
      rendered += 1;
    }
  });
  body.setAttribute("data-charts", String(charts.length));
  body.setAttribute("data-charts-rendered", String(rendered));

  var filter = document.getElementById("rm-filter");
  var qtype = document.getElementById("rm-type");
  var tier = document.getElementById("rm-tier");
  var onlyUnscored = document.getElementById("rm-unscored");
  var shown = document.getElementById("rm-shown");
  var table = document.getElementById("rm-samples");
  var rows = document.querySelectorAll("#rm-samples tbody tr.rm-sample");
  function detailOf(row) {
    var id = row.getAttribute("data-detail");
    return id ? document.getElementById(id) : null;
  }
  /* a row's details (contexts, answer, scores, judge reasons) open in a full-width row below */
  Array.prototype.forEach.call(rows, function (row) {
    var opener = row.querySelector("details");
    var detail = detailOf(row);
    if (opener && detail) {
      opener.addEventListener("toggle", function () { detail.hidden = !opener.open; });
    }
  });
  function apply() {
    var q = filter ? filter.value.toLowerCase().trim() : "";
    var wantType = qtype ? qtype.value : "";
    var wantTier = tier ? tier.value : "";
    var wantUnscored = onlyUnscored && onlyUnscored.checked;
    var visible = 0;
    Array.prototype.forEach.call(rows, function (row) {
      var tiers = " " + (row.getAttribute("data-tiers") || "") + " ";
      var detail = detailOf(row);
      var text = row.textContent + " " + (detail ? detail.textContent : "");
      var hit = (!q || text.toLowerCase().indexOf(q) >= 0) &&
        (!wantType || row.getAttribute("data-type") === wantType) &&
        (!wantTier || tiers.indexOf(" " + wantTier + " ") >= 0) &&
        (!wantUnscored || row.getAttribute("data-unscored") !== "0");
      row.style.display = hit ? "" : "none";
      if (detail) {
        var opened = row.querySelector("details");
        detail.hidden = !(hit && opened && opened.open);
      }
      if (hit) { visible += 1; }
    });
    if (table) {
      Array.prototype.forEach.call(table.querySelectorAll("[data-tier]"), function (cell) {
        cell.style.display = (!wantTier || cell.getAttribute("data-tier") === wantTier) ? "" : "none";
      });
    }
    if (shown) {
      var tpl = shown.getAttribute("data-template") || "{n} / {total}";
      shown.textContent = tpl.replace("{n}", visible).replace("{total}", rows.length);
    }
    body.setAttribute("data-visible-samples", String(visible));
  }
  function fromHash(name) {
    var m = new RegExp("[#&]" + name + "=([^&]*)").exec(window.location.hash);
    return m ? decodeURIComponent(m[1]) : null;
  }
  if (filter) {
    var q0 = fromHash("q");
    if (q0 !== null) { filter.value = q0; }
    filter.addEventListener("input", apply);
  }
  if (qtype) {
    var t0 = fromHash("type");
    if (t0 !== null) { qtype.value = t0; }
    qtype.addEventListener("change", apply);
  }
  if (tier) {
    var r0 = fromHash("tier");
    if (r0 !== null) { tier.value = r0; }
    tier.addEventListener("change", apply);
  }
  if (onlyUnscored) {
    if (fromHash("unscored") === "1") { onlyUnscored.checked = true; }
    onlyUnscored.addEventListener("change", apply);
  }
  apply();
  body.setAttribute("data-samples", String((data.samples || []).length));
  body.setAttribute("data-rendered", "true");
})();
