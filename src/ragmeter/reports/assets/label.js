/* The labelling page of `ragmeter label`: one item at a time, keys 0/1/2 grade,
   s skips, ← / b goes back, → forward. Every answer is POSTed (JSON, the viewer's token) and
   the next item shown only once the server has saved it; keys pressed meanwhile wait their
   turn. Sample text is set with textContent only. The page's data comes after this script in
   the document: it starts once the document is parsed. */
(function () {
  "use strict";
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
function start() {
  var data = JSON.parse(document.getElementById("rm-data").textContent);
  if (data.kind !== "label") { return; }
  var root = document.getElementById("label");
  var words = data.words;
  var state = null;
  var queue = Promise.resolve();
  var saves = 0;
  var raterInput = document.getElementById("lb-rater");

  function say(text, bad) {
    var el = document.getElementById("lb-status");
    el.textContent = text;
    el.className = bad ? "bad" : "";
  }
  function fill(template, fields) {
    return template.replace(/\{(\w+)\}/g, function (m, k) {
      return fields[k] === undefined ? m : String(fields[k]);
    });
  }
  function rater() { return raterInput.value.trim(); }
  function answer(r) {
    return r.json().then(function (body) {
      if (!r.ok) { throw new Error(body.error || ("HTTP " + r.status)); }
      return body;
    });
  }
  function section(title, node) {
    var s = document.createElement("section");
    var h = document.createElement("h3");
    h.textContent = title;
    s.appendChild(h);
    s.appendChild(node);
    return s;
  }
  function text(value) {
    var d = document.createElement("div");
    d.className = "text";
    d.textContent = value === null || value === undefined || value === "" ? words.lb_none
      : value;
    return d;
  }
  function render(s) {
    state = s;
    var box = document.getElementById("lb-item");
    box.textContent = "";
    document.getElementById("lb-progress").textContent = fill(words.lb_progress, {
      i: Math.min(s.index + 1, s.total), n: s.total, done: s.labelled });
    Array.prototype.forEach.call(document.querySelectorAll("#lb-keys button"), function (b) {
      b.classList.toggle("chosen", s.label !== undefined && s.label !== null &&
                         b.getAttribute("data-key") === String(s.label));
    });
    if (s.finished) {
      box.appendChild(text(words.lb_finished));
      root.setAttribute("data-state", "finished");
    } else {
      var it = s.item;
      data.fields.forEach(function (f) {
        if (f === "contexts") {
          var ol = document.createElement("ol");
          ol.className = "ctx";
          (it.contexts || []).forEach(function (c) {
            var li = document.createElement("li");
            li.appendChild(text(c));
            ol.appendChild(li);
          });
          if (!(it.contexts || []).length) { ol.appendChild(text(null)); }
          box.appendChild(section(words.lb_contexts, ol));
        } else {
          box.appendChild(section(words["lb_" + f], text(it[f])));
        }
      });
      if (s.was_skipped && (s.label === null || s.label === undefined)) {
        box.appendChild(text(words.lb_skipped_note));
      }
      root.setAttribute("data-state", "item");
      root.setAttribute("data-sample", it.sample_id);
    }
    root.setAttribute("data-index", String(s.index));
    root.setAttribute("data-labelled", String(s.labelled));
    document.body.setAttribute("data-saves", String(saves));
  }
  function load(i) {
    var q = "?rater=" + encodeURIComponent(rater()) + (i === null ? "" : "&i=" + i);
    return fetch(data.api + q, { cache: "no-store" }).then(answer).then(render);
  }
  function post(body) {
    say(words.lb_saving, false);
    return fetch(data.api, {
      method: "POST", cache: "no-store", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Ragmeter-Token": data.token },
      body: JSON.stringify(body)
    }).then(answer).then(function (next) {
      saves += 1;
      say(words.lb_saved, false);
      render(next);
    });
  }
  function act(key) {
    if (!state) { return load(null); }
    if (key === "b") { return state.index > 0 ? load(state.index - 1) : Promise.resolve(); }
    if (key === "f") {
      return state.index < state.total ? load(state.index + 1) : Promise.resolve();
    }
    if (state.finished) { return Promise.resolve(); }
    var base = { rater: rater(), index: state.index, sample_id: state.item.sample_id };
    if (key === "s") { return post(Object.assign({ action: "skip" }, base)); }
    var grade = parseInt(key, 10);
    if (data.grades.indexOf(grade) < 0) { return Promise.resolve(); }
    return post(Object.assign({ action: "label", label: grade }, base));
  }
  function enqueue(key) {
    queue = queue.then(function () { return act(key); }).catch(function (err) {
      say(fill(words.lb_error, { error: err.message }), true);
    });
  }
  var KEYS = { "0": "0", "1": "1", "2": "2", "s": "s", "S": "s", "b": "b", "B": "b",
               "ArrowLeft": "b", "Backspace": "b", "ArrowRight": "f", "n": "f" };
  document.addEventListener("keydown", function (e) {
    var tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA" || e.ctrlKey || e.metaKey || e.altKey) {
      return;
    }
    var key = KEYS[e.key];
    if (key === undefined) { return; }
    e.preventDefault();
    enqueue(key);
  });
  Array.prototype.forEach.call(document.querySelectorAll("#lb-keys button"), function (b) {
    b.addEventListener("click", function () { enqueue(b.getAttribute("data-key")); });
  });
  raterInput.addEventListener("change", function () {
    queue = queue.then(function () { return load(null); }).catch(function (err) {
      say(fill(words.lb_error, { error: err.message }), true);
    });
  });
  enqueue("start");
}
}());
