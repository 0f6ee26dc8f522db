// proctor report: table sorting and filtering, and the lazily built trace viewer.
// Agent and tool text is hostile by design: it only ever reaches the page through
// textContent, never as markup, attributes that load or run anything, or URLs.
(function () {
  "use strict";

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // Strings as they are; short values on one line, longer ones indented.
  function pretty(value) {
    if (typeof value === "string") return value;
    var flat = JSON.stringify(value);
    return flat.length <= 100 ? flat : JSON.stringify(value, null, 2);
  }

  function fixed(x, digits) {
    return typeof x === "number" ? x.toFixed(digits) : "—";
  }

  // A figure no one reported is "not measured", never $0; NaN or text is not a figure.
  function measured(x, digits, before, after) {
    return typeof x === "number" && isFinite(x)
      ? before + x.toFixed(digits) + after : "not measured";
  }

  function usageText(u) {
    var tokens = u.input_tokens === null && u.output_tokens === null ? "tokens not measured"
      : measured(u.input_tokens, 0, "", " in / ") + measured(u.output_tokens, 0, "", " out tokens");
    return tokens + " · " + measured(u.cost_usd, 4, "$", "") + " · " +
      measured(u.model_calls, 0, "", " model calls");
  }

  // -- per-task table: sort by a column, filter by text and status -------------------
  var table = document.getElementById("task-table");
  if (table) {
    var tbody = table.tBodies[0];
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, column) {
      var button = th.querySelector("button");
      if (!button) return;
      button.addEventListener("click", function () {
        var descending = th.getAttribute("aria-sort") === "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        var numeric = th.dataset.type === "num";
        var rows = Array.prototype.slice.call(tbody.rows);
        rows.sort(function (a, b) {
          var x = a.cells[column].dataset.v, y = b.cells[column].dataset.v;
          var order = numeric ? Number(x) - Number(y) : x.localeCompare(y);
          return descending ? -order : order;
        });
        rows.forEach(function (row) { tbody.appendChild(row); });
      });
    });
    var search = document.getElementById("task-filter");
    var status = document.getElementById("task-status");
    var shown = document.getElementById("task-count");
    var filter = function () {
      var needle = search.value.trim().toLowerCase(), want = status.value, count = 0;
      Array.prototype.forEach.call(tbody.rows, function (row) {
        var ok = (!needle || row.textContent.toLowerCase().indexOf(needle) !== -1) &&
          (want === "all" || row.dataset.status === want ||
           (want === "violations" && row.dataset.violations !== "0"));
        row.classList.toggle("hidden", !ok);
        if (ok) count += 1;
      });
      shown.textContent = count + " of " + tbody.rows.length + " tasks shown";
    };
    search.addEventListener("input", filter);
    status.addEventListener("change", filter);
    filter();
  }

  // -- trace viewer ------------------------------------------------------------------
  var dialog = document.getElementById("trace");
  var body = document.getElementById("trace-body");
  var title = document.getElementById("trace-title");

  function focusStep(seq) {
    var target = document.getElementById("step-" + Number(seq));
    if (!target) return;
    Array.prototype.forEach.call(body.querySelectorAll(".step.focus"), function (s) {
      s.classList.remove("focus");
    });
    target.classList.add("focus");
    target.scrollIntoView({ block: "center" });
  }

  function section(name) {
    var wrap = el("section", "trace-part");
    wrap.appendChild(el("h3", null, name));
    body.appendChild(wrap);
    return wrap;
  }

  function renderChanges(changes) {
    var box = el("div", "diff mono");
    changes.forEach(function (c) {
      // [path, before, after, existed, exists]
      if (c[3]) box.appendChild(el("div", "del", "- " + c[0] + ": " + JSON.stringify(c[1])));
      if (c[4]) box.appendChild(el("div", "add", "+ " + c[0] + ": " + JSON.stringify(c[2])));
    });
    return box;
  }

  function renderStep(s) {
    // [seq, t, kind, call_id, text, detail, changes, flag]
    var item = el("li", "step " + s[2] + (s[7] ? " " + s[7] : ""));
    item.id = "step-" + Number(s[0]);
    var head = el("div", "head");
    head.appendChild(el("span", "seq mono", "#" + s[0]));
    head.appendChild(el("span", "muted mono", fixed(s[1], 2) + " s"));
    head.appendChild(el("span", "kind", s[2].replace(/_/g, " ")));
    if (s[3]) head.appendChild(el("span", "muted mono", s[3]));
    head.appendChild(el("span", "text", s[4]));
    item.appendChild(head);
    if (s[5] !== null && s[5] !== undefined) item.appendChild(el("pre", null, pretty(s[5])));
    if (s[6] && s[6].length) item.appendChild(renderChanges(s[6]));
    return item;
  }

  function renderCheck(c) {
    // [name, kind, passed, score, severity, evidence, steps, blocks]
    var item = el("li", "check " + (c[2] ? "passed" : "failed"));
    var head = el("div", "head");
    head.appendChild(el("span", c[2] ? "status-passed" : "status-failed", c[2] ? "pass" : "FAIL"));
    head.appendChild(el("strong", "mono", c[0]));
    head.appendChild(el("span", "muted", c[1] + (c[4] ? " · " + c[4] : "") +
      " · score " + fixed(c[3], 2) + (c[7] ? " · fails the trial" : "")));
    c[6].forEach(function (seq) {
      var go = el("button", "goto", "step " + seq);
      go.type = "button";
      go.addEventListener("click", function () { focusStep(seq); });
      head.appendChild(go);
    });
    item.appendChild(head);
    // Failed checks get readable evidence; passed ones one compact line.
    item.appendChild(el("pre", null, c[2] ? JSON.stringify(c[5]) : pretty(c[5])));
    return item;
  }

  function openTrace(index) {
    var blob = document.getElementById("trial-" + index);
    if (!blob) return;
    var d = JSON.parse(blob.textContent);
    title.textContent = d.task + " · trial " + d.trial;
    body.replaceChildren();
    var facts = el("p", "facts");
    facts.appendChild(el("span", "status-" + d.status, d.status));
    facts.appendChild(document.createTextNode(
      " · score " + fixed(d.score, 2) + " · " + measured(d.latency_s, 2, "", " s") +
      (d.simulated_s ? " (" + measured(d.simulated_s, 2, "", " s simulated") + ")" : "") +
      " · " + usageText(d.usage) + " · seed " + d.seed + " · trace " + d.trace_id));
    body.appendChild(facts);
    if (d.error) body.appendChild(el("pre", "error", d.error));
    var failed = d.checks.filter(function (c) { return !c[2]; });
    if (failed.length) {
      body.appendChild(el("p", "status-failed", "Failed checks: " +
        failed.map(function (c) { return c[0]; }).join(", ")));
    }
    var prompt = section("Prompt");
    prompt.appendChild(d.prompt === null
      ? el("p", "muted", "The prompt is not stored with the run; pass --tasks to proctor report.")
      : el("pre", null, d.prompt));
    // The answer event closes every trace; it gets its own heading.
    var steps = el("ol", "steps"), answer = el("ol", "steps");
    d.steps.forEach(function (s) {
      (s[2] === "answer" ? answer : steps).appendChild(renderStep(s));
    });
    section("Steps (" + steps.childElementCount + ")").appendChild(steps);
    section("Final answer").appendChild(answer);
    var checks = el("ul", "checks");
    d.checks.forEach(function (c) { checks.appendChild(renderCheck(c)); });
    section("Checks (" + failed.length + " failed of " + d.checks.length + ")").appendChild(checks);
    if (!dialog.open) dialog.showModal();
    body.parentNode.scrollTop = 0;
  }

  function fromHash() {
    var match = /^#trace-(\d+)$/.exec(location.hash);
    if (match) openTrace(Number(match[1]));
  }

  document.getElementById("trace-close").addEventListener("click", function () {
    dialog.close();
  });
  dialog.addEventListener("close", function () {
    if (/^#trace-/.test(location.hash)) {
      history.replaceState(null, "", location.pathname + location.search);
    }
  });
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
