"""Floods through the whole public chain (a TLS proxy, `scripts/cluster.sh`'s nginx, two replicas, Redis), each as
the attack on the deployment sent it: every one is refused or capped, nothing a visitor sends is kept beyond its
cap, and the site's `GET /` answers within a second throughout. The chain is test_tls_proxy.py's, started afresh
for this module (the class-start flood spends the site-wide allowance)."""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import redis

from web.classroom.services import ALL_START_LIMIT, GUESS_LIMIT, STREAM_BACKOFF, STREAM_CLASS_LIMIT

from .test_tls_proxy import BOB, Answer, Chain, chain, https

__all__ = ["chain"]  # the fixture, a chain of this module's own



def flood(chain: Chain, requests_of: list[tuple[str, str, bytes | None, dict[str, str], str]],
          at_once: int = 16) -> tuple[list[Answer], list[float]]:
    """Send every (method, path, body, headers, source) through the TLS proxy, `at_once` at a time, timing
    `GET /` from a bystander meanwhile."""
    home: list[float] = []
    with ThreadPoolExecutor(max_workers=at_once) as pool:
        sent = pool.map(lambda r: https(chain, r[0], r[1], body=r[2], headers=r[3], source=r[4]), requests_of)
        for _ in range(5):
            started = time.monotonic()
            assert https(chain, "GET", "/", source="127.0.0.98").status == 200
            home.append(time.monotonic() - started)
        answers = list(sent)
    return answers, home


def test_made_up_answers_in_a_legacy_session_store_nothing(chain: Chain) -> None:
    """The mailbox flood: inside a real 2025-11-25 session, answers naming a process but no question it asked."""
    headers = {"Authorization": f"Bearer {BOB}", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-11-25", "Content-Type": "application/json"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "1"}}}
    opened = https(chain, "POST", "/mcp", source="127.0.0.30", body=json.dumps(init).encode(), headers=headers)
    assert opened.status == 200, opened.body[:300]
    sid = opened.headers["Mcp-Session-Id"]
    session = {**headers, "Mcp-Session-Id": sid}
    https(chain, "POST", "/mcp", source="127.0.0.30", headers=session,
          body=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
    watcher = redis.Redis(port=chain.cluster.redis_port)
    before = int(watcher.info("memory")["used_memory"])
    padding = "x" * 60_000
    answers = [("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": f"replica-9.{n}.abcdef-{n}",
                                             "result": {"action": "accept", "content": {"p": padding}}}).encode(),
                session, f"127.0.0.{31 + n % 4}") for n in range(80)]
    replies, home = flood(chain, answers)
    assert {r.status for r in replies} == {400}, {r.status for r in replies}
    assert all(b"No question with this id" in r.body for r in replies)
    assert max(home) < 1.0, home
    assert not list(watcher.scan_iter(match="mrtr:legacy:m:*"))  # no mailbox holds anything
    assert int(watcher.info("memory")["used_memory"]) - before < 1_000_000  # 80 x 60 KB were sent, none kept
    watcher.close()


def test_probing_class_routes_for_real_codes_is_counted_and_answered_alike(chain: Chain) -> None:
    started = https(chain, "POST", "/class/start", source="127.0.0.40")
    assert started.status == 201
    code = re.search(rb'data-join-code="(\w+)"', started.body).group(1).decode()  # type: ignore[union-attr]
    probes = [("GET", f"/class/{c}/host", None, {}, "127.0.0.41") for c in (code, "ZZZZZZ") * 6]
    replies = [https(chain, *p[:2], body=p[2], headers=p[3], source=p[4]) for p in probes]
    statuses = [r.status for r in replies]
    assert statuses[:GUESS_LIMIT] == [404] * GUESS_LIMIT and set(statuses[GUESS_LIMIT:]) == {429}, statuses


def test_many_live_views_of_one_class_cost_little_and_the_site_stays_fast(chain: Chain) -> None:
    started = https(chain, "POST", "/class/start", source="127.0.0.45")
    code = re.search(rb'data-join-code="(\w+)"', started.body).group(1).decode()  # type: ignore[union-attr]
    cookie = next(c for c in started.headers.get_all("Set-Cookie") or [] if c.startswith("mrtr_host="))
    views = [("GET", f"/class/{code}/host/events", None, {"Cookie": cookie.split(";", 1)[0]},
              f"127.0.3.{n % 40 + 1}") for n in range(STREAM_CLASS_LIMIT + 40)]
    replies, home = flood(chain, views)
    backed_off = [r for r in replies if r.body.startswith(b"retry: %d" % (STREAM_BACKOFF * 1000))]
    assert len(backed_off) >= 40 and all(b"event:" not in r.body for r in backed_off)
    assert max(home) < 1.0, home


# Last: it spends the site-wide allowance of class starts, which the tests above need a little of.
def test_a_flood_of_class_starts_from_many_addresses_leaves_the_places_open(chain: Chain) -> None:
    """70 addresses x 3 classes filled all 200 places in 0.8 s: now the site opens at most ALL_START_LIMIT per
    ALL_START_WINDOW untokened (the classes opened before may or may not still count, as their window runs)."""
    before = redis.Redis(port=chain.cluster.redis_port)
    opened_before = len(list(before.scan_iter(match="mrtr:class:code:*")))
    starts = [("POST", "/class/start", None, {}, f"127.0.2.{n // 3 + 1}") for n in range(210)]
    replies, home = flood(chain, starts)
    opened = sum(r.status == 201 for r in replies)
    assert opened <= ALL_START_LIMIT, (opened, opened_before)
    assert {r.status for r in replies} <= {201, 429}
    assert max(home) < 1.0, home
    assert len(list(before.scan_iter(match="mrtr:class:code:*"))) <= opened_before + ALL_START_LIMIT
    before.close()
