#!/usr/bin/env bash
# Checks the Helm chart deploy/helm/docstream offline (npm run helm:check): `helm lint --strict`, then
# renders it with `helm template` (no cluster) with its default values (KEDA off) and with the
# variants a user picks (KEDA on, more replicas, Secrets made by the chart, an image digest,
# Strimzi's objects) and hands the renders to scripts/k8s_validate.py, which validates every object
# like the kustomize manifests and checks that the KEDA-on render is the same objects as
# deploy/kubernetes (which autoscales with KEDA) in substance (so the two cannot drift), and that the Strimzi renders are the objects `docstream topology --format strimzi`
# prints for the config each render mounts (the built CLI; `npm run build` first).
#
# Helm is built once from the Go module proxy (`go install helm.sh/helm/v3/cmd/helm@<version>`, about
# a minute and a half) into the cache; $HELM names another helm binary instead.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION=3.22.0
chart=deploy/helm/docstream
if [[ -z ${HELM:-} ]]; then
  bin="${XDG_CACHE_HOME:-$HOME/.cache}/docstream/helm-$HELM_VERSION"
  HELM="$bin/helm"
  # The module version the binary was built from (go install stamps it; `helm version` says v3.22).
  if ! go version -m "$HELM" 2>/dev/null | grep -qE "^\s+mod\s+helm.sh/helm/v3\s+v$HELM_VERSION\s"; then
    command -v go >/dev/null || { echo "helm-check: needs Go (to build helm $HELM_VERSION) or \$HELM" >&2; exit 1; }
    echo "helm-check: building helm $HELM_VERSION into $bin (go install, once)"
    mkdir -p "$bin"
    GOBIN="$bin" GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION"
  fi
fi
echo "helm-check: helm $HELM_VERSION ($HELM)"

out=$(mktemp -d "${TMPDIR:-/tmp}/docstream-helm-check.XXXXXX")
trap 'rm -rf "$out"' EXIT

"$HELM" lint --strict "$chart"
"$HELM" lint --strict "$chart" --set keda.enabled=true

render() {
  local name=$1
  shift
  "$HELM" template docstream "$chart" --namespace docstream --kube-version 1.37.0 "$@" >"$out/$name.yaml"
  echo "helm-check: rendered $name ($(grep -c '^kind:' "$out/$name.yaml") objects)"
}
render default
render keda --set keda.enabled=true
render replicas --set replicaCount=3 --set podDisruptionBudget.enabled=false
render secrets --set secrets.create=true --set keda.enabled=true \
  --set-string 'secrets.kafka.data.ca\.crt=-----BEGIN CERTIFICATE-----' \
  --set-string secrets.kafka.data.username=docstream --set-string secrets.kafka.data.password=example \
  --set-string secrets.credentials.data.api-client-secret=example
render digest --set keda.enabled=true --set image.digest=sha256:0000000000000000000000000000000000000000000000000000000000000000 \
  --set config.connector.maxInFlight=1000 --set config.connector.shutdownTimeoutMs=60000
render strimzi --set strimzi.enabled=true
render strimzi-exactly-once --set strimzi.enabled=true --set config.connector.delivery=exactly-once \
  --set config.topics.dlq=acme.dead-letters --set config.connector.deadlineMs=600000 \
  --set strimzi.cluster=kafka-prod --set strimzi.authentication=tls --set strimzi.users.connector=acme-connector \
  --set keda.inputPartitions=6 --set keda.maxReplicaCount=6

# What `docstream topology --format strimzi` prints for the config a render mounts (its ConfigMap),
# with no DOCSTREAM_* variable of this shell.
export PATH="$(bash scripts/project-node.sh):$PATH"
npm run build --silent
printed() {
  local name=$1
  shift
  node --input-type=module -e "
    import { parseAllDocuments } from 'yaml';
    import fs from 'node:fs';
    const docs = parseAllDocuments(fs.readFileSync('$out/$name.yaml', 'utf8')).map((d) => d.toJS());
    process.stdout.write(docs.find((d) => d?.kind === 'ConfigMap').data['docstream.json']);
  " >"$out/$name.json"
  env $(env | grep -o '^DOCSTREAM_[A-Z0-9_]*' | sed 's/^/-u /') node dist/cli/index.js topology \
    -c "$out/$name.json" --format strimzi "$@" >"$out/$name-printed.yaml"
}
printed strimzi --input-partitions 12
printed strimzi-exactly-once --input-partitions 6 --strimzi-cluster kafka-prod --strimzi-authentication tls \
  --connector-principal User:acme-connector
grep -q '^kind: KafkaTopic' "$out/default.yaml" && { echo "helm-check: strimzi.enabled=false renders a KafkaTopic" >&2; exit 1; }

# The variants render what they say; KEDA is off by default.
grep -q '^kind: ScaledObject' "$out/default.yaml" && { echo "helm-check: the default values render a ScaledObject (keda.enabled is off by default)" >&2; exit 1; }
grep -q '^  replicas: 1$' "$out/default.yaml" || { echo "helm-check: the default values render no replicas: 1" >&2; exit 1; }
grep -q '^kind: ScaledObject' "$out/keda.yaml" || { echo "helm-check: keda.enabled=true renders no ScaledObject" >&2; exit 1; }
grep -q '^  replicas: 3$' "$out/replicas.yaml" || { echo "helm-check: replicaCount=3 renders no replicas: 3" >&2; exit 1; }
[[ $(grep -c '^kind: Secret$' "$out/secrets.yaml") -eq 2 ]] || { echo "helm-check: secrets.create=true does not render two Secrets" >&2; exit 1; }
grep -q "threshold: \"800\"" "$out/digest.yaml" || { echo "helm-check: the in-flight threshold is not 80 % of maxInFlight 1000" >&2; exit 1; }
grep -q 'terminationGracePeriodSeconds: 75$' "$out/digest.yaml" || { echo "helm-check: the grace period does not follow shutdownTimeoutMs" >&2; exit 1; }
# A mistake the chart refuses: more replicas than input partitions.
if "$HELM" template docstream "$chart" --kube-version 1.37.0 --set keda.enabled=true --set keda.maxReplicaCount=13 >/dev/null 2>&1; then
  echo "helm-check: keda.maxReplicaCount above keda.inputPartitions was rendered" >&2
  exit 1
fi

bash scripts/k8s-validate.sh --chart-default "$out/keda.yaml" --chart-render "$out/default.yaml" \
  --chart-render "$out/replicas.yaml" --chart-render "$out/secrets.yaml" --chart-render "$out/digest.yaml" \
  --chart-render "$out/strimzi.yaml" --chart-render "$out/strimzi-exactly-once.yaml" \
  --strimzi-compare "$out/strimzi.yaml=$out/strimzi-printed.yaml" \
  --strimzi-compare "$out/strimzi-exactly-once.yaml=$out/strimzi-exactly-once-printed.yaml"
