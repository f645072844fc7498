"""`python -m mrtr check`: play every move of moves/moves.toml and the protocol probes against one
server (an HTTP URL with two bearer tokens, or a stdio command), and report what held.

Python API (the CLI, the /check page and the tests use it):
    run_check(target, CheckOptions(...), events=Events(...), secrets=[...]) -> Report
        # raises CheckError when it cannot start, CheckStopped (with the report so far) at a time-out
    Report.ok, .to_json(), .table(), .summary(), .junit()
    main(argv, *, stdout=..., stderr=..., timeout=...) -> exit code 0 / 1 / 2

Each report row also keeps its move's messages (`exchange_of`: compact, JSON-safe, tickets shortened) for the
/check page's sequence diagrams; `to_json` never includes them.

Each move row has a verdict (`MoveRow.verdict`): pass, fail, warn (a failure an option excused: --allow-replay)
or not-run (the move could not show its check: skipped, or its `before` move / owner-again control did not
hold; never a failure). Exit codes: 0 no move failed and every probe held; 1 one did not; 2 a usage error
(identical tokens included), a target the checker cannot use (unreachable, not MCP, no tool that asks for
input), or a request not answered in time (the run stops at the first). Nothing here prints a traceback for
a peer's fault, and tokens never reach the output, even when a peer echoes them back.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, NoReturn, TypeGuard

from moves.asking import with_cross_tool
from moves.catalog import Move, load_moves
from moves.choosing import DEFAULT_TOOL, _choose, _tools, arguments_for, other_arguments_for
from moves.engine import Call, MoveResult
from moves.exchange import exchange_of, short_ticket
from moves.explore import DEFAULT_BUDGET, Exploration, Hop, explore, premint
from moves.playing import Played, concurrent, plan, play_all
from moves.probes import ProbeResult, Recorder, TargetTimedOut, counter, probe_result_type, probe_same_error
from moves.report import (
    VERDICTS,
    CheckError,
    CheckOptions,
    CheckStopped,
    Events,
    MoveRow,
    Report,
    redacted,
    secret_problem,
)
from moves.schedule import WIDTH
from moves.target import Reply, Role, Target
from moves.targets.http import HttpTarget, TargetConfigError
from moves.targets.module import ModuleLoadError, ModuleTarget, MovableClock
from moves.targets.remote import DEFAULT_TIMEOUT, PRINCIPAL_ENV, Timing, clip, ticket_expiry
from moves.targets.stdio import StdioConfigError, StdioTarget
from moves.terminal import ProgressBar, Terminal
from moves.wording import ticket_warnings
from mrtr import JSON, JSONObject
from mrtr_settings.environment import ConfigError, read_settings

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

#: What other modules and the tests import from here (the report's types live in moves.report, the tool's choice
#: in moves.choosing, the kept messages in moves.exchange).
__all__ = ["DEFAULT_TOOL", "VERDICTS", "CheckError", "CheckOptions", "CheckStopped", "Events", "MoveRow",
           "ProgressBar", "Report", "arguments_for", "check_source", "exchange_of", "main", "moves_from_env",
           "other_arguments_for", "run_check", "short_ticket"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def run_check(target: Target, options: CheckOptions | None = None, *, moves: Sequence[Move] | None = None,
              events: Events | None = None, clock: Callable[[], float] = time.monotonic,
              secrets: Sequence[str] = (), wall_clock: Callable[[], float] = time.time) -> Report:
    """Play every move and probe against `target` and report. Raises CheckError when it cannot start, and
    CheckStopped (with the report so far) at the first request the target does not answer in time.

    The caller owns the target (and closes it). Moves: `moves`, else MRTR_MOVES_FILE, else moves/moves.toml.
    """
    options = options or CheckOptions()
    events = events or Events()
    catalog = tuple(moves) if moves is not None else moves_from_env()
    recorder = Recorder(target)
    next_id = counter(1)
    began = clock()
    events.phase("listing tools")
    try:
        tools = _tools(recorder, Call(), "owner", next_id)
        _tools(recorder, Call(), "other", next_id)
        events.phase("calling the tool")
        call = with_cross_tool(recorder, tools, _choose(recorder, tools, options, Call(), next_id), next_id)
    except TargetTimedOut as exc:
        raise CheckError(f"{target.label} did not answer in time ({exc.context}): {exc.why}") from None
    if _real_waits(getattr(target, "timing", None)):  # a remote server: its real waits are what take time
        events.planned(_plan(target, recorder, catalog, options, per_request=(clock() - began) / max(
            1, len(recorder.exchanges))))
    report = Report(target.label, call.tool, dict(call.arguments),
                    dict(call.other_arguments) if call.other_arguments is not None else None,
                    secrets=tuple(secrets), other_tool=call.cross_tool, generated=wall_clock())
    exploring = _exploring(call, options, events)
    beside = exploring is not None and concurrent(target, options)
    # One after another, the exploration plays after the moves: round one's expiry ticket is minted before them.
    early = premint(target, call) if exploring is not None and not beside else []
    played = play_all(target, call, catalog, options, events, clock,
                      (lambda view, stopped: exploring(view, [], stopped)) if exploring is not None and beside
                      else None)
    results = _collect(report, recorder, played, len(catalog))
    report.warnings = ticket_warnings(next((r.ticket for r in results if r.ticket), None))
    for result_probe in (probe_same_error(results), probe_result_type(recorder.exchanges)):
        report.probe_seconds[result_probe.probe] = 0.0
        report.probes.append(result_probe)
        events.probe_done(result_probe)
    if exploring is not None and not beside:
        events.phase("exploring every round")
        report.explored = exploring(target, early, lambda: False)
    return report


def _collect(report: Report, recorder: Recorder, played: list[Played | None], moves: int) -> list[MoveResult]:
    """The played moves' rows, the probes' results and the exploration (when it played beside them) into `report`;
    the moves' results. Raises CheckStopped (with the report so far) where a time-out stopped the run."""
    results: list[MoveResult] = []
    for one in played[:moves]:
        if one is None:  # never started: a time-out stopped the run
            continue
        assert one.row is not None
        report.moves.append(one.row)
        recorder.exchanges += one.exchanges
        if one.stopped:
            report.stopped = one.stopped
            raise CheckStopped(report.redact(report.stopped), report)
        if one.result is not None:
            results.append(one.result)
            _rounds_seen(report, one.result)
    for one in played[moves:]:
        if one is not None and one.explored is not None:
            report.explored = one.explored
        if one is None or one.probe is None:
            continue
        recorder.exchanges += one.exchanges
        report.probes.append(one.probe)
        report.probe_seconds[one.probe.probe] = one.seconds
        if one.stopped:
            report.timed_out_probe, report.stopped = one.probe.probe, one.stopped
            raise CheckStopped(report.redact(report.stopped), report)
    return results


def _exploring(call: Call, options: CheckOptions,
               events: Events) -> Callable[[Target, list[Hop], Callable[[], bool]], Exploration] | None:
    """The exploration of every round (moves/explore.py), unless `--budget 0`; --allow-replay excuses `once`."""
    if options.budget <= 0:
        return None

    def exploring(target: Target, early: list[Hop], stopped: Callable[[], bool]) -> Exploration:
        return explore(target, call, options.budget, frozenset({"once"}) if options.allow_replay else frozenset(),
                       early, stopped)
    return exploring


def _plan(target: Target, recorder: Recorder, catalog: Sequence[Move], options: CheckOptions, *,
          per_request: float) -> str:
    """`playing.plan` from what the setup showed: its requests' pace and the lifetime of the ticket it was given."""
    expiry = ticket_expiry(recorder.last_ticket) if recorder.last_ticket else None
    timing = getattr(target, "timing", None)
    lifetime = None
    if expiry is not None and _real_waits(timing):  # a remote target's Timing, read by its shape
        seconds = expiry / 1000.0 if expiry > 1e11 else expiry  # one absurdly far off is in milliseconds
        lifetime = max(seconds - timing.clock(), 0.0)
    return plan(catalog, options, timing, per_request=per_request, lifetime=lifetime,
                concurrent=hasattr(target, "for_move"))


def _real_waits(timing: object) -> TypeGuard[Timing]:
    """Whether a target's timing waits in real time (moves.targets.remote.Timing, the HTTP and stdio targets'), read
    by its shape: the build lesson's in-process target moves its server's clock instead."""
    return callable(getattr(timing, "clock", None)) and hasattr(timing, "skip_late_name")


def _rounds_seen(report: Report, result: MoveResult) -> None:
    """The most rounds any move's flow went through (the first such move's), and why a flow was not finished."""
    if len(result.rounds) > len(report.rounds):
        report.rounds = [{"round": n, "keys": [str(k)[:60] for k in list(r)[:20]]}
                         for n, r in enumerate(result.rounds, 1)]
    report.flow_stuck = report.flow_stuck or result.stuck


def moves_from_env() -> tuple[Move, ...]:
    """The moves the checker plays: `MRTR_MOVES_FILE` when set (as the app reads it), else moves/moves.toml."""
    try:
        return load_moves(read_settings().moves_file)
    except ValueError as exc:  # ConfigError included: a setting that cannot be read
        raise CheckError(str(exc)) from None


# -- the command line -------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    out: IO[str] | None = None

    def error(self, message: str) -> NoReturn:  # usage errors: one clear line and exit 2, never a traceback
        raise CheckError(message)

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if message:
            (self.out or file or sys.stdout).write(message)


def _parser(out: IO[str] | None = None) -> argparse.ArgumentParser:
    p = _Parser(prog="mrtr check", description=(
        "Play the MRTR ticket moves and protocol probes against an MCP 2026-07-28 server and report what held."))
    p.add_argument("target", nargs="?", metavar="TARGET", help="the server's MCP endpoint, an http(s) URL")
    p.add_argument("--stdio", metavar="COMMAND", help="run this command instead (one process per principal)")
    p.add_argument("--token", action="append", default=[], metavar="NAME=TOKEN",
                   help="a principal and its bearer token, given twice, the ticket's owner first (over stdio: "
                        "optional, the value the principal variable gets; default bob=bob, alice=alice)")
    p.add_argument("--principal-env", default=PRINCIPAL_ENV, metavar="VAR",
                   help=f"over stdio, the variable that names the principal (default {PRINCIPAL_ENV})")
    p.add_argument("--tool", help="the tool to play against (default: deploy if listed, else the first tool "
                                  "that answers input_required; each tool tried is really called)")
    p.add_argument("--args", metavar="JSON", help="the tool's arguments, a JSON object")
    p.add_argument("--other-args", metavar="JSON", help="the arguments of the other request (default: --args "
                                                        "with one string changed)")
    p.add_argument("--answers", metavar="JSON",
                   help="answers the checker cannot make up, by question key ('{\"code\": {\"code\": \"1234\"}}') "
                        "or by round then key ('{\"2\": {\"login\": {\"action\": \"accept\"}}}'); a form "
                        "question's value is its content, any other is sent as the answer")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    p.add_argument("--allow-replay", action="store_true",
                   help="single use becomes a warning (for tools without side effects)")
    p.add_argument("--skip-late", action="store_true", help="do not wait for the ticket to expire")
    p.add_argument("--concurrency", type=int, default=WIDTH, metavar="N",
                   help=f"moves played at a time (default {WIDTH}; 1 plays them one after another)")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET, metavar="CALLS",
                   help=f"the most calls the exploration of every round makes (default {DEFAULT_BUDGET}; 0 leaves "
                        "it out)")
    p.add_argument("--late-after", type=float, metavar="SECONDS",
                   help="when the ticket's expiry is unreadable, send the late move this long after minting")
    p.out = out
    return p


def _json_object(text: str | None, flag: str) -> JSONObject | None:
    if text is None:
        return None
    try:
        value: JSON = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise CheckError(f"{flag} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CheckError(f"{flag} must be a JSON object, like '{{\"env\": \"staging\"}}'")
    return value


def _answers(text: str | None) -> JSONObject | None:
    """`--answers`: an object by question key, or by round number then key (each round's an object)."""
    answers = _json_object(text, "--answers")
    for key, value in (answers or {}).items():
        if key.isdigit() and not (1 <= int(key) <= 8 and isinstance(value, dict)):
            raise CheckError(f"--answers: round {key!r} must be a number from 1 to 8 and its answers an object by "
                             "question key")
    return answers


def _width(args: argparse.Namespace) -> int:
    if not 1 <= args.concurrency <= 16:
        raise CheckError("--concurrency must be a whole number from 1 to 16")
    return int(args.concurrency)


def _budget(args: argparse.Namespace) -> int:
    if not 0 <= args.budget <= 100_000:
        raise CheckError("--budget must be a whole number of calls from 0 to 100000 (0 leaves the exploration out)")
    return int(args.budget)


def _tokens(values: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        name, sep, token = value.partition("=")
        if not sep or not name.strip() or not token:
            raise CheckError("--token looks like NAME=TOKEN, for example --token bob=bob-token")
        pairs.append((name.strip(), token))
    if len(pairs) == 2 and pairs[0][1] == pairs[1][1]:
        raise CheckError("the two --token values are the same, so the server cannot tell the principals apart "
                         "and the stolen move would show nothing; give each principal its own token")
    if len(pairs) == 2 and pairs[0][0] == pairs[1][0]:
        raise CheckError("the two --token names are the same; name each principal (owner first)")
    return pairs


def _redactable(tokens: list[tuple[str, str]]) -> None:
    for name, token in tokens:
        problem = secret_problem(token)
        if problem is not None:
            raise CheckError(f"--token {name}: {problem}")


def build_target(args: argparse.Namespace, *, timeout: float = DEFAULT_TIMEOUT) -> Target:
    if args.late_after is not None and not (0 < args.late_after <= 3600):
        raise CheckError("--late-after must be a number of seconds between 0 and 3600")
    timing = Timing(late_after=args.late_after, skip_late=args.skip_late)
    tokens = _tokens(args.token)
    if bool(args.target) == bool(args.stdio):
        raise CheckError("give either TARGET (an http(s) URL) or --stdio \"COMMAND\", not both or neither")
    try:
        if args.stdio:
            if tokens and len(tokens) != 2:
                raise CheckError("over stdio, --token NAME=VALUE is optional but, if given, given twice")
            _redactable(tokens)
            return StdioTarget(args.stdio, tokens or None, principal_env=args.principal_env, timeout=timeout,
                               timing=timing)
        if len(tokens) != 2:
            raise CheckError("an HTTP target needs two principals: --token NAME=TOKEN, given twice")
        _redactable(tokens)
        return HttpTarget(args.target, tokens, timeout=timeout, timing=timing)
    except (TargetConfigError, StdioConfigError) as exc:
        raise CheckError(str(exc)) from None


def _write_junit(path: str, report: Report) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(report.junit())
    except OSError as exc:
        raise CheckError(f"could not write --junit {path}: {exc.strerror or exc}") from None


def _write_report(out: IO[str], report: Report, *, as_json: bool) -> None:
    if as_json:
        out.write(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(report.table() + "\n")
    out.flush()


def main(argv: Sequence[str], *, stdout: IO[str] | None = None, stderr: IO[str] | None = None,
         timeout: float | None = None) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    if timeout is None:
        try:
            timeout = read_settings().check_timeout or DEFAULT_TIMEOUT
        except ConfigError as exc:
            print(f"mrtr check: error: {exc}", file=err)
            return EXIT_USAGE
    target: Target | None = None
    # Every token given, known as soon as the arguments are read: a peer may echo one back in an error that ends
    # the run, and that message must not carry it either.
    secrets: list[str] = []
    try:
        args = _parser(out).parse_args(list(argv))
        secrets = [value.partition("=")[2] for value in args.token if value.partition("=")[2]]
        options = CheckOptions(tool=args.tool, arguments=_json_object(args.args, "--args"),
                               other_arguments=_json_object(args.other_args, "--other-args"),
                               allow_replay=args.allow_replay, skip_late=args.skip_late, concurrency=_width(args),
                               answers=_answers(args.answers), budget=_budget(args))
        target = build_target(args, timeout=timeout)
        events = Terminal(err, secrets=secrets).events()
        try:
            report = run_check(target, options, events=events, secrets=secrets)
        except CheckStopped as stopped:
            # What was played until the time-out still goes out (JUnit with an <error>, the JSON with
            # "stopped", or the table), so CI and people see where it stopped; the exit code stays 2.
            if args.junit:
                _write_junit(args.junit, stopped.report)
            _write_report(out, stopped.report, as_json=args.json)
            raise
        if args.junit:
            _write_junit(args.junit, report)
        _write_report(out, report, as_json=args.json)
        return EXIT_OK if report.ok else EXIT_FAILED
    except CheckError as exc:
        print(f"mrtr check: error: {redacted(str(exc), secrets)}", file=err)
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_USAGE
    except KeyboardInterrupt:
        print("mrtr check: interrupted", file=err)
        return 130
    except Exception as exc:  # a bug of ours: still one line, never a traceback
        print(f"mrtr check: internal error: {type(exc).__name__}: {clip(redacted(str(exc), secrets), 200)}",
              file=err)
        return EXIT_USAGE
    finally:
        if target is not None:
            target.close()


# -- a learner's server module, in this process (the build lesson's in-page checker) -----------------------


def check_source(source: str, *, moves: Sequence[Move] | None = None, filename: str = "server.py",
                 on_move: Callable[[JSONObject], None] = lambda row: None,
                 on_probe: Callable[[JSONObject], None] = lambda probe: None,
                 on_log: Callable[[list[str]], None] = lambda lines: None,
                 clock: MovableClock | None = None) -> JSONObject:
    """Play every move and probe on the learner's `source`, in this process, as `python -m mrtr check` plays them
    over stdio. Each move and probe is passed to `on_move` / `on_probe` as it finishes (the report's JSON row, with
    the move's title); what the server printed goes to `on_log`. Returns `{"report": <the --json report>,
    "summary": ..., "error": ""}`, or `{"report": None, "summary": "", "error": <why it could not run>}`.
    """
    try:
        target = ModuleTarget(source, filename=filename, clock=clock)
    except ModuleLoadError as exc:
        return {"report": None, "summary": "", "error": f"your server could not start: {exc}"}
    sent = target.send

    def send(role: Role, message: JSONObject) -> Reply:
        reply = sent(role, message)
        if reply.log:
            on_log(reply.log)
        return reply

    target.send = send  # type: ignore[method-assign]  # the log goes to the page as it is written

    def move_done(row: MoveRow, index: int, total: int) -> None:
        on_move({"move": row.move, "title": row.title, "verdict": row.verdict, "expected": row.expected,
                 "observed": row.observed, "detail": row.detail, "index": index, "total": total})

    def probe_done(probe: ProbeResult) -> None:
        on_probe({"probe": probe.probe, "title": probe.title, "ok": probe.ok, "detail": probe.detail})

    with target:
        try:
            report = run_check(target, CheckOptions(), moves=moves,
                               events=Events(move_done=move_done, probe_done=probe_done))
        except CheckError as exc:
            return {"report": None, "summary": "", "error": str(exc)}
    return {"report": report.to_json(), "summary": report.summary(), "error": ""}
