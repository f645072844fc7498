#!/usr/bin/env bash
# Install MRTR Lab's runtime dependencies into ./.venv and serve the app on
# http://127.0.0.1:${PORT:-5000}. Safe to run again: it only updates the venv.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PORT="${PORT:-5000}"
PYTHON="${PYTHON:-python3}"

if [ ! -x .venv/bin/python ]; then
    echo "==> Creating virtual environment in .venv"
    "$PYTHON" -m venv .venv
fi

echo "==> Installing runtime dependencies (requirements.txt) and the project itself (editable: the mrtr command)"
.venv/bin/python -m pip install -qq --disable-pip-version-check -r requirements.txt
.venv/bin/python -m pip install -qq --disable-pip-version-check --no-deps -e .

echo "==> Installing Pyodide and itsdangerous for the in-page build lesson (checksums recorded in web/pyodide_install.py)"
.venv/bin/python -m web.pyodide_install

echo "==> Serving MRTR Lab on http://127.0.0.1:${PORT}"
exec .venv/bin/flask --app app run --host 127.0.0.1 --port "$PORT"
