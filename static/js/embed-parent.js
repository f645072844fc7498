/* MRTR Lab quiz embed, parent side: makes each <iframe data-mrtr-quiz> as tall as its content.
 * Include it once on the page that embeds the quiz. It trusts a message only when it comes from
 * one of those iframes' windows AND from that iframe's own origin. */
(function () {
  "use strict";

  function frames() { return document.querySelectorAll("iframe[data-mrtr-quiz]"); }

  function originOf(frame) { return new URL(frame.src, window.location.href).origin; }

  // This script may run after the quiz first reported its height: ask each quiz to measure again,
  // now and whenever one (re)loads.
  function measure(frame) {
    try {
      frame.contentWindow.postMessage({ type: "mrtr-quiz:measure", v: 1 }, originOf(frame));
    } catch (e) { /* not loaded yet: its load event will ask */ }
  }

  Array.prototype.forEach.call(frames(), function (frame) {
    frame.addEventListener("load", function () { measure(frame); });
    measure(frame);
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
