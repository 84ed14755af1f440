// Reads docstream's results with isolation.level=read_committed and prints one JSON line per
// record. The values are Avro in the Confluent wire format; the writer's schema is fetched from the
// registry's REST API by the id in each value (and kept).
//
//   java -cp "$(cat classpath.txt)" ConsumeResults.java
//
// Connection from the environment: KAFKA_BOOTSTRAP, KAFKA_USERNAME, KAFKA_PASSWORD_FILE and
// KAFKA_CA_FILE (SCRAM-SHA-512 over TLS), REGISTRY_URL, GROUP_ID (default fraud-case-store),
// TOPICS (comma-separated, default documents.fraud,documents.decision,documents.dlq) and
// MAX_RECORDS (stop after that many records; default: run until interrupted).
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.DecoderFactory;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ConsumeResults {
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newHttpClient();
  static final Map<Integer, Schema> SCHEMAS = new HashMap<>();

  public static void main(String[] args) throws Exception {
    String password = Files.readString(Path.of(System.getenv("KAFKA_PASSWORD_FILE"))).strip();
    Properties p = new Properties();
    p.put("bootstrap.servers", System.getenv("KAFKA_BOOTSTRAP"));
    p.put("security.protocol", "SASL_SSL");
    p.put("sasl.mechanism", "SCRAM-SHA-512");
    p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required "
        + "username=\"" + System.getenv("KAFKA_USERNAME") + "\" password=\"" + password + "\";");
    p.put("ssl.truststore.type", "PEM");
    p.put("ssl.truststore.location", System.getenv("KAFKA_CA_FILE"));
    p.put("group.id", System.getenv().getOrDefault("GROUP_ID", "fraud-case-store"));
    p.put("isolation.level", "read_committed"); // the Java client's default is read_uncommitted
    p.put("auto.offset.reset", "earliest");
    p.put("enable.auto.commit", "false");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    String registryUrl = System.getenv("REGISTRY_URL");
    List<String> topics = List.of(System.getenv()
        .getOrDefault("TOPICS", "documents.fraud,documents.decision,documents.dlq").split(","));
    int maxRecords = Integer.parseInt(System.getenv().getOrDefault("MAX_RECORDS", "0"));

    int seen = 0;
    try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(p)) {
      consumer.subscribe(topics);
      while (maxRecords == 0 || seen < maxRecords) {
        for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofSeconds(1))) {
          upsert(r.topic(), r.key(), decode(registryUrl, r.value()));
          seen++;
        }
        consumer.commitSync();
      }
    }
  }

  /** Stands for your idempotent write, keyed by submission id and topic: here, one line out. */
  static void upsert(String topic, String submissionId, GenericRecord value) throws Exception {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("topic", topic);
    row.put("submission_id", submissionId);
    row.put("event_id", String.valueOf(value.get("event_id")));
    for (String field : List.of("status", "decision", "score", "stage", "error_code")) {
      if (value.hasField(field)) {
        Object v = value.get(field);
        row.put(field, v == null ? null : v.toString());
      }
    }
    System.out.println(JSON.writeValueAsString(row));
  }

  /** A Confluent wire-format value: the byte 0, the schema id (big-endian), the Avro binary. */
  static GenericRecord decode(String registryUrl, byte[] value) throws Exception {
    ByteBuffer buffer = ByteBuffer.wrap(value);
    if (buffer.get() != 0) throw new IllegalArgumentException("not the Confluent wire format");
    int id = buffer.getInt();
    Schema schema = SCHEMAS.get(id);
    if (schema == null) {
      HttpRequest request = HttpRequest.newBuilder(URI.create(registryUrl + "/schemas/ids/" + id)).build();
      HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200) {
        throw new IllegalStateException("the registry answered " + response.statusCode() + " for schema " + id);
      }
      schema = new Schema.Parser().parse(JSON.readTree(response.body()).get("schema").asText());
      SCHEMAS.put(id, schema);
    }
    return new GenericDatumReader<GenericRecord>(schema).read(null,
        DecoderFactory.get().binaryDecoder(value, buffer.position(), value.length - buffer.position(), null));
  }
}
