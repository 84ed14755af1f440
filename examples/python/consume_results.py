"""Reads docstream's results with isolation.level=read_committed and prints one JSON line per record.

    python consume_results.py

Connection from the environment: KAFKA_BOOTSTRAP, KAFKA_USERNAME, KAFKA_PASSWORD_FILE and
KAFKA_CA_FILE (SCRAM-SHA-512 over TLS), REGISTRY_URL, GROUP_ID (default fraud-case-store),
TOPICS (comma-separated, default documents.fraud,documents.decision,documents.dlq) and
MAX_RECORDS (stop after that many records; default: run until interrupted).
"""
import json
import os
import sys

from confluent_kafka import Consumer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

# The writer's schema is fetched from the registry by the id in each value. The registry client
# waits for an answer without a bound unless given one; with it, a request that gets no answer is
# retried (the client's max.retries) instead of stalling the consumer.
deserialize = AvroDeserializer(SchemaRegistryClient({"url": os.environ["REGISTRY_URL"], "timeout": 10}))
consumer = Consumer({
    "bootstrap.servers": os.environ["KAFKA_BOOTSTRAP"],
    "security.protocol": "SASL_SSL",
    "sasl.mechanisms": "SCRAM-SHA-512",
    "sasl.username": os.environ["KAFKA_USERNAME"],
    "sasl.password": open(os.environ["KAFKA_PASSWORD_FILE"]).read().strip(),
    "ssl.ca.location": os.environ["KAFKA_CA_FILE"],
    "group.id": os.environ.get("GROUP_ID", "fraud-case-store"),
    "isolation.level": "read_committed",
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
})
topics = os.environ.get("TOPICS", "documents.fraud,documents.decision,documents.dlq").split(",")
max_records = int(os.environ.get("MAX_RECORDS", "0"))


def upsert(topic, submission_id, value):
    """Stands for your idempotent write, keyed by submission id and topic: here, one line out."""
    row = {"topic": topic, "submission_id": submission_id, "event_id": value.get("event_id")}
    for field in ("status", "decision", "score", "stage", "error_code"):
        if field in value:
            row[field] = value[field]
    print(json.dumps(row), flush=True)


consumer.subscribe(topics)
seen = 0
try:
    while max_records == 0 or seen < max_records:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            # Most errors are transient and the client recovers by itself; a fatal one ends the loop.
            if msg.error().fatal():
                raise SystemExit(f"consumer error: {msg.error()}")
            print(f"consumer: {msg.error()}", file=sys.stderr)
            continue
        value = deserialize(msg.value(), SerializationContext(msg.topic(), MessageField.VALUE))
        upsert(msg.topic(), msg.key().decode(), value)
        consumer.commit(msg)
        seen += 1
finally:
    consumer.close()
