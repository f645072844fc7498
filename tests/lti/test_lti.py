"""MRTR Lab as an LTI 1.3 tool, against a real platform implementation (lti1p3platform) on loopback.

The tool runs in Flask's test client at https://tool.test (its cookies are Secure); the platform's key set,
token and score endpoints are a real HTTP server on 127.0.0.1 (tests/lti/platform.py). Time that matters to
the tool (score retries) runs on an injected clock; token expiry is set in the token itself.
"""

from __future__ import annotations

import base64
import json
import os
import stat
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from bs4 import BeautifulSoup
from flask import Flask
from flask.testing import FlaskClient

from moves.check import check_source
from mrtr import FakeClock
from mrtr_settings.environment import ConfigError, read_settings
from mrtr_stores import lti_sqlite
from mrtr_stores.lti import new_private_key
from tests.lessons.buildkit import BUILD, CATALOGUE
from tests.lti.platform import CLIENT_ID, SCORE_TYPE, Platform, new_key_pair, running_platform
from tests.web.helpers import answer_form
from web.site.content import get_content

TOOL = "https://tool.test"
MakeApp = Callable[..., Flask]
QUIZ_LESSON = "when-the-server-needs-input"
BUILD_LESSON = "build-the-checks"


@pytest.fixture
def platform() -> Iterator[Platform]:
    with running_platform(TOOL) as p:
        yield p


def lti_config(clock: FakeClock, platforms: Any) -> dict[str, Any]:
    """The tool's settings for `platforms` (None: no LTI at all), its LTI store on `clock`."""
    return {"LTI_CLOCK": clock, **({"MRTR_LTI_PLATFORMS": json.dumps(platforms)} if platforms is not None else {})}


#: The tool's private key, made once per process (RSA, 40-200 ms a key) instead of once per test's state directory.
_tool_key = cache(new_private_key)


@pytest.fixture
def app_config(clock: FakeClock, platform: Platform, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The tool registered with `platform`. Its key is still made on first use and kept in the state directory as
    the store keeps it (test_the_private_key_stays_in_the_state_dir_...); only the making is shared."""
    monkeypatch.setattr(lti_sqlite, "new_private_key", _tool_key)
    return lti_config(clock, [platform.tool_entry()])


@pytest.fixture
def client(app: Flask, platform: Platform) -> FlaskClient:
    client = app.test_client()
    # The platform trusts what the tool publishes at its JWKS URL (as a platform given that URL would).
    platform.registration.set_tool_key_set(client.get("/lti/jwks", base_url=TOOL).get_json())
    return client


def login(client: FlaskClient, platform: Platform, **kwargs: Any) -> str:
    """The platform's OIDC login initiation; returns where the tool sends the browser (the platform's auth URL)."""
    url = urlsplit(platform.login_url(**kwargs))
    response = client.get(f"{url.path}?{url.query}", base_url=TOOL)
    assert response.status_code == 302, response.get_data(as_text=True)
    return str(response.headers["Location"])


def launch(client: FlaskClient, platform: Platform, **kwargs: Any) -> Any:
    data = platform.launch(login(client, platform), **kwargs)
    return client.post("/lti/launch", data={"id_token": data["id_token"], "state": data["state"]}, base_url=TOOL)


def follow(client: FlaskClient, response: Any) -> Any:
    assert response.status_code == 303, response.get_data(as_text=True)
    url = urlsplit(response.headers["Location"])
    return client.get(f"{url.path}?{url.query}", base_url=TOOL)


def soup(response: Any) -> BeautifulSoup:
    return BeautifulSoup(response.get_data(as_text=True), "html.parser")


def claims(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))))


def answer_all(client: FlaskClient, app: Flask, page: Any, wrong: int = 1) -> Any:
    """Answer each question on the page, the first `wrong` of them wrongly, carrying the signed progress."""
    with app.app_context():
        questions = {q.id: q for q in get_content().lesson(QUIZ_LESSON).questions}
    response = page
    forms = soup(page).select("form[hx-post]")
    for n, form in enumerate(forms):
        qid = form.select_one("input[name=progress]")["id"].removeprefix("progress-")
        q = questions[qid]
        progress = soup(response).select_one(f"#progress-{qid}")["value"]
        response = client.post(form["action"].split("#")[0], data={**answer_form(app, q, right=n >= wrong),
                                                                   "progress": progress}, base_url=TOOL)
        assert response.status_code == 200
    return response


# -- launch, quiz, score -------------------------------------------------------------------------------------


def test_a_launched_quiz_posts_its_first_try_score_to_the_line_item(app: Flask, client: FlaskClient,
                                                                     platform: Platform) -> None:
    page = follow(client, launch(client, platform, item=f"quiz/{QUIZ_LESSON}"))
    assert page.status_code == 200
    assert "goes to your course when you finish" in page.get_data(as_text=True)
    forms = soup(page).select("form[hx-post]")
    with app.app_context():  # points: each question weighs its weight (a drawn or doing item more than one)
        weights = {q.id: q.weight for q in get_content().lesson(QUIZ_LESSON).questions}
    first = forms[0].select_one("input[name=progress]")["id"].removeprefix("progress-")
    total = sum(weights.values())
    assert len(forms) == len(weights) >= 2 and platform.scores == []
    last = answer_all(client, app, page, wrong=1)
    assert len(platform.scores) == 1
    score = platform.scores[0]
    assert score["content_type"] == SCORE_TYPE
    assert (score["scoreGiven"], score["scoreMaximum"]) == (total - weights[first], total)
    assert (score["activityProgress"], score["gradingProgress"]) == ("Completed", "FullyGraded")
    assert score["userId"] == "learner-1" and score["timestamp"].startswith("2026-")
    assert "Your course has your score" in last.get_data(as_text=True)
    # A reload re-shows the page; nothing is posted twice.
    client.post(soup(last).select("form[hx-post]")[0]["action"].split("#")[0],
                data={"choice": "x", "progress": soup(last).select_one("input[name=progress]")["value"]}, base_url=TOOL)
    assert len(platform.scores) == 1


def test_a_failed_score_post_is_kept_and_retried_until_the_platform_accepts_it(
        app: Flask, client: FlaskClient, platform: Platform, clock: FakeClock, make_app: MakeApp) -> None:
    platform.down = True
    activity = follow(client, launch(client, platform, item=f"quiz/{QUIZ_LESSON}"))
    last = answer_all(client, app, activity, wrong=0)
    assert platform.scores == []
    assert "is kept and sent to your course" in last.get_data(as_text=True)
    platform.down = False
    # The app restarts in between: the score waits on disk, not in memory.
    client = make_app(**lti_config(clock, [platform.tool_entry()])).test_client()
    client.get(activity.request.full_path, base_url=TOOL)  # not due yet: the retry backs off
    assert platform.scores == []
    clock.advance(31)
    again = client.get(activity.request.full_path, base_url=TOOL)
    assert len(platform.scores) == 1 and platform.scores[0]["scoreGiven"] == platform.scores[0]["scoreMaximum"]
    assert "Your course has your score" in again.get_data(as_text=True)
    clock.advance(10_000)
    client.get(activity.request.full_path, base_url=TOOL)
    assert len(platform.scores) == 1  # accepted once, never sent again


def test_a_launch_without_the_ags_claim_works_and_sends_nothing(app: Flask, client: FlaskClient,
                                                                platform: Platform) -> None:
    page = follow(client, launch(client, platform, item=f"quiz/{QUIZ_LESSON}", ags=False))
    assert "did not ask for a score" in page.get_data(as_text=True)
    answer_all(client, app, page)
    assert platform.scores == [] and platform.token_requests == 0


def test_one_question_is_scored_out_of_one(app: Flask, client: FlaskClient, platform: Platform) -> None:
    with app.app_context():
        q = get_content().lesson(QUIZ_LESSON).questions[1]
    page = follow(client, launch(client, platform, item=f"question/{QUIZ_LESSON}/{q.id}"))
    assert len(soup(page).select("form[hx-post]")) == 1
    progress = soup(page).select_one("input[name=progress]")["value"]
    action = soup(page).select_one("form[hx-post]")["hx-post"]
    assert action.startswith(f"/lti/answer/{QUIZ_LESSON}/{q.id}?launch=")
    client.post(action, data={"choice": q.answer, "progress": progress}, base_url=TOOL)
    assert [(s["scoreGiven"], s["scoreMaximum"]) for s in platform.scores] == [(1, 1)]


# -- deep linking and the build lesson -----------------------------------------------------------------------


def test_deep_linking_returns_a_signed_content_item_with_a_line_item(app: Flask, client: FlaskClient,
                                                                     platform: Platform) -> None:
    picker = follow(client, launch(client, platform, deep_link=True))
    assert picker.status_code == 200
    items = [i["value"] for i in soup(picker).select("input[name=item]")]
    assert f"quiz/{QUIZ_LESSON}" in items and f"build/{BUILD_LESSON}" in items
    assert any(i.startswith(f"question/{QUIZ_LESSON}/") for i in items)
    path = picker.request.full_path
    assert client.post(path, data={"item": "nothing/here"}, base_url=TOOL).status_code == 400
    back = client.post(path, data={"item": f"build/{BUILD_LESSON}"}, base_url=TOOL)
    form = soup(back).select_one("form[data-lti-autosubmit]")
    assert form["action"] == f"{platform.base}/deep-link-return"
    csp = back.headers["Content-Security-Policy"]
    assert f"form-action 'self' {platform.base};" in csp and f"frame-ancestors 'self' {platform.base}" in csp
    assert "script-src 'self';" in csp and "<script>" not in back.get_data(as_text=True)
    jwt = form.select_one("input[name=JWT]")["value"]
    [item] = platform.deep_link_items(jwt)  # verified against the tool's published key
    with app.app_context():
        steps = 6
    assert item["type"] == "ltiResourceLink" and item["url"] == f"{TOOL}/lti/launch"
    assert item["custom"] == {"mrtr_item": f"build/{BUILD_LESSON}"}
    assert item["lineItem"]["scoreMaximum"] == steps and item["lineItem"]["resourceId"] == f"build/{BUILD_LESSON}"
    body = claims(jwt)
    assert body["iss"] == CLIENT_ID and body["aud"] == [platform.base]
    assert body["https://purl.imsglobal.org/spec/lti/claim/deployment_id"] == "deployment-1"


def _report(passing: list[str]) -> str:
    # A malformed answer passes step 5 only with an error of its own (the answer rule, web/build/routes.py).
    malformed = {"wrong-type", "missing-key"}
    return json.dumps({"ok": False, "probes": [], "moves": [
        {"move": m, "verdict": "pass", **({"observed": "refused", "detail": "error -32602: Malformed inputResponses"}
                                          if m in malformed else {})} for m in passing]})


def test_the_build_lesson_posts_the_steps_a_checker_report_shows_done(app: Flask, client: FlaskClient,
                                                                      platform: Platform) -> None:
    page = follow(client, launch(client, platform, item=f"build/{BUILD_LESSON}"))
    assert len(soup(page).select("li[data-step]")) == 6
    action = soup(page).select_one("form[action*=build-report]")["action"]
    assert client.post(action, data={"report": "not json"}, base_url=TOOL).status_code == 400
    assert platform.scores == []
    one = client.post(action, data={"report": _report(["tampered"])}, base_url=TOOL)
    assert one.status_code == 200 and "1 of 6 steps" in one.get_data(as_text=True)
    assert [(s["scoreGiven"], s["activityProgress"], s["gradingProgress"]) for s in platform.scores] == \
        [(1, "InProgress", "Pending")]
    client.post(action, data={"report": _report([])}, base_url=TOOL)  # a worse report takes nothing away
    assert len(platform.scores) == 1
    every = ["tampered", "stolen", "late", "other-request", "no-answer", "declined", "cancelled", "wrong-type",
             "missing-key", "twice", "replay-new-id"]
    client.post(action, data={"report": _report(every)}, base_url=TOOL)
    assert [(s["scoreGiven"], s["scoreMaximum"], s["activityProgress"], s["gradingProgress"])
            for s in platform.scores][-1] == (6, 6, "Completed", "FullyGraded")


# -- bad launches ----------------------------------------------------------------------------------------


def _refused(response: Any, status: int, words: str) -> None:
    assert response.status_code == status, response.get_data(as_text=True)
    page = response.get_data(as_text=True)
    assert "could not be verified" in page and words in page and "Traceback" not in page


def _tampered(client: FlaskClient, platform: Platform, change: dict[str, Any], key: str | None = None) -> Any:
    data = platform.launch(login(client, platform), item=f"quiz/{QUIZ_LESSON}")
    body = {**claims(data["id_token"]), **change}
    return client.post("/lti/launch", data={"id_token": platform.sign(body, key), "state": data["state"]},
                       base_url=TOOL)


def test_a_forged_signature_is_refused(client: FlaskClient, platform: Platform) -> None:
    other_private, _ = new_key_pair()
    _refused(_tampered(client, platform, {"sub": "teacher"}, other_private), 403, "not signed by the course site")


def test_a_replayed_launch_is_refused(client: FlaskClient, platform: Platform) -> None:
    data = platform.launch(login(client, platform), item=f"quiz/{QUIZ_LESSON}")
    form = {"id_token": data["id_token"], "state": data["state"]}
    assert client.post("/lti/launch", data=form, base_url=TOOL).status_code == 303
    _refused(client.post("/lti/launch", data=form, base_url=TOOL), 403, "already used")


def test_an_expired_launch_is_refused(client: FlaskClient, platform: Platform) -> None:
    data = platform.launch(login(client, platform), item=f"quiz/{QUIZ_LESSON}", expires_in=-60)
    _refused(client.post("/lti/launch", data={"id_token": data["id_token"], "state": data["state"]}, base_url=TOOL),
             400, "has expired")


def test_a_launch_without_expiry_is_refused(client: FlaskClient, platform: Platform) -> None:
    data = platform.launch(login(client, platform), item=f"quiz/{QUIZ_LESSON}")
    body = claims(data["id_token"])
    del body["exp"]
    response = client.post("/lti/launch", data={"id_token": platform.sign(body), "state": data["state"]},
                           base_url=TOOL)
    _refused(response, 400, "lacks a claim every launch must carry")


def test_a_launch_for_another_audience_is_refused(client: FlaskClient, platform: Platform) -> None:
    _refused(_tampered(client, platform, {"aud": [CLIENT_ID, "another-tool"], "azp": "another-tool"}), 403,
             "meant for another tool")
    _refused(_tampered(client, platform, {"aud": "another-tool"}), 400, "does not know")


def test_an_unknown_deployment_is_refused(client: FlaskClient, platform: Platform) -> None:
    change = {"https://purl.imsglobal.org/spec/lti/claim/deployment_id": "deployment-9"}
    _refused(_tampered(client, platform, change), 400, "deployment of the tool that is not registered")


def test_a_wrong_issuer_is_refused(client: FlaskClient, platform: Platform) -> None:
    _refused(_tampered(client, platform, {"iss": "https://evil.example"}), 400, "does not know")


def test_a_launch_without_the_login_cookie_or_with_junk_is_refused(client: FlaskClient, platform: Platform) -> None:
    data = platform.launch(login(client, platform), item=f"quiz/{QUIZ_LESSON}")
    client.delete_cookie("lti1p3-session-id", domain="tool.test", path="/lti/")
    _refused(client.post("/lti/launch", data={"id_token": data["id_token"], "state": data["state"]},
                         base_url=TOOL), 400, "did not send this tool")
    for junk in ({}, {"id_token": "a.b.c", "state": "x"}, {"id_token": "x" * 70_000, "state": "x"}):
        response = client.post("/lti/launch", data=junk, base_url=TOOL)
        assert 400 <= response.status_code < 500, response.status_code


def test_login_from_an_unknown_platform_is_refused(client: FlaskClient) -> None:
    response = client.get("/lti/login?iss=https://evil.example&login_hint=u&target_link_uri=x", base_url=TOOL)
    assert response.status_code == 400 and "not registered" in response.get_data(as_text=True)
    assert "Set-Cookie" not in response.headers


def test_keys_come_from_the_registered_key_set_url_only(make_app: MakeApp, clock: FakeClock, platform: Platform
                                                         ) -> None:
    app = make_app(**lti_config(clock, [platform.tool_entry(key_set_url=f"{platform.base}/moved-jwks")]))
    client = app.test_client()
    platform.registration.set_tool_key_set(client.get("/lti/jwks", base_url=TOOL).get_json())
    response = launch(client, platform, item=f"quiz/{QUIZ_LESSON}")
    _refused(response, 400, "public keys could not be fetched")


# -- cookies, framing, keys, configuration -------------------------------------------------------------------


def test_lti_cookies_survive_a_third_party_frame_and_stay_on_lti_routes(client: FlaskClient,
                                                                        platform: Platform) -> None:
    url = urlsplit(platform.login_url())
    response = client.get(f"{url.path}?{url.query}", base_url=TOOL)
    cookies = response.headers.getlist("Set-Cookie")
    assert cookies and all(("Secure" in c and "SameSite=None" in c and "HttpOnly" in c and "Path=/lti/" in c)
                           for c in cookies)
    page = client.get("/lessons/" + QUIZ_LESSON, base_url=TOOL)
    assert "Set-Cookie" not in page.headers
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]


def test_lti_pages_may_be_framed_by_the_registered_platforms_only(client: FlaskClient, platform: Platform) -> None:
    page = follow(client, launch(client, platform, item=f"quiz/{QUIZ_LESSON}"))
    csp = page.headers["Content-Security-Policy"]
    assert csp.endswith(f"frame-ancestors 'self' {platform.base}")
    assert "X-Frame-Options" not in page.headers and "unsafe-inline" not in csp


def test_a_platform_may_name_the_origins_its_courses_are_on(make_app: MakeApp, clock: FakeClock,
                                                            platform: Platform) -> None:
    entry = platform.tool_entry(frame_origins=["https://school.example", "https://Other.example:8443/"])
    client = make_app(**lti_config(clock, [entry])).test_client()
    platform.registration.set_tool_key_set(client.get("/lti/jwks", base_url=TOOL).get_json())
    page = follow(client, launch(client, platform, item=f"quiz/{QUIZ_LESSON}"))
    ancestors = page.headers["Content-Security-Policy"].split("frame-ancestors ")[1].split()
    assert sorted(ancestors) == sorted(["'self'", platform.base, "https://school.example", "https://other.example:8443"])


def test_the_private_key_stays_in_the_state_dir_and_only_the_public_key_is_published(
        tmp_path: Any, client: FlaskClient) -> None:
    key_file = tmp_path / "state" / "lti-tool-key.pem"
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "state" / "lti.sqlite3").st_mode) == 0o600
    private = key_file.read_text()
    jwks = client.get("/lti/jwks", base_url=TOOL).get_json()
    [key] = jwks["keys"]
    assert key["kty"] == "RSA" and key["kid"] and {"d", "p", "q", "dp", "dq", "qi"}.isdisjoint(key)
    config = client.get("/lti/config.json", base_url=TOOL)
    assert config.get_json()["oidc_initiation_url"] == f"{TOOL}/lti/login"
    assert config.get_json()["target_link_uri"] == f"{TOOL}/lti/launch"
    assert config.get_json()["public_jwk_url"] == f"{TOOL}/lti/jwks"
    body = private.split("-----")[2].strip().splitlines()[1]
    assert body not in config.get_data(as_text=True) and body not in json.dumps(jwks)


# -- without LTI ---------------------------------------------------------------------------------------------


def test_without_platforms_every_lti_route_is_a_clear_404_and_no_key_is_made(make_app: MakeApp, tmp_path: Path,
                                                                           clock: FakeClock) -> None:
    client = make_app(**lti_config(clock, None)).test_client()
    for path in ("/lti/login", "/lti/jwks", "/lti/config.json", "/lti/activity?launch=abc"):
        response = client.get(path, base_url=TOOL)
        assert response.status_code == 404 and "MRTR_LTI_PLATFORMS is unset" in response.get_data(as_text=True)
    assert client.post("/lti/launch", data={"id_token": "a"}, base_url=TOOL).status_code == 404
    assert not (tmp_path / "state" / "lti-tool-key.pem").exists()
    embed = client.get(f"/embed/quiz/{QUIZ_LESSON}", base_url=TOOL)
    assert embed.status_code == 200 and "Set-Cookie" not in embed.headers


@pytest.mark.parametrize("value, words", [
    ("[]", "must be a list of platform objects"),
    ('[{"issuer": "https://p.example"}]', "needs client_id"),
    ('[{"issuer": "i", "client_id": "c", "deployment_ids": ["d"], "key_set_url": "http://p.example/jwks", '
     '"auth_login_url": "https://p.example/a", "auth_token_url": "https://p.example/t"}]', "must be an https URL"),
    ("/nonexistent/platforms.json", "neither JSON nor a readable file"),
    ("{not json", "not valid JSON"),
    ('[{"issuer": "i", "client_id": "c", "deployment_ids": ["d"], "key_set_url": "https://p.example/jwks", '
     '"auth_login_url": "https://p.example/a", "auth_token_url": "https://p.example/t", '
     '"frame_origins": ["https://school.example/x; script-src *"]}]', "frame_origins entries are origins"),
])
def test_a_bad_platform_list_stops_start_up_with_its_name(value: str, words: str) -> None:
    with pytest.raises(ConfigError, match="MRTR_LTI_PLATFORMS") as caught:
        read_settings({"MRTR_LTI_PLATFORMS": value})
    assert words in str(caught.value)


def test_the_platform_list_may_be_a_file(tmp_path: Any, platform: Platform) -> None:
    path = tmp_path / "platforms.json"
    path.write_text(json.dumps([platform.tool_entry()]))
    [entry] = read_settings({"MRTR_LTI_PLATFORMS": str(path)}).lti_platforms
    assert entry.issuer == platform.base and entry.deployment_ids == ("deployment-1",)


def test_an_htmx_answer_swaps_the_feedback_and_the_score_line(app: Flask, client: FlaskClient,
                                                              platform: Platform) -> None:
    with app.app_context():
        q = get_content().lesson(QUIZ_LESSON).questions[0]
    page = follow(client, launch(client, platform, item=f"question/{QUIZ_LESSON}/{q.id}"))
    form = soup(page).select_one("form[hx-post]")
    response = client.post(form["hx-post"], headers={"HX-Request": "true"}, base_url=TOOL,
                           data={"choice": q.answer, "progress": form.select_one("input[name=progress]")["value"]})
    fragment = soup(response)
    assert response.status_code == 200 and fragment.select_one("html") is None
    assert fragment.select_one("#lti-score[hx-swap-oob=true]")["data-lti-accepted"] == "true"
    assert fragment.select_one(".verdict-ok") is not None


# -- who may post a score -------------------------------------------------------------------------------------


def test_only_the_launchs_own_browser_posts_a_build_score_and_it_says_steps_are_self_reported(
        app: Flask, client: FlaskClient, platform: Platform) -> None:
    page = follow(client, launch(client, platform, item=f"build/{BUILD_LESSON}"))
    action = soup(page).select_one("form[action*=build-report]")["action"]
    stranger = app.test_client()  # holds `?launch=` (from a shared link, a log, a screenshot), not the session
    refused = stranger.post(action, data={"report": _report(["tampered"])}, base_url=TOOL)
    assert refused.status_code == 403 and "another browser session" in refused.get_data(as_text=True)
    assert platform.scores == []
    assert client.post(action, data={"report": _report(["tampered"])}, base_url=TOOL).status_code == 200
    [score] = platform.scores
    assert score["scoreGiven"] == 1 and "self-reported" in score["comment"]


def test_a_quiz_answer_from_another_browser_scores_nothing(app: Flask, client: FlaskClient,
                                                           platform: Platform) -> None:
    page = follow(client, launch(client, platform, item=f"quiz/{QUIZ_LESSON}"))
    form = soup(page).select_one("form[hx-post]")
    response = app.test_client().post(form["action"].split("#")[0], data={"choice": "a", "progress": ""},
                                      base_url=TOOL)
    assert response.status_code == 403 and platform.scores == []


# -- the build lesson's in-page run ----------------------------------------------------------------------------

HX = {"HX-Request": "true"}


def test_the_in_page_runs_report_posts_the_grade_from_the_launchs_browser_only(app: Flask, client: FlaskClient,
                                                                                platform: Platform) -> None:
    page = follow(client, launch(client, platform, item=f"build/{BUILD_LESSON}"))
    runner = soup(page).select_one("[data-build-runner]")
    assert runner is not None and soup(page).select_one("form[action*='/build/report']") is None  # graded here
    url, target = runner["data-report-url"], runner["data-report-target"]
    assert runner["data-report-source"] == "run" and soup(page).select_one(target) is not None
    assert url.startswith("/lti/build-report?launch=")
    # What the page's worker posts when a run ends: the in-page checker's own report (moves.check.check_source, run
    # on Pyodide there) for the learner's server, here the starter with the first step written.
    first = BUILD.steps[0]
    report = check_source(BUILD.partial({first.id}), moves=CATALOGUE)["report"]
    form = {"report": json.dumps(report), "source": "run"}
    refused = app.test_client().post(url, data=form, headers=HX, base_url=TOOL)  # holds ?launch=, not the session
    assert refused.status_code == 403 and soup(refused).select_one("html") is None
    assert soup(refused).select_one("[data-lti-error='403'][role=alert]") is not None
    assert "another browser session" in refused.get_data(as_text=True) and platform.scores == []
    graded = client.post(url, data=form, headers=HX, base_url=TOOL)
    fragment = soup(graded)
    assert graded.status_code == 200 and fragment.select_one("html") is None
    done = [li["data-step"] for li in fragment.select("li[data-done=true]")]
    assert first.id in done and len(done) < len(BUILD.steps)
    [score] = platform.scores
    assert (score["scoreGiven"], score["scoreMaximum"]) == (len(done), len(BUILD.steps))
    assert (score["activityProgress"], score["gradingProgress"]) == ("InProgress", "Pending")
    assert "self-reported" in score["comment"] and "learner's own browser" in score["comment"]
    assert "from the in-page run" in score["comment"]
    line = fragment.select_one("#lti-score[hx-swap-oob=true]")
    assert line["data-lti-accepted"] == "true" and f"{len(done)} of {len(BUILD.steps)}" in line.get_text()
    assert fragment.select_one("[data-lti-graded=run]") is not None
    # The solution, run in the page: every step, and the grade is complete.
    client.post(url, data={"report": json.dumps(check_source(BUILD.solution, moves=CATALOGUE)["report"]),
                           "source": "run"}, headers=HX, base_url=TOOL)
    assert [(s["scoreGiven"], s["activityProgress"]) for s in platform.scores][-1] == (len(BUILD.steps), "Completed")


def test_a_pasted_report_says_so_in_the_comment(client: FlaskClient, platform: Platform) -> None:
    page = follow(client, launch(client, platform, item=f"build/{BUILD_LESSON}"))
    form = soup(page).select_one("form[action*=build-report]")
    assert form.select_one("input[name=source]")["value"] == "paste"
    client.post(form["action"], data={"report": _report(["tampered"]), "source": "paste"}, base_url=TOOL)
    [score] = platform.scores
    assert "self-reported" in score["comment"] and "from a pasted checker report" in score["comment"]


@pytest.mark.parametrize("form, words", [
    ({"report": "not json", "source": "run"}, "that is not JSON"),
    ({"report": "", "source": "run"}, "paste the output"),
    ({"report": "[]", "source": "run"}, "not a checker report"),
    ({"report": "{}", "source": "elsewhere"}, "names no known source"),
])
def test_a_bad_report_from_the_page_is_a_clear_message_and_sends_nothing(client: FlaskClient, platform: Platform,
                                                                         form: dict[str, str], words: str) -> None:
    page = follow(client, launch(client, platform, item=f"build/{BUILD_LESSON}"))
    url = soup(page).select_one("[data-build-runner]")["data-report-url"]
    under_htmx = client.post(url, data=form, headers=HX, base_url=TOOL)
    assert under_htmx.status_code == 200 and words in soup(under_htmx).select_one("[role=alert]").get_text()
    plain = client.post(url, data=form, base_url=TOOL)
    assert plain.status_code == 400 and words in plain.get_data(as_text=True)
    huge = client.post(url, data={"report": "x" * 80_000, "source": "run"}, headers=HX, base_url=TOOL)
    assert huge.status_code == 400 and "Traceback" not in huge.get_data(as_text=True)
    assert platform.scores == []
