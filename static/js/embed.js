/* The embeddable quiz's side of the postMessage protocol (version 1; docs/teaching/embedding.md).
 *
 * Messages go to window.parent, and ONLY to the origin the server validated against
 * MRTR_EMBED_ORIGINS (data-parent-origin), or, without ?origin=, to the framing page's own origin when the
 * allow-list names it exactly (data-allowed-origins); without either, nothing is sent. Never to "*".
 *   {type: "mrtr-quiz:ready",     v: 1, lesson, question, questions, height}   once, on load
 *   {type: "mrtr-quiz:resize",    v: 1, lesson, height}                        whenever the height changes
 *   {type: "mrtr-quiz:answered",  v: 1, lesson, question, correct}             after each checked answer
 *   {type: "mrtr-quiz:completed", v: 1, lesson, score, max}  (points)   once every question is answered
 * and accepts one message from that same parent origin:
 *   {type: "mrtr-quiz:measure",   v: 1}    answer with a fresh resize (embed-parent.js sends it on load)
 * The quiz itself (htmx, server-checked answers, the signed score) works the same without this file. */
(function () {
  "use strict";

  var VERSION = 1;
  var root = document.querySelector("[data-embed]");
  if (!root) { return; }
  var origin = root.getAttribute("data-parent-origin");
  if (!origin) {
    // Framed without ?origin= (the whole-quiz URL pasted alone, an oEmbed consumer): the browser names the
    // framing page's origin, and it counts only when the server's allow-list names it exactly.
    var allowed = (root.getAttribute("data-allowed-origins") || "").split(" ").filter(Boolean);
    var ancestors = window.location.ancestorOrigins;
    var parent = ancestors && ancestors.length ? ancestors[0] : "";
    origin = allowed.indexOf(parent) >= 0 ? parent : null;
  }
  var lesson = root.getAttribute("data-lesson");
  var framed = window.parent && window.parent !== window;
  var completed = false;

  function post(type, fields) {
    if (!origin || !framed) { return; }
    var message = { type: "mrtr-quiz:" + type, v: VERSION, lesson: lesson };
    Object.keys(fields).forEach(function (key) { message[key] = fields[key]; });
    window.parent.postMessage(message, origin);
  }

  function height() {
    return Math.ceil(root.getBoundingClientRect().height);
  }

  function score() {
    var line = document.getElementById("quiz-score");
    if (!line) { return null; }
    return {
      correct: parseInt(line.getAttribute("data-correct"), 10),
      answered: parseInt(line.getAttribute("data-answered"), 10),
      total: parseInt(line.getAttribute("data-total"), 10)
    };
  }

  var lastHeight = -1;
  function reportHeight() {
    var h = height();
    if (h !== lastHeight) {
      lastHeight = h;
      post("resize", { height: h });
    }
  }

  // After htmx has swapped the verdict in (and the score line out of band), report it.
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || !target.classList || !target.classList.contains("feedback")) { return; }
    var verdict = target.querySelector("[data-question][data-correct]");
    // No verdict: "choose an answer first", nothing was checked. Settle events also fire for the
    // out-of-band swaps of the same response, so each verdict element is reported once.
    if (!verdict || verdict.hasAttribute("data-reported")) { return; }
    verdict.setAttribute("data-reported", "true");
    post("answered", { question: verdict.getAttribute("data-question"),
                       correct: verdict.getAttribute("data-correct") === "true" });
    var s = score();
    if (s && !completed && s.total > 0 && s.answered >= s.total) {
      completed = true;
      post("completed", { score: s.correct, max: s.total });
    }
    reportHeight();
  });

  var start = score();
  completed = Boolean(start && start.total > 0 && start.answered >= start.total);
  post("ready", { question: root.getAttribute("data-question") || null,
                  questions: document.querySelectorAll(".question").length, height: height() });
  reportHeight();  // the first resize: the parent-side script sizes the iframe from resize messages only
  // The parent may load its script after our first resize; it asks again with "mrtr-quiz:measure".
  window.addEventListener("message", function (event) {
    var data = event.data;
    if (event.source !== window.parent || event.origin !== origin || !data || data.v !== VERSION) { return; }
    if (data.type === "mrtr-quiz:measure") {
      lastHeight = -1;
      reportHeight();
    }
  });
  if ("ResizeObserver" in window) {
    new window.ResizeObserver(reportHeight).observe(root);
  }
})();
