#!/usr/bin/env bash
# Run every benchmark and write bench/RESULTS.md. Arguments go to `python -m bench` (try --help).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec .venv/bin/python -m bench "$@"
