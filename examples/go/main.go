// Command produce-arrival sends one JSON arrival event to docstream's input topic, keyed by its
// event_id.
//
//	produce-arrival EVENT_ID BLOB_URL
//
// Connection from the environment: KAFKA_BOOTSTRAP, KAFKA_USERNAME, KAFKA_PASSWORD_FILE and
// KAFKA_CA_FILE (SCRAM-SHA-512 over TLS), TOPIC (default documents.arrived).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: produce-arrival EVENT_ID BLOB_URL")
	}
	id, url := os.Args[1], os.Args[2]
	topic := os.Getenv("TOPIC")
	if topic == "" {
		topic = "documents.arrived"
	}
	ca, err := os.ReadFile(os.Getenv("KAFKA_CA_FILE"))
	if err != nil {
		log.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		log.Fatal("KAFKA_CA_FILE holds no PEM certificate")
	}
	password, err := os.ReadFile(os.Getenv("KAFKA_PASSWORD_FILE"))
	if err != nil {
		log.Fatal(err)
	}
	client, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(os.Getenv("KAFKA_BOOTSTRAP"), ",")...),
		kgo.DialTLSConfig(&tls.Config{RootCAs: pool}),
		kgo.SASL(scram.Auth{
			User: os.Getenv("KAFKA_USERNAME"),
			Pass: strings.TrimSpace(string(password)),
		}.AsSha512Mechanism()),
		// Uncompressed here; franz-go's default, snappy, is read as well, and so are gzip, lz4
		// and zstd (see "Compression" in docs/producing.md).
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	value, err := json.Marshal(map[string]any{
		"event_id":        id,
		"blob":            map[string]string{"url": url},
		"query_id":        id,
		"enable_decision": true,
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	record := &kgo.Record{Topic: topic, Key: []byte(id), Value: value}
	if err := client.ProduceSync(ctx, record).FirstErr(); err != nil {
		log.Fatalf("%s was not delivered: %v", id, err)
	}
	fmt.Printf("sent %s to %s\n", id, topic)
}
