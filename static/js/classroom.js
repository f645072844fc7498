/* MRTR Lab live class: the presenter's live view, and telling screen-reader users what changed.
 *
 * htmx posts the forms and swaps their answers: a learner's panel polls for the presenter's next step, and
 * the presenter's controls swap only themselves. The presenter's tally, heatmap and roster arrive as
 * server-sent events, read here by the browser's own EventSource (see the second part). The first part
 * announces a new question or an opened round on the learner's phone, through #announcer, and never moves
 * focus (a learner may be mid-tap). */
(function () {
  "use strict";

  // The presenter's page answers a POST: its address becomes the page's own GET address, so a reload shows
  // it again (with the control link still folded away) instead of opening another class.
  var presenterPage = document.querySelector("[data-presenter-url]");
  if (presenterPage && window.history && window.history.replaceState) {
    window.history.replaceState(null, "", presenterPage.getAttribute("data-presenter-url"));
  }

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

/* The presenter's live view. web/classroom/routes.py's host_events streams the tally, the heatmap and the roster as
 * HTML fragments (events named "tally", "heatmap", "roster"), each put into the element whose data-live-swap
 * names it. The server ends every stream on purpose, after MRTR_CLASS_STREAM_SECONDS or at once with one
 * snapshot when its process already holds as many streams as it may, having sent `retry:`; the browser then
 * reconnects by itself. That is the normal course of an event stream, so it is not treated (or logged) as an
 * error, which htmx's SSE extension did on every reconnect. What is said on the screen:
 *   - "ended": the class was deleted; the stream is closed for good and the page says so.
 *   - the browser gave up (readyState CLOSED: the class is gone or the host cookie is no longer valid): the
 *     page says the view stopped and how to get it back.
 * The stream is closed when the page is left (and as the presenter ends the class, so it never reconnects to
 * a class being deleted), and opened again if the page comes back from the back/forward cache. */
(function () {
  "use strict";

  var host = document.querySelector("[data-live-events]");
  if (!host || !window.EventSource) { return; }
  var url = host.getAttribute("data-live-events");
  var state = document.querySelector("[data-live-state]");
  var source = null;

  function say(text) {
    if (state) {
      state.textContent = text;
      state.hidden = !text;
    }
    var region = document.getElementById("announcer");
    if (region && text) { region.textContent = text; }
  }

  function swapInto(name) {
    var target = host.querySelector('[data-live-swap="' + name + '"]');
    return function (event) {
      if (!target) { return; }
      target.innerHTML = event.data;
      if (window.htmx) { window.htmx.process(target); }
    };
  }

  function connect() {
    if (source) { return; }
    source = new window.EventSource(url);
    ["tally", "heatmap", "roster"].forEach(function (name) { source.addEventListener(name, swapInto(name)); });
    source.addEventListener("ended", function (event) {
      close();
      var words = new window.DOMParser().parseFromString(event.data, "text/html").body.textContent.trim();
      say((words || "This class has ended.") + " Its controls no longer work.");
    });
    source.addEventListener("error", function (event) {
      if (event.target === source && source.readyState === window.EventSource.CLOSED) {
        close();
        say("The live view stopped: reload this page to follow the class again.");
      }
    });
  }

  function close() {
    if (source) {
      source.close();
      source = null;
    }
  }

  document.addEventListener("submit", function (event) {
    if (event.target.closest && event.target.closest("[data-ends-class]")) { close(); }
  });
  window.addEventListener("pagehide", close);
  window.addEventListener("pageshow", function (event) { if (event.persisted) { connect(); } });
  connect();
})();
