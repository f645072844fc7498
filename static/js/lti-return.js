// The LTI deep-linking return page: post the signed answer to the course platform as soon as the page loads
// (the CSP allows no inline script, and form-action allows that one platform). Without JavaScript the
// page's button posts the same form.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const form = document.querySelector("form[data-lti-autosubmit]");
  if (form) form.submit();
});
