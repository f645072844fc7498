/* MRTR Lab live class: tell screen-reader users what changed when a live panel is swapped in.
 *
 * htmx (and its SSE extension) do the swapping: a learner's panel polls for the presenter's next
 * step, and the presenter's tally and heatmap arrive as server-sent events. This file only
 * announces a new question or an opened round on the learner's phone, through #announcer, and
 * never moves focus (a learner may be mid-tap). */
(function () {
  "use strict";

  function announce(text) {
    var region = document.getElementById("announcer");
    if (region) { region.textContent = text; }
  }

  // A move's result lands in #attempt-result, under the list of moves: bring it on screen (instantly; the
  // status region announces it, and focus stays on the button that was pressed).
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "attempt-result" || !target.firstElementChild) { return; }
    target.scrollIntoView({ block: "start" });
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    var live = event.target && event.target.id === "live" ? event.target : document.getElementById("live");
    if (!live || !event.detail || !event.detail.elt || event.detail.elt.id !== "live") { return; }
    var prompt = live.querySelector(".my-question .q-prompt");
    var revealed = live.querySelector("[data-revealed]");
    if (revealed) {
      announce("The answer is revealed. " + revealed.textContent.replace(/\s+/g, " ").trim());
    } else if (prompt && !live.querySelector("[data-my-answer]:not([data-my-answer=''])")) {
      announce("New question: " + prompt.textContent);
    } else if (live.querySelector(".my-round")) {
      announce("The attack round is open.");
    }
  });
})();
