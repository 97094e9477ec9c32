/* ragmeter report: marks rendered charts and drives the per-sample filter. No network. */
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
  var onlyUnscored = document.getElementById("rm-unscored");
  var shown = document.getElementById("rm-shown");
  var rows = document.querySelectorAll("#rm-samples tbody tr.rm-sample");
  function apply() {
    var q = filter ? filter.value.toLowerCase().trim() : "";
    var wantUnscored = onlyUnscored && onlyUnscored.checked;
    var visible = 0;
    Array.prototype.forEach.call(rows, function (row) {
      var hit = (!q || row.textContent.toLowerCase().indexOf(q) >= 0) &&
        (!wantUnscored || row.getAttribute("data-unscored") !== "0");
      row.style.display = hit ? "" : "none";
      if (hit) { visible += 1; }
    });
    if (shown) { shown.textContent = visible + " / " + rows.length + " samples"; }
    body.setAttribute("data-visible-samples", String(visible));
  }
  if (filter) {
    var m = /[#&]q=([^&]*)/.exec(window.location.hash);
    if (m) { filter.value = decodeURIComponent(m[1]); }
    filter.addEventListener("input", apply);
  }
  if (onlyUnscored) { onlyUnscored.addEventListener("change", apply); }
  apply();
  body.setAttribute("data-samples", String((data.samples || []).length));
  body.setAttribute("data-rendered", "true");
})();
