#!/bin/bash
# Starts a single-node KRaft broker+controller configured from the environment, as the upstream
# apache/kafka image does: KAFKA_FOO_BAR=v -> foo.bar=v (a double underscore keeps one underscore),
# the JVM's own KAFKA_*_OPTS aside. Storage is formatted on the first start (CLUSTER_ID, or a fixed
# id: a test broker's data lives and dies with its container).
set -euo pipefail
props=/opt/kafka/config/server.properties
: >"$props"
while IFS='=' read -r name value; do
  case $name in KAFKA_HEAP_OPTS | KAFKA_OPTS | KAFKA_JVM_PERFORMANCE_OPTS | KAFKA_LOG4J_OPTS) continue ;; esac
  key=${name#KAFKA_}
  key=${key//__/@}
  key=${key//_/.}
  key=${key//@/_}
  printf '%s=%s\n' "${key,,}" "$value" >>"$props"
done < <(env | grep -E '^KAFKA_[A-Z0-9_]+=' || true)
grep -q '^log\.dirs=' "$props" || echo 'log.dirs=/var/lib/kafka/data' >>"$props"
jvm=(${KAFKA_HEAP_OPTS:--Xmx512m -Xms128m} -Djava.awt.headless=true
  -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.xml ${KAFKA_OPTS:-})
cp=(-cp '/opt/kafka/libs/*')
dir=$(sed -n 's/^log\.dirs=//p' "$props" | cut -d, -f1)
if [[ ! -f $dir/meta.properties ]]; then
  # Static voters (controller.quorum.voters) format as they are; otherwise a standalone controller.
  standalone=(--standalone)
  grep -q '^controller\.quorum\.voters=' "$props" && standalone=()
  java "${jvm[@]}" "${cp[@]}" kafka.tools.StorageTool format -t "${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" \
    -c "$props" "${standalone[@]}" --ignore-formatted
fi
exec java "${jvm[@]}" "${cp[@]}" kafka.Kafka "$props"
