"""Several moves over one stdio process at once: lines written as each move sends them, replies matched by id.

A stdio server has one process per principal, so moves played concurrently (moves.schedule) share it. `Mux` owns the
process's stdout from its first use on: one reader thread reads every line and hands each response to the request
whose JSON-RPC id it carries. Each move writes its messages under ids of its own on the wire (`wire_id`: its number
times `ID_SPAN`, plus the id the move chose), so two moves' replies can never be confused, while ids a move reuses
(a burst of copies under one id) stay equal, and a server that keys anything on ids sees, move by move, the same
pattern of ids as when moves are played one after another. The reply handed back carries the move's own id.

A reply that names no pending id (a null id, a line that is not JSON) goes to the request waiting longest. A time-out
stops the process as the one-at-a-time path does: every request still waiting is told so. `StdioMove` is one move's
view of a `StdioTarget`: the shared processes for the owner and the other principal, a second process of the owner of
its own, and its own timing. Never runs a shell, never raises for a bad peer.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import threading
from collections.abc import Callable
from typing import IO, Protocol

from moves.target import Progress, Reply, Role, Target
from moves.targets.remote import Timing, check_response, is_response, parse_json
from mrtr import JSON, JSONObject

#: Wire ids of move n are n * ID_SPAN + the move's own id (moves use small ids: 2, 3, 50, 300, ...).
ID_SPAN = 1_000_000


def wire_id(lane: int, request_id: JSON) -> JSON:
    """The id a message of lane `lane` carries on the wire (lane 0: unchanged)."""
    if lane == 0:
        return request_id
    if isinstance(request_id, int) and not isinstance(request_id, bool) and 0 <= request_id < ID_SPAN:
        return lane * ID_SPAN + request_id
    return f"m{lane}:{json.dumps(request_id)}"


class Piped(Protocol):
    """What a `Mux` uses of a server process (moves.targets.stdio's): its pipes, the bytes read beyond the last reply,
    and why it may no longer be used (None while it may)."""

    proc: subprocess.Popen[bytes]
    stdout: IO[bytes]
    buffer: bytes
    broken: str | None

    def exited(self) -> str | None: ...

    def gone(self, pipe: str) -> str: ...

    def stop(self) -> None: ...


class Host(Protocol):
    """What a `Mux` and a `StdioMove` use of the target that runs the processes (a `StdioTarget`)."""

    label: str
    owner: str
    other: str
    timeout: float
    max_bytes: int
    _monotonic: Callable[[], float]

    def multiplexed(self, role: Role, lane: int, messages: list[JSONObject]) -> list[Reply]: ...


class _Pending:
    def __init__(self, wire: JSON, own: JSON) -> None:
        self.wire, self.own = wire, own
        self.reply: Reply | None = None


class Mux:
    """One process's stdin and stdout shared by concurrent requests (see the module)."""

    def __init__(self, target: Host, process: Piped) -> None:
        """`target`: the StdioTarget (its timeout, byte cap and clock); `process`: its process for one principal."""
        self.target, self.process = target, process
        self.lock = threading.Condition()
        self.pending: collections.OrderedDict[int, _Pending] = collections.OrderedDict()
        self.failed: str | None = None
        self._reader = threading.Thread(target=self._read, name="stdio-mux", daemon=True)
        self._reader.start()

    def exchange(self, lane: int, messages: list[JSONObject]) -> list[Reply]:
        """Write `messages` (as lane `lane`) in one go, then wait for each one's reply, under one deadline."""
        slots = [_Pending(wire_id(lane, m.get("id")), m.get("id")) for m in messages]
        with self.lock:
            if self.failed or self.process.broken:
                return [Reply(None, transport_error=self.failed or self.process.broken) for _ in messages]
            for slot in slots:
                self.pending[id(slot)] = slot
            try:
                stdin = self.process.proc.stdin
                assert stdin is not None
                stdin.write(b"".join(json.dumps({**m, "id": s.wire}, separators=(",", ":"), ensure_ascii=False)
                                     .encode() + b"\n" for m, s in zip(messages, slots, strict=True)))
                stdin.flush()
            except (BrokenPipeError, ConnectionResetError, ValueError, OSError):
                self._fail(self.process.gone("stdin"))
            deadline = self.target._monotonic() + self.target.timeout
            while any(s.reply is None for s in slots):
                left = deadline - self.target._monotonic()
                if left <= 0:
                    self._fail(f"no answer within {self.target.timeout:g} s", timed_out=True)
                    break
                self.lock.wait(min(left, 0.5))
            for slot in slots:
                self.pending.pop(id(slot), None)
        return [s.reply or Reply(None, transport_error="no answer") for s in slots]

    def _fail(self, why: str, *, timed_out: bool = False) -> None:
        """Every request still waiting gets `why`; the process is not trusted again (called under the lock)."""
        self.failed = self.failed or why
        for slot in self.pending.values():
            if slot.reply is None:
                slot.reply = Reply(None, transport_error=why, timed_out=timed_out)
        self.process.broken = f"not sent: the process was stopped after an earlier failure ({why})"
        self.lock.notify_all()
        if timed_out:
            threading.Thread(target=self.process.stop, daemon=True).start()

    def _deliver(self, reply: Reply, wire: JSON, matched: bool) -> None:
        with self.lock:
            waiting = [s for s in self.pending.values() if s.reply is None]
            slot = next((s for s in waiting if matched and s.wire == wire), None) or \
                (waiting[0] if waiting and not matched else None)
            if slot is not None:
                if reply.response is not None:
                    reply.response = {**reply.response, "id": slot.own}
                slot.reply = reply
                self.lock.notify_all()

    def _read(self) -> None:
        process, limit = self.process, self.target.max_bytes
        buffer, process.buffer = process.buffer, b""  # what the one-at-a-time path had read beyond its last reply
        while True:
            while b"\n" not in buffer:
                try:
                    chunk = os.read(process.stdout.fileno(), 65536)
                except (OSError, ValueError):
                    chunk = b""
                if not chunk:
                    why = process.gone("stdout")  # outside the lock: it may wait for the exit
                    with self.lock:
                        self._fail(why)
                    return
                buffer += chunk
                if b"\n" not in buffer and len(buffer) > limit:
                    with self.lock:
                        self._fail(f"the process wrote a line longer than {limit // 1024} KiB", timed_out=True)
                    return
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                self._line(line)

    def _line(self, line: bytes) -> None:
        parsed, error = parse_json(line, "a line on the process's stdout")
        if error:
            self._deliver(Reply(None, transport_error=error), None, matched=False)
            return
        if not is_response(parsed):
            return  # a notification or a request of the server's: nothing waits for it
        wire = parsed.get("id")
        response, problem = check_response(parsed, wire)
        reply = Reply(response, transport_error=problem)
        self._deliver(reply, wire, matched=wire is not None)


class StdioMove:
    """One move's view of a `StdioTarget` while moves are played concurrently (see the module)."""

    def __init__(self, parent: Host, timing: Timing, lane: int, again: Target) -> None:
        """`again`: a target of the same command whose "owner-again" process is this move's alone, as it is each
        move's alone when moves are played one after another."""
        self.parent, self.timing, self.lane, self._again = parent, timing, lane, again
        self.label, self.owner, self.other = parent.label, parent.owner, parent.other

    def send(self, role: Role, message: JSONObject) -> Reply:
        return self.send_burst(role, [message])[0]

    def send_burst(self, role: Role, messages: list[JSONObject]) -> list[Reply]:
        if role == "owner-again":
            burst = getattr(self._again, "send_burst", None)
            return burst(role, messages) if burst is not None else [self._again.send(role, m) for m in messages]
        replies: list[Reply] = self.parent.multiplexed(role, self.lane, messages)
        return replies

    def begin(self) -> None:
        self.timing.begin()
        self._again.begin()

    def advance(self, seconds: float, *, past_expiry: bool, expires_at: float | None,
                on_progress: Progress | None = None) -> bool:
        return bool(self.timing.advance(seconds, past_expiry=past_expiry, expires_at=expires_at,
                                        on_progress=on_progress))

    def near_expiry(self, seconds: float, fraction: float, *, expires_at: float | None,
                    on_progress: Progress | None = None) -> bool:
        return bool(self.timing.near_expiry(fraction, expires_at=expires_at, on_progress=on_progress))

    def close(self) -> None:
        self._again.close()
