/* MRTR Lab quiz embed, parent side: makes each <iframe data-mrtr-quiz> as tall as its content.
 * Include it once on the page that embeds the quiz. It trusts a message only when it comes from
 * one of those iframes' windows AND from that iframe's own origin. It posts to a frame only once
 * the quiz document is in it: a frame still showing its initial about:blank has another origin,
 * and posting there would only log a warning. */
(function () {
  "use strict";

  function frames() { return document.querySelectorAll("iframe[data-mrtr-quiz]"); }

  function originOf(frame) { return new URL(frame.src, window.location.href).origin; }

  // True once the quiz has loaded: its document is cross-origin (reading it throws), or same-origin
  // and no longer the initial about:blank.
  function loaded(frame) {
    try {
      var href = frame.contentWindow && frame.contentWindow.location.href;
      return Boolean(href) && href !== "about:blank";
    } catch (e) {
      return true;
    }
  }

  // This script may run after the quiz first reported its height: ask a loaded quiz to measure again.
  function measure(frame) {
    if (!frame.contentWindow) { return; }
    frame.contentWindow.postMessage({ type: "mrtr-quiz:measure", v: 1 }, originOf(frame));
  }

  Array.prototype.forEach.call(frames(), function (frame) {
    frame.addEventListener("load", function () { measure(frame); });
    if (loaded(frame)) { measure(frame); }
  });

  window.addEventListener("message", function (event) {
    var data = event.data;
    if (!data || typeof data !== "object" || data.v !== 1 || data.type !== "mrtr-quiz:resize") { return; }
    if (typeof data.height !== "number" || !(data.height > 0)) { return; }
    var all = frames();
    for (var i = 0; i < all.length; i += 1) {
      var frame = all[i];
      if (frame.contentWindow === event.source && originOf(frame) === event.origin) {
        frame.style.height = Math.min(Math.ceil(data.height), 20000) + "px";
      }
    }
  });
})();
