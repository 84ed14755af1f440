import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Prints "partition offset event_id key" for every record of a topic as Kafka's own consumer reads it with
 * read_committed, from the beginning up to the end: for tests that count what a transactional writer
 * committed, without kafkajs's filter of aborted transactions. Run as a source file:
 * java -cp "<kafka libs>/*" CommittedRecords.java <bootstrap> <topic>
 */
public class CommittedRecords {
  public static void main(String[] args) {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    p.put("isolation.level", "read_committed");
    p.put("enable.auto.commit", "false");
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
      List<TopicPartition> parts = new ArrayList<>();
      c.partitionsFor(args[1]).forEach(i -> parts.add(new TopicPartition(i.topic(), i.partition())));
      c.assign(parts);
      c.seekToBeginning(parts);
      Map<TopicPartition, Long> end = c.endOffsets(parts);
      long deadline = System.currentTimeMillis() + 60_000;
      while (System.currentTimeMillis() < deadline) {
        boolean done = true;
        for (TopicPartition tp : parts) if (c.position(tp) < end.get(tp)) done = false;
        if (done) break;
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
          Header h = r.headers().lastHeader("event_id");
          String key = r.key() == null ? "-" : new String(r.key());
          System.out.println(r.partition() + " " + r.offset() + " " + (h == null ? "-" : new String(h.value())) + " " + key);
        }
      }
    }
  }
}
