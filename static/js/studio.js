// Context Studio: small behaviours of the pages (no inline scripts; htmx does the requests).
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
      if (!span.id) return;
      var control = document.querySelector('[aria-describedby~="' + span.id + '"]');
      if (control) {
        if (message) control.setAttribute("aria-invalid", "true");
        else control.removeAttribute("aria-invalid");
      }
    });
  }

  // --- unsaved edits: mark the edited cells, warn before leaving ---------------------------

  function isEdited(control) {
    var saved = control.getAttribute("data-saved");
    return saved !== null && control.value !== saved;
  }

  function markEdited(control) {
    var cell = control.closest("td, .more-field, .budget-field");
    if (cell) cell.classList.toggle("is-edited", isEdited(control));
    var group = control.closest("tbody[data-rule-layer]");
    if (group) {
      var edited = Array.prototype.some.call(group.querySelectorAll("[data-saved]"), isEdited);
      var badge = group.querySelector("[data-edited-badge]");
      if (badge) badge.hidden = !edited;
    }
  }

  function markAllEdited() {
    document.querySelectorAll("#editor-form [data-saved]").forEach(markEdited);
  }

  function hasUnsavedEdits() {
    var form = document.getElementById("editor-form");
    if (!form) return false;
    var badge = document.getElementById("unsaved-badge");
    if (badge && badge.getAttribute("data-dirty") === "true") return true;
    return Array.prototype.some.call(form.querySelectorAll("[data-saved]"), isEdited);
  }

  var leavingOnPurpose = false;

  document.addEventListener("click", function (event) {
    // Save and Discard leave the page on purpose: no warning for them.
    if (event.target.closest("[data-leaves-draft]")) leavingOnPurpose = true;
  });

  window.addEventListener("beforeunload", function (event) {
    if (leavingOnPurpose || !hasUnsavedEdits()) return;
    event.preventDefault();
    event.returnValue = "";  // older browsers need a value to show their dialog
  });

  // htmx requests that replace the page (boosted links, pushed URLs) ask first, too.
  document.addEventListener("htmx:confirm", function (event) {
    var elt = event.detail.elt;
    var navigates = elt && (elt.closest("[hx-boost]") || elt.hasAttribute("hx-push-url"));
    if (!navigates || leavingOnPurpose || !hasUnsavedEdits()) return;
    if (!window.confirm("You have unsaved edits. Leave this page and lose them?")) {
      event.preventDefault();
    }
  });

  document.addEventListener("input", function (event) {
    var el = event.target;
    if (el.hasAttribute && el.hasAttribute("data-saved")) markEdited(el);
    // Grey out selects left on the default rule's value.
    if (el.tagName === "SELECT" && el.closest(".rules")) {
      el.classList.toggle("is-default", el.value === "");
    }
  });

  document.addEventListener("DOMContentLoaded", markAllEdited);

  // --- the preview --------------------------------------------------------------------------

  document.addEventListener("htmx:beforeSwap", function (event) {
    // Too many requests: the answer is a message for the place the fragment would go.
    if (event.detail.xhr && event.detail.xhr.status === 429) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
    if (event.detail.target && event.detail.target.id === "preview") {
      openDetails = Array.prototype.map.call(
        event.detail.target.querySelectorAll("details[open][id]"), function (d) { return d.id; });
    }
  });

  // After the settle step htmx has wired the new content, so a reopened disclosure loads its
  // rows again (hx-trigger="toggle once"), for the new draft.
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail.target;
    if (!target || target.id !== "preview") return;
    openDetails.forEach(function (id) {
      var details = document.getElementById(id);
      if (details) details.open = true;
    });
    applyFieldErrors(target);
  });

  // --- small controls -------------------------------------------------------------------------

  function flash(button, text) {
    var before = button.textContent;
    button.textContent = text;
    setTimeout(function () { button.textContent = before; }, 1500);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy], [data-copy-href]");
    if (!button || !navigator.clipboard) return;
    var text;
    if (button.hasAttribute("data-copy-href")) {
      var link = document.getElementById(button.getAttribute("data-copy-href"));
      text = link ? link.href : "";
    } else {
      var source = document.getElementById(button.getAttribute("data-copy"));
      text = source ? source.textContent : "";
    }
    if (!text) return;
    navigator.clipboard.writeText(text).then(function () { flash(button, "Copied"); });
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

  // --- "Before you save": focus into the panel, and back where it was when it closes -------

  var focusBeforeImpact = null;

  document.addEventListener("htmx:beforeRequest", function (event) {
    var target = event.detail.target;
    if (!target || target.id !== "save-impact") return;
    if (!target.contains(document.activeElement)) focusBeforeImpact = document.activeElement;
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    var panel = event.detail.target;
    if (!panel || panel.id !== "save-impact") return;
    var heading = panel.querySelector("h2");
    if (heading) {
      heading.setAttribute("tabindex", "-1");
      heading.focus();
    } else if (focusBeforeImpact && document.contains(focusBeforeImpact)) {
      focusBeforeImpact.focus();  // "Keep editing": back to the field being edited
      focusBeforeImpact = null;
    }
  });

  // Escape in the panel is "Keep editing".
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape" || !event.target.closest || !event.target.closest("#save-impact")) return;
    var keep = document.querySelector("#save-impact [data-keep-editing]");
    if (keep) keep.click();
  });

  // No saved scenario: there is no impact to confirm, the save goes ahead (see
  // profile_save_impact, which answers with this event instead of an empty panel).
  document.addEventListener("save-impact-none", function () {
    var form = document.getElementById("editor-form");
    var save = document.getElementById("save-button");
    if (form && save) {
      leavingOnPurpose = true;
      form.requestSubmit(save);
    }
  });

  // --- the scenario status: a preview begun before a scenario was loaded or saved is stale ---
  // Its answer would put back the status of the scenario loaded before ("…, edited since it
  // was loaded") after the new one's: the load/save answer carries a fresh preview anyway.

  var requestCount = 0;
  var lastSampleRequest = 0;

  document.addEventListener("htmx:beforeRequest", function (event) {
    var xhr = event.detail.xhr;
    if (!xhr) return;
    xhr.studioRequest = ++requestCount;
    var target = event.detail.target;
    if (target && target.id === "sample-input") lastSampleRequest = xhr.studioRequest;
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    var xhr = event.detail.xhr;
    if (!target || target.id !== "preview" || !xhr || !xhr.studioRequest) return;
    if (xhr.studioRequest < lastSampleRequest) event.detail.shouldSwap = false;
  });

  // --- a currentness field on no item: warn (not an error) -----------------------------------
  // The field's datalist holds the metadata fields the layer's items have; an empty field
  // means the default one (data-default-field), which matters once a maximum age is set.

  function checkField(input) {
    var warning = document.getElementById(input.getAttribute("data-field-check"));
    var list = input.list;
    if (!warning || !list || warning.getAttribute("data-items") === "0") return;
    var age = document.getElementById(input.getAttribute("data-age-control"));
    var field = input.value.trim();
    if (!field && age && age.value.trim()) field = input.getAttribute("data-default-field");
    if (!field) { warning.textContent = ""; return; }  // no currentness limit: no date needed
    var known = Array.prototype.some.call(list.options, function (o) { return o.value === field; });
    warning.textContent = known ? "" :
      "No item of this layer has a “" + field + "” field: every item is undated.";
  }

  document.addEventListener("input", function (event) {
    var target = event.target;
    if (!target.hasAttribute) return;
    if (target.hasAttribute("data-field-check")) checkField(target);
    var field = target.id && document.querySelector('[data-age-control="' + target.id + '"]');
    if (field) checkField(field);
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-field-check]").forEach(checkField);
  });

  // --- the item's metadata: editing the rows or the JSON chooses that mode -------------------

  document.addEventListener("input", function (event) {
    var name = event.target.getAttribute && event.target.getAttribute("name");
    if (!name || !event.target.form) return;
    var mode = null;
    if (name === "metadata_text") mode = "json";
    else if (/^metadata_(key|value)_\d+$/.test(name)) mode = "rows";
    if (!mode) return;
    var radio = event.target.form.querySelector('input[name="metadata_mode"][value="' + mode + '"]');
    if (radio) radio.checked = true;
  });

  // Suggest a key from a name while the key has not been typed by hand ("Order history" ->
  // "order-history"); the key field names its source with data-key-from.
  function slugify(text) {
    return text.toLowerCase().normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
      .replace(/[^a-z0-9_-]+/g, "-").replace(/^[-_]+|-+$/g, "").replace(/-{2,}/g, "-").slice(0, 64);
  }

  document.addEventListener("input", function (event) {
    var source = event.target;
    if (!source.id) return;
    document.querySelectorAll('[data-key-from="' + source.id + '"]').forEach(function (key) {
      if (key.getAttribute("data-typed") === "true") return;
      key.value = slugify(source.value);
    });
  });

  document.addEventListener("input", function (event) {
    if (event.target.hasAttribute && event.target.hasAttribute("data-key-from")) {
      event.target.setAttribute("data-typed", event.target.value ? "true" : "false");
    }
  });

  // Controls that only look at the preview (the budget sweep's slider, data-no-preview) keep
  // their input events from the form: moving the slider must not re-resolve the preview. The
  // slider's own htmx trigger has run by then (it listens on the slider itself).
  function keepFromPreview() {
    var preview = document.getElementById("preview");
    if (!preview) return;
    preview.addEventListener("input", function (event) {
      if (event.target.closest && event.target.closest("[data-no-preview]")) event.stopPropagation();
    });
  }
  document.addEventListener("DOMContentLoaded", keepFromPreview);

  // The budget sweep's "Use this budget": the slider's budget goes into the budget field as an
  // unsaved edit (marked, previewed, the unsaved badge set), and the focus goes with it.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-use-budget]");
    if (!button) return;
    var slider = document.getElementById(button.getAttribute("data-use-budget"));
    var budget = document.getElementById("budget-input");
    if (!slider || !budget) return;
    budget.value = slider.value;
    budget.dispatchEvent(new Event("input", { bubbles: true }));
    budget.focus();
  });

  // Confirmation buttons (e.g. delete) name their question in data-confirm.
  document.addEventListener("submit", function (event) {
    var question = event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  });

  // Options of the "Use this request from code" panel (pin the sample's time) change the
  // snippets only: their input must not refresh the preview nor count as an unsaved edit.
  document.addEventListener("input", function (event) {
    if (event.target.closest && event.target.closest("[data-handoff-option]")) event.stopPropagation();
  }, true);
})();
