#!/usr/bin/env bash
# Runs one integration test file N times in a row against the local stack, stopping at the first
# failure; for flakiness checks by hand, never in CI (it takes N times the file's time).
#
#   bash scripts/repeat-test.sh 20 test/connector/kafka-restart.test.ts
#
# Each run's jest output goes to $REPEAT_LOG_DIR (default: a new temp dir), named run-<i>.log.
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: repeat-test.sh N TEST_FILE}
file=${2:?usage: repeat-test.sh N TEST_FILE}
[[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 100 ]] || { echo "repeat-test: N must be 1..100" >&2; exit 2; }
[[ -f $file ]] || { echo "repeat-test: no file $file" >&2; exit 2; }
logs=${REPEAT_LOG_DIR:-$(mktemp -d)}
mkdir -p "$logs"
npm run build --silent || exit 1
started=$SECONDS
for i in $(seq 1 "$n"); do
  t=$SECONDS
  node --experimental-vm-modules --no-warnings node_modules/jest/bin/jest.js "$file" \
    --selectProjects integration --runInBand --forceExit >"$logs/run-$i.log" 2>&1
  rc=$?
  echo "repeat-test: run $i/$n: exit $rc in $((SECONDS - t)) s ($(grep -E '^Tests:' "$logs/run-$i.log" | tail -1))"
  if [[ $rc -ne 0 ]]; then
    echo "repeat-test: run $i failed; its output: $logs/run-$i.log"
    exit 1
  fi
done
echo "repeat-test: $n runs in a row passed in $((SECONDS - started)) s; logs in $logs"
