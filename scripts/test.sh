#!/usr/bin/env bash
# npm test: every check, with the machine's cores shared between two lines of work:
#   - in the foreground, the integration tests (`test:integration` builds first, then starts the
#     local stack in jest's global set-up); they are the longest part and mostly wait on Kafka, the
#     sandbox and timers;
#   - beside them, one after another: lint (eslint + prettier), the typecheck and the unit tests.
# The integration tests print as they go. Every other part's output is held in a file and printed
# whole after the integration tests, so that no two runs' lines mix, each under a "test: <part>" line
# with its exit code and time; a part that fails says so at once in one line. Exits non-zero when any
# part failed.
set -uo pipefail
cd "$(dirname "$0")/.."

# The background parts in a process group of their own, so that an interrupt can stop them whole.
set -m
held=$(mktemp -d "${TMPDIR:-/tmp}/docstream-test.XXXXXX")
checks=
cleanup() {
  [[ -z $checks ]] || kill -- "-$checks" 2>/dev/null
  rm -rf "$held"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
failed=()
beside=(lint typecheck unit)

# run NAME SCRIPT: `npm run SCRIPT`, its output held in $held/NAME.log, its exit code and time beside it.
run() {
  local t=$SECONDS rc
  npm run --silent "$2" >"$held/$1.log" 2>&1
  rc=$?
  echo "$rc $((SECONDS - t))" >"$held/$1.end"
  [[ $rc -eq 0 ]] || echo "test: $1 failed (exit $rc); its output follows the integration tests" >&2
}

started=$SECONDS
echo "test: integration tests; beside them: ${beside[*]} (printed once the integration tests are done)"
(
  run lint lint
  run typecheck typecheck
  run unit test:unit
) &
checks=$!
t=$SECONDS
npm run --silent test:integration
rc=$?
echo "test: integration: exit $rc in $((SECONDS - t)) s"
# Interrupted (Ctrl-C reaches the foreground part alone): stop the other parts too, print nothing more.
[[ $rc -lt 128 ]] || exit "$rc"
[[ $rc -eq 0 ]] || failed+=(integration)

wait "$checks"
checks=
for part in "${beside[@]}"; do
  cat "$held/$part.log"
  read -r prc ptime <"$held/$part.end"
  echo "test: $part: exit $prc in $ptime s"
  [[ $prc -eq 0 ]] || failed+=("$part")
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "test: failed: ${failed[*]} ($((SECONDS - started)) s)"
  exit 1
fi
echo "test: all passed in $((SECONDS - started)) s"
