"""`python -m mrtr lab`: a thin entry point. The lab's scenes are teaching code and live in `moves.lab`.

Imported lazily, like the `check` command, so `import mrtr` never loads the move engine.
"""

from __future__ import annotations


def main() -> int:
    from moves.lab import main as lab_main  # noqa: PLC0415 - the one sanctioned mrtr -> moves dispatch

    return lab_main()
