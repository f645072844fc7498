"""A stdio command as a move target: one process per principal, one JSON-RPC message per line.

A stdio server has one user per process, named by its environment. The command is started at
most once per principal, with `MRTR_PRINCIPAL` (or the variable `principal_env` names) set to that
principal's value; the other principal's process starts only when a move first needs it (the
stolen move). Every request waits at most `timeout` seconds and reads at most `max_bytes`; a
process that floods stdout, prints a line that is not JSON, dies, or never answers gives a
`Reply.transport_error` saying so (a death with its exit code and the last lines of stderr, read to the
end of the pipe before the report is made), and after a flood or a hang the process is stopped rather than
trusted again. Processes run in their own process group and `close()` always ends them (and
anything they started): stdin closed, then SIGTERM, then SIGKILL.

The command is split like a shell would (`shlex`) but never run through a shell.
"""

from __future__ import annotations

import collections
import json
import os
import selectors
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from typing import IO

from moves.schedule import Slots
from moves.target import Progress, Reply, Role
from moves.targets.remote import (
    DEFAULT_TIMEOUT,
    MAX_REPLY_BYTES,
    PRINCIPAL_ENV,
    Timing,
    check_response,
    clip,
    is_response,
    parse_json,
)
from moves.targets.stdio_mux import Mux, StdioMove
from mrtr import JSONObject
from mrtr_client import StderrTail
from mrtr_client.stdio_transport import Read

#: Seconds a process gets to exit after its stdin closes, then again after SIGTERM.
GRACE = 2.0
STDERR_TAIL = 2048
#: Seconds an exit report waits for the stderr reader to reach the end of the pipe (longer only if something the
#: process started still holds its stderr open).
STDERR_END_WAIT = 2.0


class StdioConfigError(ValueError):
    """The command cannot be used (empty, unparsable): a usage error."""


class ServerProcess:
    """One running server process and what it has said."""

    def __init__(self, argv: list[str], env: Mapping[str, str], *, read: Read = os.read) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=dict(env), start_new_session=True)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.stdout: IO[bytes] = self.proc.stdout
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)
        self.buffer = b""
        self.broken: str | None = None
        #: Set once the reader has seen the end of stderr (or given up on it). Looked up when the reader ends, not
        #: before: a test swaps it for one that sees who waits on it.
        self.stderr_ended = threading.Event()
        #: When an exit report stops waiting for the end of stderr (set by the first report; later ones share it).
        self._stderr_deadline: float | None = None
        # Only the tail of stderr is kept, read as it comes, so a chatty server never blocks on a full pipe.
        self._stderr = StderrTail(self.proc.stderr, keep=STDERR_TAIL, read=read,
                                  on_end=lambda: self.stderr_ended.set())

    def stderr_tail(self) -> str:
        text = self._stderr.tail().decode("utf-8", "replace").strip()
        lines = [line for line in text.splitlines() if line.strip()]
        return clip(" | ".join(lines[-3:]), 200) if lines else ""

    def exited(self) -> str | None:
        """Why the process can no longer answer, with the last lines it wrote on stderr; None while it runs.

        The exit is seen before the reader thread has necessarily read what the process wrote just before it: the
        report waits, bounded, for the reader to reach the end of the pipe (one wait shared by every report), so
        the line saying why a server died is never lost to a busy machine."""
        code = self.proc.poll()
        if code is None:
            return None
        if self._stderr_deadline is None:
            self._stderr_deadline = time.monotonic() + STDERR_END_WAIT
        self.stderr_ended.wait(max(0.0, self._stderr_deadline - time.monotonic()))
        tail = self.stderr_tail()
        return f"the process exited with code {code}" + (f"; its stderr ended: {tail}" if tail else "")

    def gone(self, pipe: str) -> str:
        """Why the process cannot answer after it closed `pipe` ("stdin", "stdout"): a process that closes a pipe is
        usually exiting, so its exit (code and stderr) is awaited, bounded, rather than raced."""
        try:
            self.proc.wait(timeout=GRACE)
        except subprocess.TimeoutExpired:
            pass
        return self.exited() or f"the process closed its {pipe}"

    def stop(self) -> None:
        """Close stdin, wait, SIGTERM the group, wait, SIGKILL the group; then release every pipe."""
        proc = self.proc
        try:
            if proc.stdin is not None and not proc.stdin.closed:
                try:
                    proc.stdin.close()
                except OSError:
                    pass
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    try:
                        os.killpg(proc.pid, sig)
                    except (ProcessLookupError, PermissionError):
                        pass
                try:
                    proc.wait(timeout=GRACE)
                    break
                except subprocess.TimeoutExpired:
                    continue
            else:
                proc.wait()
            if proc.returncode is not None:  # the leader is gone: clear out anything it left in its group
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        finally:
            self.selector.close()
            self.stdout.close()
            self._stderr.join(GRACE)
            if proc.stderr is not None:
                proc.stderr.close()


class StdioTarget:
    """Moves sent as lines to a command's stdin; one process per principal."""

    def __init__(self, command: str | list[str], principals: Mapping[str, str] | list[tuple[str, str]] | None = None,
                 *, principal_env: str = PRINCIPAL_ENV, env: Mapping[str, str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT, max_bytes: int = MAX_REPLY_BYTES, timing: Timing | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        """`principals`: (name, value) twice, owner first; the value goes in `principal_env`.

        Default: bob and alice, each with their own name as the value.
        """
        if isinstance(command, str):
            try:
                argv = shlex.split(command)
            except ValueError as exc:
                raise StdioConfigError(f"the --stdio command cannot be split into words: {exc}") from None
        else:
            argv = list(command)
        if not argv:
            raise StdioConfigError("the --stdio command is empty")
        if not principal_env or "=" in principal_env or "\0" in principal_env:
            raise StdioConfigError(f"--principal-env must name an environment variable, got {principal_env!r}")
        pairs = list(principals.items()) if isinstance(principals, Mapping) else list(principals or [])
        if not pairs:
            pairs = [("bob", "bob"), ("alice", "alice")]
        if len(pairs) != 2 or pairs[0][0] == pairs[1][0]:
            raise StdioConfigError("a stdio target needs two differently named principals")
        (self.owner, owner_value), (self.other, other_value) = pairs
        self.argv = argv
        self.label = shlex.join(argv)
        self.principal_env = principal_env
        # "owner-again" is a second process of the owner: a ticket bound to its principal works there too.
        self._values: dict[Role, str] = {"owner": owner_value, "other": other_value, "owner-again": owner_value}
        self._env = dict(os.environ if env is None else env)
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.timing = timing or Timing()
        self._monotonic = monotonic
        self._procs: dict[Role, ServerProcess] = {}
        self._start_errors: dict[Role, str] = {}
        #: Once moves are played concurrently, each shared process is read by its `Mux` (moves.targets.stdio_mux).
        self._muxes: dict[Role, Mux] = {}
        self._lock = threading.Lock()

    # -- the Target protocol --------------------------------------------------------------------

    def begin(self) -> None:
        self.timing.begin()
        # "owner-again" is a second process of the owner that has seen nothing of this move: each move gets a
        # fresh one, so what an earlier move left in that process (a spent request, say) never decides this one.
        again = self._procs.pop("owner-again", None)
        self._start_errors.pop("owner-again", None)
        if again is not None:
            again.stop()

    def advance(self, seconds: float, *, past_expiry: bool, expires_at: float | None,
                on_progress: Progress | None = None) -> bool:
        return self.timing.advance(seconds, past_expiry=past_expiry, expires_at=expires_at, on_progress=on_progress)

    def near_expiry(self, seconds: float, fraction: float, *, expires_at: float | None,
                    on_progress: Progress | None = None) -> bool:
        """A remote server's clock cannot be moved: wait, for real, until `fraction` of the ticket's life."""
        return self.timing.near_expiry(fraction, expires_at=expires_at, on_progress=on_progress)

    def for_move(self, gate: Slots, index: int) -> StdioMove:
        """This target for move `index` played beside others: the owner's and the other principal's processes shared
        (lines interleaved, replies matched by id), a second process of the owner of its own, its own timing."""
        pairs = [(self.owner, self._values["owner"]), (self.other, self._values["other"])]
        again = StdioTarget(self.argv, pairs, principal_env=self.principal_env, env=self._env, timeout=self.timeout,
                            max_bytes=self.max_bytes, monotonic=self._monotonic)
        return StdioMove(self, self.timing.for_move(gate, index), index + 1, again)

    def multiplexed(self, role: Role, lane: int, messages: list[JSONObject]) -> list[Reply]:
        """Send `messages` as `role` through the process's `Mux`, under lane `lane`'s wire ids."""
        with self._lock:
            process = self._process(role)
            if isinstance(process, str):
                return [Reply(None, transport_error=process) for _ in messages]
            mux = self._muxes.get(role)
            if mux is None or mux.process is not process:
                mux = self._muxes[role] = Mux(self, process)
        return mux.exchange(lane, messages)

    def close(self) -> None:
        self._muxes = {}
        procs, self._procs = self._procs, {}
        for process in procs.values():
            process.stop()

    def __enter__(self) -> StdioTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, role: Role, message: JSONObject) -> Reply:
        if role in self._muxes:
            return self.multiplexed(role, 0, [message])[0]
        process = self._process(role)
        if isinstance(process, str):
            return Reply(None, transport_error=process)
        try:
            return self._exchange(process, message)
        except Exception as exc:  # never let a peer crash the checker
            process.broken = f"the checker stopped the process after {type(exc).__name__}"
            return Reply(None, transport_error=f"talking to the process failed: {type(exc).__name__}")

    def send_burst(self, role: Role, messages: list[JSONObject]) -> list[Reply]:
        """Write every message as a line before reading any answer (a server that handles lines concurrently gets
        them together), then read until each has its response; replies are matched by id, in order for ids sent
        more than once."""
        if role in self._muxes:
            return self.multiplexed(role, 0, messages)
        process = self._process(role)
        if isinstance(process, str):
            return [Reply(None, transport_error=process) for _ in messages]
        try:
            return self._exchange_many(process, messages)
        except Exception as exc:  # never let a peer crash the checker
            process.broken = f"the checker stopped the process after {type(exc).__name__}"
            return [Reply(None, transport_error=f"talking to the process failed: {type(exc).__name__}")
                    for _ in messages]

    def _exchange_many(self, process: ServerProcess, messages: list[JSONObject]) -> list[Reply]:
        gone = process.exited()
        if gone:
            process.broken = gone
            return [Reply(None, transport_error=gone) for _ in messages]
        assert process.proc.stdin is not None
        try:
            process.proc.stdin.write(b"".join(json.dumps(m, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
                                              for m in messages))
            process.proc.stdin.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError):
            why = process.gone("stdin")
            process.broken = why
            return [Reply(None, transport_error=why) for _ in messages]
        wanted = collections.Counter(json.dumps(m.get("id")) for m in messages)
        got: dict[str, collections.deque[Reply]] = collections.defaultdict(collections.deque)
        deadline = self._monotonic() + self.timeout
        problem: Reply | None = None
        while sum(wanted.values()) and problem is None:
            reply = self._next_line(process, deadline)
            if reply is None:
                continue
            if reply.response is None:
                problem = reply
                break
            key = json.dumps(reply.response.get("id"))
            if wanted[key]:
                wanted[key] -= 1
                got[key].append(reply)
        replies = []
        for message in messages:
            queue = got[json.dumps(message.get("id"))]
            replies.append(queue.popleft() if queue else problem or Reply(None, transport_error="no answer"))
        return replies

    def _next_line(self, process: ServerProcess, deadline: float) -> Reply | None:
        """The next JSON-RPC response on stdout as a Reply (None for a notification or a blank line), or a Reply
        without a response saying why none can come."""
        while b"\n" not in process.buffer:
            left = deadline - self._monotonic()
            if left <= 0 or not process.selector.select(timeout=left):
                return self._fail(process, f"no answer within {self.timeout:g} s", stop=True, timed_out=True)
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                why = process.gone("stdout")
                process.broken = why
                return Reply(None, transport_error=why)
            process.buffer += chunk
            if b"\n" not in process.buffer and len(process.buffer) > self.max_bytes:
                return self._fail(process, f"the process wrote a line longer than {self.max_bytes // 1024} KiB",
                                  stop=True)
        line, process.buffer = process.buffer.split(b"\n", 1)
        if not line.strip():
            return None
        parsed, error = parse_json(line, "a line on the process's stdout")
        if error:
            return Reply(None, transport_error=error)
        if not is_response(parsed):
            return None
        response, problem = check_response(parsed, parsed.get("id"))
        return Reply(response, transport_error=problem)

    # -- processes ------------------------------------------------------------------------------

    def _name(self, role: Role) -> str:
        return self.other if role == "other" else self.owner

    def _process(self, role: Role) -> ServerProcess | str:
        if role in self._start_errors:
            return self._start_errors[role]
        process = self._procs.get(role)
        if process is None:
            env = {**self._env, self.principal_env: self._values[role]}
            try:
                process = ServerProcess(self.argv, env)
            except FileNotFoundError:
                self._start_errors[role] = f"could not start {clip(self.argv[0], 60)!r}: no such command"
                return self._start_errors[role]
            except PermissionError:
                self._start_errors[role] = f"could not start {clip(self.argv[0], 60)!r}: permission denied"
                return self._start_errors[role]
            except OSError as exc:
                self._start_errors[role] = f"could not start {clip(self.argv[0], 60)!r}: {exc.strerror or exc}"
                return self._start_errors[role]
            self._procs[role] = process
        if process.broken:
            return process.broken
        return process

    def _fail(self, process: ServerProcess, why: str, *, stop: bool, timed_out: bool = False) -> Reply:
        if stop:
            process.broken = f"not sent: the process was stopped after an earlier failure ({why})"
            process.stop()
        return Reply(None, transport_error=why, timed_out=timed_out)

    def _exchange(self, process: ServerProcess, message: JSONObject) -> Reply:
        gone = process.exited()
        if gone:
            process.broken = gone
            return Reply(None, transport_error=gone)
        assert process.proc.stdin is not None
        try:
            process.proc.stdin.write(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
            process.proc.stdin.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError):
            why = process.gone("stdin")
            process.broken = why
            return Reply(None, transport_error=why)
        request_id = message.get("id")
        deadline = self._monotonic() + self.timeout
        notifications: list[JSONObject] = []
        received = 0
        while True:
            while b"\n" not in process.buffer:
                left = deadline - self._monotonic()
                if left <= 0 or not process.selector.select(timeout=left):
                    return self._fail(process, f"no answer within {self.timeout:g} s", stop=True, timed_out=True)
                chunk = os.read(process.stdout.fileno(), 65536)
                if not chunk:
                    why = process.gone("stdout")
                    process.broken = why
                    return Reply(None, notifications, transport_error=why)
                received += len(chunk)
                process.buffer += chunk
                if b"\n" not in process.buffer and len(process.buffer) > self.max_bytes:
                    return self._fail(process, f"the process wrote a line longer than {self.max_bytes // 1024} KiB",
                                      stop=True)
                if received > self.max_bytes:
                    return self._fail(process, f"the process wrote more than {self.max_bytes // 1024} KiB without "
                                               "answering the request", stop=True)
            line, process.buffer = process.buffer.split(b"\n", 1)
            if not line.strip():
                continue
            parsed, error = parse_json(line, "a line on the process's stdout")
            if error:
                return Reply(None, notifications, transport_error=error)
            if is_response(parsed) and parsed.get("id") == request_id:
                response, problem = check_response(parsed, request_id)
                return Reply(response, notifications, transport_error=problem)
            if isinstance(parsed, dict):
                notifications.append(parsed)
            else:
                return Reply(None, notifications, transport_error="a line on the process's stdout is JSON but not a "
                                                                  "JSON-RPC message")
