/* The build lesson's in-page checker, in a Web Worker: Pyodide (CPython on WebAssembly) runs the learner's
   server and the checker's moves, so the page stays responsive and an endless loop can be ended by
   terminating this worker. Served by web/build/runner.py, whose response allows 'wasm-unsafe-eval'.

   Everything it loads comes from the page's own origin (it refuses any other address): Pyodide's core
   runtime, the itsdangerous wheel and the checker's own Python code (a zip of this repository's modules).
   The learner's code is never sent anywhere: it arrives in a message and stays in this worker.

   Messages in:  {type: "load", id, urls, source} (the page preloads as the learner reaches an editor; `source`,
                 the lesson's starter, is played once, unseen, to warm up), and
                 {type: "run", id, source, urls: {pyodide, wheel, bundle, catalogue, entry}} (a run joins a load
                 under way). `entry` names what web/build/in_browser.py runs: "run" (a server under the checker's
                 moves) or "run_client" (a client under the client checker's flows); nothing else is called.
   Messages out: {type: "phase", id, text} while loading; {type: "ready", id, ms} (to the load's id, and to a run
                 that had to wait for it);
                 {type: "move" | "probe" | "log", id, data} as the run goes; then
                 {type: "done", id, data: {report, summary, error}, ms} or {type: "failed", id, text}. */
"use strict";

var CHECKER_DIR = "/home/pyodide/checker";
var state = { pyodide: null, runner: null, loading: null };

function sameOrigin(path) {
  if (typeof path !== "string" || path.charAt(0) !== "/" || path.charAt(1) === "/") { return null; }
  var url = new URL(path, self.location.href);
  return url.origin === self.location.origin ? url.href : null;
}

function say(message) { self.postMessage(message); }

async function fetchBytes(url, what) {
  var response = await fetch(url, { credentials: "same-origin" });
  if (!response.ok) { throw new Error(what + " could not be downloaded (HTTP " + response.status + ")"); }
  return new Uint8Array(await response.arrayBuffer());
}

async function load(id, urls, warmUp) {
  var base = sameOrigin(urls.pyodide);
  var wheel = sameOrigin(urls.wheel);
  var bundle = sameOrigin(urls.bundle);
  if (!base || !wheel || !bundle) { throw new Error("the checker's files must come from this site"); }
  var started = Date.now();
  say({ type: "phase", id: id, text: "Downloading Python for this page (about 12 MB, the first time only)…" });
  self.importScripts(base + "pyodide.js");
  var pyodide = await self.loadPyodide({
    indexURL: base,
    // The learner's prints go to the run's log through the checker, never to the console.
    stdout: function () {},
    stderr: function () {}
  });
  say({ type: "phase", id: id, text: "Loading the checker…" });
  var files = await Promise.all([fetchBytes(wheel, "itsdangerous"), fetchBytes(bundle, "The checker")]);
  pyodide.unpackArchive(files[0], "wheel");
  pyodide.unpackArchive(files[1], "zip", { extractDir: CHECKER_DIR });
  pyodide.runPython("import sys\nif " + JSON.stringify(CHECKER_DIR) + " not in sys.path:\n    sys.path.insert(0, " +
                    JSON.stringify(CHECKER_DIR) + ")");
  var runner = pyodide.pyimport("web.build.in_browser");
  runner.install_stubs();
  if (typeof warmUp === "string") {
    // A preload plays the lesson's starter once, unseen, so the first press finds every module imported and
    // every path taken once (a first run in a fresh interpreter is about a second slower than the next).
    try {
      var thrown = entryOf(runner, urls)(warmUp, catalogueOf(urls), function () {});
      if (thrown && typeof thrown.destroy === "function") { thrown.destroy(); }
    } catch (error) { /* the learner's code may not run yet: their press will say why */ }
  }
  state.pyodide = pyodide;
  state.runner = runner;
  say({ type: "ready", id: id, ms: Date.now() - started });
}

function catalogueOf(urls) {
  return CHECKER_DIR + "/" + String((urls && urls.catalogue) || "moves.toml").replace(/[^a-z.]/g, "");
}

var ENTRIES = ["run", "run_client"];

function entryOf(runner, urls) {
  var name = urls && ENTRIES.indexOf(urls.entry) >= 0 ? urls.entry : "run";
  return runner[name];
}

function toJs(value) {
  if (value && typeof value.toJs === "function") {
    var converted = value.toJs({ dict_converter: Object.fromEntries });
    value.destroy();
    return converted;
  }
  return value;
}

function lastLine(error) {
  var text = String(error && error.message ? error.message : error).trim().split("\n");
  return text[text.length - 1] || "unknown error";
}

/* Pyodide and the checker, loaded once: a run or a preload that finds the load under way waits for it. */
function loaded(id, urls, warmUp) {
  if (!state.loading) {
    state.loading = load(id, urls || {}, warmUp);
    state.loading.catch(function () { state.loading = null; });  // the next run or preload tries again
  }
  return state.loading;
}

async function run(message) {
  var id = message.id;
  try {
    if (!state.runner) {
      var waited = Date.now();
      var mine = !state.loading;
      await loaded(id, message.urls);
      if (!mine) { say({ type: "ready", id: id, ms: Date.now() - waited }); }  // joined a preload
    }
  } catch (error) {
    state.loading = null;
    say({ type: "failed", id: id, text: "Python could not be loaded in this page: " + lastLine(error) });
    return;
  }
  var started = Date.now();
  var catalogue = catalogueOf(message.urls);
  try {
    var result = entryOf(state.runner, message.urls)(String(message.source), catalogue, function (kind, data) {
      say({ type: String(kind), id: id, data: toJs(data) });
    });
    say({ type: "done", id: id, data: toJs(result), ms: Date.now() - started });
  } catch (error) {
    // A failure of the checker itself (the learner's errors come back as a report or an error sentence).
    say({ type: "failed", id: id, text: "The checker failed in this page: " + lastLine(error) });
  }
}

self.onmessage = function (event) {
  var message = event.data || {};
  if (message.type === "run" && typeof message.source === "string") { run(message); }
  if (message.type === "load" && !state.runner) {
    loaded(message.id, message.urls, message.source).catch(function () { /* a run says why, and tries again */ });
  }
};
