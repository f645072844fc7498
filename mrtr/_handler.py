"""The handler API: what a tool, prompt or resource handler sees (`CallContext`) and may return.

What this module owns: `CallContext` (the request, the verified ticket, `ask` to end a round with
input_required and `answers` to run the last two checks), `InputRequired`, and the `Policy` switches
the server runs under. A context is given exactly what it works with (the codec, the store, the
policy, a place for log lines and notifications), never the connection or the server, so it can be
built and tested on its own. It must never parse wire messages or choose an era.
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from ._questions import answers_problem, has_capability, required_capability
from .errors import InvalidParams, MalformedAnswer, MissingCapability, StoreUnavailable, TicketRejected
from .messages import JSON, JSONObject, notification_message
from .redeemed import ClaimingStore, RedeemedStore
from .tickets import TicketCodec, Trace

log = logging.getLogger("mrtr")


@dataclass(frozen=True)
class Policy:
    """Production switches: single use (the redeemed store) and sealed (AEAD) tickets."""

    single_use: bool = True
    sealed: bool = False


#: Single use on, tickets signed: what a server runs under unless told otherwise.
DEFAULT_POLICY = Policy()


@dataclass
class InputRequired:
    """A round that ends by asking: the questions by key, and the ticket that carries the work."""

    questions: dict[str, JSONObject]
    state: str | None


@functools.cache
def _claims(kind: type) -> bool:
    """Whether stores of this type spend a ticket by claim and commit (`ClaimingStore`), asked once per type: an
    isinstance against a runtime-checkable Protocol walks the protocol's members on every call, about 100 k
    instructions (bench/RESULTS.md), more than the SQLite write it chose between."""
    return issubclass(kind, ClaimingStore)


class CallContext:
    """What a handler sees: the request, the verified ticket (if any) and the means to ask."""

    def __init__(
        self,
        *,
        principal: str,
        method: str,
        target: str,
        arguments: JSONObject,
        input_responses: JSONObject | None,
        capabilities: JSONObject,
        trace: Trace,
        now: float,
        codec: TicketCodec,
        store: RedeemedStore,
        policy: Policy,
        note: Callable[[str], None],
        outbox: list[JSONObject],
        progress_token: JSON = None,
    ) -> None:
        self.principal = principal
        self.method = method
        self.target = target
        self.arguments = arguments
        self.input_responses = input_responses
        self.capabilities = capabilities
        self.trace = trace
        self.now = now
        #: verified ticket claims, or None when the request carried no ticket
        self.state: JSONObject | None = None
        self.answered = False  # whether the handler read the answers (else the last checks are not needed)
        #: (jti, exp, attempt) while this call holds a claim on its ticket (a ClaimingStore): `settle` ends it
        self._claim: tuple[str, float, str] | None = None
        self._codec = codec
        self._store = store
        self._policy = policy
        self._note = note
        self._outbox = outbox
        self._progress_token = progress_token

    def progress(self, progress: float, total: float | None = None) -> None:
        """Report progress; sent before the response only when the request carried a progressToken."""
        if self._progress_token is None:
            return
        params: JSONObject = {"progressToken": self._progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        self._outbox.append(notification_message("notifications/progress", params))

    def string_arg(self, name: str, *, max_length: int = 200) -> str:
        value = self.arguments.get(name)
        if not isinstance(value, str) or not value.strip():
            raise InvalidParams(f"argument {name!r} must be a non-empty string")
        if len(value) > max_length:
            raise InvalidParams(f"argument {name!r} is longer than {max_length} characters")
        return value

    def can_ask(self, request: JSONObject) -> bool:
        return has_capability(self.capabilities, request)

    def ask(self, questions: dict[str, JSONObject], *, work: JSONObject, step: str) -> InputRequired:
        """End this round with input_required: the questions, and the work sealed in a fresh ticket.

        Raises:
            MissingCapability: a question needs a capability the request did not declare.
        """
        missing: JSONObject = {}
        for request in questions.values():
            if not self.can_ask(request):
                missing.update(required_capability(request))
        if missing:
            raise MissingCapability(missing)
        claims = self._codec.claims(
            now=self.now, sub=self.principal, method=self.method, target=self.target,
            arguments=self.arguments, work=work, step=step,
        )
        token = self._codec.encode(claims)
        self._note(f"minted ticket {claims['jti']} for {self.principal} ({self.method} {self.target}, "
                   f"step {step}, expires in {self._codec.ttl} s)")
        return InputRequired(questions, token)

    def answers(self, questions: dict[str, JSONObject]) -> dict[str, JSONObject] | None:
        """The client's answers to `questions`, or None when one is missing (the handler asks again).

        With a ticket present this runs the last two checks: answer included, then (when the
        answer is there and single use is on) not already redeemed.

        Raises:
            MalformedAnswer: an answer is there but does not fit its question (the spec's SHOULD: an error,
                never the frozen ticket refusal; the ticket is not spent).
            TicketRejected: the ticket was already redeemed.
            StoreUnavailable: the redeemed store cannot be reached; the ticket is not spent
                (HTTP 503, a retryable error, never the frozen ticket error).
        """
        self.answered = True
        responses = self.input_responses or {}
        problem = answers_problem(questions, responses)
        if problem is not None and self.state is not None:
            then = "the server asks again" if problem.kind == "missing" else "the client gets an error saying so"
            self.trace.record("answer", "fail", f"{problem.reason}; {then}")
            self.trace.skip_rest("no answer to redeem")
        if problem is not None and problem.kind == "malformed":
            raise MalformedAnswer(problem.key, problem.reason)
        if problem is not None:
            return None
        answers = {key: reply for key in questions if isinstance(reply := responses.get(key), dict)}
        if self.state is None:
            return answers
        said = ", ".join(f"{k}: {a.get('action', 'answered')}" for k, a in answers.items())
        self.trace.record("answer", "pass", said)
        if not self._policy.single_use:
            self.trace.record("single-use", "skipped", "spent tickets are not remembered", "switched-off")
        elif self._redeem(self.state):
            self.trace.record("single-use", "pass", f"ticket {self.state.get('jti')} redeemed now")
        else:
            reason = f"ticket {self.state.get('jti')} was already redeemed"
            self.trace.record("single-use", "fail", reason)
            raise TicketRejected("single-use", reason)
        return answers

    def _redeem(self, state: JSONObject) -> bool:
        exp = state.get("exp")
        if not isinstance(exp, int | float):  # the expiry check let it through, so this cannot happen
            raise TicketRejected("single-use", "ticket has no expiry to keep its id until")
        try:
            if _claims(type(self._store)):
                return self._claim_ticket(str(state.get("jti")), float(exp))
            return self._store.redeem(str(state.get("jti")), float(exp), self.now)
        except StoreUnavailable as exc:
            detail = "the redeemed store is unavailable: nothing was done and the ticket is not spent"
            self.trace.record("single-use", "skipped", detail, "unavailable")
            self._note(f"single use not checked for ticket {state.get('jti')}: {detail}")
            log.warning("redeemed store unavailable, request refused with a retryable error: %s", exc.reason)
            raise

    def _claim_ticket(self, jti: str, exp: float) -> bool:
        """Claim the ticket for this attempt; another attempt in progress is "try again", not "spent"."""
        # `_redeem` asked `_claims` first; no isinstance here, for the reason `_claims` gives.
        store = cast(ClaimingStore, self._store)
        attempt = secrets.token_hex(8)
        found = store.claim(jti, exp, self.now, attempt)
        if found == "busy":
            raise StoreUnavailable(f"ticket {jti} is held by another attempt in progress")
        if found == "claimed":
            self._claim = (jti, exp, attempt)
        return found == "claimed"

    def settle(self, done: bool) -> None:
        """End this call's claim, if it holds one: committed when the work is done, released when it failed (so
        the same request may be tried again). Never raises: the store delivers it later if it must."""
        if self._claim is None:
            return
        jti, exp, attempt = self._claim
        self._claim = None
        store = cast(ClaimingStore, self._store)  # a claim is only ever held on a ClaimingStore (`_claim_ticket`)
        if done:
            store.commit(jti, exp, self.now, attempt)
        else:
            store.release(jti, attempt)
