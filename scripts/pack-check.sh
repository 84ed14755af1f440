#!/usr/bin/env bash
# The published package installs anywhere (npm run pack:check): packs the package as `npm publish`
# would (`npm pack`), installs the tarball into an empty directory on Node 22 (the major of the
# `engines` floor) and on the project's Node 24, and runs from that directory, on that Node:
#   docstream --version        the package's version
#   docstream config check     a configuration file written there, and the packaged config/sandbox.json
#   docstream demo             the whole demo (starts what is missing of the local stack, stops it after)
# Nothing from the clone is on the way: the commands run from the installed copy, with the clone's
# node_modules out of reach (the directory is outside the repository). Each Node is fetched from the
# npm registry's `node` package like scripts/project-node.sh does for the project's own.
# Exits non-zero at the first failing step; prints "pack-check: ok" at the end otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# The newest Node 22 release when this was written; its major must be the engines floor's.
NODE_22=22.23.3
NODE_24=$(sed -n '/"devDependencies"/,/}/s/^ *"node": *"\([0-9.]*\)".*/\1/p' package.json)
floor=$(sed -n '/"engines"/,/}/s/^ *"node": *">=\([0-9]*\)[0-9.]*".*/\1/p' package.json)
if [[ ${NODE_22%%.*} != "$floor" ]]; then
  echo "pack-check: NODE_22=$NODE_22 is not of the engines floor's major ($floor): update it" >&2
  exit 1
fi
version=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' package.json | head -1)

work=$(mktemp -d "${TMPDIR:-/tmp}/docstream-pack-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "pack-check: npm pack (builds first: prepare)"
tarball=$(npm pack --silent --pack-destination "$work" | tail -1)
tarball="$work/$tarball"
listing=$(tar -tzf "$tarball")
echo "pack-check: $(basename "$tarball"), $(wc -l <<<"$listing") files"
# What an installed copy needs at run time is in the tarball; what only the clone needs is not.
for need in package/package.json package/LICENSE package/README.md package/dist/cli/index.js \
  package/avro/DocumentArrived.avsc package/config/sandbox.json package/stack/kafka/pom.xml; do
  grep -qx "$need" <<<"$listing" || { echo "pack-check: $need missing from the tarball" >&2; exit 1; }
done
extra=$(grep -E '\.test\.(js|d\.ts)$|^package/(src|test|scripts)/' <<<"$listing" || true)
if [[ -n $extra ]]; then
  echo "pack-check: the tarball carries $(wc -l <<<"$extra") test or source files, like:" >&2
  head -5 <<<"$extra" >&2
  exit 1
fi

for node_version in "$NODE_22" "$NODE_24"; do
  bin=$(bash "$ROOT/scripts/project-node.sh" "$node_version")
  dir="$work/node-$node_version"
  mkdir -p "$dir"
  echo "pack-check: node $node_version: npm install $(basename "$tarball") into an empty directory"
  (
    cd "$dir"
    export PATH="$bin:$PATH"
    [[ "$(node --version)" == "v$node_version" ]] || { echo "pack-check: node is $(node --version)" >&2; exit 1; }
    npm install --no-audit --no-fund --loglevel=error "$tarball" 2>&1 | tee npm-install.log
    if grep -q EBADENGINE npm-install.log; then
      echo "pack-check: npm install warned EBADENGINE on node $node_version" >&2
      exit 1
    fi
    got=$(npx --no-install docstream --version)
    [[ $got == "$version" ]] || { echo "pack-check: docstream --version printed '$got', expected $version" >&2; exit 1; }
    echo "pack-check: node $node_version: docstream --version -> $got"
    cat >docstream.json <<'JSON'
{
  "kafka": { "brokers": ["kafka-1.example.com:9093"], "ssl": true },
  "api": { "clientId": "docstream" }
}
JSON
    npx --no-install docstream config check docstream.json node_modules/docstream/config/sandbox.json
    echo "pack-check: node $node_version: docstream demo"
    npx --no-install docstream demo
  )
  echo "pack-check: node $node_version: ok"
done
echo "pack-check: ok"
