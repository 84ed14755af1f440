#!/usr/bin/env bash
# Validates deploy/kubernetes/ offline (npm run k8s:validate): installs the pinned validator
# (kubernetes-validate from PyPI, which bundles the Kubernetes schemas) into a virtual environment
# in the cache on first use, then runs scripts/k8s_validate.py. Arguments are passed on
# (e.g. --kubernetes-versions 1.31.0). The Strimzi manifests `docstream topology --format strimzi`
# prints (of config/production.json, at-least-once and exactly-once) are validated too: the CLI is
# built first.
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=scripts/k8s-validate.requirements.txt
python=${PYTHON:-python3}
key=$(sha256sum "$requirements" | cut -c1-12)
venv="${DOCSTREAM_K8S_VALIDATE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/docstream/k8s-validate-$key}"

if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import kubernetes_validate' 2>/dev/null; then
  echo "k8s-validate: installing the validator into $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$requirements"
fi

export PATH="$(bash scripts/project-node.sh):$PATH"
npm run build --silent
topology=$(mktemp -d "${TMPDIR:-/tmp}/docstream-topology.XXXXXX")
trap 'rm -rf "$topology"' EXIT
# Only the given file and these settings: no DOCSTREAM_* variable of this shell.
print_topology() { env $(env | grep -o '^DOCSTREAM_[A-Z0-9_]*' | sed 's/^/-u /') "$@" node dist/cli/index.js topology -c config/production.json --format strimzi; }
print_topology >"$topology/topology.yaml"
print_topology DOCSTREAM_CONNECTOR_DELIVERY=exactly-once >"$topology/topology-exactly-once.yaml"

"$venv/bin/python" scripts/k8s_validate.py --strimzi "$topology/topology.yaml" \
  --strimzi "$topology/topology-exactly-once.yaml" "$@"
