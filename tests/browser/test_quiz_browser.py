"""The quick check in a real browser: answer by mouse and keyboard, with and without JavaScript."""

from __future__ import annotations

import re

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from tests.browser.helpers import assert_no_axe_violations
from tests.browser.nojs import assert_no_js_page_accessible
from web.site.content import load_course

SLUG = "when-the-server-needs-input"
QUIZ = f"/quiz/{SLUG}"
QUESTIONS = load_course().lesson(SLUG).questions


def choice_text(q, choice_id: str) -> str:  # noqa: ANN001
    return q.choice(choice_id).text


def wrong(q) -> str:  # noqa: ANN001
    return next(c.id for c in q.choices if c.id != q.answer)


def test_answer_with_the_mouse_gets_feedback_and_score(page: Page, axe: Axe) -> None:
    page.emulate_media(reduced_motion="reduce")
    page.goto(QUIZ)
    assert_no_axe_violations(page, axe)
    score = page.locator("#quiz-score")
    expect(score).to_contain_text("0 of 0 points answered right")

    q = QUESTIONS[0]
    item = page.locator(f"#q-{q.id}")
    item.get_by_label(choice_text(q, q.answer)).check()
    item.get_by_role("button", name=re.compile("Check answer")).click()
    feedback = page.locator(f"#feedback-{q.id}")
    expect(feedback).to_contain_text("Correct.")
    expect(feedback).to_contain_text(q.explanation)
    expect(feedback).to_be_focused()
    expect(score).to_contain_text("1 of 1 point answered right")
    expect(page).to_have_url(re.compile(QUIZ + "$"))  # swapped in place
    assert_no_axe_violations(page, axe)

    q2 = QUESTIONS[1]
    item2 = page.locator(f"#q-{q2.id}")
    item2.get_by_label(choice_text(q2, wrong(q2)), exact=True).check()
    item2.get_by_role("button", name=re.compile("Check answer")).click()
    expect(page.locator(f"#feedback-{q2.id}")).to_contain_text("Not quite.")
    expect(page.locator(f"#feedback-{q2.id}")).to_contain_text("Try once more")  # the answer waits for try two
    expect(score).to_contain_text("1 of 2 points answered right")  # the score carried over
    assert_no_axe_violations(page, axe)


def test_answer_with_the_keyboard_only(page: Page) -> None:
    page.goto(QUIZ)
    q = QUESTIONS[2]
    first_radio = page.locator(f"#q-{q.id}-{q.choices[0].id}")
    first_radio.focus()
    index = [c.id for c in q.choices].index(q.answer)
    page.keyboard.press("Space")  # select the focused (first) choice
    for _ in range(index):
        page.keyboard.press("ArrowDown")
    expect(page.locator(f"#q-{q.id}-{q.answer}")).to_be_checked()
    page.keyboard.press("Tab")  # radio group -> the hidden field is skipped -> "Check answer"
    expect(page.locator(f"#q-{q.id} button[type=submit]")).to_be_focused()
    page.keyboard.press("Enter")
    feedback = page.locator(f"#feedback-{q.id}")
    expect(feedback).to_contain_text("Correct.")
    expect(feedback).to_be_focused()
    expect(page.locator("#quiz-score")).to_contain_text("1 of 1 point answered right")


def test_the_lesson_links_to_its_long_quiz_which_works_and_passes_axe(page: Page, axe: Axe) -> None:
    """The lesson no longer embeds its 26 questions (pages of scrolling on a phone): its quick check links to the
    quiz's own page, where an answer is graded and scored."""
    page.emulate_media(reduced_motion="reduce")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/lessons/{SLUG}#quick-check")
    expect(page.locator("#quick-check .question")).to_have_count(0)
    page.locator("#quick-check").get_by_role("link", name="Take the quick check").click()
    expect(page).to_have_url(re.compile(rf"{QUIZ}$"))
    q = [q for q in QUESTIONS if q.choices and not q.free][-1]  # the last one answered by picking an option
    item = page.locator(f"#q-{q.id}")
    item.get_by_label(choice_text(q, q.answer)).check()
    item.get_by_role("button", name=re.compile("Check answer")).click()
    expect(page.locator(f"#feedback-{q.id}")).to_contain_text("Correct.")
    # The score counts points: a right first answer adds the item's weight.
    expect(page.locator("#quiz-score")).to_contain_text(f"{q.weight} of {q.weight} points answered right")
    assert_no_axe_violations(page, axe)
    page.goto(f"/lessons/{SLUG}#quick-check")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert_no_axe_violations(page, axe)


def test_without_javascript_the_form_posts_and_the_page_shows_feedback(no_js_page: Page, browser: Browser,
                                                                      axe: Axe) -> None:
    page = no_js_page
    page.goto(QUIZ)
    q, q2 = QUESTIONS[0], QUESTIONS[1]
    page.locator(f"#q-{q.id}").get_by_label(choice_text(q, q.answer)).check()
    page.locator(f"#q-{q.id}").get_by_role("button", name=re.compile("Check answer")).click()
    expect(page).to_have_url(re.compile(rf"/quiz/{SLUG}/{q.id}/answer#q-{q.id}$"))
    expect(page.locator(f"#feedback-{q.id}")).to_contain_text("Correct.")
    expect(page.locator("#quiz-score")).to_contain_text("1 of 1 point answered right")
    # The score rides along in every form, so the next answer keeps it.
    page.locator(f"#q-{q2.id}").get_by_label(choice_text(q2, q2.answer), exact=True).check()
    page.locator(f"#q-{q2.id}").get_by_role("button", name=re.compile("Check answer")).click()
    expect(page.locator(f"#feedback-{q2.id}")).to_contain_text("Correct.")
    expect(page.locator("#quiz-score")).to_contain_text("2 of 2 points answered right")
    progress = page.locator("input[name=progress]").first.get_attribute("value")
    assert_no_js_page_accessible(browser, f"{page.url.split('/quiz/')[0]}{QUIZ}?progress={progress}", axe)


def check(page: Page, q, choice_id: str) -> None:  # noqa: ANN001
    item = page.locator(f"#q-{q.id}")
    item.get_by_label(choice_text(q, choice_id), exact=True).check()
    item.get_by_role("button", name=re.compile("Check answer")).click()


def test_a_wrong_answer_gets_a_second_try_before_the_answer_is_shown(page: Page, axe: Axe) -> None:
    page.emulate_media(reduced_motion="reduce")
    page.goto(QUIZ)
    q = QUESTIONS[3]
    chosen = wrong(q)
    check(page, q, chosen)
    feedback = page.locator(f"#feedback-{q.id}")
    expect(feedback).to_contain_text("Not quite.")
    expect(feedback).to_contain_text(q.choice(chosen).why)
    expect(feedback).to_contain_text("Try once more")
    expect(feedback).not_to_contain_text(q.explanation)
    expect(feedback).to_be_focused()
    assert_no_axe_violations(page, axe)
    check(page, q, q.answer)
    expect(feedback).to_contain_text("Correct.")
    expect(feedback).to_contain_text(q.explanation)
    expect(feedback).to_contain_text("The score counts your first answer")
    expect(page.locator("#quiz-score")).to_contain_text("0 of 1 point answered right")


def test_answers_survive_a_reload_and_agree_with_the_progress_panel(page: Page) -> None:
    page.emulate_media(reduced_motion="reduce")
    page.goto(QUIZ)
    # Hold htmx's settle (20 ms) off for the whole first visit: a page that stored an answer only at settle
    # would lose the last one to a reload made the moment the new score shows (it failed 1 run in 10 so).
    page.evaluate("() => { window.htmx.config.defaultSettleDelay = 60000; }")
    right, wrong_first, pending = QUESTIONS[0], QUESTIONS[1], QUESTIONS[2]
    check(page, right, right.answer)
    expect(page.locator("#quiz-score")).to_contain_text("1 of 1 point answered right")
    check(page, wrong_first, wrong(wrong_first))
    expect(page.locator(f"#feedback-{wrong_first.id}")).to_contain_text("Try once more")
    check(page, wrong_first, wrong_first.answer)  # right on the second try: the first answer counts
    expect(page.locator(f"#feedback-{wrong_first.id}")).to_contain_text("The answer:")
    check(page, pending, wrong(pending))
    expect(page.locator(f"#feedback-{pending.id}")).to_contain_text("Try once more")
    expect(page.locator("#quiz-score")).to_contain_text("1 of 3 points answered right")

    page.reload()
    score = page.locator("#quiz-score")
    expect(score).to_contain_text("1 of 3 points answered right")
    expect(page.locator(f"#feedback-{right.id}")).to_contain_text(right.explanation)
    expect(page.locator(f"#feedback-{pending.id}")).to_contain_text("Try once more")  # still one try left
    expect(page.locator(f"#feedback-{pending.id}")).not_to_contain_text(pending.explanation)
    # The restored form carries the progress on: the second try still counts the first answer.
    check(page, pending, pending.answer)
    expect(page.locator(f"#feedback-{pending.id}")).to_contain_text(pending.explanation)
    expect(score).to_contain_text("1 of 3 points answered right")

    # The progress panel shows the same.
    page.goto("/")
    row = page.locator(f'[data-progress-lesson="{SLUG}"]')
    expect(row.locator('[data-stat="answered"]')).to_have_text("3")
    expect(row.locator('[data-stat="correct"]')).to_have_text("1")


def test_a_predict_question_links_to_the_playground_after_answering(page: Page) -> None:
    page.goto(QUIZ)
    q = next(q for q in QUESTIONS if q.try_it)
    expect(page.locator(f'#q-{q.id} a[href="{q.try_it}"]')).to_have_count(0)
    check(page, q, q.answer)
    link = page.locator(f"#feedback-{q.id}").get_by_role("link", name="Run it in the playground")
    expect(link).to_have_attribute("href", q.try_it)


def test_a_drawn_item_works_without_javascript_at_390_px_in_both_themes(no_js_page: Page, browser: Browser,
                                                                        base_url: str, axe: Axe) -> None:
    """The situation drawn for the learner is readable on a phone in both themes, its options answer by a plain
    form post, and the lab server's own play of the draw says what happened."""
    drawn = next(q for q in QUESTIONS if q.task is not None and q.task.kind == "draw")
    # axe cannot run with JavaScript off: the look is checked where the page's own scripts are refused instead.
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme=scheme,
                                      base_url=base_url)
        try:
            context.route("**/*.js", lambda route: route.abort())
            page = context.new_page()
            page.goto(QUIZ)
            page.locator(f"#q-{drawn.id}").scroll_into_view_if_needed()
            assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
            assert_no_axe_violations(page, axe)
        finally:
            context.close()
    page = no_js_page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(QUIZ)
    item = page.locator(f"#q-{drawn.id}")
    item.locator("input[name=predict]").first.check()
    item.get_by_role("button", name=re.compile("Send it to the server")).click()
    expect(page).to_have_url(re.compile(rf"/quiz/{SLUG}/{drawn.id}/answer#q-{drawn.id}$"))
    expect(page.locator(f"#feedback-{drawn.id}")).to_contain_text("the server played your situation")
    expect(page.locator("#quiz-score")).to_contain_text(f"of {drawn.weight} points answered right")


def test_a_build_item_works_without_javascript_at_390_px_in_both_themes(no_js_page: Page, browser: Browser,
                                                                        base_url: str, axe: Axe) -> None:
    """The "build the retry" item: its parts are plain selects on a phone in both themes, the build is sent by a
    plain form post, and the lab server's play of what was built grades it."""
    slug, qid = "build-the-checks", "drawn-retry-build"
    weight = next(q.weight for q in load_course().lesson(slug).questions if q.id == qid)  # type: ignore[union-attr]
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme=scheme,
                                      base_url=base_url)
        try:
            context.route("**/*.js", lambda route: route.abort())
            page = context.new_page()
            page.goto(f"/quiz/{slug}")
            page.locator(f"#q-{qid}").scroll_into_view_if_needed()
            assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
            assert_no_axe_violations(page, axe)
        finally:
            context.close()
    page = no_js_page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/quiz/{slug}")
    item = page.locator(f"#q-{qid}")
    for part, label in (("ticket", "The ticket as the server minted it"), ("sender", "bob's client"),
                        ("answer", "Accept, with confirm true")):
        item.locator(f"select[name={part}]").select_option(label=label)
    for part in ("env", "when"):
        item.locator(f"select[name={part}]").select_option(index=1)
    item.get_by_role("button", name=re.compile("Send it to the server")).click()
    expect(page).to_have_url(re.compile(rf"/quiz/{slug}/{qid}/answer#q-{qid}$"))
    expect(page.locator(f"#feedback-{qid}")).to_contain_text("the server played the retry you built")
    expect(page.locator("#quiz-score")).to_contain_text(f"of {weight} points answered right")
