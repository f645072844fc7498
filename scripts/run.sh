#!/usr/bin/env bash
# Install MRTR Lab's runtime dependencies into ./.venv and serve the app on http://127.0.0.1:${PORT:-5000} for
# trying it on this machine (granian, one process, quiet). Safe to run again: it only updates the venv.
# Serving other people is scripts/production.sh's job (workers, threads, the settings it checks).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PORT="${PORT:-5000}"
PYTHON="${PYTHON:-python3}"
# The address the app gives for pages it sends people to (lesson 3's URL-mode page): where this script serves it,
# so a PORT other than 5000 does not send learners to a port nothing listens on.
export MRTR_PUBLIC_URL="${MRTR_PUBLIC_URL:-http://127.0.0.1:${PORT}}"

if [ ! -x .venv/bin/python ]; then
    echo "==> Creating virtual environment in .venv"
    "$PYTHON" -m venv .venv
fi

echo "==> Installing runtime dependencies (requirements.txt) and the project itself (editable: the mrtr command)"
.venv/bin/python -m pip install -qq --disable-pip-version-check -r requirements.txt
.venv/bin/python -m pip install -qq --disable-pip-version-check --no-deps -e .

echo "==> Installing Pyodide and itsdangerous for the in-page build lesson (checksums recorded in web/build/pyodide_install.py)"
.venv/bin/python -m web.build.pyodide_install

# One granian process (the production server, scripts/production.sh, in its smallest shape) on this machine only:
# no development-server warning, and its own log quiet (warnings and errors only; the app's own lines still show).
# A live class's presenter view holds a thread while it waits, so THREADS - 1 of them may (MRTR_HELD_STREAMS).
THREADS="${THREADS:-4}"
export MRTR_HELD_STREAMS="${MRTR_HELD_STREAMS:-$((THREADS - 1))}"
echo "==> Serving MRTR Lab on http://127.0.0.1:${PORT} for you to try on this machine (Ctrl+C stops it)."
echo "    It runs granian, the production HTTP server, as one process; to serve others, use scripts/production.sh."
exec .venv/bin/granian --interface wsgi --factory --host 127.0.0.1 --port "$PORT" --workers 1 \
    --blocking-threads "$THREADS" --no-ws --log-level warning app:create_app
