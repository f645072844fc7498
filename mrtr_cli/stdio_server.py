"""The stdio adapter: one JSON-RPC message per line in, one per line out, both eras.

`serve` reads stdin until it closes, hands each line to one `Connection` (a stdio process is one
user, so the principal comes from the environment), and writes every outgoing message as a line.
It wakes up between lines so the legacy shim can give up on a client that never answers.
The other end, for the lab and the tests, is the client's own `mrtr_client.StdioTransport` (`serve_process`).
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
from collections.abc import Mapping
from typing import IO

from mrtr import JSONObject, Server, system_clock
from mrtr_client import StdioTransport
from mrtr_settings.environment import open_store, read_settings
from mrtr_settings.keyfiles import ring_from_config
from mrtr_settings.stores import open_pages
from mrtr_toolsets.lesson import lesson_catalog


def server_from_env(environ: Mapping[str, str] | None = None) -> Server:
    """The stdio server the settings describe (see `mrtr_settings.environment`): keys, store, lifetime."""
    settings = read_settings(environ)
    return Server(ring=ring_from_config(settings.secret_keys), store=open_store(settings), clock=system_clock,
                  catalog=lesson_catalog(open_pages(settings)), ttl=settings.ticket_ttl)


def serve(server: Server, principal: str, stdin: IO[bytes], stdout: IO[bytes], *, tick: float = 1.0) -> None:
    conn = server.connect(principal, channel=True)
    selector = selectors.DefaultSelector()
    selector.register(stdin, selectors.EVENT_READ)
    buffer = b""

    def emit(messages: list[JSONObject]) -> None:
        for message in messages:
            stdout.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        stdout.flush()

    while True:
        if not selector.select(timeout=tick):
            emit(conn.expire().messages)
            continue
        chunk = os.read(stdin.fileno(), 65536)
        if not chunk:
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                emit(conn.receive_text(line).messages)
        if len(buffer) > 2_000_000:  # a line that never ends: answer it as oversized and drop it
            emit(conn.receive_text(buffer).messages)
            buffer = b""
    if buffer.strip():
        emit(conn.receive_text(buffer).messages)
    selector.close()


def main() -> int:
    serve(server_from_env(), read_settings().principal, sys.stdin.buffer, sys.stdout.buffer)
    print("[server] stdin closed: exiting cleanly", file=sys.stderr)
    return 0


def serve_command() -> list[str]:
    """The command that runs this adapter (`python -m mrtr serve`) in this Python."""
    return [sys.executable, "-m", "mrtr", "serve"]


def serve_process(env: Mapping[str, str] | None = None) -> StdioTransport:
    """`python -m mrtr serve` as a child, through the client's stdio transport, its stderr drained and kept."""
    return StdioTransport(serve_command(), env=env, stderr=subprocess.PIPE)
