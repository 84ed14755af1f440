#!/bin/bash
# The compose file's health check calls this script of the upstream image. The jars the stack resolves
# hold the broker, not the admin tools, so this asks less: whether the broker's port accepts a
# connection (`--bootstrap-server host:port`, the only flag the health check passes).
set -euo pipefail
[[ ${1:-} == --bootstrap-server && -n ${2:-} ]] || { echo "usage: $0 --bootstrap-server host:port" >&2; exit 2; }
exec 3<>"/dev/tcp/${2%:*}/${2##*:}"
