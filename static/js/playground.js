// The playground's progressive enhancement. Without this file everything still works: forms post,
// the server answers with the full page. With it: copy buttons, focus on the verdict after an htmx
// swap, a skippable checks animation, and the 400 fragment of a malformed form shown in place.
(function () {
  "use strict";

  function inPlayground(el) {
    return el && el.closest && el.closest("[data-playground]");
  }

  // Copy buttons are hidden in the markup: they only appear where they can work.
  function revealCopyButtons(root) {
    root.querySelectorAll("[data-pg-copy][hidden]").forEach(function (button) {
      button.hidden = false;
    });
    root.querySelectorAll("[data-pg-skip][hidden]").forEach(function (button) {
      button.hidden = false;
    });
  }

  function say(message) {
    var status = document.getElementById("pg-status");
    if (status) {
      status.textContent = message;
    }
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "pg-offscreen";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try {
        ok = document.execCommand("copy");
      } catch (err) {
        ok = false;
      }
      document.body.removeChild(area);
      if (ok) {
        resolve();
      } else {
        reject(new Error("copy failed"));
      }
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-pg-copy]");
    if (button) {
      var source = document.querySelector(button.getAttribute("data-pg-copy"));
      if (!source) {
        return;
      }
      copyText(source.textContent).then(
        function () {
          button.setAttribute("data-copied", "true");
          say("Copied to the clipboard.");
        },
        function () {
          say("Could not copy: select the text and copy it by hand.");
        }
      );
      return;
    }
    var skip = event.target.closest && event.target.closest("[data-pg-skip]");
    if (skip) {
      finishAnimation(skip);
    }
  });

  function finishAnimation(from) {
    var widget = inPlayground(from);
    if (widget) {
      widget.classList.add("pg-instant");
    }
  }

  // Escape skips the checks animation from anywhere in the playground.
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && inPlayground(event.target)) {
      finishAnimation(event.target);
    }
  });

  // A malformed playground form answers 400 with a message fragment: show it in place.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    if (detail.xhr && detail.xhr.status === 400 && inPlayground(detail.target)) {
      detail.shouldSwap = true;
      detail.isError = false;
    }
  });

  // After a swap: new copy buttons, and focus on the verdict (or the error) so it is read out.
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail.target;
    revealCopyButtons(document);
    if (target && target.id === "pg-result") {
      var verdict = target.querySelector("#pg-verdict");
      if (verdict) {
        verdict.focus();
      }
    }
  });

  function start() {
    revealCopyButtons(document);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
