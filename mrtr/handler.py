"""The handler API: what a tool, prompt or resource handler sees (`CallContext`) and may return.

What this module owns: `CallContext` (the request, the verified ticket, `ask` to end a round with
input_required and `answers` to run the last two checks), `InputRequired`, and the `Policy` switches
the server runs under. It must never parse wire messages or choose an era: the connection does that.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import InvalidParams, MissingCapability, StoreUnavailable, TicketRejected
from .primitives import answer_problem, has_capability, required_capability
from .tickets import Trace

if TYPE_CHECKING:  # annotations only: the connection builds contexts, never the other way round
    from .modern import Conversation

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
    questions: dict[str, dict[str, Any]]
    state: str | None



class CallContext:
    """What a handler sees: the request, the verified ticket (if any) and the means to ask."""

    def __init__(
        self,
        conn: Conversation,
        *,
        method: str,
        target: str,
        arguments: dict[str, Any],
        input_responses: dict[str, Any] | None,
        capabilities: dict[str, Any],
        trace: Trace,
        now: float,
        progress_token: Any = None,
    ) -> None:
        self._conn = conn
        self.server = conn.server
        self.method = method
        self.target = target
        self.arguments = arguments
        self.input_responses = input_responses
        self.capabilities = capabilities
        self.principal = conn.principal
        self.trace = trace
        self.now = now
        #: verified ticket claims, or None when the request carried no ticket
        self.state: dict[str, Any] | None = None
        self._answered = False
        self._progress_token = progress_token

    def progress(self, progress: float, total: float | None = None) -> None:
        """Report progress; sent before the response only when the request carried a progressToken."""
        if self._progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self._progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        self._conn._outbox.append({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    def string_arg(self, name: str, *, max_length: int = 200) -> str:
        value = self.arguments.get(name)
        if not isinstance(value, str) or not value.strip():
            raise InvalidParams(f"argument {name!r} must be a non-empty string")
        if len(value) > max_length:
            raise InvalidParams(f"argument {name!r} is longer than {max_length} characters")
        return value

    def can_ask(self, request: dict[str, Any]) -> bool:
        return has_capability(self.capabilities, request)

    def ask(self, questions: dict[str, dict[str, Any]], *, work: dict[str, Any], step: str) -> InputRequired:
        """End this round with input_required: the questions, and the work sealed in a fresh ticket.

        Raises:
            MissingCapability: a question needs a capability the request did not declare.
        """
        missing: dict[str, Any] = {}
        for request in questions.values():
            if not self.can_ask(request):
                missing.update(required_capability(request))
        if missing:
            raise MissingCapability(missing)
        claims = self.server.codec.claims(
            now=self.now, sub=self.principal, method=self.method, target=self.target,
            arguments=self.arguments, work=work, step=step,
        )
        token = self.server.codec.encode(claims)
        self._conn._note(f"minted ticket {claims['jti']} for {self.principal} ({self.method} {self.target}, "
                         f"step {step}, expires in {self.server.ttl} s)")
        return InputRequired(questions, token)

    def answers(self, questions: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]] | None:
        """The client's answers to `questions`, or None when one is missing or malformed.

        With a ticket present this runs the last two checks: answer included, then (when the
        answer is there and single use is on) not already redeemed.

        Raises:
            TicketRejected: the ticket was already redeemed.
            StoreUnavailable: the redeemed store cannot be reached; the ticket is not spent
                (HTTP 503, a retryable error, never the frozen ticket error).
        """
        self._answered = True
        responses = self.input_responses or {}
        problem = None
        for key, request in questions.items():
            if key not in responses:
                problem = f"no answer for {key!r}"
                break
            problem = answer_problem(request, responses[key])
            if problem:
                problem = f"{key!r}: {problem}"
                break
        if self.state is None:
            return None if problem else {k: responses[k] for k in questions}
        if problem:
            self.trace.record("answer", "fail", f"{problem}; the server asks again")
            self.trace.skip_rest("no answer to redeem")
            return None
        said = ", ".join(f"{k}: {responses[k].get('action', 'answered')}" for k in questions)
        self.trace.record("answer", "pass", said)
        if not self.server.policy.single_use:
            self.trace.record("single-use", "skipped", "spent tickets are not remembered", "switched-off")
        elif self._redeem():
            self.trace.record("single-use", "pass", f"ticket {self.state.get('jti')} redeemed now")
        else:
            reason = f"ticket {self.state.get('jti')} was already redeemed"
            self.trace.record("single-use", "fail", reason)
            raise TicketRejected("single-use", reason)
        return {k: responses[k] for k in questions}

    def _redeem(self) -> bool:
        state = self.state or {}
        try:
            return self.server.store.redeem(str(state.get("jti")), float(state["exp"]), self.now)
        except StoreUnavailable as exc:
            detail = "the redeemed store is unavailable: nothing was done and the ticket is not spent"
            self.trace.record("single-use", "skipped", detail, "unavailable")
            self._conn._note(f"single use not checked for ticket {state.get('jti')}: {detail}")
            log.warning("redeemed store unavailable, request refused with a retryable error: %s", exc.reason)
            raise

