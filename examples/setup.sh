#!/usr/bin/env bash
# Prepares the producer and consumer samples of examples/ to run, each into .cache/examples/ (kept
# between runs, keyed by a hash of what it is built from, so a second run only checks):
#   python  a venv with requirements.txt (PyPI), no unpinned package (--no-deps)
#   kcat    Debian's kcat (apt-get, as root) when no kcat is on PATH
#   jq      jq and curl (apt-get, as root) when missing: the registration command of producing.md
#   go      examples/go built with the pinned modules (the Go module proxy)
#   java    the Maven classpath of examples/java/pom.xml (Maven Central, the jars in
#           .cache/examples/m2); the samples run as single source files (`java -cp ...
#           SendArrival.java`), so there is no compile step
#
#   bash examples/setup.sh LANGUAGE...   (default: all of them)
# Prints, as its last line, what the sample needs to run: the venv's python, the kcat command, the
# Go binary or the classpath file. test/examples/samples.test.ts calls it once per language.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=.cache/examples
mkdir -p "$cache"
key() { cat "$@" | sha256sum | cut -c1-12; }
log() { echo "examples/setup: $*" >&2; }

setup_python() {
  local venv="$cache/python-$(key examples/python/requirements.txt)" lock
  # One install at a time: two test files may prepare the venv at once, and each would remove the
  # other's half-made venv.
  exec {lock}>"$cache/python.lock"
  flock "$lock"
  if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import confluent_kafka.schema_registry.avro' 2>/dev/null; then
    log "python: installing examples/python/requirements.txt into $venv"
    rm -rf "$venv"
    "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
      -r examples/python/requirements.txt >&2
  fi
  exec {lock}>&-
  echo "$PWD/$venv/bin/python"
}

# Debian packages for the commands named, each installed when its command is missing.
apt_install() {
  local missing=() command
  for command in "$@"; do command -v "$command" >/dev/null || missing+=("$command"); done
  ((${#missing[@]} == 0)) && return
  if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    log "${missing[*]}: not on PATH; install them (Debian/Ubuntu: apt-get install ${missing[*]})"
    exit 1
  fi
  # One apt-get at a time (the test prepares kcat and jq concurrently; dpkg's lock would fail the
  # second), and what the first installed is not installed again.
  local lock
  exec {lock}>"$cache/apt.lock"
  flock "$lock"
  missing=()
  for command in "$@"; do command -v "$command" >/dev/null || missing+=("$command"); done
  if ((${#missing[@]} > 0)); then
    log "installing ${missing[*]} from Debian's packages"
    DEBIAN_FRONTEND=noninteractive apt-get update >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null
  fi
  exec {lock}>&-
}

setup_kcat() {
  apt_install kcat
  command -v kcat
}

setup_jq() {
  apt_install jq curl
  command -v jq
}

setup_go() {
  local bin="$cache/go-$(key examples/go/go.mod examples/go/go.sum examples/go/main.go)/produce-arrival"
  if [[ ! -x $bin ]]; then
    log "go: building examples/go into $bin"
    # Default build flags (no -trimpath): the standard library's packages come from Go's build
    # cache as other builds of this machine left them (CI builds helm before the tests).
    (cd examples/go && GOFLAGS=-mod=readonly go build -o "$PWD/../../$bin" .) >&2
  fi
  echo "$PWD/$bin"
}

setup_java() {
  local classpath="$cache/java-$(key examples/java/pom.xml)/classpath.txt"
  if [[ ! -s $classpath ]] || ! tr ':' '\n' <"$classpath" | xargs ls >/dev/null 2>&1; then
    log "java: resolving examples/java/pom.xml's dependencies"
    mkdir -p "$(dirname "$classpath")"
    # The jars go to a Maven repository in the cache too, so that the classpath's files stay with it.
    mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$PWD/$cache/m2" -f examples/java/pom.xml \
      dependency:build-classpath -Dmdep.outputFile="$PWD/$classpath" >&2
  fi
  echo "$PWD/$classpath"
}

for language in "${@:-python kcat jq go java}"; do
  for one in $language; do
    case $one in
      python | kcat | jq | go | java) "setup_$one" ;;
      *)
        log "unknown language $one (python, kcat, jq, go, java)"
        exit 2
        ;;
    esac
  done
done
