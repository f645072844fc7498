"""The `mrtr` command: `mrtr check` (the server checker), `mrtr check-client`
(the client grader), `mrtr call` (the terminal client), `mrtr serve` (this
server over stdio) and `mrtr lab` (the run-it-raw lab). `python -m mrtr ...` runs the same `main`.

This package only parses the first word and hands over: the checker lives in `moves.check`, the client command
in `mrtr_cli.call`, the stdio adapter in `mrtr_cli.stdio_server`, the lab's scenes in `mrtr_cli.raw_lab`. Each is
imported only when asked for, so `mrtr check --help` never starts a server and `mrtr serve` never loads the
move engine.
"""

from __future__ import annotations

import sys

USAGE = """usage: mrtr {check|check-client|call|serve|lab} ...

  mrtr check ...   play the checker's moves against an MCP server (mrtr check --help)
  mrtr check-client ...   grade an MCP client against a grading server (mrtr check-client --help)
  mrtr call ...    call an MCP server's tools, answering its questions in the terminal (mrtr call --help)
  mrtr serve       serve the lesson's tools over stdio, one JSON-RPC message per line
  mrtr lab         run four scenes against `mrtr serve` and print every line"""


def main(argv: list[str] | None = None) -> int:
    """Run one `mrtr` command; returns the process's exit code."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "check":
        from moves.check import main as check_main

        return check_main(args[1:])
    if args and args[0] == "check-client":
        from mrtr_cli.check_client import main as check_client_main

        return check_client_main(args[1:])
    if args and args[0] == "call":
        from mrtr_cli.call import main as call_main

        return call_main(args[1:])
    if args in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if len(args) != 1 or args[0] not in ("serve", "lab"):
        print(USAGE, file=sys.stderr)
        return 2
    if args[0] == "serve":
        from mrtr_cli.stdio_server import main as serve_main

        return serve_main()
    from mrtr_cli.raw_lab import main as lab_main

    return lab_main()


def entry_point() -> None:
    """The console script `mrtr`."""
    sys.exit(main())
