"""Ticket micro-benchmarks: mint and verify, signed and sealed, beside a bare HMAC-SHA256 of the same bytes.

mint   = `TicketCodec.claims(...)` + `TicketCodec.encode(claims)` (what the server does on round one)
verify = `TicketCodec.open(token, Trace())` + `mrtr.tickets.check_binding(...)` (round two, before the
         handler and the single-use store)
bare   = `hmac.new(key, token_bytes, hashlib.sha256).digest()` over the signed ticket's bytes: the
         floor any signed-token scheme pays.

Each figure is the best of 15 timed batches (the least disturbed by the rest of the machine),
in microseconds per operation. Every loop is bounded by a count.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass

from mrtr import KeyRing, TicketCodec, Trace
from mrtr.tickets import check_binding

KEY = "bench-key-0123456789abcdef0123456789abcdef"
NOW = 1_790_000_000.0
ARGS = {"env": "staging"}


@dataclass(frozen=True)
class Timing:
    name: str
    us: float
    ops: int


def best_us(fn: Callable[[], object], *, number: int, repeat: int) -> float:
    """Best per-call time of `repeat` batches of `number` calls, in µs."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, time.perf_counter() - t0)
    return best / number * 1e6


def ticket_timings(*, number: int = 1000, repeat: int = 15) -> list[Timing]:
    ring = KeyRing([KEY])
    out: list[Timing] = []
    tokens: dict[str, str] = {}
    for kind, sealed in (("signed", False), ("sealed", True)):
        codec = TicketCodec(ring, sealed=sealed)

        def mint(codec: TicketCodec = codec) -> str:
            claims = codec.claims(now=NOW, sub="bob", method="tools/call", target="deploy", arguments=ARGS,
                                  work={"env": "staging"}, step="confirm")
            return codec.encode(claims)

        token = mint()
        tokens[kind] = token

        def verify(codec: TicketCodec = codec, token: str = token) -> None:
            trace = Trace()
            claims = codec.open(token, trace)
            check_binding(claims, trace, principal="bob", now=NOW + 1, method="tools/call", target="deploy",
                          arguments=ARGS)

        verify()  # fails loudly here, not in the timing loop, if the ticket does not verify
        out.append(Timing(f"mint ({kind})", best_us(mint, number=number, repeat=repeat), number))
        out.append(Timing(f"verify ({kind})", best_us(verify, number=number, repeat=repeat), number))
    token_bytes = tokens["signed"].encode()
    key = KEY.encode()
    out.append(Timing("bare HMAC-SHA256 of the signed ticket",
                      best_us(lambda: hmac.new(key, token_bytes, hashlib.sha256).digest(),
                              number=number * 5, repeat=repeat), number * 5))
    return out
