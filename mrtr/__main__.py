"""`python -m mrtr ...`: the same as the `mrtr` command, which lives in `mrtr_cli`.

This is the one place `mrtr` names a package above it, and only when run as a program; the
layering contract in pyproject.toml lists it as its single exception.
"""

from __future__ import annotations

import sys

from mrtr_cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
