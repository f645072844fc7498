"""The platforms' key sets are fetched once and kept (web/lti/keys.py): launches, forged ones above all, do not
fetch them again; Cache-Control says how long; an unknown key id refetches at most once a minute; a slow platform
never holds more than one thread. Launches run against the real platform of tests/lti/platform.py."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests
import urllib3
from flask import Flask
from flask.testing import FlaskClient

from mrtr import FakeClock
from tests.lti.platform import Platform, new_key_pair
from tests.lti.test_lti import QUIZ_LESSON, TOOL, _tampered, app_config, claims, client, launch, login, platform
from web.lti.keys import MAX_WAITERS, REFETCH_EVERY, KeySetCache, KeySetUnavailable

__all__ = ["app_config", "client", "platform"]  # the fixtures, shared with test_lti.py


def test_launches_share_one_fetch_of_the_key_set(client: FlaskClient, platform: Platform) -> None:
    for _ in range(3):
        assert launch(client, platform, item=f"quiz/{QUIZ_LESSON}").status_code == 303
    assert platform.jwks_fetches == 1


def _unknown_kid_launch(client: FlaskClient, platform: Platform) -> Any:
    data = platform.launch(login(client, platform), item=f"quiz/{QUIZ_LESSON}")
    other_private, _ = new_key_pair()
    token = platform.sign(claims(data["id_token"]), other_private, kid="rotated-or-forged")
    return client.post("/lti/launch", data={"id_token": token, "state": data["state"]}, base_url=TOOL)


def test_forged_launches_with_an_unknown_key_id_refetch_at_most_once_a_minute(
        client: FlaskClient, platform: Platform, clock: FakeClock) -> None:
    assert launch(client, platform, item=f"quiz/{QUIZ_LESSON}").status_code == 303
    clock.advance(REFETCH_EVERY)
    for _ in range(5):
        assert _unknown_kid_launch(client, platform).status_code == 403
    assert platform.jwks_fetches == 2  # the first launch's, and one for the unknown key id
    clock.advance(REFETCH_EVERY / 2)
    assert _unknown_kid_launch(client, platform).status_code == 403
    assert platform.jwks_fetches == 2
    clock.advance(REFETCH_EVERY / 2)
    assert _unknown_kid_launch(client, platform).status_code == 403
    assert platform.jwks_fetches == 3
    assert _tampered(client, platform, {}).status_code == 303  # the real key still verifies, with no fetch
    assert platform.jwks_fetches == 3


@pytest.mark.parametrize(("header", "kept"), [("max-age=600", 600.0), ("no-store", 60.0), (None, 3600.0),
                                               ("max-age=5", 60.0)])
def test_the_platforms_cache_control_says_how_long_keys_are_kept(
        client: FlaskClient, platform: Platform, clock: FakeClock, header: str | None, kept: float) -> None:
    platform.jwks_cache_control = header
    assert launch(client, platform, item=f"quiz/{QUIZ_LESSON}").status_code == 303
    clock.advance(kept - 1)
    assert launch(client, platform, item=f"quiz/{QUIZ_LESSON}").status_code == 303
    assert platform.jwks_fetches == 1
    clock.advance(2)
    assert launch(client, platform, item=f"quiz/{QUIZ_LESSON}").status_code == 303
    assert platform.jwks_fetches == 2


class _Stalled(requests.Session):
    """A platform that does not answer until released."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def get(self, url: str | bytes, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self.entered.set()
        self.release.wait(10)
        raise requests.ConnectionError("the platform never answered")


class _Released(_Stalled):
    """A platform that answers its key set once released."""

    def get(self, url: str | bytes, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self.entered.set()
        assert self.release.wait(10)
        response = requests.Response()
        response.status_code = 200
        response.raw = urllib3.HTTPResponse(body=io.BytesIO(json.dumps(KEYS).encode()), preload_content=False)
        return response


KEYS = {"keys": [{"kid": "k", "kty": "RSA", "n": "AQAB", "e": "AQAB"}]}


def _parallel(cache: KeySetCache, session: Any, count: int, meanwhile: Callable[[], None] = lambda: None) -> list[Any]:
    """`count` launches at once on `cache` (the first fetches, the rest wait for it); `meanwhile` runs once they all
    wait, before the platform answers. What each got: keys, or the exception."""
    results: list[Any] = [None] * count

    def one(n: int) -> None:
        try:
            results[n] = cache.get("https://p/jwks", "k", session)
        except KeySetUnavailable as exc:
            results[n] = exc

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    threads[0].start()
    assert session.entered.wait(5)
    for thread in threads[1:]:
        thread.start()
    deadline = time.monotonic() + 10
    while cache.waiting("https://p/jwks") < count - 1:
        assert time.monotonic() < deadline, cache.waiting("https://p/jwks")
        time.sleep(0.01)
    try:
        meanwhile()
    finally:
        session.release.set()
        for thread in threads:
            thread.join(10)
    return results


def test_honest_launches_on_a_cold_cache_share_the_one_fetch_and_none_is_refused() -> None:
    cache, session = KeySetCache(clock=FakeClock(1000.0)), _Released()
    assert _parallel(cache, session, 12) == [KEYS] * 12
    assert cache.fetches == 1


def test_a_slow_platform_holds_a_bounded_number_of_threads_and_the_rest_are_answered_at_once() -> None:
    cache, session = KeySetCache(clock=FakeClock(1000.0)), _Stalled()

    def forged_launches() -> None:  # past the waiters: refused at once, none waits for the platform
        started = time.monotonic()
        for _ in range(20):
            with pytest.raises(KeySetUnavailable):
                cache.get("https://p/jwks", "k", session)
        assert time.monotonic() - started < 0.5

    results = _parallel(cache, session, MAX_WAITERS + 1, forged_launches)
    assert all(isinstance(r, KeySetUnavailable) for r in results)  # the platform never answered
    assert cache.fetches == 1 and cache.waiting("https://p/jwks") == 0


def test_keys_held_still_verify_while_the_platform_is_down(client: FlaskClient, platform: Platform, app: Flask,
                                                           clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    assert launch(client, platform, item=f"quiz/{QUIZ_LESSON}").status_code == 303
    clock.advance(3601)  # stale now; the platform then fails to answer
    monkeypatch.setattr(requests.Session, "get", lambda *a, **k: (_ for _ in ()).throw(requests.ConnectionError()))
    assert launch(client, platform, item=f"quiz/{QUIZ_LESSON}").status_code == 303
