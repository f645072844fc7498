"""Hostile progress codes pasted into the home page's import box (static/js/progress.js `importCode`):
each is refused with a sentence for the learner, nothing throws, and nothing is stored. Progress
import never reaches the server; these are its only input checks."""

from __future__ import annotations

from playwright.sync_api import Page, expect

#: Runs in the page: builds each hostile code, imports it, and reports {error} / {data} / {threw}.
IMPORT_HOSTILE_CODES = """() => {
  const b64 = (text) => btoa(unescape(encodeURIComponent(text))).replace(/\\+/g, "-").replace(/\\//g, "_")
    .replace(/=+$/, "");
  const raw = (text) => "mrtr-progress." + b64(text);
  const forge = (obj) => raw(JSON.stringify(obj));
  // A code with the right checksum around any data, so only the data's own checks can refuse it.
  const signed = (data) => {
    const body = JSON.parse(decodeURIComponent(escape(atob(mrtrProgress.exportCode(data).slice(14)
      .replace(/-/g, "+").replace(/_/g, "/")))));
    return forge({...body, data: data});
  };
  const many = (n, f) => Array.from({length: n}, (_, i) => f(i));
  const cases = {
    "deep-nesting": () => forge({v: 1, data: JSON.parse("[".repeat(100000) + "]".repeat(100000)), sum: "0"}),
    "deep-unclosed": () => raw('{"v":1,"data":' + "[".repeat(200000)),
    "lone-surrogate-verdict": () => signed({sections: {}, moves: {honest: "\\ud800"}, quiz: {}}),
    "huge-verdict": () => signed({sections: {}, moves: {honest: "x".repeat(40000)}, quiz: {}}),
    "markup-verdict": () => signed({sections: {}, moves: {honest: "<img src=x onerror=alert(1)>"}, quiz: {}}),
    "many-section-ids": () => signed({sections: {"a-b": many(501, (i) => "s" + i)}, moves: {}, quiz: {}}),
    "many-lessons": () => signed({sections: Object.fromEntries(many(501, (i) => ["l" + i, []])), moves: {},
                                  quiz: {}}),
    "long-slug": () => signed({sections: {["a".repeat(81)]: []}, moves: {}, quiz: {}}),
    "proto-key": () => raw('{"v":1,"data":{"sections":{},"moves":{},"quiz":{"__proto__":{"x":true}}},"sum":"0"}'),
    "version-infinity": () => raw('{"v":1e999,"data":{}}'),
    "version-huge-int": () => raw('{"v":' + "9".repeat(5000) + ',"data":{}}'),
    "version-fraction": () => raw('{"v":1.5,"data":{}}'),
    "wrong-types": () => forge({v: 1, data: {sections: [], moves: "x", quiz: null}, sum: 5}),
    "raw-surrogate-bytes": () => "mrtr-progress." + btoa("\\xed\\xa0\\x80").replace(/=+$/, ""),
    "ten-megabytes": () => "mrtr-progress." + "A".repeat(10 * 1024 * 1024),
    "markup": () => "mrtr-progress.<script>alert(1)</script>",
  };
  const out = {};
  for (const [name, build] of Object.entries(cases)) {
    try {
      const result = mrtrProgress.importCode(build());
      out[name] = result.error ? {error: result.error} : {data: JSON.stringify(result.data).slice(0, 120)};
    } catch (e) {
      out[name] = {threw: String(e).slice(0, 120)};
    }
  }
  return out;
}"""


def test_hostile_codes_are_refused_with_a_sentence(page: Page) -> None:
    page.goto("/")
    results = page.evaluate(IMPORT_HOSTILE_CODES)
    assert len(results) == 16
    accepted = {name: r for name, r in results.items() if "error" not in r}
    assert not accepted, accepted
    assert all(len(r["error"]) > 20 for r in results.values())
    assert "far longer" in results["ten-megabytes"]["error"]
    assert "Infinity" not in results["version-infinity"]["error"]
    assert page.evaluate("() => localStorage.getItem('mrtr-lab:progress')") is None


def test_a_good_code_the_browser_cannot_keep_says_so(page: Page) -> None:
    page.goto("/")
    code = page.evaluate("() => mrtrProgress.exportCode({sections: {'a-b': ['c']}, moves: {}, quiz: {}})")
    page.evaluate("() => { Storage.prototype.setItem = () => { throw new Error('QuotaExceededError'); }; }")
    page.locator("#progress-code-in").fill(code)
    page.locator("[data-progress-import]").click()
    status = page.locator("[data-progress-status]")
    expect(status).to_have_text("This browser would not keep the progress (its storage is full or switched off).")
    expect(status).to_have_class("progress-status is-error")


def test_a_hostile_code_in_the_panel_is_refused_aloud_and_marked_invalid(page: Page) -> None:
    page.goto("/")
    page.locator("#progress-code-in").fill("mrtr-progress." + "A" * 70_000)
    page.locator("[data-progress-import]").click()
    expect(page.locator("[data-progress-status]")).to_contain_text("far longer than any progress code")
    expect(page.locator("#progress-code-in")).to_have_attribute("aria-invalid", "true")
