#!/usr/bin/env bash
# Install everything MRTR Lab's tests need on a fresh Debian machine (run as root)
# and run the whole suite, browser tests included. Extra arguments go to pytest,
# e.g.  bash scripts/test.sh tests/test_vendor.py -x
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-python3}"
CONFORMANCE_PKG="@modelcontextprotocol/conformance@0.2.0-alpha.12"
START=$SECONDS

section() {
    printf '\n==== %s ====\n' "$*"
}

run_as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    else
        sudo "$@"
    fi
}

section "System packages (chromium, redis-server, nginx)"
# nginx is for tests/deploy, which run scripts/cluster.sh (nginx in front of two replicas) for real.
if command -v chromium >/dev/null 2>&1 && command -v redis-server >/dev/null 2>&1 \
        && { command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; }; then
    echo "chromium, redis-server and nginx already installed; skipping apt-get"
else
    export DEBIAN_FRONTEND=noninteractive
    run_as_root apt-get update -q
    run_as_root apt-get install -y -q --no-install-recommends chromium redis-server nginx
fi
# The Debian wrapper script prints a harmless shell warning on some machines; keep the log clean.
chromium --version 2>/dev/null
redis-server --version
"$(command -v nginx || echo /usr/sbin/nginx)" -v

section "Python virtual environment (.venv)"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python --version
.venv/bin/python -m pip install -qq --disable-pip-version-check -r requirements-test.txt
# The project itself (pyproject.toml), editable and without dependencies, which the line above pinned: the
# `mrtr` command, and mrtr, moves and the other packages importable from any directory, as after `pip install .`.
.venv/bin/python -m pip install -qq --disable-pip-version-check --no-deps -e .

section "Pyodide for the in-page build lesson"
# The lesson's "Run the checks" runs on Pyodide, served by the app itself: its npm tarball and the itsdangerous
# wheel, each checked against the checksum recorded in web/build/pyodide_install.py, land in instance/pyodide/.
.venv/bin/python -m web.build.pyodide_install

section "Node dependencies (tests/js)"
if [ -f tests/js/package-lock.json ]; then
    (cd tests/js && npm ci --no-audit --no-fund)
else
    echo "tests/js/package-lock.json not present; skipping npm ci"
fi

section "MCP conformance suite ($CONFORMANCE_PKG on Node 22)"
# Node 22 comes from the npm registry as a package; the suite crashes on Node 20.
# Running it once here fills the npx cache so the tests don't pay for the download.
npx -y -p node@22 -p "$CONFORMANCE_PKG" -- conformance list --server >/dev/null
echo "conformance suite ready"

section "pytest ${*:-(whole suite)}"
echo "setup took $((SECONDS - START))s"
status=0
.venv/bin/python -m pytest "$@" || status=$?
echo "scripts/test.sh finished in $((SECONDS - START))s with exit code $status"
exit "$status"
