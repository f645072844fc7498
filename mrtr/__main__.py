"""`python -m mrtr serve` (stdio server), `python -m mrtr lab` (the run-it-raw lab) and
`python -m mrtr check` (the server checker, which lives in the `moves` package and is imported
only here, only when asked for: nothing else in `mrtr` imports `moves`)."""

from __future__ import annotations

import sys

USAGE = "usage: python -m mrtr {serve|lab|check ...}"


def main(argv: list[str]) -> int:
    if argv and argv[0] == "check":
        from moves.check import main as check_main

        return check_main(argv[1:])
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
