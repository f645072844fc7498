"""A learner's stdio server, run as Python modules in this process: the in-page build lesson's move target.

The build lesson's server (`lessons/build-the-checks/starter/server.py`) answers one JSON-RPC line at a time
through `respond(line)`. `ModuleTarget` executes the learner's source once per principal, each time as a fresh
module with `MRTR_PRINCIPAL` set while it loads (two principals are two instances, as over stdio they are two
processes; "owner-again" gets a fresh instance per move, as `StdioTarget` starts a fresh process), and sends
each request through that instance's `respond`, the reply going through JSON as it would on the wire.

The late move does not wait: every instance reads time through a `time` module this target hands it on import
(`time.time()` and the rest read the target's clock), and a past-expiry move moves that clock just past the
ticket's `exp`, as `moves.targets.remote.Timing` would wait for it. In-time moves go at once, as they do over
stdio. What the learner's code prints goes to the reply's `log`, never to this process's streams.

It never opens a process, a socket or a file, and never imports Flask. It cannot stop code that never returns
(an endless loop): whoever runs it must be able to end it from outside (the page's Web Worker is terminated on
a time-out). `moves.check.check_source` plays the checker on a source over this target and reports each row as it
finishes: it is what the page's worker calls, and what the tests compare with the stdio checker.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import os
import threading
import time as real_time
import traceback
import types
from collections.abc import Callable, Mapping, Sequence

from moves.target import Progress, Reply, Role
from moves.targets.remote import EXPIRY_MARGIN, PRINCIPAL_ENV, check_response, clip
from mrtr import JSONObject

#: The module name each instance gets (never "__main__", so the server's own `main()` does not start).
MODULE_NAME = "learner_server"
#: The most log lines one reply keeps (a server printing in a loop must not fill the page).
MAX_LOG_LINES = 40
#: Environment every instance sees while it loads, unless the caller overrides it.
DEFAULT_ENV: Mapping[str, str] = {"MRTR_TICKET_TTL": "120"}

#: Loading touches os.environ (the server reads its principal there at import): one load at a time.
_env_lock = threading.Lock()


class ModuleLoadError(ValueError):
    """The learner's source cannot be loaded (syntax error, an exception at import, no `respond`)."""


class Clock:
    """The time every instance of one target reads: the real time plus an offset the target moves forward."""

    def __init__(self, base: Callable[[], float] = real_time.time) -> None:
        self.base = base
        self.offset = 0.0

    def now(self) -> float:
        return self.base() + self.offset

    def move_to(self, when: float) -> None:
        """Jump forward to `when` (never back: tickets already spent stay spent at their own times)."""
        self.offset += max(0.0, when - self.now())


def time_module(clock: Clock) -> types.ModuleType:
    """A stand-in for the `time` module: the real one's names, with the wall-clock readings on `clock`."""
    shim = types.ModuleType("time", "The time module, reading the in-page checker's clock.")
    shim.__dict__.update({k: v for k, v in vars(real_time).items() if not k.startswith("__")})

    def now() -> float:
        return clock.now()

    def now_ns() -> int:
        return int(clock.now() * 1e9)

    def local(seconds: float | None = None) -> real_time.struct_time:
        return real_time.localtime(clock.now() if seconds is None else seconds)

    def gm(seconds: float | None = None) -> real_time.struct_time:
        return real_time.gmtime(clock.now() if seconds is None else seconds)

    def ctime(seconds: float | None = None) -> str:
        return real_time.ctime(clock.now() if seconds is None else seconds)

    shim.__dict__.update(time=now, time_ns=now_ns, localtime=local, gmtime=gm, ctime=ctime)
    return shim


def _describe_exception(exc: BaseException, filename: str) -> str:
    """`SyntaxError at line 3: invalid syntax`, or the exception and the learner's line it came from."""
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        return f"{type(exc).__name__} at line {exc.lineno}: {exc.msg}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    where = f" at line {frames[-1].lineno} (in {frames[-1].name})" if frames else ""
    return clip(f"{type(exc).__name__}{where}: {exc}", 300)


class _Instance:
    """One loaded copy of the learner's module, and whether a crash has ended it."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.broken: str | None = None


class ModuleTarget:
    """Moves sent to `respond` of the learner's module; one module instance per principal."""

    def __init__(self, source: str, principals: Sequence[tuple[str, str]] = (("bob", "bob"), ("alice", "alice")),
                 *, filename: str = "server.py", env: Mapping[str, str] | None = None, clock: Clock | None = None,
                 principal_env: str = PRINCIPAL_ENV) -> None:
        if len(principals) != 2 or principals[0][0] == principals[1][0]:
            raise ValueError("a module target needs two differently named principals")
        (self.owner, owner_value), (self.other, other_value) = principals
        self.label = f"{filename} (in this page)"
        self.filename = filename
        self.clock = clock or Clock()
        self.principal_env = principal_env
        self._values: dict[Role, str] = {"owner": owner_value, "other": other_value, "owner-again": owner_value}
        self._env = dict(DEFAULT_ENV if env is None else env)
        try:
            self._code = compile(source, filename, "exec")
        except (SyntaxError, ValueError) as exc:  # ValueError: a NUL character in the source
            raise ModuleLoadError(_describe_exception(exc, filename)) from None
        self._instances: dict[Role, _Instance] = {}
        self._started = 0.0
        #: Why the last `advance` did not move the clock (the engine reports the move as not run), or None.
        self.skip_reason: str | None = None
        #: Where the last past-expiry clock move took the clock, in words (shown beside the late move), or None.
        self.waited: str | None = None
        self.timing = self  # moves.check reads skip_reason and waited off `target.timing`

    # -- loading ------------------------------------------------------------------------------------

    def load(self, role: Role) -> types.ModuleType:
        """A fresh instance of the learner's module for `role`. Raises ModuleLoadError when it cannot load."""
        module = types.ModuleType(MODULE_NAME)
        module.__file__ = self.filename
        shim = time_module(self.clock)
        real_import = builtins.__import__

        def learner_import(name: str, globals: Mapping[str, object] | None = None,  # noqa: A002 - __import__'s names
                           locals: Mapping[str, object] | None = None, fromlist: Sequence[str] = (),
                           level: int = 0) -> types.ModuleType:
            if name == "time" and level == 0:
                return shim
            return real_import(name, globals, locals, fromlist, level)

        module.__dict__["__builtins__"] = {**vars(builtins), "__import__": learner_import}
        log = io.StringIO()
        with _env_lock:
            saved = {k: os.environ.get(k) for k in (*self._env, self.principal_env)}
            os.environ.update(self._env)
            os.environ[self.principal_env] = self._values[role]
            try:
                with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                    exec(self._code, module.__dict__)  # noqa: S102 - the learner's own code, in their own browser
            except BaseException as exc:  # noqa: BLE001 - SystemExit at import is the learner's too
                if isinstance(exc, KeyboardInterrupt):
                    raise
                raise ModuleLoadError(f"your server could not start: {_describe_exception(exc, self.filename)}") \
                    from None
            finally:
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
        if not callable(module.__dict__.get("respond")):
            raise ModuleLoadError("your server has no respond(line) function, which the checker sends each "
                                  "message to")
        return module

    def _instance(self, role: Role) -> _Instance | str:
        instance = self._instances.get(role)
        if instance is None:
            try:
                instance = _Instance(self.load(role))
            except ModuleLoadError as exc:
                return str(exc)
            self._instances[role] = instance
        return instance.broken or instance

    # -- the Target protocol ----------------------------------------------------------------------------

    def begin(self) -> None:
        self._started = self.clock.now()
        self.skip_reason = None
        self.waited = None
        # A fresh second instance of the owner per move, as StdioTarget starts a fresh second process.
        self._instances.pop("owner-again", None)

    def advance(self, seconds: float, *, past_expiry: bool, expires_at: float | None,
                on_progress: Progress | None = None) -> bool:
        self.skip_reason = None
        self.waited = None
        if not past_expiry:
            return True  # in-time moves go at once, as over stdio
        if expires_at is not None:
            if expires_at > 1e11:  # milliseconds, not seconds
                expires_at /= 1000.0
            until = expires_at + EXPIRY_MARGIN
            self.waited = (f"the server's clock was moved {until - self._started:.1f} s past minting, "
                           f"{EXPIRY_MARGIN:g} s past the ticket's exp")
        else:
            until = self._started + seconds
            self.waited = (f"the ticket's expiry is unreadable, so the server's clock was moved {seconds:g} s past "
                           "minting")
        self.clock.move_to(until)
        if on_progress is not None:
            on_progress(1.0, 1.0)
        return True

    def close(self) -> None:
        self._instances.clear()

    def __enter__(self) -> ModuleTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, role: Role, message: JSONObject) -> Reply:
        instance = self._instance(role)
        if isinstance(instance, str):
            return Reply(None, transport_error=instance)
        log = io.StringIO()
        try:
            line = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                answer = instance.module.respond(line)
            wire = json.dumps(answer)  # what the stdio server would print: it must be JSON
        except BaseException as exc:  # noqa: BLE001 - a crash of the learner's server, never of the checker
            if isinstance(exc, KeyboardInterrupt):
                raise
            # Over stdio an exception out of respond() ends the process; so does it end this instance.
            why = f"your server crashed: {_describe_exception(exc, self.filename)}"
            instance.broken = f"not sent: {why}"
            return Reply(None, transport_error=why, log=_lines(log))
        if answer is None:
            return Reply(None, transport_error="respond() returned None for a request with an id (no answer)",
                         log=_lines(log))
        parsed = json.loads(wire)
        response, problem = check_response(parsed, message.get("id"))
        return Reply(response, transport_error=problem, log=_lines(log))


def _lines(log: io.StringIO) -> list[str]:
    lines = [clip(line, 300) for line in log.getvalue().splitlines() if line.strip()]
    return lines[-MAX_LOG_LINES:]


__all__ = ["Clock", "ModuleLoadError", "ModuleTarget", "time_module"]
