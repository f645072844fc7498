// The playground's progressive enhancement. Without this file everything still works: forms post
// and the server answers with the whole page. With it, after an htmx swap focus lands on the verdict,
// and the 400 message of a malformed form is shown in place instead of being dropped.
// Copy buttons and the checks animation are the site's (static/js/app.js): same markup, same behaviour.
(function () {
  "use strict";

  function inPlayground(el) {
    return Boolean(el && el.closest && el.closest("[data-playground]"));
  }

  // htmx does not swap 4xx answers by default; a playground 400 is a message meant for the learner.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    if (detail.xhr && detail.xhr.status === 400 && inPlayground(detail.target)) {
      detail.shouldSwap = true;
      detail.isError = false;
    }
  });

  // After a result (or an error) is swapped in, move focus to its first line so it is read out.
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "pg-result") {
      return;
    }
    var verdict = document.getElementById("pg-verdict");
    if (verdict && target.contains(verdict)) {
      verdict.focus();
    }
  });
})();
