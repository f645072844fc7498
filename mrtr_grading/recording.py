"""The recording of one grading run: every request the grading server received, in order, with the time it came
(from an injected clock) and what it was answered. The rules read it; adapters feed it.

What this module owns: `Received`, `Recording` and the cap on what one run records. It opens no socket and never
grades.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from mrtr import JSONObject, as_object
from mrtr.protocol import META_CAPABILITIES

from .flows import respond

#: The most requests one run records (and answers): a client in a loop cannot grow the recording without end.
MAX_RECORDED = 2000


@dataclass
class Received:
    """One request the server received: when (monotonic seconds), its id and params, and what was answered."""

    at: float
    method: str
    id: object
    params: JSONObject
    answer: JSONObject
    #: The request's HTTP headers, names lower-cased; None when the adapter saw none (stdio, in-page).
    headers: dict[str, str] | None = None

    @property
    def tool(self) -> str:
        name = self.params.get("name")
        return name if self.method == "tools/call" and isinstance(name, str) else ""

    @property
    def capabilities(self) -> JSONObject:
        return as_object(as_object(self.params.get("_meta")).get(META_CAPABILITIES))


@dataclass
class Recording:
    """Every request, in the order received; thread-safe (the HTTP server runs one thread per request)."""

    clock: Callable[[], float] = time.monotonic
    calls: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def of(self, tool: str) -> list[Received]:
        with self.lock:
            return [c for c in self.calls if c.tool == tool]

    def answer(self, message: JSONObject, headers: Mapping[str, str] | None = None) -> JSONObject:
        """The JSON-RPC response to one request, recorded with it and the time it arrived. One lock around both,
        so two requests at once still count a tool's calls in the order they are recorded."""
        method = str(message.get("method", ""))
        params = as_object(message.get("params"))
        with self.lock:
            at = self.clock()
            if len(self.calls) >= MAX_RECORDED:
                return {"jsonrpc": "2.0", "id": message.get("id"), "error": {
                    "code": -32603, "message": f"the grader records at most {MAX_RECORDED} requests per run"}}
            prior = sum(1 for c in self.calls if c.tool and c.params.get("name") == params.get("name"))
            reply: JSONObject = {"jsonrpc": "2.0", "id": message.get("id"), **respond(method, params, prior + 1)}
            seen = None if headers is None else {k.lower(): v for k, v in headers.items()}
            self.calls.append(Received(at, method, message.get("id"), params, reply, seen))
        return reply
