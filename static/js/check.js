// The checker page's progressive enhancement. Without this file everything still works: the form posts,
// the run page refreshes itself until the report is ready. With it, a 400 (a URL that is not allowed, a
// missing token) is shown in place instead of being dropped by htmx, and focus moves to that message.
(function () {
  "use strict";

  function inChecker(el) {
    return Boolean(el && el.closest && el.closest("[data-checker]"));
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    if (detail.xhr && detail.xhr.status === 400 && inChecker(detail.target)) {
      detail.shouldSwap = true;
      detail.isError = false;
    }
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "check-area") { return; }
    var error = document.getElementById("check-error");
    if (error && target.contains(error)) { error.focus(); return; }
    var heading = document.getElementById("check-run-title");
    if (heading && target.contains(heading)) { heading.setAttribute("tabindex", "-1"); heading.focus(); }
  });
})();
