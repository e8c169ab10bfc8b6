// memvault dashboard: the little the pages need beyond htmx. No inline script exists
// anywhere (the Content-Security-Policy forbids it); without JavaScript every page reads
// and every form posts as plain HTML.
"use strict";

// A form or button with data-confirm asks before it submits.
document.addEventListener("submit", function (event) {
  var form = event.target;
  var submitter = event.submitter;
  var message = (submitter && submitter.getAttribute("data-confirm")) || form.getAttribute("data-confirm");
  if (message && !window.confirm(message)) {
    event.preventDefault();
    event.stopImmediatePropagation();
  }
}, true);

// "Select all" checkboxes of a bulk form.
document.addEventListener("change", function (event) {
  var box = event.target;
  if (!box.matches || !box.matches("input[data-select-all]")) return;
  var form = box.form;
  if (!form) return;
  form.querySelectorAll("input[type=checkbox][name=ids]").forEach(function (other) {
    other.checked = box.checked;
  });
});

// Copy buttons next to secrets shown once.
document.addEventListener("click", function (event) {
  var button = event.target.closest ? event.target.closest("button[data-copy]") : null;
  if (!button) return;
  var target = document.getElementById(button.getAttribute("data-copy"));
  if (target && navigator.clipboard) {
    navigator.clipboard.writeText(target.textContent.trim());
    button.textContent = "Copied";
  }
});
