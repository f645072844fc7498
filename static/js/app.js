/* MRTR Lab: progressive enhancement for every page. Without this file everything still works:
 * forms post, pages render whole, and the round-trip figure shows all six steps as a list.
 * With it: copy buttons, a step-through round-trip figure, focus and announcements after htmx
 * swaps, and checks that light up one after another (skippable; instant with reduced motion). */
(function () {
  "use strict";

  var reducedMotion = window.matchMedia ? window.matchMedia("(prefers-reduced-motion: reduce)") : null;
  var CHECK_DELAY_MS = 140;

  function prefersReducedMotion() {
    return Boolean(reducedMotion && reducedMotion.matches);
  }

  function announce(message) {
    var region = document.getElementById("announcer");
    if (!region || !message) { return; }
    region.textContent = "";
    // A fresh text node after clearing makes screen readers announce a repeated message too.
    window.setTimeout(function () { region.textContent = message; }, 50);
  }

  function each(root, selector, fn) {
    var scope = root && root.querySelectorAll ? root : document;
    if (scope.matches && scope.matches(selector)) { fn(scope); }
    Array.prototype.forEach.call(scope.querySelectorAll(selector), fn);
  }

  /* -- the check animation --------------------------------------------------------------------- */

  var running = [];

  function finishAnimations() {
    running.forEach(function (run) {
      run.timers.forEach(window.clearTimeout);
      run.list.classList.remove("is-animating");
      Array.prototype.forEach.call(run.list.children, function (li) { li.classList.add("is-lit"); });
    });
    running = [];
  }

  function animateChecks(list) {
    var items = Array.prototype.slice.call(list.children);
    items.forEach(function (li) { li.classList.remove("is-lit"); });
    if (prefersReducedMotion() || items.length === 0) {
      items.forEach(function (li) { li.classList.add("is-lit"); });
      return;
    }
    var run = { list: list, timers: [] };
    list.classList.add("is-animating");
    items.forEach(function (li, i) {
      run.timers.push(window.setTimeout(function () { li.classList.add("is-lit"); }, CHECK_DELAY_MS * (i + 1)));
    });
    run.timers.push(window.setTimeout(function () {
      list.classList.remove("is-animating");
      running = running.filter(function (r) { return r !== run; });
    }, CHECK_DELAY_MS * (items.length + 1)));
    running.push(run);
  }

  // Any key or click skips whatever is still lighting up.
  document.addEventListener("keydown", finishAnimations, true);
  document.addEventListener("pointerdown", finishAnimations, true);

  /* -- copy buttons (shared with the playground) --------------------------------------------------- */

  function initCopy(root) {
    if (!navigator.clipboard) { return; }
    each(root, "button.copy[data-copy-target]", function (button) {
      // A copy button whose text does not exist yet (the progress code) stays hidden: its owner shows it.
      if (button.hasAttribute("data-progress-copy")) { return; }
      button.hidden = false;
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button.copy[data-copy-target]") : null;
    if (!button) { return; }
    var target = document.querySelector(button.getAttribute("data-copy-target"));
    if (!target || !navigator.clipboard) { return; }
    var text = "value" in target && typeof target.value === "string" ? target.value : target.textContent;
    navigator.clipboard.writeText(text.trim()).then(function () {
      button.setAttribute("data-copied", "true");
      announce("Copied to the clipboard.");
      window.setTimeout(function () { button.removeAttribute("data-copied"); }, 2000);
    }, function () {
      announce("Copying did not work here; select the text and copy it instead.");
    });
  });

  /* -- the step-through figure ------------------------------------------------------------------- */

  function initStepper(figure) {
    if (figure.getAttribute("data-stepper-ready") === "true") { return; }
    var steps = Array.prototype.slice.call(figure.querySelectorAll("[data-step]"));
    var controls = figure.querySelector("[data-stepper-controls]");
    var prev = figure.querySelector("[data-step-prev]");
    var next = figure.querySelector("[data-step-next]");
    var status = figure.querySelector("[data-step-status]");
    var count = figure.querySelector("[data-step-count]");
    if (steps.length === 0 || !controls || !prev || !next || !status) { return; }
    figure.setAttribute("data-stepper-ready", "true");
    figure.classList.add("is-stepping");
    controls.hidden = false;
    var current = 0;

    function show(index, speak) {
      current = Math.max(0, Math.min(steps.length - 1, index));
      steps.forEach(function (step, i) { step.hidden = i !== current; });
      var step = steps[current];
      var replica = step.getAttribute("data-replica") || "client";
      figure.setAttribute("data-active-replica", replica);
      prev.setAttribute("aria-disabled", current === 0 ? "true" : "false");
      next.setAttribute("aria-disabled", current === steps.length - 1 ? "true" : "false");
      var caption = step.querySelector(".rt-caption");
      var text = "Step " + (current + 1) + " of " + steps.length + ": " + step.getAttribute("data-title");
      // The live region is visually hidden: the step's own heading and caption are what sighted readers see.
      status.textContent = speak && caption ? text + ". " + caption.textContent : text;
      if (count) { count.textContent = "Step " + (current + 1) + " of " + steps.length; }
      if (speak) {
        each(step, "ol.checks", animateChecks);
        // bring the step's title, caption and its own arrows under the sticky controls (instant: no motion)
        var top = step.getBoundingClientRect().top;
        var below = controls.getBoundingClientRect().bottom;
        if (top < below || top > window.innerHeight * 0.4) { step.scrollIntoView({ block: "start" }); }
      }
    }

    prev.addEventListener("click", function () { if (current > 0) { show(current - 1, true); } });
    next.addEventListener("click", function () { if (current < steps.length - 1) { show(current + 1, true); } });
    figure.addEventListener("keydown", function (event) {
      if (!event.target.closest || !event.target.closest("[data-stepper-controls]")) { return; }
      var moves = { ArrowLeft: current - 1, ArrowRight: current + 1, Home: 0, End: steps.length - 1 };
      if (event.key in moves) {
        event.preventDefault();
        show(moves[event.key], true);
      }
    });
    show(0, false);
  }

  /* -- field notes: each field of a message opens its own explanation ------------------------------- */

  function noteLinks(id) {
    return document.querySelectorAll('a.field-key[data-field-note="' + id + '"]');
  }

  function setNote(note, open, opener) {
    note.classList.toggle("is-open", open);
    Array.prototype.forEach.call(noteLinks(note.id), function (link) {
      link.setAttribute("aria-expanded", open ? "true" : "false");
    });
    if (open) {
      note.lastOpener = opener || null;
      note.focus();
    } else if (note.lastOpener && note.lastOpener.isConnected) {
      note.lastOpener.focus();
    }
  }

  function initFieldNotes(list) {
    if (list.getAttribute("data-field-notes-ready") === "true") { return; }
    list.setAttribute("data-field-notes-ready", "true");
    list.classList.add("is-collapsible");
    Array.prototype.forEach.call(list.querySelectorAll(".field-note[id]"), function (note) {
      note.setAttribute("tabindex", "-1");
      var close = document.createElement("button");
      close.type = "button";
      close.className = "field-note-close";
      close.textContent = "Close";
      var term = note.querySelector("dt");
      close.setAttribute("aria-label", "Close the note on " + (term ? term.textContent.trim() : "this field"));
      close.addEventListener("click", function () { setNote(note, false); });
      note.querySelector("dd").appendChild(close);
      Array.prototype.forEach.call(noteLinks(note.id), function (link) {
        link.setAttribute("aria-controls", note.id);
        link.setAttribute("aria-expanded", "false");
      });
    });
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.field-key[data-field-note]") : null;
    if (!link) { return; }
    var note = document.getElementById(link.getAttribute("data-field-note"));
    if (!note || !note.closest(".is-collapsible")) { return; }  // no JS set-up: follow the link
    event.preventDefault();
    setNote(note, !note.classList.contains("is-open"), link);
  });

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape" || !event.target.closest) { return; }
    var note = event.target.closest(".is-collapsible .field-note.is-open");
    if (note) { setNote(note, false); }
  });

  /* -- after htmx swaps ---------------------------------------------------------------------------- */

  function init(root) {
    initCopy(root);
    each(root, "[data-stepper]", initStepper);
    each(root, "dl[data-field-notes]", initFieldNotes);
  }

  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (!target) { return; }
    if (!target.isConnected && target.id) { target = document.getElementById(target.id) || target; }
    if (target === document.body) {  // a boosted page load: start reading at the new page's content
      var main = document.getElementById("main");
      if (main) { main.focus(); }
      announce(document.title);
      return;
    }
    each(target, "ol.checks", animateChecks);
    if (target.classList.contains("feedback")) {  // a role="status" region: it announces itself
      target.focus();
      return;
    }
    var again = target.querySelector("[data-refocus]");  // the control that was replaced with its figure
    if (again) { again.focus(); }
    // Regions that announce their own result (the playground's verdict) are not announced twice.
    if (target.closest("[data-announces-itself]")) { return; }
    var heading = target.querySelector(".figure-title, h2, h3");
    if (heading) { announce("Updated: " + heading.textContent.trim().replace(/\s+/g, " ")); }
  });

  document.addEventListener("htmx:load", function (event) { init(event.detail && event.detail.elt); });

  function failed() { announce("The server did not answer that request. Please try again."); }
  document.addEventListener("htmx:responseError", failed);
  document.addEventListener("htmx:sendError", failed);

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(document); });
  } else {
    init(document);
  }
})();
