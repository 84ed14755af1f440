#!/usr/bin/env bash
# `npm run compose:check`: brings docker-compose.yml up once with podman-compose (Debian's package,
# installed when missing) and sends one document through it: the PDF is put in the S3 store's
# `documents` bucket (a signed PUT, as to MinIO), `docstream send` publishes its arrival event (Avro
# through the compose registry), and the check waits for its fraud result from the compose connector
# (`docstream inspect`). Then everything it started goes: containers, the compose network, the
# network namespace. No image is pulled: Kafka's and the registry's images are built under the names
# the file uses (`npm run stack:images`), `docstream:local` is the image check's build (`npm run
# image:check` first), and MinIO is replaced by the stack's S3 store, moto, under the same service
# name (scripts/images/compose.check.yml says why).
# It runs in a network namespace of its own, so the compose file's fixed ports (9092, 8081, 9002,
# 9003, 8080, 9464 on 127.0.0.1) never meet a running local stack. Bounded: the part in the namespace
# is stopped after COMPOSE_CHECK_TIMEOUT seconds (420). Exits 1 with the services' logs on
# failure.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "[compose $(date -u +%H:%M:%S)] $*" >&2; }

PROJECT=docstream-check
export CONTAINERS_CONF="${DOCSTREAM_STACK_CACHE_DIR:-$HOME/.cache/docstream}/image/containers.conf"
# runc and no default ulimits: see scripts/lib/image.ts (cgroup v1, no CAP_SYS_RESOURCE).
pm() { podman --runtime runc "$@"; }
project_containers() { pm ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}'; }

# Not DOCSTREAM_*: docstream refuses variables of its prefix that it does not know.
if [[ -z ${COMPOSE_CHECK_NETNS:-} ]]; then
  # Out here: everything that needs the network (apt, image builds) and the teardown.
  limit=${COMPOSE_CHECK_TIMEOUT:-420}
  started=$SECONDS
  # Installs podman and runc too when missing (scripts/lib/image.ts).
  node .cache/scripts/scripts/stack-images.js --s3
  missing=()
  command -v podman-compose >/dev/null || missing+=(podman-compose)
  command -v ip >/dev/null || missing+=(iproute2)
  if ((${#missing[@]} > 0)); then
    log "installing ${missing[*]} from Debian's packages"
    DEBIAN_FRONTEND=noninteractive apt-get update >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null
  fi
  log "podman-compose $(podman-compose version 2>/dev/null | sed -n 's/^podman-composer* version *//p' || true), $(podman --version)"
  if ! pm image exists localhost/docstream:local; then
    log "no localhost/docstream:local image: run \`npm run image:check\` first (it builds the Dockerfile with podman)"
    exit 1
  fi
  log "docstream:local built $(pm image inspect -f '{{.Created}}' localhost/docstream:local | cut -c1-19)"
  if [[ -n $(project_containers) ]]; then
    log "containers of project $PROJECT exist already (another compose check running?): $(project_containers | tr '\n' ' ')"
    exit 1
  fi
  ns="docstream-compose-$$"
  ip netns add "$ns"
  in_ns() { nsenter --net="/run/netns/$ns" "$@"; }
  rc=0
  teardown() {
    if [[ $rc -ne 0 ]]; then
      for c in $(project_containers); do
        log "--- $c (last lines)"
        pm logs --tail 25 "$c" 2>&1 | sed 's/^/    /' >&2 || true
      done
    fi
    local t0=$SECONDS
    in_ns podman-compose -p "$PROJECT" -f docker-compose.yml -f scripts/images/compose.check.yml \
      --podman-args "--runtime runc" down -t 5 >/dev/null 2>&1 || true
    # What `down` left (a check cut by its time bound may have been starting one).
    for c in $(project_containers); do in_ns podman --runtime runc rm -f -t 2 "$c" >/dev/null 2>&1 || true; done
    pm network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true
    ip netns del "$ns"
    local left
    left=$(project_containers)
    if [[ -n $left ]] || ip netns list | grep -q "^$ns\b"; then
      log "teardown left: containers [${left//$'\n'/ }], network namespace $(ip netns list | grep -c "^$ns\b")"
      [[ $rc -ne 0 ]] || rc=1
    else
      log "torn down in $((SECONDS - t0))s: no containers, compose network or network namespace left"
    fi
  }
  trap 'teardown; exit $rc' EXIT
  in_ns ip link set lo up
  COMPOSE_CHECK_NETNS=$ns timeout -k 10 "$limit" nsenter --net="/run/netns/$ns" bash "$0" "$@" || rc=$?
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    log "timed out: not done after ${limit}s (COMPOSE_CHECK_TIMEOUT)"
    rc=1
  fi
  [[ $rc -eq 0 ]] && log "one document through compose: passed in $((SECONDS - started))s (teardown below)"
  exit $rc
fi

# In the network namespace.
pc=(podman-compose -p "$PROJECT" -f docker-compose.yml -f scripts/images/compose.check.yml
  --podman-args "--runtime runc" --podman-run-args "--ulimit nofile=4096:4096 --ulimit nproc=4096:4096")
t0=$SECONDS
log "podman-compose up (project $PROJECT, network namespace $COMPOSE_CHECK_NETNS)"
"${pc[@]}" up -d >/dev/null 2>&1
log "podman-compose up returned after $((SECONDS - t0))s"

wait_for() { # what, seconds, command...
  local what=$1 limit=$2 t0=$SECONDS
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS - t0 > limit)); then
      log "$what: not there after ${limit}s"
      return 1
    fi
    sleep 2
  done
  log "$what after $((SECONDS - t0))s"
}
wait_for "registry serving" 180 curl -fsS --max-time 5 http://127.0.0.1:8081/apis/ccompat/v7/subjects
wait_for "kafka accepting" 120 bash -c 'exec 3<>/dev/tcp/127.0.0.1/9092'
wait_for "S3 store answering" 60 curl -sS --max-time 5 -o /dev/null http://127.0.0.1:9002/
# podman-compose 1.0 starts services in order without waiting for depends_on's health conditions
# (Docker Compose waits): a connector that found Kafka not ready yet and exited is started again
# now that it is.
connector=$(project_containers | grep -E '_connector_[0-9]+$' || true)
if [[ -z $connector ]]; then
  log "no connector container (podman-compose started: $(project_containers | tr '\n' ' '))"
  exit 1
fi
if [[ $(pm inspect -f '{{.State.Running}}' "$connector") != true ]]; then
  log "$connector had stopped (started before Kafka was ready): starting it again"
  # podman prints two errors about systemd (no timers for health checks here): not the check's business.
  pm start "$connector" >/dev/null 2>&1 || { log "podman start $connector failed"; exit 1; }
fi
wait_for "connector ready (/readyz through the published 9464)" 120 curl -fsS --max-time 5 http://127.0.0.1:9464/readyz

# The document, put as a user would with MinIO's credentials from the compose file (SigV4-signed).
pdf=$(mktemp --suffix=.pdf)
trap 'rm -f "$pdf"' EXIT
node --input-type=module -e "import { sampleBytes } from './dist/demo/corpus.js'; process.stdout.write(await sampleBytes('clean-pdf'));" >"$pdf"
s3() { curl -fsS --max-time 30 --aws-sigv4 aws:amz:us-east-1:s3 --user docstream:docstream-secret "$@"; }
s3 -X PUT http://127.0.0.1:9002/documents >/dev/null
# A body needs its type: without one curl sends a form's, whose parsing by moto's server never ends.
s3 -H 'Content-Type: application/pdf' -T "$pdf" http://127.0.0.1:9002/documents/compose-check.pdf >/dev/null
log "put s3://documents/compose-check.pdf ($(stat -c %s "$pdf") bytes)"

export DOCSTREAM_KAFKA_BROKERS=localhost:9092 DOCSTREAM_REGISTRY_URL=http://localhost:8081/apis/ccompat/v7
id="compose-check-$$"
t0=$SECONDS
node dist/cli/index.js send s3://documents/compose-check.pdf --event-id "$id" >&2
# 0 once its fraud result is on the output topic; 2 (ends the wait) on a dead letter.
result() {
  node dist/cli/index.js inspect "$id" --json 2>/dev/null | node -e '
    let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => {
      const x = JSON.parse(s);
      if (x.letters.length > 0) { console.error(JSON.stringify(x.letters)); process.exit(2); }
      process.exit(x.results.some((r) => r.kind === "fraud") ? 0 : 1);
    });'
}
until result; do
  rc=$?
  if [[ $rc -eq 2 ]]; then
    log "$id went to the dead-letter topic (above)"
    exit 1
  fi
  if ((SECONDS - t0 > 120)); then
    log "no fraud result for $id after 120s"
    node dist/cli/index.js inspect "$id" >&2 || true
    exit 1
  fi
  sleep 2
done
log "fraud result of $id after $((SECONDS - t0))s:"
node dist/cli/index.js inspect "$id" >&2
