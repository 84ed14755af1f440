#!/bin/sh
# Sends one JSON arrival event to docstream's input topic with kcat, keyed by its event_id.
#   sh produce-arrival.sh EVENT_ID BLOB_URL
# Connection from the environment: KAFKA_BOOTSTRAP, KAFKA_CA_FILE, KAFKA_CERT_FILE and
# KAFKA_KEY_FILE (mutual TLS: kcat on librdkafka < 2.6.1, as Debian 12 ships it, fails SCRAM
# against Kafka 4 brokers), TOPIC (default documents.arrived).
set -eu
event_id=$1 blob_url=$2
printf '%s|{"event_id":"%s","blob":{"url":"%s"},"query_id":"%s","enable_decision":true}\n' \
  "$event_id" "$event_id" "$blob_url" "$event_id" |
  kcat -P -b "$KAFKA_BOOTSTRAP" -t "${TOPIC:-documents.arrived}" -K '|' \
    -X security.protocol=SSL -X ssl.ca.location="$KAFKA_CA_FILE" \
    -X ssl.certificate.location="$KAFKA_CERT_FILE" -X ssl.key.location="$KAFKA_KEY_FILE" \
    -X enable.idempotence=true
echo "sent $event_id to ${TOPIC:-documents.arrived}"
