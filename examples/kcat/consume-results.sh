#!/bin/sh
# Prints docstream's committed results of one topic with kcat: partition, key (the submission id)
# and headers (event_id, traceparent), then exits at the end of the topic.
#   sh consume-results.sh [TOPIC]        (default documents.fraud)
# Connection from the environment: KAFKA_BOOTSTRAP, KAFKA_CA_FILE, KAFKA_CERT_FILE and
# KAFKA_KEY_FILE (mutual TLS: kcat on librdkafka < 2.6.1, as Debian 12 ships it, fails SCRAM
# against Kafka 4 brokers).
set -eu
kcat -C -b "$KAFKA_BOOTSTRAP" -t "${1:-documents.fraud}" -o beginning -e -q \
  -X isolation.level=read_committed \
  -X security.protocol=SSL -X ssl.ca.location="$KAFKA_CA_FILE" \
  -X ssl.certificate.location="$KAFKA_CERT_FILE" -X ssl.key.location="$KAFKA_KEY_FILE" \
  -f 'partition=%p key=%k headers=%h\n'
