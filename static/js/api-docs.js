// The API docs page (Swagger UI): names for the controls Swagger renders without one (axe:
// "label", "button-name", "select-name") — the request body's textarea under "Try it out", the
// close button of the "Authorize" dialog, a parameter's value list (named after its parameter)
// and the examples list — and keyboard access to the example blocks that scroll (axe:
// "scrollable-region-focusable"). Swagger re-renders them, so each new one is named.
"use strict";

(function () {
  const NAMES = [
    ["textarea.body-param__text", () => "Request body (JSON)"],
    ["button.close-modal", () => "Close"],
    ["select.examples-select-element", () => "Examples"],
    [
      "tr[data-param-name] select",
      (element) => element.closest("tr").getAttribute("data-param-name"),
    ],
    [".opblock-section-request-body select", () => "Request body media type"],
    ["select", () => "Choose a value"],
  ];
  function name(root) {
    for (const [selector, label] of NAMES) {
      for (const element of root.querySelectorAll(selector)) {
        if (!element.hasAttribute("aria-label")) element.setAttribute("aria-label", label(element));
      }
    }
    for (const block of root.querySelectorAll(".highlight-code pre, pre.microlight")) {
      if (!block.hasAttribute("tabindex")) block.setAttribute("tabindex", "0");
    }
  }
  new MutationObserver(() => name(document)).observe(document.body, {
    childList: true,
    subtree: true,
  });
})();
