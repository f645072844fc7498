#!/usr/bin/env bash
# Serve MRTR Lab the production way: granian's WSGI interface on http://127.0.0.1:${PORT:-8000}.
#
#   PORT=8000 WORKERS=2 THREADS=2 scripts/production.sh [extra granian options]
#
# WORKERS processes (default: one per core) of THREADS blocking threads each (default 2). A process
# runs one thread's Python at a time, so threads are for waiting, not computing, and fewer of them
# keep the slowest answers close to the typical one (bench/analysis.md). What waits: a 2025-11-25
# call held open for its client's answer, or a presenter's live view, keeps a thread, so at most
# MRTR_HELD_STREAMS are held per process (default THREADS - 1; it must stay below THREADS).
# Legacy sessions are shared through the store (mrtr_stores/sessions*.py), so any worker serves
# them; 2026-07-28 traffic is stateless. Configure the app with MRTR_* variables (see docs/deploy/configuration.md);
# MRTR_SECRET_KEYS is required. The last line is `exec`, so SIGTERM and SIGINT reach granian,
# which stops its workers cleanly.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PORT="${PORT:-8000}"
WORKERS="${WORKERS:-$(nproc 2>/dev/null || echo 2)}"
THREADS="${THREADS:-2}"
GRANIAN=.venv/bin/granian
if [ ! -x "$GRANIAN" ]; then
    echo "no $GRANIAN: install the runtime dependencies first (.venv/bin/pip install -r requirements.txt)" >&2
    exit 2
fi
case "$THREADS" in
    ''|*[!0-9]*) echo "THREADS must be a whole number, not '$THREADS'" >&2; exit 2 ;;
esac
if [ "$THREADS" -lt 2 ]; then
    echo "THREADS must be at least 2 (a legacy SSE stream holds a thread while its answer arrives)" >&2
    exit 2
fi
export MRTR_HELD_STREAMS="${MRTR_HELD_STREAMS:-$((THREADS - 1))}"
# Threads that may wait inside Redis at once (mrtr_stores/redis_clients.py): the rest are told "unavailable" at once,
# so a frozen Redis never holds every thread.
export MRTR_REDIS_WAITERS="${MRTR_REDIS_WAITERS:-$((THREADS - 1))}"
case "$MRTR_HELD_STREAMS" in
    ''|*[!0-9]*) echo "MRTR_HELD_STREAMS must be a whole number, not '$MRTR_HELD_STREAMS'" >&2; exit 2 ;;
esac
if [ "$MRTR_HELD_STREAMS" -ge "$THREADS" ]; then
    echo "MRTR_HELD_STREAMS ($MRTR_HELD_STREAMS) must be below THREADS ($THREADS): each held stream" \
        "keeps a thread, and one must stay free for everything else" >&2
    exit 2
fi

# The build lesson's in-page checker runs on Pyodide served from this origin: install it (and check its
# recorded checksums) unless it is there already. Without it the lesson still works, with the pasted report.
if ! .venv/bin/python -m web.build.pyodide_install >/dev/null; then
    echo "warning: Pyodide is not installed (web/build/pyodide_install.py failed above); the build lesson falls back" \
        "to pasting the checker's report" >&2
fi

# A worker that dies (killed, out of memory) is started again by granian within a second while the others
# serve (--respawn-failed-workers); SIGTERM lets each worker finish its requests for up to 10 s.
exec "$GRANIAN" --interface wsgi --factory --host 127.0.0.1 --port "$PORT" \
    --workers "$WORKERS" --blocking-threads "$THREADS" --no-ws \
    --respawn-failed-workers --respawn-interval 1 \
    --workers-kill-timeout 10 --log-level warning "$@" app:create_app
