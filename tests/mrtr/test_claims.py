"""The core's side of a claiming store (`mrtr.ClaimingStore`): the ticket is claimed when the answers are read,
committed when the handler returns, released when it raises, and another attempt at work is "try again" (503),
never the ticket refusal. The store here keeps its keys in a dict; tests/mrtr/test_redis_store.py runs Redis."""

from __future__ import annotations

from typing import Any

from mrtr import CallContext, Catalog, Claim, ClaimingStore, FakeClock, KeyRing, Server, Tool
from mrtr.tickets import Trace
from tests.mrtr.helpers import ACCEPT, assert_frozen_rejection, deploy

NOW = 1_790_000_000.0
KEY = "claims-test-key-0123456789abcdef0123456789abcdef"


class DictClaims:
    """A ClaimingStore in a dict, recording what it was asked."""

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}
        self.calls: list[str] = []

    def claim(self, jti: str, exp: float, now: float, attempt: str) -> Claim:
        self.calls.append("claim")
        held = self.keys.get(jti)
        if held is None:
            self.keys[jti] = "p:" + attempt
            return "claimed"
        return "busy" if held.startswith("p:") else "spent"

    def commit(self, jti: str, exp: float, now: float, attempt: str) -> None:
        self.calls.append("commit")
        assert self.keys[jti] == "p:" + attempt
        self.keys[jti] = "d"

    def release(self, jti: str, attempt: str) -> None:
        self.calls.append("release")
        if self.keys.get(jti) == "p:" + attempt:
            del self.keys[jti]

    def redeem(self, jti: str, exp: float, now: float) -> bool:
        raise AssertionError("a claiming store is never redeemed in one step by the core")

    def __len__(self) -> int:
        return len(self.keys)


def _server(store: DictClaims, fail_after_answers: list[bool]) -> Server:
    def deploy_handler(ctx: CallContext) -> Any:
        question = {"confirm": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Deploy?", "requestedSchema": {
                "type": "object", "properties": {"confirm": {"type": "boolean"}}}}}}
        if ctx.state is None:
            return ctx.ask(question, work={}, step="confirm")
        answers = ctx.answers(question)
        assert answers is not None
        if fail_after_answers and fail_after_answers.pop(0):
            raise RuntimeError("the work failed after the ticket was claimed")
        return {"content": [{"type": "text", "text": "deployed to staging"}]}

    catalog = Catalog(tools={"deploy": Tool("deploy", "Deploy", deploy_handler)})
    return Server(ring=KeyRing([KEY]), store=store, clock=FakeClock(NOW), catalog=catalog, name="claims")


def _retry_of(server: Server) -> dict[str, Any]:
    first = server.handle(deploy(id=1), principal="bob").response
    return deploy(id=2, requestState=first["result"]["requestState"], inputResponses=ACCEPT)


def test_the_work_done_commits_the_claim_and_every_copy_after_is_refused() -> None:
    store = DictClaims()
    assert isinstance(store, ClaimingStore)
    server = _server(store, [])
    retry = _retry_of(server)
    done = server.handle(retry, principal="bob").response
    assert done["result"]["content"][0]["text"] == "deployed to staging"
    assert store.calls == ["claim", "commit"]
    assert_frozen_rejection(server.handle(retry, principal="bob").response)


def test_work_that_fails_releases_the_claim_so_the_same_request_completes_later() -> None:
    store = DictClaims()
    server = _server(store, [True])
    retry = _retry_of(server)
    failed = server.handle(retry, principal="bob").response
    assert "error" in failed and store.calls == ["claim", "release"] and not store.keys
    done = server.handle(retry, principal="bob").response
    assert done["result"]["content"][0]["text"] == "deployed to staging"


def test_a_ticket_another_attempt_holds_is_try_again_not_the_ticket_refusal() -> None:
    store = DictClaims()
    server = _server(store, [])
    retry = _retry_of(server)
    claims = server.codec.open(retry["params"]["requestState"], Trace())
    store.keys[str(claims["jti"])] = "p:another-attempt"  # mid-work on another replica
    busy = server.handle(retry, principal="bob")
    assert busy.response["error"]["data"] == {"retryable": True}
    store.keys.clear()  # that attempt failed and let go: the same request completes
    done = server.handle(retry, principal="bob").response
    assert done["result"]["content"][0]["text"] == "deployed to staging"
