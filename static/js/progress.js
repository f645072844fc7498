/* MRTR Lab progress, kept in this browser (localStorage); nothing is sent to the server.
 *
 * Recorded: lesson sections read (seen on screen, IntersectionObserver), playground moves played
 * (the result the playground swaps in carries data-result), quiz answers (the feedback fragment
 * carries data-lesson, data-question, data-correct). Shown, exported, imported and reset in the
 * home page's progress panel.
 *
 * The export code is "mrtr-progress." + base64url(JSON {v, data, sum}); `sum` is an FNV-1a hash of
 * the canonical JSON of `data`, so a code that lost or changed a character is refused on import
 * with a clear message instead of loading half a progress. */
(function () {
  "use strict";

  var KEY = "mrtr-lab:progress";
  var VERSION = 1;
  var PREFIX = "mrtr-progress.";
  var SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
  var VERDICT = /^[a-z]+(?:-[a-z]+)*$/;
  /* Bounds on what a code may hold: far above a real course, far below what would fill storage. */
  var MAX_CODE_CHARS = 65536;
  var MAX_ITEMS = 500;
  var MAX_NAME_CHARS = 80;

  var TOKEN = /^[A-Za-z0-9_.\-]{1,4000}$/;

  /* quizTokens: {lesson: the signed quiz progress the server last returned}, so a reload can show the
     answers again (the server renders them from the token; nothing here is trusted for the score).
     steps: {lesson: [build-step ids done]}, from the build lesson's graded checker reports. */
  function empty() { return { sections: {}, moves: {}, quiz: {}, quizTokens: {}, steps: {} }; }

  function isObject(value) { return value !== null && typeof value === "object" && !Array.isArray(value); }

  function isName(value, pattern) {
    return typeof value === "string" && value.length <= MAX_NAME_CHARS && pattern.test(value);
  }

  function fewKeys(obj) { return Object.keys(obj).length <= MAX_ITEMS; }

  /* A valid progress: {sections: {lesson: [ids]}, moves: {slug: verdict}, quiz: {lesson: {qid: bool}}}. */
  function valid(data) {
    if (!isObject(data) || !isObject(data.sections) || !isObject(data.moves) || !isObject(data.quiz)) { return false; }
    if (!fewKeys(data.sections) || !fewKeys(data.moves) || !fewKeys(data.quiz)) { return false; }
    var ok = true;
    Object.keys(data.sections).forEach(function (lesson) {
      var ids = data.sections[lesson];
      ok = ok && isName(lesson, SLUG) && Array.isArray(ids) && ids.length <= MAX_ITEMS &&
        ids.every(function (id) { return isName(id, SLUG); });
    });
    Object.keys(data.moves).forEach(function (slug) {
      ok = ok && isName(slug, SLUG) && isName(data.moves[slug], VERDICT);
    });
    Object.keys(data.quiz).forEach(function (lesson) {
      var answers = data.quiz[lesson];
      ok = ok && isName(lesson, SLUG) && isObject(answers) && fewKeys(answers) && Object.keys(answers).every(function (qid) {
        return isName(qid, SLUG) && typeof answers[qid] === "boolean";
      });
    });
    if (data.quizTokens !== undefined) {
      ok = ok && isObject(data.quizTokens) && Object.keys(data.quizTokens).every(function (lesson) {
        return SLUG.test(lesson) && typeof data.quizTokens[lesson] === "string" && TOKEN.test(data.quizTokens[lesson]);
      });
    }
    ok = ok && validSteps(data.steps);
    return ok;
  }

  /* steps (optional, older codes lack it): {lesson: [build-step ids done]} (the build lesson's loop). */
  function validSteps(steps) {
    if (steps === undefined) { return true; }
    return isObject(steps) && fewKeys(steps) && Object.keys(steps).every(function (lesson) {
      var ids = steps[lesson];
      return isName(lesson, SLUG) && Array.isArray(ids) && ids.length <= MAX_ITEMS &&
        ids.every(function (id) { return isName(id, SLUG); });
    });
  }

  function load() {
    try {
      var stored = JSON.parse(window.localStorage.getItem(KEY) || "null");
      if (stored && stored.v === VERSION && valid(stored.data)) {
        stored.data.quizTokens = stored.data.quizTokens || {};
        stored.data.steps = stored.data.steps || {};
        return stored.data;
      }
    } catch (e) { /* storage off or corrupted: start afresh */ }
    return empty();
  }

  /* Returns whether the browser kept it. */
  function save(data) {
    var kept = true;
    try {
      window.localStorage.setItem(KEY, JSON.stringify({ v: VERSION, data: data }));
    } catch (e) { kept = false; /* storage full or off: progress is best effort */ }
    render();
    return kept;
  }

  function update(change) {
    var data = load();
    if (change(data) !== false) { save(data); }
  }

  /* -- the code -------------------------------------------------------------------------------- */

  function canonical(value) {
    if (Array.isArray(value)) { return "[" + value.map(canonical).join(",") + "]"; }
    if (isObject(value)) {
      return "{" + Object.keys(value).sort().map(function (k) { return JSON.stringify(k) + ":" + canonical(value[k]); }).join(",") + "}";
    }
    return JSON.stringify(value);
  }

  function checksum(text) {  // FNV-1a, 32 bits, as 8 hex digits
    var hash = 0x811c9dc5;
    for (var i = 0; i < text.length; i += 1) {
      hash ^= text.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    return ("0000000" + hash.toString(16)).slice(-8);
  }

  function toBase64url(text) {
    var bytes = new TextEncoder().encode(text);
    var binary = "";
    bytes.forEach(function (b) { binary += String.fromCharCode(b); });
    return window.btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function fromBase64url(text) {
    var padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
    var binary = window.atob(padded);
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i += 1) { bytes[i] = binary.charCodeAt(i); }
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  }

  function exportCode(data) {
    return PREFIX + toBase64url(JSON.stringify({ v: VERSION, data: data, sum: checksum(canonical(data)) }));
  }

  /* Returns {data} or {error: a sentence for the learner}. */
  function importCode(code) {
    var text = (code || "").replace(/\s+/g, "");
    if (!text) { return { error: "Paste a progress code first." }; }
    if (text.length > MAX_CODE_CHARS) {
      return { error: "This is far longer than any progress code (at most " + MAX_CODE_CHARS + " characters). Copy just the code." };
    }
    if (text.indexOf(PREFIX) !== 0) {
      return { error: "This is not an MRTR Lab progress code: it should start with “" + PREFIX + "”." };
    }
    var body = text.slice(PREFIX.length);
    if (!/^[A-Za-z0-9_-]+$/.test(body)) {
      return { error: "This code contains characters a progress code never has. Copy it again, in full." };
    }
    var parsed;
    try {
      parsed = JSON.parse(fromBase64url(body));
    } catch (e) {
      return { error: "This code is damaged or cut short and cannot be read. Copy it again, in full." };
    }
    if (!isObject(parsed) || !Number.isSafeInteger(parsed.v) || parsed.v < 1) {
      return { error: "This code is damaged and cannot be read. Copy it again, in full." };
    }
    if (parsed.v !== VERSION) {
      return { error: "This code was made by a different version of MRTR Lab (format " + parsed.v + "); this one reads format " + VERSION + "." };
    }
    if (!valid(parsed.data) || typeof parsed.sum !== "string") {
      return { error: "This code does not hold a valid progress. Copy it again, in full." };
    }
    if (checksum(canonical(parsed.data)) !== parsed.sum) {
      return { error: "This code fails its checksum: a character was changed or lost. Copy it again, in full." };
    }
    return { data: parsed.data };
  }

  /* -- recording ------------------------------------------------------------------------------- */

  function recordSection(lesson, id) {
    update(function (data) {
      var ids = data.sections[lesson] || [];
      if (ids.indexOf(id) >= 0) { return false; }
      data.sections[lesson] = ids.concat([id]);
    });
  }

  function recordMove(slug, verdict) {
    if (!isName(slug, SLUG)) { return; }
    update(function (data) { data.moves[slug] = isName(verdict, VERDICT) ? verdict : "played"; });
  }

  /* The first answer to a question is what counts, here as in the quiz's own score. */
  function recordAnswer(lesson, qid, correct, token) {
    if (!SLUG.test(lesson) || !SLUG.test(qid)) { return; }
    update(function (data) {
      data.quiz[lesson] = data.quiz[lesson] || {};
      if (!(qid in data.quiz[lesson])) { data.quiz[lesson][qid] = correct; }
      if (token && TOKEN.test(token)) { data.quizTokens[lesson] = token; }
    });
  }

  /* After a reload the quiz starts blank: ask the server to render it again from the stored token. */
  function restoreQuizzes() {
    if (!window.htmx || document.querySelector("[data-embed]")) { return; }
    var data = load();
    Array.prototype.forEach.call(document.querySelectorAll(".quiz[data-quiz]"), function (quiz) {
      var lesson = quiz.getAttribute("data-quiz");
      var token = data.quizTokens[lesson];
      var score = quiz.querySelector("#quiz-score");
      if (!token || !SLUG.test(lesson) || quiz.hasAttribute("data-restoring") ||
          !score || score.getAttribute("data-answered") !== "0") { return; }
      quiz.setAttribute("data-restoring", "true");
      window.htmx.ajax("GET", "/quiz/" + lesson + "?progress=" + encodeURIComponent(token),
                       { target: quiz, swap: "outerHTML" });
    });
  }

  /* Build steps: a graded checker report carries data-build-result, data-lesson and data-step-done. */
  function recordStep(lesson, id) {
    if (!SLUG.test(lesson) || !SLUG.test(id)) { return; }
    update(function (data) {
      var ids = data.steps[lesson] || [];
      if (ids.indexOf(id) >= 0) { return false; }
      data.steps[lesson] = ids.concat([id]);
    });
  }

  function showSteps() {
    var match = /^\/lessons\/([a-z0-9-]+)\/?$/.exec(window.location.pathname);
    if (!match) { return; }
    var done = load().steps[match[1]] || [];
    Array.prototype.forEach.call(document.querySelectorAll("[data-build-step]"), function (step) {
      var isDone = done.indexOf(step.getAttribute("data-build-step")) >= 0;
      step.classList.toggle("is-done", isDone);
      var status = step.querySelector("[data-step-status]");
      if (status) { status.hidden = !isDone; }
    });
  }

  function recordSteps(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll("[data-build-result][data-lesson][data-step-done='true']:not([data-progress-seen])"), function (el) {
      el.setAttribute("data-progress-seen", "true");
      recordStep(el.getAttribute("data-lesson"), el.getAttribute("data-build-result"));
    });
  }

  function scan(root) {
    var scope = root && root.querySelectorAll ? root : document;
    recordSteps(scope);
    showSteps();
    Array.prototype.forEach.call(scope.querySelectorAll("[data-result]:not([data-progress-seen])"), function (el) {
      el.setAttribute("data-progress-seen", "true");
      recordMove(el.getAttribute("data-result"), el.getAttribute("data-verdict"));
    });
    Array.prototype.forEach.call(scope.querySelectorAll("[data-question][data-correct][data-lesson]:not([data-progress-seen])"), function (el) {
      el.setAttribute("data-progress-seen", "true");
      recordAnswer(el.getAttribute("data-lesson"), el.getAttribute("data-question"), el.getAttribute("data-correct") === "true",
                   el.getAttribute("data-progress"));
    });
  }

  var observer = null;

  function watchSections() {
    if (observer) { observer.disconnect(); observer = null; }
    var match = /^\/lessons\/([a-z0-9-]+)\/?$/.exec(window.location.pathname);
    var sections = document.querySelectorAll("section.lesson-section[id]");
    if (!match || sections.length === 0 || !("IntersectionObserver" in window)) { return; }
    var lesson = match[1];
    observer = new window.IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (!entry.isIntersecting) { return; }
        var viewport = entry.rootBounds ? entry.rootBounds.height : window.innerHeight;
        // Read: most of a short section is on screen, or a long one fills half the screen.
        if (entry.intersectionRatio >= 0.6 || entry.intersectionRect.height >= viewport * 0.5) {
          recordSection(lesson, entry.target.id);
          observer.unobserve(entry.target);
        }
      });
    }, { threshold: [0, 0.25, 0.5, 0.6, 0.75, 1] });
    Array.prototype.forEach.call(sections, function (section) { observer.observe(section); });
  }

  /* -- the panel -------------------------------------------------------------------------------- */

  function setText(el, text) { if (el) { el.textContent = text; } }

  /* The home page's course path: each step's progress, and "Start here" on the first step not done. */
  function renderPath() {
    var path = document.querySelector("[data-path]");
    if (!path) { return; }
    var data = load();
    var steps = Array.prototype.slice.call(path.querySelectorAll("[data-path-step]"));
    var next = null;
    var any = false;
    steps.forEach(function (step) {
      var kind = step.getAttribute("data-path-step");
      var bar = step.querySelector("[data-path-bar]");
      var text = step.querySelector("[data-path-text]");
      var done = 0, total = 0, words = "";
      if (kind === "lesson") {
        var lesson = step.getAttribute("data-lesson");
        var answers = data.quiz[lesson] || {};
        var ids = Object.keys(answers);
        total = Number(step.getAttribute("data-sections")) || 0;
        done = Math.min(total, (data.sections[lesson] || []).length);
        words = done + " of " + total + " sections read; quick check " +
          ids.filter(function (q) { return answers[q]; }).length + " correct of " + ids.length + " answered";
        // a build lesson also counts the steps the checker verified (a pasted report), as its page does
        var buildSteps = (step.getAttribute("data-build-steps") || "").split(" ").filter(Boolean);
        if (buildSteps.length) {
          var verified = (data.steps[lesson] || []).filter(function (id) { return buildSteps.indexOf(id) >= 0; }).length;
          total += buildSteps.length;
          done += verified;
          words += "; " + verified + " of " + buildSteps.length + " build steps verified by the checker";
        }
      } else if (kind === "playground") {
        var known = (step.getAttribute("data-moves") || "").split(" ").filter(Boolean);
        total = known.length;
        done = Object.keys(data.moves).filter(function (m) { return known.indexOf(m) >= 0; }).length;
        words = done + " of " + total + " moves tried";
      } else {
        return;  // the checker and the live class keep no progress
      }
      if (bar) { bar.max = total; bar.value = done; bar.parentNode.hidden = false; }
      setText(text, words);
      var state = total > 0 && done >= total ? "done" : (done > 0 ? "started" : "new");
      step.setAttribute("data-path-state", state);
      if (done > 0) { any = true; }
      if (!next && state !== "done") { next = step; }
    });
    var badge = path.querySelector("[data-path-start]");
    if (badge && next) {
      var body = next.querySelector(".path-body");
      if (body && badge.parentNode !== body) { body.insertBefore(badge, body.firstChild); }
      badge.textContent = any ? "Carry on here" : "Start here";
      badge.hidden = false;
    } else if (badge) {
      badge.hidden = true;
    }
  }

  function render() {
    renderPath();
    var panel = document.querySelector("[data-progress-panel]");
    if (!panel) { return; }
    var data = load();
    Array.prototype.forEach.call(panel.querySelectorAll("[data-progress-lesson]"), function (row) {
      var lesson = row.getAttribute("data-progress-lesson");
      var answers = data.quiz[lesson] || {};
      var ids = Object.keys(answers);
      setText(row.querySelector('[data-stat="sections"]'), String((data.sections[lesson] || []).length));
      setText(row.querySelector('[data-stat="answered"]'), String(ids.length));
      setText(row.querySelector('[data-stat="correct"]'), String(ids.filter(function (q) { return answers[q]; }).length));
    });
    var known = (panel.getAttribute("data-moves") || "").split(" ");
    setText(panel.querySelector('[data-stat="moves"]'),
      String(Object.keys(data.moves).filter(function (m) { return known.indexOf(m) >= 0; }).length));
  }

  function initPanel() {
    var panel = document.querySelector("[data-progress-panel]");
    if (!panel || panel.getAttribute("data-progress-ready") === "true") { return; }
    panel.setAttribute("data-progress-ready", "true");
    panel.querySelector("[data-progress-nojs]").hidden = true;
    panel.querySelector("[data-progress-ui]").hidden = false;
    var status = panel.querySelector("[data-progress-status]");
    var out = panel.querySelector("[data-progress-code]");
    var input = panel.querySelector("#progress-code-in");
    var confirmBox = panel.querySelector("[data-progress-confirm]");

    panel.querySelector("[data-progress-export]").addEventListener("click", function () {
      out.value = exportCode(load());
      out.hidden = false;
      var copy = panel.querySelector("[data-progress-copy]");
      if (copy && navigator.clipboard) { copy.hidden = false; }
      out.focus();
      out.select();
    });
    panel.querySelector("[data-progress-import]").addEventListener("click", function () {
      var result = importCode(input.value);
      status.classList.toggle("is-error", Boolean(result.error));
      if (result.error) {
        status.textContent = result.error;
        input.setAttribute("aria-invalid", "true");
        input.focus();
        return;
      }
      if (!save(result.data)) {
        status.classList.add("is-error");
        status.textContent = "This browser would not keep the progress (its storage is full or switched off).";
        return;
      }
      input.removeAttribute("aria-invalid");
      input.value = "";
      status.textContent = "Progress loaded.";
    });
    panel.querySelector("[data-progress-reset]").addEventListener("click", function () {
      confirmBox.hidden = false;
      panel.querySelector("[data-progress-reset-no]").focus();
    });
    panel.querySelector("[data-progress-reset-no]").addEventListener("click", function () {
      confirmBox.hidden = true;
      panel.querySelector("[data-progress-reset]").focus();
    });
    panel.querySelector("[data-progress-reset-yes]").addEventListener("click", function () {
      try { window.localStorage.removeItem(KEY); } catch (e) { /* nothing stored */ }
      confirmBox.hidden = true;
      out.value = "";
      out.hidden = true;
      render();
      status.classList.remove("is-error");
      status.textContent = "Progress reset.";
      panel.querySelector("[data-progress-reset]").focus();
    });
    render();
  }

  function init() {
    scan(document);
    watchSections();
    initPanel();
    restoreQuizzes();
  }

  // What a swap brings (a graded report, a played move, a quiz answer with its signed progress) is
  // recorded as soon as it is in the page, in the same task that shows it ("N of M steps done", the new
  // score), not at settle 20 ms later: a reload in between would otherwise lose it. Settle scans again
  // (a no-op for what was recorded here: each element is marked seen).
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (target === document.body) { return; }  // a boosted page load: init() runs at settle
    scan(target && target.isConnected ? target : document);
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (target === document.body) { init(); return; }  // a boosted page load
    scan(target && target.isConnected ? target : document);
  });
  // Another tab recorded something: keep the panel current.
  window.addEventListener("storage", function (event) { if (event.key === KEY) { render(); } });

  // For tests and the console: the same functions the panel uses.
  window.mrtrProgress = { load: load, exportCode: exportCode, importCode: importCode };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
