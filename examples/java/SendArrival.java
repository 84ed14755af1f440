// Sends one arrival event to docstream's input topic, keyed by its event_id: JSON, or Avro with
// the word `avro` as third argument (Confluent wire format, the schema registered under
// <topic>-value through the registry's REST API).
//
//   java -cp "$(cat classpath.txt)" SendArrival.java EVENT_ID BLOB_URL [avro]
//
// Connection from the environment: KAFKA_BOOTSTRAP, KAFKA_USERNAME, KAFKA_PASSWORD_FILE and
// KAFKA_CA_FILE (SCRAM-SHA-512 over TLS), TOPIC (default documents.arrived), and for Avro
// REGISTRY_URL and AVRO_SCHEMA (default avro/DocumentArrived.avsc).
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecordBuilder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class SendArrival {
  static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    String id = args[0];
    String url = args[1];
    boolean avro = args.length > 2 && args[2].equals("avro");
    String topic = System.getenv().getOrDefault("TOPIC", "documents.arrived");
    String password = Files.readString(Path.of(System.getenv("KAFKA_PASSWORD_FILE"))).strip();

    Properties p = new Properties();
    p.put("bootstrap.servers", System.getenv("KAFKA_BOOTSTRAP"));
    p.put("security.protocol", "SASL_SSL");
    p.put("sasl.mechanism", "SCRAM-SHA-512");
    p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required "
        + "username=\"" + System.getenv("KAFKA_USERNAME") + "\" password=\"" + password + "\";");
    p.put("ssl.truststore.type", "PEM");
    p.put("ssl.truststore.location", System.getenv("KAFKA_CA_FILE"));
    p.put("enable.idempotence", "true");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());

    byte[] value;
    if (avro) {
      Schema schema = new Schema.Parser().parse(
          Path.of(System.getenv().getOrDefault("AVRO_SCHEMA", "avro/DocumentArrived.avsc")).toFile());
      int schemaId = register(System.getenv("REGISTRY_URL"), topic + "-value", schema);
      // The builders fill every field left out with its default (null, false, {}, FRAUD_ONLY).
      GenericData.Record blob = new GenericRecordBuilder(schema.getField("blob").schema())
          .set("url", url).build();
      GenericData.Record event = new GenericRecordBuilder(schema)
          .set("event_id", id)
          .set("blob", blob)
          .set("query_id", id)
          .set("enable_decision", true)
          .set("attributes", Map.of("tenant", "acme"))
          .build();
      value = confluentWireFormat(schemaId, schema, event);
    } else {
      value = JSON.writeValueAsBytes(Map.of(
          "event_id", id,
          "blob", Map.of("url", url),
          "query_id", id,
          "enable_decision", true,
          "attributes", Map.of("tenant", "acme")));
    }
    try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p)) {
      producer.send(new ProducerRecord<>(topic, id, value)).get();
    }
    System.out.println("sent " + id + " to " + topic);
  }

  /** Registers the schema under the subject (a no-op if it is there) and returns its id. */
  static int register(String registryUrl, String subject, Schema schema) throws Exception {
    String body = JSON.writeValueAsString(Map.of("schemaType", "AVRO", "schema", schema.toString()));
    HttpRequest request = HttpRequest.newBuilder(URI.create(registryUrl + "/subjects/" + subject + "/versions"))
        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
        .POST(HttpRequest.BodyPublishers.ofString(body))
        .build();
    HttpResponse<String> response = HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
    if (response.statusCode() != 200) {
      throw new IllegalStateException("the registry answered " + response.statusCode() + ": " + response.body());
    }
    return JSON.readTree(response.body()).get("id").asInt();
  }

  /** The byte 0, the schema id (4 bytes, big-endian), then the Avro binary of the record. */
  static byte[] confluentWireFormat(int schemaId, Schema schema, GenericData.Record record) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(0);
    out.write(ByteBuffer.allocate(4).putInt(schemaId).array());
    BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
    new GenericDatumWriter<GenericData.Record>(schema).write(record, encoder);
    encoder.flush();
    return out.toByteArray();
  }
}
