// The API docs page (Swagger UI): names for the two controls Swagger renders without one
// (axe: "label", "button-name") — the request body's textarea under "Try it out" and the
// close button of the "Authorize" dialog. Swagger re-renders them, so each new one is named.
"use strict";

(function () {
  const NAMES = [
    ["textarea.body-param__text", "Request body (JSON)"],
    ["button.close-modal", "Close"],
  ];
  function name(root) {
    for (const [selector, label] of NAMES) {
      for (const element of root.querySelectorAll(selector)) {
        if (!element.hasAttribute("aria-label")) element.setAttribute("aria-label", label);
      }
    }
  }
  new MutationObserver(() => name(document)).observe(document.body, {
    childList: true,
    subtree: true,
  });
})();
