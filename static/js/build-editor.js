/* The build lesson's code editors: one per step, each holding that step's function from the learner's one copy
   of the starter. A plain <textarea data-editor> is what the learner types into (so the keyboard, the
   clipboard, select-all, undo and screen readers all work as in any text field), laid over a highlighted copy
   of the same text (aria-hidden) and beside line numbers from the learner's server.py.

   Tab indents and Shift+Tab outdents; Escape, then Tab, leaves the editor (no keyboard trap). The learner's
   copy lives in this browser only (localStorage), one entry per lesson; "Reset to the starter" brings a step's
   starter code back. Every piece of text is set with textContent: nothing typed is ever parsed as HTML.

   window.mrtrBuildEditor: {source(root) -> the learner's whole server.py, lineOf(root, step) -> its first line}. */
(function () {
  "use strict";

  var INDENT = "    ";
  var KEY = "mrtr-build-code:";
  var BLOCK = /^(#) -- step: ([a-z][a-z-]*) --\n([\s\S]*?)^\1 -- end of step --\n/gm;
  var KEYWORDS = ("False None True and as assert async await break class continue def del elif else except finally " +
                  "for from global if import in is lambda nonlocal not or pass raise return try while with yield").split(" ");
  var BUILTINS = ("isinstance dict list str int float bool len print set tuple type range any all sorted " +
                  "enumerate getattr hasattr min max super Exception ValueError KeyError TypeError").split(" ");
  // One pass over the text: comments, strings (triple-quoted first, with prefixes), numbers, names.
  var TOKEN = /(#[^\n]*)|((?:[rRbBuUfF]{0,2})(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?))|(\b\d[\d_]*(?:\.\d+)?\b)|(@?[A-Za-z_][A-Za-z0-9_]*)/g;

  function storageKey(root) { return KEY + (root.getAttribute("data-lesson") || ""); }

  function loadSaved(root) {
    try {
      var saved = JSON.parse(window.localStorage.getItem(storageKey(root)) || "{}");
      return saved && typeof saved === "object" && saved.steps && typeof saved.steps === "object" ? saved.steps : {};
    } catch (e) { return {}; }
  }

  function save(root) {
    var steps = {};
    Array.prototype.forEach.call(root.querySelectorAll("textarea[data-editor]"), function (area) {
      if (area.value !== area.defaultValue) { steps[area.getAttribute("data-editor")] = area.value; }
    });
    try { window.localStorage.setItem(storageKey(root), JSON.stringify({ v: 1, steps: steps })); } catch (e) { /* full or off: the page still works */ }
  }

  function starterOf(root) {
    var holder = root.querySelector("[data-starter-source]");
    return holder ? holder.textContent : "";
  }

  /* The learner's server.py: the starter with each step's block replaced by that step's editor. */
  function source(root) {
    var editors = {};
    Array.prototype.forEach.call(root.querySelectorAll("textarea[data-editor]"), function (area) {
      editors[area.getAttribute("data-editor")] = area.value;
    });
    return starterOf(root).replace(BLOCK, function (whole, mark, id, code) {
      var text = Object.prototype.hasOwnProperty.call(editors, id) ? editors[id] : code;
      if (text && text.charAt(text.length - 1) !== "\n") { text += "\n"; }
      return mark + " -- step: " + id + " --\n" + text + mark + " -- end of step --\n";
    });
  }

  /* The first line of a step's code in the learner's server.py (1-based). */
  function lineOf(root, stepId) {
    var marker = "# -- step: " + stepId + " --\n";
    var text = source(root);
    var at = text.indexOf(marker);
    return at < 0 ? 1 : text.slice(0, at + marker.length).split("\n").length;
  }

  function span(cls, text) {
    var el = document.createElement("span");
    el.className = cls;
    el.textContent = text;
    return el;
  }

  function highlight(code, text) {
    var out = document.createDocumentFragment();
    var last = 0;
    var afterDef = false;
    TOKEN.lastIndex = 0;
    var m;
    while ((m = TOKEN.exec(text)) !== null) {
      if (m[0] === "") { TOKEN.lastIndex++; continue; }
      if (m.index > last) { out.appendChild(document.createTextNode(text.slice(last, m.index))); }
      var word = m[4];
      if (m[1]) { out.appendChild(span("tok-comment", m[1])); }
      else if (m[2]) { out.appendChild(span("tok-string", m[2])); }
      else if (m[3]) { out.appendChild(span("tok-number", m[3])); }
      else if (word.charAt(0) === "@") { out.appendChild(span("tok-decorator", word)); }
      else if (afterDef) { out.appendChild(span("tok-def", word)); }
      else if (KEYWORDS.indexOf(word) >= 0) { out.appendChild(span("tok-keyword", word)); }
      else if (BUILTINS.indexOf(word) >= 0) { out.appendChild(span("tok-builtin", word)); }
      else { out.appendChild(document.createTextNode(word)); }
      afterDef = word === "def" || word === "class";
      last = TOKEN.lastIndex;
    }
    if (last < text.length) { out.appendChild(document.createTextNode(text.slice(last))); }
    // A trailing newline needs a character after it, or the copy is a line shorter than the textarea.
    out.appendChild(document.createTextNode("\n"));
    code.replaceChildren(out);
  }

  function render(root, area) {
    var box = area.closest(".code-editor");
    if (!box) { return; }
    highlight(box.querySelector(".code-editor-highlight code"), area.value);
    var first = lineOf(root, area.getAttribute("data-editor"));
    var count = area.value.split("\n").length;
    var numbers = [];
    for (var i = 0; i < count; i++) { numbers.push(String(first + i)); }
    box.querySelector(".code-editor-gutter").textContent = numbers.join("\n");
    area.rows = Math.max(4, Math.min(count + 1, 40));
    // Wrapped lines (a phone, build.css) outnumber the text's lines: the field grows to show them all, as the
    // page, not the field, is what scrolls under a finger. CSSOM styles are allowed by the CSP.
    area.style.height = "";
    if (window.getComputedStyle(area).whiteSpace !== "pre" && area.scrollHeight > area.clientHeight) {
      area.style.height = (area.scrollHeight + area.offsetHeight - area.clientHeight) + "px";
    }
    syncScroll(area);
  }

  function syncScroll(area) {
    var box = area.closest(".code-editor");
    var pre = box.querySelector(".code-editor-highlight");
    pre.scrollTop = area.scrollTop;
    pre.scrollLeft = area.scrollLeft;
    box.querySelector(".code-editor-gutter").scrollTop = area.scrollTop;
  }

  /* Replace the selection through the browser's own editing, so Ctrl+Z undoes it like typing. */
  function replaceRange(area, start, end, text) {
    area.setSelectionRange(start, end);
    if (!document.execCommand || !document.execCommand("insertText", false, text)) {
      area.setRangeText(text, start, end, "end");
      area.dispatchEvent(new Event("input", { bubbles: true }));
    }
  }

  function indent(area, outdent) {
    var value = area.value;
    var start = area.selectionStart;
    var end = area.selectionEnd;
    var lineStart = value.lastIndexOf("\n", start - 1) + 1;
    if (!outdent && start === end) {
      replaceRange(area, start, end, INDENT.slice((start - lineStart) % INDENT.length));
      return;
    }
    var blockEnd = end > start && value.charAt(end - 1) === "\n" ? end - 1 : end;
    var lines = value.slice(lineStart, blockEnd).split("\n");
    var changed = lines.map(function (line) {
      if (!outdent) { return INDENT + line; }
      var spaces = /^ {0,4}/.exec(line)[0].length;
      return line.slice(spaces);
    }).join("\n");
    replaceRange(area, lineStart, blockEnd, changed);
    area.setSelectionRange(lineStart, lineStart + changed.length);
  }

  function announce(root, text) {
    var status = root.querySelector("[data-editor-status]");
    if (status) { status.textContent = ""; window.setTimeout(function () { status.textContent = text; }, 30); }
  }

  function initEditor(root, area, saved) {
    if (area.hasAttribute("data-editor-ready")) { return; }
    area.setAttribute("data-editor-ready", "true");
    var id = area.getAttribute("data-editor");
    if (typeof saved[id] === "string") { area.value = saved[id]; }
    var escaped = false;
    area.addEventListener("keydown", function (event) {
      if (event.key === "Escape") { escaped = true; return; }
      if (event.key === "Tab" && !escaped && !event.altKey && !event.ctrlKey && !event.metaKey) {
        event.preventDefault();
        indent(area, event.shiftKey);
        return;
      }
      escaped = false;
    });
    area.addEventListener("blur", function () { escaped = false; });
    area.addEventListener("input", function () { render(root, area); save(root); renderAll(root, area); });
    area.addEventListener("scroll", function () { syncScroll(area); });
    render(root, area);
  }

  /* Line numbers of the later steps move when an earlier step grows or shrinks. */
  function renderAll(root, except) {
    Array.prototype.forEach.call(root.querySelectorAll("textarea[data-editor]"), function (area) {
      if (area !== except) { render(root, area); }
    });
  }

  function init(scope) {
    var roots = (scope && scope.matches && scope.matches("[data-build-code]")) ? [scope]
      : (scope || document).querySelectorAll("[data-build-code]");
    Array.prototype.forEach.call(roots, function (root) {
      var saved = loadSaved(root);
      Array.prototype.forEach.call(root.querySelectorAll("[data-editor-box]"), function (box) { box.hidden = false; });
      Array.prototype.forEach.call(root.querySelectorAll("textarea[data-editor]"), function (area) {
        initEditor(root, area, saved);
      });
      if (root.hasAttribute("data-editor-click")) { return; }
      root.setAttribute("data-editor-click", "true");
      root.addEventListener("click", function (event) {
        var button = event.target.closest && event.target.closest("[data-action='reset-step']");
        if (!button || !root.contains(button)) { return; }
        var area = root.querySelector("textarea[data-editor='" + button.getAttribute("data-step") + "']");
        if (!area) { return; }
        area.value = area.defaultValue;
        render(root, area);
        renderAll(root, area);
        save(root);
        announce(root, "Step " + (button.getAttribute("data-step-n") || "") + " is back to the starter's code.");
      });
    });
  }

  window.mrtrBuildEditor = { source: source, lineOf: lineOf };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(document); });
  } else {
    init(document);
  }
  document.addEventListener("htmx:load", function (event) { init(event.detail && event.detail.elt); });
})();
