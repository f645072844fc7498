/* MRTR Lab presenter: the keyboard, the raw-JSON toggle, speaker-notes sync and kiosk auto-play.
 *
 * Without this file the deck is a set of linked pages (/demo/step/N, /demo/move/slug) with
 * previous/next links. With it, one page holds every slide and shows one at a time:
 *   → ↓ Space PageDown: next          ← ↑ Shift+Space PageUp: previous
 *   1–9: jump to one of the first nine moves       R, Home: back to the start; End: the last slide
 *   J: show or hide the raw JSON     P: pause or resume auto-play (?autoplay=N seconds)
 *   F: full screen                   S: open the speaker notes in another window
 * The address bar always names the slide (never a ticket), and #step-3 / #move-<slug> work too.
 * The deck and its notes window follow each other through a BroadcastChannel (same browser). */
(function () {
  "use strict";

  var deck = document.querySelector("[data-deck]");
  if (!deck) { return; }
  var mode = deck.getAttribute("data-mode");  // "slides" or "notes"
  var slides = Array.prototype.slice.call(deck.querySelectorAll("[data-slide]"));
  if (slides.length === 0) { return; }
  var reducedMotion = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  var channel = "BroadcastChannel" in window ? new window.BroadcastChannel("mrtr-demo") : null;
  var current = Math.max(0, slides.findIndex(function (s) { return !s.hidden; }));
  var search = window.location.search;

  function announce(text) {
    var region = document.getElementById("announcer");
    if (region) { region.textContent = text; }
  }

  function urlOf(slide) {
    return slide.getAttribute(mode === "notes" ? "data-notes-url" : "data-url") + search;
  }

  function show(index, options) {
    var opts = options || {};
    index = Math.max(0, Math.min(slides.length - 1, index));
    var changed = index !== current;
    slides.forEach(function (slide, i) { slide.hidden = i !== index; });
    current = index;
    var slide = slides[index];
    var title = slide.getAttribute("data-title");
    document.title = (mode === "notes" ? "Notes: " : "") + title + " · MRTR Lab presenter";
    if (opts.history === "push" && changed) {
      window.history.pushState({ slide: index }, "", urlOf(slide));
    } else if (opts.history === "replace") {
      window.history.replaceState({ slide: index }, "", urlOf(slide));
    }
    if (opts.broadcast !== false && channel) {
      channel.postMessage({ type: "goto", v: 1, slide: index });
    }
    if (opts.focus !== false) {
      var heading = slide.querySelector("h2[tabindex]");
      if (heading) { heading.focus({ preventScroll: true }); }
      window.scrollTo(0, 0);
    }
    announce("Slide " + (index + 1) + " of " + slides.length + ": " + title);
    var notesLink = document.querySelector("[data-notes-link]");
    if (notesLink) { notesLink.setAttribute("href", slide.getAttribute("data-notes-url")); }
    restartTimer();
  }

  function go(index) { show(index, { history: "push" }); }

  function moveIndex(n) {
    var moves = slides.filter(function (s) { return s.getAttribute("data-kind") === "move"; });
    return moves[n - 1] ? slides.indexOf(moves[n - 1]) : -1;
  }

  /* -- the raw JSON ---------------------------------------------------------------------------- */

  var rawOpen = false;

  function setRaw(open) {
    rawOpen = open;
    Array.prototype.forEach.call(deck.querySelectorAll("details[data-raw]"), function (d) { d.open = open; });
    deck.setAttribute("data-raw-open", open ? "true" : "false");
  }

  // Opening one slide's JSON by hand opens it on every slide, so J and clicks agree.
  deck.addEventListener("toggle", function (event) {
    var details = event.target;
    if (details.matches && details.matches("details[data-raw]") && details.open !== rawOpen) {
      setRaw(details.open);
    }
  }, true);

  /* -- auto-play (kiosk) --------------------------------------------------------------------------- */

  var autoplaySeconds = parseInt(deck.getAttribute("data-autoplay") || "", 10);
  var autoplay = mode === "slides" && autoplaySeconds > 0;
  // Reduced motion: a deck that moves on its own starts paused; P or the button starts it.
  var playing = autoplay && !reducedMotion;
  var timer = null;
  var status = document.querySelector("[data-autoplay-status]");
  var toggle = document.querySelector("[data-autoplay-toggle]");
  var statusText = document.querySelector("[data-autoplay-text]");

  function renderAutoplay() {
    if (!autoplay || !status) { return; }
    status.hidden = false;
    toggle.textContent = playing ? "Pause" : "Play";
    toggle.setAttribute("aria-pressed", playing ? "false" : "true");
    statusText.textContent = playing
      ? "Auto-play: the next slide every " + autoplaySeconds + " s (P pauses)."
      : "Auto-play paused" + (reducedMotion ? " because reduced motion is on" : "") + " (P resumes).";
    deck.setAttribute("data-autoplay-state", playing ? "playing" : "paused");
  }

  function restartTimer() {
    if (timer) { window.clearTimeout(timer); timer = null; }
    if (!autoplay || !playing) { return; }
    timer = window.setTimeout(function () {
      show(current + 1 < slides.length ? current + 1 : 0, { history: "replace", focus: false });
    }, autoplaySeconds * 1000);
  }

  function togglePlay() {
    if (!autoplay) { return; }
    playing = !playing;
    renderAutoplay();
    restartTimer();
  }

  if (toggle) { toggle.addEventListener("click", togglePlay); }

  /* -- keyboard ---------------------------------------------------------------------------------- */

  function typing(target) {
    return target && target.closest && target.closest("input, textarea, select, [contenteditable]");
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) { return; }
    var key = event.key;
    var onControl = event.target.closest && event.target.closest("button, summary, a");
    if ((key === " " || key === "Enter") && onControl) { return; }  // let buttons and links do their job
    var handled = true;
    if (key === "ArrowRight" || key === "ArrowDown" || key === "PageDown" || (key === " " && !event.shiftKey)) {
      go(current + 1);
    } else if (key === "ArrowLeft" || key === "ArrowUp" || key === "PageUp" || (key === " " && event.shiftKey)) {
      go(current - 1);
    } else if (key === "Home" || key === "r" || key === "R") {
      setRaw(false);
      go(0);
    } else if (key === "End") {
      go(slides.length - 1);
    } else if (/^[1-9]$/.test(key) && moveIndex(parseInt(key, 10)) >= 0) {
      go(moveIndex(parseInt(key, 10)));
    } else if (key === "j" || key === "J") {
      setRaw(!rawOpen);
      announce(rawOpen ? "Raw JSON shown." : "Raw JSON hidden.");
    } else if (key === "p" || key === "P") {
      togglePlay();
    } else if ((key === "f" || key === "F") && document.documentElement.requestFullscreen) {
      if (document.fullscreenElement) { document.exitFullscreen(); } else { document.documentElement.requestFullscreen(); }
    } else if ((key === "s" || key === "S") && mode === "slides") {
      window.open(slides[current].getAttribute("data-notes-url"), "mrtr-demo-notes");
    } else {
      handled = false;
    }
    if (handled) { event.preventDefault(); }
  });

  // Previous/next links and the slide index switch in place instead of loading a page.
  deck.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-go]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) { return; }
    event.preventDefault();
    go(parseInt(link.getAttribute("data-go"), 10));
  });

  window.addEventListener("popstate", function (event) {
    var index = event.state && typeof event.state.slide === "number" ? event.state.slide : slideFromLocation();
    if (index >= 0) { show(index, {}); }
  });

  if (channel) {
    channel.addEventListener("message", function (event) {
      var data = event.data || {};
      if (data.type === "goto" && data.v === 1 && typeof data.slide === "number") {
        show(data.slide, { history: "replace", broadcast: false, focus: false });
      } else if (data.type === "hello" && data.v === 1 && mode === "slides") {
        channel.postMessage({ type: "goto", v: 1, slide: current });  // a notes window just opened
      }
    });
  }

  /* -- start ------------------------------------------------------------------------------------- */

  function slideFromLocation() {
    var hash = window.location.hash.replace(/^#/, "");
    if (!hash) { return -1; }
    var match = /^move-?([1-9][0-9]*)$/.exec(hash);  // "#move-3": the third move, however many there are
    if (match) { return moveIndex(parseInt(match[1], 10)); }
    return slides.findIndex(function (s) { return s.id === hash; });
  }

  var fromHash = slideFromLocation();
  setRaw(false);
  renderAutoplay();
  if (fromHash >= 0) {
    show(fromHash, { history: "replace", broadcast: false });
  } else {
    window.history.replaceState({ slide: current }, "");
    show(current, { broadcast: false, focus: false });
  }
  if (mode === "notes" && channel) { channel.postMessage({ type: "hello", v: 1 }); }

  // The notes window keeps time for the speaker.
  var elapsed = document.querySelector("[data-elapsed]");
  if (elapsed) {
    var started = Date.now();
    window.setInterval(function () {
      var s = Math.floor((Date.now() - started) / 1000);
      elapsed.textContent = Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
    }, 1000);
  }
})();

/* Projector fit (added for the classroom): every slide fits the screen, and scrolling keys stay with
 * whatever needs to scroll.
 *   - The deck's type is scaled through the CSS variable --fit (a binary search on the real layout)
 *     until the shown slide fits the window without scrolling: scaled, never clipped. `data-fit` on
 *     the deck says the scale chosen. It runs again on resize, on a slide change and when the raw
 *     JSON closes.
 *   - Arrow keys, Page Up/Down, Space, Home and End inside a region that scrolls (the raw JSON, the
 *     slide index) scroll it; the deck only sees them elsewhere. Escape closes the raw JSON.
 *   - On a page taller than the window (the speaker notes on a small laptop), ↑ ↓, Page Up/Down and
 *     Space scroll the page first; only at its top or bottom do they change the slide.
 *   - Opening the raw JSON (J or a click) focuses it, so the keyboard scrolls it at once. */
(function () {
  "use strict";

  var deck = document.querySelector("[data-deck]");
  if (!deck) { return; }
  var slidesMode = deck.getAttribute("data-mode") === "slides";
  var root = document.documentElement;
  var MIN_FIT = 0.3;
  var VERTICAL = { ArrowUp: 1, ArrowDown: 1, PageUp: 1, PageDown: 1, " ": 1, Home: 1, End: 1 };
  var HORIZONTAL = { ArrowLeft: 1, ArrowRight: 1 };
  var PAGE = { ArrowUp: 1, ArrowDown: 1, PageUp: 1, PageDown: 1, " ": 1 };

  function pageHasRoom(event) {
    var up = event.key === "ArrowUp" || event.key === "PageUp" || (event.key === " " && event.shiftKey);
    var max = root.scrollHeight - window.innerHeight;
    if (max <= 1) { return false; }
    return up ? window.scrollY > 0 : window.scrollY < max - 1;
  }

  function overflows() {
    return root.scrollHeight > window.innerHeight || root.scrollWidth > window.innerWidth;
  }

  function setFit(value) { root.style.setProperty("--fit", String(value)); }

  function rawOpen() { return deck.querySelector("details[data-raw][open]") !== null; }

  function fit() {
    if (!slidesMode) { return; }
    if (rawOpen()) { setFit(1); return; }  // the raw JSON covers the screen and scrolls; fit again when it closes
    setFit(1);
    var lo = MIN_FIT;
    var hi = 1;
    if (overflows()) {
      for (var i = 0; i < 9; i += 1) {
        var mid = (lo + hi) / 2;
        setFit(mid);
        if (overflows()) { hi = mid; } else { lo = mid; }
      }
      setFit(lo);
    } else {
      lo = 1;
    }
    deck.setAttribute("data-fit", lo.toFixed(3));
  }

  function scroller(element, horizontal) {
    for (var el = element; el && el !== document.body && el !== root; el = el.parentElement) {
      var style = window.getComputedStyle(el);
      var overflow = horizontal ? style.overflowX : style.overflowY;
      var room = horizontal ? el.scrollWidth - el.clientWidth : el.scrollHeight - el.clientHeight;
      if ((overflow === "auto" || overflow === "scroll") && room > 1) { return el; }
    }
    return null;
  }

  function visibleRawBody() {
    var slide = deck.querySelector("[data-slide]:not([hidden])");
    return slide ? slide.querySelector("details[data-raw][open] [data-raw-body]") : null;
  }

  // Capture phase on the document: runs before the deck's own key handler and can keep the key from it.
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    if (event.key === "Escape" && rawOpen()) {
      Array.prototype.forEach.call(deck.querySelectorAll("details[data-raw][open]"), function (d) { d.open = false; });
      var heading = deck.querySelector("[data-slide]:not([hidden]) h2[tabindex]");
      if (heading) { heading.focus({ preventScroll: true }); }
      event.preventDefault();
      event.stopPropagation();
      return;
    }
    if (target && target.closest && target.closest("summary, button, a") && (event.key === " " || event.key === "Enter")) {
      return;
    }
    var box = null;
    if (VERTICAL[event.key]) { box = scroller(target, false); }
    if (HORIZONTAL[event.key]) { box = scroller(target, true); }
    if (!box && PAGE[event.key] && pageHasRoom(event)) { box = root; }
    if (box) { event.stopPropagation(); }  // the browser scrolls the region (or the page); the slide stays
  }, true);

  deck.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!details.matches || !details.matches("details[data-raw]")) { return; }
    if (details.open) {
      setFit(1);  // the raw JSON is read at full size; it scrolls instead of shrinking
      var body = visibleRawBody();
      if (body && details.contains(body)) { body.focus({ preventScroll: true }); }
    } else if (!rawOpen()) {
      fit();
    }
  }, true);

  // A slide was shown: fit it, and keep the raw JSON focused when it is open.
  var observer = new MutationObserver(function () {
    if (rawOpen()) {
      var body = visibleRawBody();
      if (body) { body.focus({ preventScroll: true }); }
    } else {
      fit();
    }
  });
  Array.prototype.forEach.call(deck.querySelectorAll("[data-slide]"), function (slide) {
    observer.observe(slide, { attributes: true, attributeFilter: ["hidden"] });
  });

  var pending = null;
  window.addEventListener("resize", function () {
    if (pending) { window.cancelAnimationFrame(pending); }
    pending = window.requestAnimationFrame(function () { pending = null; fit(); });
  });

  fit();
})();
