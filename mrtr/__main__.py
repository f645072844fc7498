"""`python -m mrtr serve` (stdio server) and `python -m mrtr lab` (the run-it-raw lab)."""

from __future__ import annotations

import sys

USAGE = "usage: python -m mrtr {serve|lab}"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("serve", "lab"):
        print(USAGE, file=sys.stderr)
        return 2
    if argv[0] == "serve":
        from .stdio import main as serve_main

        return serve_main()
    from .lab import main as lab_main

    return lab_main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
