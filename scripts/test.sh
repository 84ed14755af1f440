#!/usr/bin/env bash
# npm test: every check, in two stages, each running its parts side by side on the machine's cores:
#   1. lint (eslint + prettier) and the typecheck; a failure of either ends the run there;
#   2. the unit tests and the integration tests (`test:integration` builds first, then starts the
#      local stack in jest's global set-up). The integration tests mostly wait on Kafka, the sandbox
#      and timers, which leaves a core for the unit tests.
# The integration tests print as they go; every other part's output is held in a file and printed
# whole once it is done (stage 2: after the integration tests, so that no two jest runs' lines mix),
# each under a "test: <part>" line with its exit code and time. Exits non-zero when any part failed.
set -uo pipefail
cd "$(dirname "$0")/.."

# Each background part in a process group of its own, so that an interrupt can stop it whole.
set -m
held=$(mktemp -d "${TMPDIR:-/tmp}/docstream-test.XXXXXX")
declare -A pid=()
cleanup() {
  for p in "${pid[@]}"; do kill -- "-$p" 2>/dev/null; done
  rm -rf "$held"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
failed=()

# start NAME SCRIPT: runs `npm run SCRIPT` in the background, its output held in $held/NAME.log.
start() {
  (
    t=$SECONDS
    npm run --silent "$2" >"$held/$1.log" 2>&1
    rc=$?
    echo "$((SECONDS - t))" >"$held/$1.time"
    exit $rc
  ) &
  pid[$1]=$!
}

# finish NAME: waits for NAME, prints its held output and how it ended; records a failure.
finish() {
  local rc
  wait "${pid[$1]}"
  rc=$?
  cat "$held/$1.log"
  echo "test: $1: exit $rc in $(<"$held/$1.time") s"
  [[ $rc -eq 0 ]] || failed+=("$1")
}

started=$SECONDS
echo "test: stage 1: lint and typecheck"
start lint lint
start typecheck typecheck
finish lint
finish typecheck
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "test: failed: ${failed[*]} (the tests were not run)"
  exit 1
fi

echo "test: stage 2: unit tests (printed once the integration tests are done) and integration tests"
start unit test:unit
t=$SECONDS
npm run --silent test:integration
rc=$?
echo "test: integration: exit $rc in $((SECONDS - t)) s"
# Interrupted (Ctrl-C reaches the foreground part alone): stop the unit tests too, print nothing more.
[[ $rc -lt 128 ]] || exit "$rc"
[[ $rc -eq 0 ]] || failed+=(integration)
finish unit

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "test: failed: ${failed[*]} ($((SECONDS - started)) s)"
  exit 1
fi
echo "test: all passed in $((SECONDS - started)) s"
