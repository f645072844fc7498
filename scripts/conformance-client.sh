#!/usr/bin/env bash
# Run the pinned official MCP conformance suite's 2026-07-28 client scenarios against `mrtr call`.
#
#   scripts/conformance-client.sh [OUTDIR]
#
# The suite starts a mock server per scenario and runs the client command with the mock's URL appended
# (MCP_CONFORMANCE_SCENARIO and MCP_CONFORMANCE_CONTEXT set). The command is
#   mrtr call --every-tool --answer-by-schema URL
# which lists the tools, refuses invalid definitions, and calls every valid tool once, arguments and answers by
# schema (the suite's own fixture arguments from MCP_CONFORMANCE_CONTEXT where it gives some).
# Each scenario runs on its own with NO baseline: any FAILURE or WARNING, a timeout or a non-zero exit (where
# the scenario does not allow one) fails the script. Pins and Node as in scripts/conformance.sh.
#
# Environment overrides: CONFORMANCE_PKG, CONFORMANCE_NODE, CONFORMANCE_TIMEOUT (seconds per scenario,
# default 120), MRTR_PYTHON (the interpreter that has this project; default .venv/bin/python, else python3).
set -u -o pipefail

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUTDIR="${1:-conformance-client-results}"
PKG="${CONFORMANCE_PKG:-@modelcontextprotocol/conformance@0.2.0-alpha.12}"
NODE_PKG="${CONFORMANCE_NODE:-node@22}"
STEP_TIMEOUT="${CONFORMANCE_TIMEOUT:-120}"
PYTHON="${MRTR_PYTHON:-$ROOT/.venv/bin/python}"
[[ -x "$PYTHON" ]] || PYTHON="$(command -v python3)"
CLIENT="$PYTHON -m mrtr call --every-tool --answer-by-schema"

CLIENT_SCENARIOS=(
  sep-2322-client-request-state
  request-metadata
  tools_call
  http-standard-headers
  http-custom-headers
  http-invalid-tool-headers
  json-schema-ref-no-deref
)

mkdir -p "$OUTDIR"
OUTDIR="$(cd "$OUTDIR" && pwd)"
LOG="$OUTDIR/conformance-client.log"
: >"$LOG"
cd "$ROOT" || exit 2
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

strip_ansi() { sed -E 's/\x1b\[[0-9;]*[A-Za-z]//g'; }

echo "== conformance client: $PKG on $NODE_PKG, command: $CLIENT URL"
FAIL=0
for s in "${CLIENT_SCENARIOS[@]}"; do
  out="$(NO_COLOR=1 FORCE_COLOR=0 timeout "$STEP_TIMEOUT" npx -y -p "$NODE_PKG" -p "$PKG" -- \
         conformance client --command "$CLIENT" --scenario "$s" -o "$OUTDIR" 2>&1 | strip_ansi)"
  rc=$?
  printf '### %s (exit %s)\n%s\n' "$s" "$rc" "$out" >>"$LOG"
  tally="$(grep -Eo 'Passed: [0-9]+/[0-9]+, [0-9]+ failed, [0-9]+ warnings' <<<"$out" | tail -1)"
  if [[ $rc -eq 0 ]]; then
    echo "  PASS  $s  $tally"
  else
    FAIL=1
    echo "  FAIL  $s  ${tally:-exit $rc}"
    grep -E '\] (FAILURE|WARNING)|EXITED|OVERALL' <<<"$out" | sed -E 's/^[^[]*//; s/^/          /' | head -10
  fi
done
echo "Full log: $LOG ; per-check JSON, stdout and stderr: $OUTDIR/<scenario>-<timestamp>/"
if [[ $FAIL -ne 0 ]]; then
  echo "RESULT: FAIL"
  exit 1
fi
echo "RESULT: PASS"
exit 0
