// Keyboard shortcuts of the review desk; the only script the pages load (the CSP allows
// scripts from the desk itself and nothing inline). It only ticks inputs and submits
// the desk's own forms: the server checks everything.
(function () {
  "use strict";
  function typing(el) {
    if (!el) return false;
    if (el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable) return true;
    return el.tagName === "INPUT" && el.type !== "radio" && el.type !== "checkbox";
  }
  function tick(form, selector) {
    var input = form.querySelector(selector);
    if (input) input.checked = true;
    return Boolean(input);
  }
  document.addEventListener("keydown", function (e) {
    var form = document.getElementById("label-form");
    if (form && (e.ctrlKey || e.metaKey) && e.key === "Enter") {
      e.preventDefault();
      form.requestSubmit();
      return;
    }
    if (typing(document.activeElement)) {
      if (e.key === "Escape") document.activeElement.blur();
      return;
    }
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var key = e.key;
    if (key === "n") {
      var next = document.getElementById("next-form");
      if (next) { e.preventDefault(); next.requestSubmit(); }
      return;
    }
    if (!form) return;
    var done = false;
    if (key === "p" || key === "f" || key === "P" || key === "F") {
      var side = key === key.toUpperCase() ? 1 : 0;
      var value = key.toLowerCase() === "p" ? "pass" : "fail";
      done = tick(form, 'input[name="verdict_' + side + '"][value="' + value + '"]');
    } else if (/^[1-9]$/.test(key)) {
      done = tick(form, 'input[name="reason"][data-key="' + key + '"]');
    } else if (key === "e") {
      var note = form.querySelector("textarea[name=note]");
      if (note) { note.focus(); done = true; }
    } else if (key === "s") {
      form.requestSubmit();
      done = true;
    }
    if (done) e.preventDefault();
  });
})();
