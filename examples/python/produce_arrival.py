"""Sends one arrival event to docstream's input topic: JSON, or Avro with --avro.

    python produce_arrival.py EVENT_ID BLOB_URL [--avro]

Connection from the environment: KAFKA_BOOTSTRAP, KAFKA_USERNAME, KAFKA_PASSWORD_FILE and
KAFKA_CA_FILE (SCRAM-SHA-512 over TLS), TOPIC (default documents.arrived), and for --avro
REGISTRY_URL and AVRO_SCHEMA (default avro/DocumentArrived.avsc).
"""
import json
import os
import sys

from confluent_kafka import Producer

event_id, blob_url = sys.argv[1], sys.argv[2]
topic = os.environ.get("TOPIC", "documents.arrived")
producer = Producer({
    "bootstrap.servers": os.environ["KAFKA_BOOTSTRAP"],
    "security.protocol": "SASL_SSL",
    "sasl.mechanisms": "SCRAM-SHA-512",
    "sasl.username": os.environ["KAFKA_USERNAME"],
    "sasl.password": open(os.environ["KAFKA_PASSWORD_FILE"]).read().strip(),
    "ssl.ca.location": os.environ["KAFKA_CA_FILE"],
    "enable.idempotence": True,
})
event = {
    "event_id": event_id,
    "blob": {"url": blob_url},
    "query_id": event_id,
    "enable_decision": True,
    "attributes": {"tenant": "acme"},
}

if "--avro" in sys.argv:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    # Without a timeout the registry client waits for an answer without a bound; with one, a request
    # that gets no answer is retried (the client's max.retries).
    registry = SchemaRegistryClient({"url": os.environ["REGISTRY_URL"], "timeout": 10})
    schema = open(os.environ.get("AVRO_SCHEMA", "avro/DocumentArrived.avsc")).read()
    # Registers the schema under <topic>-value on first use (TopicNameStrategy).
    serialize = AvroSerializer(registry, schema)
    value = serialize(event, SerializationContext(topic, MessageField.VALUE))
else:
    value = json.dumps(event).encode()

failures = []


def delivered(err, msg):
    if err is not None:
        failures.append(err)


producer.produce(topic, key=event_id, value=value, on_delivery=delivered)
if producer.flush(30) > 0 or failures:
    sys.exit(f"{event_id} was not delivered: {failures or 'no answer within 30 s'}")
print(f"sent {event_id} to {topic}")
