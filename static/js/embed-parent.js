/* MRTR Lab quiz embed, parent side: makes each <iframe data-mrtr-quiz> as tall as its content.
 * Include it once on the page that embeds the quiz. It trusts a message only when it comes from
 * one of those iframes' windows AND from that iframe's own origin. */
(function () {
  "use strict";

  window.addEventListener("message", function (event) {
    var data = event.data;
    if (!data || typeof data !== "object" || data.v !== 1 || data.type !== "mrtr-quiz:resize") { return; }
    if (typeof data.height !== "number" || !(data.height > 0)) { return; }
    var frames = document.querySelectorAll("iframe[data-mrtr-quiz]");
    for (var i = 0; i < frames.length; i += 1) {
      var frame = frames[i];
      if (frame.contentWindow === event.source && new URL(frame.src, window.location.href).origin === event.origin) {
        frame.style.height = Math.min(Math.ceil(data.height), 20000) + "px";
      }
    }
  });
})();
