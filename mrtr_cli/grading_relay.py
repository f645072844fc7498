"""The stdio grading server of `mrtr check-client --stdio`: the process a client under test starts as its server
command. It is a relay, nothing more: each line the client writes on its stdin goes to the checker over the Unix
socket the checker owns (`--relay PATH`), and the checker's reply line, if any, comes back on stdout.

Why a relay: the flows, the recording and its clock stay in the checker's process, so a stdio run is graded by the
same `Recording` as an HTTP one and nothing has to be written back when the client kills its server. Run as
`python -m mrtr_cli.grading_relay --relay PATH`; the checker appends that command to the client's. This module
never grades and never parses a message (the checker does both, once, for every transport).
"""

from __future__ import annotations

import argparse
import socket
import sys
from typing import BinaryIO

#: The longest line either way: the checker refuses longer ones too (`stdio_grading.MAX_LINE`).
MAX_LINE = 1_000_001


def relay(stdin: BinaryIO, stdout: BinaryIO, path: str) -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        replies = sock.makefile("rb")
        for line in stdin:
            if not line.strip():
                continue
            sock.sendall(line if line.endswith(b"\n") else line + b"\n")
            reply = replies.readline(MAX_LINE)
            if not reply:  # the checker has gone: the run is over
                sys.stderr.write("mrtr grading server: the checker closed the run\n")
                return 1
            if reply.strip():
                stdout.write(reply)
                stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mrtr_cli.grading_relay",
                                description="The stdio grading server a client under mrtr check-client --stdio starts.")
    p.add_argument("--relay", required=True, metavar="PATH", help="the checker's Unix socket for this run")
    args = p.parse_args(argv)
    try:
        return relay(sys.stdin.buffer, sys.stdout.buffer, args.relay)
    except OSError as exc:
        sys.stderr.write(f"mrtr grading server: cannot reach the checker at {args.relay}: {exc.strerror or exc}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
