/* The build lesson launched from a course platform (templates/lti/build.html). A finished in-page run posts its
   report to the launch's grading address under htmx (build-runner.js), whose answer replaces #lti-build-grade.
   When the tool refuses it (403: the launch was opened in another browser session; 404: the launch ended; 400:
   input it cannot use), the answer is a fragment that says why: swap it in like any answer (htmx swaps 2xx
   only), so the learner reads why nothing was sent instead of a generic failure. */
"use strict";
document.addEventListener("htmx:beforeSwap", (event) => {
  const detail = event.detail;
  const status = detail.xhr ? detail.xhr.status : 0;
  if (detail.target && detail.target.id === "lti-build-grade" && status >= 400 && status < 500) {
    detail.shouldSwap = true;
    detail.isError = false;
  }
});
