// Context Studio: small behaviours of the editor (no inline scripts; htmx does the requests).
(function () {
  "use strict";

  var openDetails = [];

  // Put the preview's validation messages beside the fields they concern.
  function applyFieldErrors(root) {
    var holder = root.querySelector("[data-field-errors]");
    if (!holder) return;
    var errors = {};
    try { errors = JSON.parse(holder.getAttribute("data-field-errors") || "{}"); } catch (e) { errors = {}; }
    document.querySelectorAll("#editor-form [data-error-for]").forEach(function (span) {
      var message = errors[span.getAttribute("data-error-for")] || "";
      span.textContent = message;
      var control = document.querySelector('[aria-describedby~="' + span.id + '"]');
      if (control) {
        if (message) control.setAttribute("aria-invalid", "true");
        else control.removeAttribute("aria-invalid");
      }
    });
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.target && event.detail.target.id === "preview") {
      openDetails = Array.prototype.map.call(
        event.detail.target.querySelectorAll("details[open][id]"), function (d) { return d.id; });
    }
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail.target;
    if (!target || target.id !== "preview") return;
    openDetails.forEach(function (id) {
      var details = document.getElementById(id);
      if (details) details.open = true;
    });
    applyFieldErrors(target);
  });

  // Grey out selects left on the default rule's value.
  document.addEventListener("change", function (event) {
    var el = event.target;
    if (el.tagName === "SELECT" && el.closest(".rules")) {
      el.classList.toggle("is-default", el.value === "");
    }
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent).then(function () {
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = "Copy"; }, 1500);
    });
  });

  // Ctrl+S (Cmd+S on a Mac) saves the editor instead of saving the page as a file.
  document.addEventListener("keydown", function (event) {
    if (!(event.ctrlKey || event.metaKey) || event.altKey || event.shiftKey) return;
    if (event.key !== "s" && event.key !== "S") return;
    var save = document.getElementById("save-button");
    if (!save) return;
    event.preventDefault();
    save.click();
  });

  // Confirmation buttons (e.g. delete) name their question in data-confirm.
  document.addEventListener("submit", function (event) {
    var question = event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  });
})();
