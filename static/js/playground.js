// The playground's progressive enhancement. Without this file everything still works: forms post
// and the server answers with the whole page. With it, after an htmx swap focus lands on the verdict,
// the 400 message of a malformed form is shown in place instead of being dropped, and a move sent
// while a switch change is still in flight waits for the new switches instead of racing them.
// Copy buttons and the checks animation are the site's (static/js/app.js): same markup, same behaviour.
(function () {
  "use strict";

  function inPlayground(el) {
    return Boolean(el && el.closest && el.closest("[data-playground]"));
  }

  function isSwitches(el) {
    return Boolean(el && el.closest && el.closest("form.pg-switches"));
  }

  function widget() {
    return document.getElementById("pg-widget");
  }

  // htmx does not swap 4xx answers by default; a playground 400 is a message meant for the learner.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    if (detail.xhr && detail.xhr.status === 400 && inPlayground(detail.target)) {
      detail.shouldSwap = true;
      detail.isError = false;
    }
  });

  // -- a switch change in flight: moves wait for it ------------------------------------------------
  // Changing a switch replaces the whole widget. A move sent meanwhile would carry the old switches
  // (the old form), or, if its new form is not wired up by htmx yet, navigate the whole page. So
  // from the switch request until the new widget has settled, a move or custom retry is held back
  // and sent again, from the new widget, once it is ready.
  var switching = false;
  var queued = null;

  function setBusy(busy) {
    var el = widget();
    if (!el) { return; }
    if (busy) {
      el.setAttribute("aria-busy", "true");
    } else {
      el.removeAttribute("aria-busy");
      el.removeAttribute("data-queued");
    }
  }

  function flush() {
    var wanted = queued;
    queued = null;
    if (!wanted) { return; }
    var form = null;
    if (wanted.move) {
      var button = document.querySelector("[data-playground] [data-move='" + wanted.move + "']");
      form = button && button.form;
    } else {
      form = document.querySelector("[data-playground] form.pg-custom-form");
    }
    if (form) {
      if (form.requestSubmit) { form.requestSubmit(); } else { window.htmx.trigger(form, "submit"); }
    }
  }

  // The notice that the move on show was played again sits just above the switches. Replacing the
  // widget can leave the page scrolled a few lines further than before (the old widget's height and
  // the browser's scroll anchoring both move it), so bring the notice back into view when it is out
  // of it: the learner who flipped a switch reads what it did without hunting for it. Instant, no
  // smooth scrolling, so it needs nothing for reduced motion.
  function showReplayed() {
    var notice = document.getElementById("pg-replayed");
    if (!notice) { return; }
    var box = notice.getBoundingClientRect();
    if (box.top < 0 || box.bottom > window.innerHeight) {
      notice.scrollIntoView({ block: "nearest" });
    }
  }

  function switched() {
    if (!switching) { return; }
    switching = false;
    setBusy(false);
    showReplayed();
    flush();
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    if (isSwitches(event.detail && event.detail.elt)) {
      switching = true;
      setBusy(true);
    }
  });

  // The new widget is in place and processed: its forms carry the new switches.
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.target;
    if (switching && target && (target.id === "pg-widget" || (target.querySelector && target.querySelector("#pg-widget")))) {
      switched();
    }
  });
  ["htmx:responseError", "htmx:sendError", "htmx:timeout", "htmx:swapError"].forEach(function (name) {
    document.addEventListener(name, function (event) {
      if (isSwitches(event.detail && event.detail.elt)) { switched(); }
    });
  });

  // Capture phase: runs before htmx's own handler on the form, and before the browser navigates.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!switching || !inPlayground(form) || isSwitches(form)) { return; }
    event.preventDefault();
    event.stopImmediatePropagation();
    var button = form.querySelector("[data-move]");
    queued = button ? { move: button.getAttribute("data-move") } : { custom: true };
    var el = widget();
    if (el) { el.setAttribute("data-queued", queued.move || "custom"); }
  }, true);

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
