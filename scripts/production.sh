#!/usr/bin/env bash
# Serve MRTR Lab the production way: granian's WSGI interface on http://127.0.0.1:${PORT:-8000}.
#
#   PORT=8000 WORKERS=2 THREADS=8 scripts/production.sh [extra granian options]
#
# WORKERS processes (default: one per core) of THREADS blocking threads each (default 8). A
# 2025-11-25 session's SSE stream holds one thread while the client's answer arrives on another,
# so THREADS must be at least 2; legacy sessions live in one process, so with WORKERS > 1 put a
# proxy with sticky routing (on Mcp-Session-Id) in front, or serve legacy clients from one worker.
# 2026-07-28 traffic is stateless and needs neither. Configure the app with MRTR_* variables (see
# the README); MRTR_SECRET_KEYS is required. Runs `scripts/run.sh` first if .venv is missing.
# The last line is `exec`, so SIGTERM and SIGINT reach granian, which stops its workers cleanly.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PORT="${PORT:-8000}"
WORKERS="${WORKERS:-$(nproc 2>/dev/null || echo 2)}"
THREADS="${THREADS:-8}"
GRANIAN=.venv/bin/granian
if [ ! -x "$GRANIAN" ]; then
    echo "no $GRANIAN: install the runtime dependencies first (.venv/bin/pip install -r requirements.txt)" >&2
    exit 2
fi
if [ "$THREADS" -lt 2 ]; then
    echo "THREADS must be at least 2 (a legacy SSE stream holds a thread while its answer arrives)" >&2
    exit 2
fi

exec "$GRANIAN" --interface wsgi --factory --host 127.0.0.1 --port "$PORT" \
    --workers "$WORKERS" --blocking-threads "$THREADS" --no-ws \
    --workers-kill-timeout 10 --log-level warning "$@" app:create_app
