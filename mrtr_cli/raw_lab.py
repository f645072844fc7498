"""`python -m mrtr lab`: start the server as a subprocess and print every line of four scenes.

It exits 0 only if all four went as expected. The server is the real `python -m mrtr serve`,
given a throwaway key and an in-memory store so the lab leaves nothing behind.
"""

from __future__ import annotations

import secrets
import sys

from moves.transcripts import run_lab
from mrtr_cli.stdio_server import serve_process
from mrtr_client import StdioTransport


def main() -> int:
    env = {"MRTR_SECRET_KEYS": secrets.token_urlsafe(32), "MRTR_STORE": "memory", "MRTR_PRINCIPAL": "bob"}
    codes: list[int] = []

    def close(transport: object) -> None:
        assert isinstance(transport, StdioTransport)
        codes.append(transport.close())

    scenes = run_lab(lambda key: serve_process(env), close=close)
    for scene in scenes:
        print(f"=== {scene.title} ===")
        for line in scene.lines:
            print(f"  {line.direction} {line.text}")
        print(f"  {'ok' if scene.ok else 'FAILED'}: expected {scene.expected}\n")
    clean = all(code == 0 for code in codes)
    print(f"server exited cleanly when stdin closed: {'yes' if clean else 'no'}")
    passed = sum(s.ok for s in scenes)
    print(f"{passed} of {len(scenes)} scenes went as expected")
    return 0 if passed == len(scenes) and clean else 1


if __name__ == "__main__":
    sys.exit(main())
