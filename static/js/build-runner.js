/* "Run the checks" in the build lesson: the learner's server.py (from build-editor.js) and the checker's moves
   run on Pyodide in a Web Worker (build-worker.js), which starts loading as the learner reaches an editor. Each move and probe
   is drawn as it finishes, in the /check report's table with the same verdict words and check badges (cloned
   from <template>s the server renders with the same macro). When the run ends, its --json report goes to the
   same grading endpoint as a pasted report, so the steps marked done, the progress kept and the announcement
   are exactly the pasted report's (on the LTI build page: the launch's, which sends the score to the course).

   A run that goes quiet for data-timeout seconds (an endless loop in the learner's code) is ended by
   terminating the worker: the page says so and the next run starts a fresh one. No address here leaves the
   page's origin; the learner's code goes to the worker only. */
(function () {
  "use strict";

  var LOAD_TIMEOUT_MS = 120000;
  var PRELOAD = -1;  // the id of the load the page starts before any run

  function $(root, selector) { return root.querySelector(selector); }
  function all(root, selector) { return Array.prototype.slice.call(root.querySelectorAll(selector)); }

  function setStatus(root, text) { $(root, "[data-run-status]").textContent = text; }

  function showError(root, text) {
    var box = $(root, "[data-run-error]");  // always in the page, so what appears in it is announced
    box.replaceChildren();
    if (!text) { return; }
    var p = document.createElement("p");
    p.className = "check-error";
    p.textContent = text;
    box.appendChild(p);
  }

  function badge(root, kind, verdict) {
    var template = $(root, "template[data-badge='" + kind + "-" + verdict + "']");
    return template ? template.content.cloneNode(true) : document.createTextNode(verdict);
  }

  /* The /check page's reading of a probe (web/check/routes.py _probe_verdict): same-error with nothing refused
     compared nothing, so it shows neither way. */
  function probeVerdict(probe) {
    if (probe.probe === "same-error" && probe.ok && String(probe.detail).indexOf("no ticket was refused") === 0) {
      return "not-run";
    }
    return probe.ok ? "pass" : "fail";
  }

  function reset(root) {
    all(root, "[data-run-results] tr[data-move], [data-run-results] tr[data-probe]").forEach(function (row) {
      row.hidden = true;
      row.removeAttribute("data-verdict");
    });
    all(root, "[data-step-move]").forEach(function (item) {
      item.removeAttribute("data-verdict");
      var slot = $(item, "[data-step-verdict]");
      if (slot) { slot.replaceChildren(); }
    });
    $(root, "[data-run-results]").hidden = true;
    $(root, "[data-run-summary]").textContent = "";
    var log = $(root, "[data-run-log]");
    log.hidden = true;
    $(log, "pre").textContent = "";
    showError(root, "");
  }

  function fillMove(root, data) {
    var row = $(root, "tr[data-move='" + CSS.escape(String(data.move)) + "']");
    if (!row) { return; }  // only catalogue moves have rows: the worker's words are only data
    var observed = $(row, "[data-cell='observed']");  // a rule's row (the client lesson) has none
    if (observed) {
      observed.textContent = String(data.observed).replace(/-/g, " ");
      observed.className = "result result-" + String(data.observed).replace(/[^a-z-]/g, "");
    }
    var verdict = ["pass", "fail", "warn", "not-run"].indexOf(data.verdict) >= 0 ? data.verdict : "fail";
    var cell = $(row, "[data-cell='verdict']");
    cell.setAttribute("data-outcome", verdict === "pass" || verdict === "fail" ? verdict : "skipped");
    cell.setAttribute("data-state", verdict === "not-run" ? "skipped" : verdict);
    cell.replaceChildren(badge(root, "move", verdict));
    $(row, "[data-cell='detail-text']").textContent = String(data.detail || "");
    var learn = $(row, "[data-cell='step-link']");
    if (learn) { learn.hidden = verdict === "pass"; }
    row.setAttribute("data-verdict", verdict);
    row.setAttribute("data-expected", String(data.expected));
    row.hidden = false;
    all(root, "[data-step-move='" + CSS.escape(String(data.move)) + "']").forEach(function (item) {
      item.setAttribute("data-verdict", verdict);
      var slot = $(item, "[data-step-verdict]");
      if (slot) { slot.replaceChildren(badge(root, "move", verdict)); }
    });
  }

  function fillProbe(root, data) {
    var row = $(root, "tr[data-probe='" + CSS.escape(String(data.probe)) + "']");
    if (!row) { return; }
    var verdict = probeVerdict(data);
    var cell = $(row, "[data-cell='verdict']");
    cell.setAttribute("data-outcome", verdict === "not-run" ? "skipped" : verdict);
    cell.setAttribute("data-state", verdict === "not-run" ? "skipped" : verdict);
    cell.replaceChildren(badge(root, "probe", verdict));
    $(row, "[data-cell='detail-text']").textContent = String(data.detail || "");
    row.setAttribute("data-verdict", verdict);
    row.hidden = false;
  }

  function addLog(root, lines) {
    var log = $(root, "[data-run-log]");
    var pre = $(log, "pre");
    var kept = (pre.textContent ? pre.textContent.split("\n") : []).concat(lines.map(String));
    pre.textContent = kept.slice(-200).join("\n");
    log.hidden = false;
  }

  /* "SyntaxError at line 104: …" also names the step whose editor holds line 104. */
  function withStep(root, text) {
    var match = /\bline (\d+)\b/.exec(text);
    if (!match || !window.mrtrBuildEditor) { return text; }
    var line = Number(match[1]);
    var found = null;
    all(root, "textarea[data-editor]").forEach(function (area) {
      var first = window.mrtrBuildEditor.lineOf(root, area.getAttribute("data-editor"));
      if (line >= first && line < first + area.value.split("\n").length) { found = area; }
    });
    return found ? text + " (that line is in " + found.getAttribute("data-editor-name") + ")" : text;
  }

  /* What a finished run means for the learner's step: the step whose editor they typed in last (before any
     typing: the first step not done yet). A step is done when every move it names held AND every move that must
     complete (the honest retry and its kin, which no step names) still did: a check that refuses everyone is no
     check. A move that was not run is said to be not run, never a FAIL. The graded report (web/build/routes.py) then
     says which check refused the honest retry, from the server's log. Returns {text, next}. */
  function stepNews(root, stepId, ok) {
    var rows = all(root, "[data-run-results] tr[data-move]");
    var named = all(root, "[data-step-move]").map(function (m) { return m.getAttribute("data-step-move"); });
    var broken = rows.filter(function (r) {
      var verdict = r.getAttribute("data-verdict");
      return r.getAttribute("data-expected") === "completed" && named.indexOf(r.getAttribute("data-move")) < 0 &&
        (verdict === "fail" || verdict === "warn");
    }).map(function (r) { return r.getAttribute("data-move"); });
    var steps = all(root, "[data-build-step]").map(function (li) {
      var moves = all(li, "[data-step-move]");
      var failing = moves.filter(function (m) { return m.getAttribute("data-verdict") !== "pass"; });
      return { li: li, id: li.getAttribute("data-build-step"), n: all(root, "[data-build-step]").indexOf(li) + 1,
               done: moves.length > 0 && failing.length === 0 && broken.length === 0,
               failing: failing.map(function (m) {
                 var slug = m.getAttribute("data-step-move");
                 return m.getAttribute("data-verdict") === "not-run" ? slug + " (not run)" : "FAIL on " + slug;
               }) };
    });
    var held = rows.filter(function (r) { return r.getAttribute("data-verdict") === "pass"; }).length;
    var tally = held + " of " + rows.length + " " + (root.getAttribute("data-check-noun") || "moves") + " hold so far";
    var todo = steps.filter(function (s) { return !s.done; });
    var mine = steps.filter(function (s) { return s.id === stepId; })[0] || todo[0];
    if (!mine) {
      var others = rows.filter(function (r) { return r.getAttribute("data-verdict") === "fail"; })
        .map(function (r) { return r.getAttribute("data-move"); });
      return { text: "All " + steps.length + " steps done" + (ok ? ": every move and probe holds."
        : others.length ? ", but FAIL on " + others.join(", ") + " (no step names it: see its row below)."
        : ": every step's moves hold (see the probes below)."), next: null };
    }
    laterAreToDo(root, steps, mine);
    if (!mine.done) {
      var why = broken.length ? "the honest flow no longer completes (FAIL on " + broken.join(", ") +
        "): a check refuses honest callers too, and the graded report below says which step's"
        : mine.failing.join(", ") + " (see the rows below)";
      return { text: "Step " + mine.n + " not done: " + why + ". " + tally + ".", next: null };
    }
    var after = todo.filter(function (s) { return s.n > mine.n; })[0] || todo[0];
    return { text: "Step " + mine.n + " done: the " + mine.id + " check holds. " +
             tally + (after ? "; next: step " + after.n + ", " + after.id + "." : "; every step is done."),
             next: after ? after.li : null };
  }

  /* The checker's summary, and why each move that did not hold did not: its verdict (a move not run says so). */
  function whyNot(root) {
    var rows = all(root, "[data-run-results] tr[data-move]").filter(function (r) {
      return r.getAttribute("data-verdict") && r.getAttribute("data-verdict") !== "pass";
    });
    if (!rows.length) { return ""; }
    return " Not held: " + rows.map(function (r) {
      return r.getAttribute("data-move") + " (" + r.getAttribute("data-verdict").replace("-", " ") + ")";
    }).join(", ") + "; each row below says what it sent and got.";
  }

  /* FAIL only where the learner's step fails: a step after theirs lists its moves that do not hold yet as work
     to come (the report's table below keeps the checker's own verdicts). */
  function laterAreToDo(root, steps, mine) {
    steps.forEach(function (s) {
      if (s.n <= mine.n || s.done) { return; }
      all(s.li, "[data-step-move][data-verdict='fail'] [data-step-verdict]").forEach(function (slot) {
        slot.replaceChildren(badge(root, "move", "todo"));
        slot.closest("[data-step-move]").setAttribute("data-verdict", "todo");
      });
    });
  }

  /* Move the learner on: the next step's heading comes into view and takes the focus (not its editor: on a
     phone that would open the keyboard over what they are reading). */
  function moveOn(root, li) {
    all(root, "[data-build-step][data-current]").forEach(function (el) { el.removeAttribute("data-current"); });
    li.setAttribute("data-current", "true");
    var heading = $(li, "h3");
    heading.setAttribute("tabindex", "-1");
    var still = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    heading.scrollIntoView({ block: "start", behavior: still ? "auto" : "smooth" });
    heading.focus({ preventScroll: true });
  }

  function grade(root, report) {
    var url = root.getAttribute("data-report-url");
    var target = root.getAttribute("data-report-target");
    if (!window.htmx || !url || !target) { return; }
    var values = { report: JSON.stringify(report) };
    var source = root.getAttribute("data-report-source");  // the LTI page: the report came from this run
    if (source) { values.source = source; }
    window.htmx.ajax("POST", url, { target: target, swap: "innerHTML", values: values });
  }

  function Runner(root) {
    this.root = root;
    this.worker = null;
    this.runId = 0;
    this.timer = null;
    this.loaded = false;
    this.running = false;
    this.button = $(root, "[data-action='run-checks']");
    this.step = null;  // the step whose editor was typed in last
  }

  Runner.prototype.urls = function () {
    var r = this.root;
    return { pyodide: r.getAttribute("data-pyodide"), wheel: r.getAttribute("data-wheel"),
             bundle: r.getAttribute("data-bundle"), catalogue: r.getAttribute("data-catalogue"),
             entry: r.getAttribute("data-entry") || "run" };
  };

  /* Seconds since Run was pressed, Python's start-up and the downloads included: what the learner waited. */
  Runner.prototype.seconds = function () {
    return ((window.performance.now() - this.pressed) / 1000).toFixed(1);
  };

  Runner.prototype.busy = function (on) {
    this.running = on;
    this.button.setAttribute("aria-disabled", on ? "true" : "false");
    this.root.setAttribute("data-run-state", on ? "running" : "idle");
  };

  Runner.prototype.watch = function (ms) {
    var self = this;
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(function () { self.stuck(ms); }, ms);
  };

  Runner.prototype.stop = function () {
    window.clearTimeout(this.timer);
    if (this.worker) { this.worker.terminate(); }
    this.worker = null;
    this.loaded = false;
    this.root.removeAttribute("data-preload");
  };

  Runner.prototype.stuck = function (ms) {
    var seconds = Math.round(ms / 1000);
    this.stop();
    this.busy(false);
    var text = this.phase === "loading"
      ? "Python did not load within " + seconds + " s, so the run was stopped. Check your connection and run again."
      : "Your server did not answer within " + seconds + " s, so the run was stopped (is there an endless loop?). " +
        "The page still works: fix the code and run the checks again.";
    this.root.setAttribute("data-run-state", "timed-out");
    showError(this.root, text);
    setStatus(this.root, "Stopped: no answer within " + seconds + " s.");
  };

  /* The worker, started once (again after a time-out ended it); an error string when the browser refuses. */
  Runner.prototype.ensureWorker = function () {
    if (this.worker) { return ""; }
    var self = this;
    var root = this.root;
    try {
      this.worker = new Worker(root.getAttribute("data-worker"));
    } catch (error) {
      return error.message;
    }
    this.worker.onmessage = function (event) { self.receive(event.data || {}); };
    this.worker.onerror = function (event) {
      event.preventDefault();
      var wasRunning = self.running;
      self.stop();
      self.busy(false);
      root.removeAttribute("data-preload");
      if (!wasRunning) { return; }  // a preload that failed: the next press starts afresh and says why
      showError(root, "The in-page checker stopped: " + (event.message || "an error in the worker") +
                      ". Run the checks again to start it afresh.");
      setStatus(root, "The run failed.");
    };
    return "";
  };

  /* Start downloading and starting Python as the learner reaches an editor, not when they press Run; the
     files are cached by the browser (immutable, versioned or hashed addresses), so a later visit starts from
     its cache. Not on a connection that asks to save data: there the press starts it. */
  Runner.prototype.preload = function () {
    var root = this.root;
    if (this.worker || this.running || root.getAttribute("data-installed") !== "true") { return; }
    if (navigator.connection && navigator.connection.saveData) { return; }
    if (this.ensureWorker()) { return; }
    root.setAttribute("data-preload", "loading");
    // The warm-up plays the lesson's starter, never the learner's code: an endless loop of theirs must not
    // hold the load (their press ends it with the run's time-out).
    var starter = $(root, "[data-starter-source]");
    this.worker.postMessage({ type: "load", id: PRELOAD, urls: this.urls(), source: starter ? starter.textContent : null });
  };

  Runner.prototype.start = function () {
    if (this.running) { return; }
    var root = this.root;
    if (root.getAttribute("data-installed") !== "true") {
      showError(root, "The in-page checker is not installed on this server, so the checks cannot run here. " +
                      "Use the checker command above, and paste its report below.");
      return;
    }
    this.timeout = Math.max(1, Number(root.getAttribute("data-timeout")) || 10) * 1000;
    this.pressed = window.performance.now();
    reset(root);
    this.busy(true);
    this.runId += 1;
    var refused = this.ensureWorker();
    if (refused) {
      this.busy(false);
      showError(root, "This browser could not start the in-page checker (" + refused + ").");
      return;
    }
    this.phase = this.loaded ? "running" : "loading";
    setStatus(root, this.loaded ? "Running the checks…"
      : root.getAttribute("data-preload") === "loading" ? "Python is still starting in this page (it began when you reached the editors)…"
      : "Starting Python in this page (the first run takes a while)…");
    this.watch(this.loaded ? this.timeout : LOAD_TIMEOUT_MS);
    this.worker.postMessage({ type: "run", id: this.runId, source: window.mrtrBuildEditor.source(root), urls: this.urls() });
  };

  Runner.prototype.receive = function (message) {
    if (message.id === PRELOAD) {
      if (message.type === "ready") {
        this.loaded = true;
        this.root.setAttribute("data-preload", "ready");
      }
      return;
    }
    if (message.id !== this.runId) { return; }
    var root = this.root;
    if (message.type === "phase") { setStatus(root, String(message.text)); return; }
    if (message.type === "ready") {
      this.loaded = true;
      this.root.setAttribute("data-preload", "ready");
      this.phase = "running";
      setStatus(root, "Running the checks…");
      this.watch(this.timeout);
      return;
    }
    this.watch(this.timeout);
    if (message.type === "move") { $(root, "[data-run-results]").hidden = false; fillMove(root, message.data || {}); return; }
    if (message.type === "probe") { fillProbe(root, message.data || {}); return; }
    if (message.type === "log") { addLog(root, Array.isArray(message.data) ? message.data : []); return; }
    window.clearTimeout(this.timer);
    this.busy(false);
    if (message.type === "failed") {
      this.stop();
      showError(root, String(message.text));
      setStatus(root, "The run failed.");
      return;
    }
    if (message.type === "done") {
      var data = message.data || {};
      if (data.error) {
        root.setAttribute("data-run-state", "error");
        showError(root, withStep(root, String(data.error)));
        setStatus(root, "The checks could not run: see why below.");
        return;
      }
      root.setAttribute("data-run-state", "done");
      $(root, "[data-run-summary]").textContent = "The checker's summary: " + String(data.summary) + whyNot(root);
      var news = stepNews(root, this.step, Boolean(data.report && data.report.ok));
      setStatus(root, news.text + " (" + this.seconds() + " s from the press)");
      grade(root, data.report);
      if (news.next) { moveOn(root, news.next); }
    }
  };

  /* The bar stays in view at the bottom of the visible screen, except where it would cover the editor the
     learner is typing in: then it docks (data-bar="docked": back in the page's flow below the steps). The
     visible screen is the visual viewport, which a phone's keyboard shortens: --keyboard lifts the stuck bar
     above it. Worked out again on focus, scroll, resize and typing, once a frame at most. */
  function placeBar(root) {
    var bar = $(root, ".build-run-bar");
    if (!bar || bar.hidden) { return; }
    var view = window.visualViewport;
    var visibleBottom = view ? view.offsetTop + view.height : window.innerHeight;
    var keyboard = Math.max(0, window.innerHeight - visibleBottom);
    document.documentElement.style.setProperty("--keyboard", keyboard + "px");  // CSSOM: allowed by the CSP
    var focused = document.activeElement;
    var editor = focused && focused.matches && focused.matches("textarea[data-editor]") && root.contains(focused)
      ? focused.closest(".code-editor") : null;
    root.setAttribute("data-bar", "docked");  // measure where the bar sits in the flow (no paint in between)
    var natural = bar.getBoundingClientRect();
    var stuckTop = visibleBottom - natural.height;
    var covers = false;
    if (editor && natural.top > stuckTop) {  // it would stick: would it be over the editor?
      var box = editor.getBoundingClientRect();
      covers = box.bottom > stuckTop && box.top < visibleBottom;
    }
    root.setAttribute("data-bar", covers ? "docked" : "stuck");
  }

  function watchBar(root) {
    var pending = false;
    function later() {
      if (pending) { return; }
      pending = true;
      window.requestAnimationFrame(function () { pending = false; placeBar(root); });
    }
    root.addEventListener("focusin", function () { placeBar(root); });  // at once: before the keyboard's first key
    root.addEventListener("focusout", later);
    root.addEventListener("input", later);
    window.addEventListener("scroll", later, { passive: true });
    window.addEventListener("resize", later);
    if (window.visualViewport) {
      window.visualViewport.addEventListener("resize", later);
      window.visualViewport.addEventListener("scroll", later);
    }
    placeBar(root);
  }

  /* The learner has reached an editor (on screen, or focused): the moment to start loading Python. */
  function watchForEditors(root, runner) {
    var go = function () { runner.preload(); };
    root.addEventListener("focusin", function (event) {
      if (event.target.matches && event.target.matches("textarea[data-editor]")) { go(); }
    });
    if (typeof IntersectionObserver === "undefined") { return; }
    var seen = new IntersectionObserver(function (entries) {
      if (entries.some(function (e) { return e.isIntersecting; })) { seen.disconnect(); go(); }
    });
    all(root, "[data-editor-box]").forEach(function (box) { seen.observe(box); });
  }

  function init(scope) {
    var roots = (scope && scope.matches && scope.matches("[data-build-runner]")) ? [scope]
      : (scope || document).querySelectorAll("[data-build-runner]");
    Array.prototype.forEach.call(roots, function (root) {
      if (root.mrtrRunner || typeof Worker === "undefined") { return; }
      var runner = new Runner(root);
      root.mrtrRunner = runner;
      all(root, "[data-runner-only]").forEach(function (el) { el.hidden = false; });
      runner.button.addEventListener("click", function () { runner.start(); });
      // The learner's step: the one whose editor they typed in last; a run reports on it.
      root.addEventListener("input", function (event) {
        var area = event.target.closest && event.target.closest("textarea[data-editor]");
        if (area) { runner.step = area.getAttribute("data-editor"); }
      });
      watchBar(root);
      watchForEditors(root, runner);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(document); });
  } else {
    init(document);
  }
  document.addEventListener("htmx:load", function (event) { init(event.detail && event.detail.elt); });
})();
