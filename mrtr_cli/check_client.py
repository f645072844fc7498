"""`mrtr check-client --command "CMD"`: start the grading server (`mrtr_cli.grading_server`), run CMD with the
server's URL appended as its last argument (the official suite's `conformance client --command` convention, with
`MCP_CONFORMANCE_SCENARIO` set), then grade what the client sent (`mrtr_grading`) and print the report. With
`--stdio`, CMD gets the stdio grading server's command instead (`mrtr_cli.stdio_grading`), one argument.

The client's user's choices for the decline-and-cancel questions are in `MRTR_CHECK_CLIENT_CHOICES` (JSON, question
key to action); `--user-choices` tells the grader the client answers as they say, else that rule is not-run.

Exit status: 0 when no rule failed, 1 when one did, 2 for a usage error, a client that could not be started or did
not finish in time, or one that reached no rule. This module parses, runs and prints; the rules and the flows live
in their own modules.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from mrtr_grading import CHOICES, CHOICES_VARIABLE, ClientReport, Recording, grade

from .grading_server import GradingServer
from .stdio_grading import StdioGradingServer

#: The exit status `run_command` reports for a client it stopped at the time-out (as `timeout(1)` does).
TIMED_OUT = 124
#: The scenario name a client reading `MCP_CONFORMANCE_SCENARIO` is told.
SCENARIO = "mrtr-check-client"
#: The variable that tells a client's user what to choose for the decline-and-cancel questions.


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mrtr check-client", description="Grade an MCP client's MRTR handling: "
                                "run it against a grading server and report each rule with evidence.")
    p.add_argument("--command", required=True, metavar="CMD",
                   help="the client command; the grading server's URL is appended as its last argument")
    p.add_argument("--stdio", action="store_true",
                   help="the client starts a server command: CMD gets the grading server's command as its last "
                        "argument (one argument, shell-quoted)")
    p.add_argument("--user-choices", action="store_true",
                   help=f"the client's user answers as ${CHOICES_VARIABLE} says, so decline and cancel are graded")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE ('-' for stdout)")
    p.add_argument("--junit", metavar="FILE", help="also write the report as JUnit XML to FILE")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds the client may run (default 120)")
    return p


def run_command(command: str, timeout: float) -> Callable[[str], tuple[int, str]]:
    """A client runner: CMD with the URL (or the stdio server's command) appended, its output kept."""
    argv = shlex.split(command)

    def run(url: str) -> tuple[int, str]:
        env = {**os.environ, "MCP_CONFORMANCE_SCENARIO": SCENARIO, CHOICES_VARIABLE: json.dumps(CHOICES)}
        try:
            done = subprocess.run([*argv, url], capture_output=True, text=True, timeout=timeout, env=env,
                                  stdin=subprocess.DEVNULL, check=False)  # never our terminal: it must not ask
        except subprocess.TimeoutExpired as exc:  # graded all the same: the rules it reached keep their verdicts
            return TIMED_OUT, _kept(_text(exc.stdout), _text(exc.stderr))
        return done.returncode, _kept(done.stdout, done.stderr)
    return run


#: How much of each of the client's streams is kept: the rules that read the output need its `TOOL: outcome` lines,
#: which a long stderr (a traceback, warnings) must not push out.
KEPT_OUTPUT = 32_000


def _kept(stdout: str, stderr: str) -> str:
    return stdout[-KEPT_OUTPUT:] + stderr[-KEPT_OUTPUT:]


def _text(output: bytes | str | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def check(client: Callable[[str], tuple[int, str]], command: str, recording: Recording | None = None, *,
          stdio: bool = False, choices_known: bool = False) -> ClientReport:
    """Serve the grading tools, let `client` run against their URL (with `stdio`, against the stdio grading
    server's command), and grade what it sent (into `recording`, whose clock stamps each request: tests give a fake
    one their clients advance)."""
    server: GradingServer | StdioGradingServer = StdioGradingServer(recording) if stdio else GradingServer(recording)
    with server:
        code, output = client(server.command if isinstance(server, StdioGradingServer) else server.url)
    return grade(server.recording, command, transport="stdio" if stdio else "http", exit_code=code, output=output,
                 choices_known=choices_known)


def main(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = parser().parse_args(argv)
    try:
        report = check(run_command(args.command, args.timeout), args.command, stdio=args.stdio,
                       choices_known=args.user_choices)
    except (OSError, ValueError) as exc:
        err.write(f"mrtr check-client: could not run the client: {exc}\n")
        return 2
    out.write(report.table() + "\n")
    if args.json:
        text = json.dumps(report.to_json(), ensure_ascii=False, indent=2) + "\n"
        out.write(text) if args.json == "-" else Path(args.json).write_text(text, encoding="utf-8")
    if args.junit:
        Path(args.junit).write_text(report.junit(), encoding="utf-8")
    if not report.graded:
        last = "the server command" if args.stdio else "the URL"
        err.write(f"mrtr check-client: the client reached no rule (did it take {last} as its last argument?)\n")
        return 2
    if report.exit_code == TIMED_OUT:
        err.write(f"mrtr check-client: the client did not finish within {args.timeout:g} s and was stopped\n")
        return 2
    return 0 if report.ok else 1
