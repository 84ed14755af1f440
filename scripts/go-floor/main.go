// The Go floor of the benchmark (issue 31, "real-world cost"): the connector's flow for a
// FRAUD_ONLY document hand-written in Go, as a team would write it with franz-go, net/http
// keep-alive and hamba/avro, so that docstream's CPU per document can be compared with what the
// same work costs outside Node. It does what scripts/floor.ts does, step for step: the same arrival
// records (JSON, read in a consumer group from the beginning, offsets committed after each poll's
// records are taken), the same API calls (token once, create, upload, GET fraud / quality /
// classification once the processing time has passed, the same learned readiness delay), the same
// Kafka writes (three state records per document, CREATED, UPLOADED and DONE, as small JSON, and
// one record per result) through franz-go's idempotent producer with its defaults (acks=all; what
// arrives while a request is in flight goes in the next), except compression, off as in the
// connector and the Node floor so that both write the same bytes.
//
// One choice differs from the Node floor, on purpose: results are not written as the API's bytes
// but decoded and encoded with hamba/avro against the connector's own result schemas (avro/), in
// the connector's Confluent framing, with the schema ids that scripts/lib/bench-floor.ts registered
// for the floor's topics; that is the work the issue names, and the work the connector does.
//
// Started by scripts/lib/bench-floor.ts with one argument, the FloorSettings JSON file of
// scripts/floor.ts (plus resultSchemas). It reports on stdout, one JSON object a line:
// {"type":"warm"} once the warm-up documents are done (the harness then produces the measured
// ones, and the clock starts at the next record), then {"type":"floor",...} (FloorReport), and
// exits (with holdAfterReport, once its stdin ends). CPU is the process's own user + system time (getrusage, every thread: the same as
// Node's process.cpuUsage()) from the first measured record taken to the last result acknowledged.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type schemaRef struct {
	ID   int    `json:"id"`
	File string `json:"file"`
}

type settings struct {
	Brokers      []string          `json:"brokers"`
	GroupID      string            `json:"groupId"`
	ArrivedTopic string            `json:"arrivedTopic"`
	StateTopic   string            `json:"stateTopic"`
	ResultTopics map[string]string `json:"resultTopics"`
	BaseURL      string            `json:"baseUrl"`
	ClientID     string            `json:"clientId"`
	ClientSecret string            `json:"clientSecret"`
	Docs         int               `json:"docs"`
	WarmupDocs   int               `json:"warmupDocs"`
	MaxInFlight  int               `json:"maxInFlight"`
	LatencyMs    int               `json:"latencyMs"`
	Deadline     int64             `json:"deadline"`
	CPUProfile   string            `json:"cpuProfile"`
	// After the report, wait until stdin ends before leaving the group and exiting, so that the
	// harness can read the process's CPU at the moment of the report (the quiet benchmark's trickle).
	HoldAfterReport bool `json:"holdAfterReport"`
	// The schema id and .avsc file of each result kind (the Go floor only).
	ResultSchemas map[string]schemaRef `json:"resultSchemas"`
}

type report struct {
	Type          string `json:"type"`
	Completed     int    `json:"completed"`
	CPUUs         int64  `json:"cpuUs"`
	ColdCPUUs     *int64 `json:"coldCpuUs"`
	DurationMs    int64  `json:"durationMs"`
	HTTPCalls     int64  `json:"httpCalls"`
	NotReady      int64  `json:"notReady"`
	KafkaRequests int64  `json:"kafkaRequests"`
	Sockets       int64  `json:"sockets"`
}

type arrival struct {
	EventID    string            `json:"event_id"`
	QueryID    *string           `json:"query_id"`
	Attributes map[string]string `json:"attributes"`
	Blob       struct {
		URL string `json:"url"`
	} `json:"blob"`
}

var resultKinds = []string{"fraud", "quality", "classification"}

// counters of the run; the report subtracts their values at the end of the warm-up.
var httpCalls, notReady, kafkaRequests, sockets atomic.Int64

// produceCounter counts produce requests written to a broker (key 0 is Produce).
type produceCounter struct{}

func (produceCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 0 && err == nil {
		kafkaRequests.Add(1)
	}
}

func cpuUs() int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		panic(err)
	}
	return u.Utime.Sec*1_000_000 + u.Utime.Usec + u.Stime.Sec*1_000_000 + u.Stime.Usec
}

var stdout = struct {
	sync.Mutex
	enc *json.Encoder
}{enc: json.NewEncoder(os.Stdout)}

func say(v any) {
	stdout.Lock()
	defer stdout.Unlock()
	if err := stdout.enc.Encode(v); err != nil {
		fmt.Fprintf(os.Stderr, "go-floor: stdout: %v\n", err)
	}
}

type floor struct {
	s      settings
	base   string
	http   *http.Client
	kafka  *kgo.Client
	codecs map[string]*resultCodec
	auth   string

	mu         sync.Mutex
	readyAfter time.Duration
}

func (f *floor) call(method, target string, header http.Header, body []byte) (int, []byte, error) {
	httpCalls.Add(1)
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, target, reader)
	if err != nil {
		return 0, nil, err
	}
	req.Header = header
	res, err := f.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	reply, err := io.ReadAll(res.Body)
	return res.StatusCode, reply, err
}

// write produces one record and waits for its acknowledgement; records written meanwhile by
// other documents are gathered by the producer into its next request.
func (f *floor) write(topic string, key string, value []byte) error {
	done := make(chan error, 1)
	f.kafka.Produce(context.Background(), &kgo.Record{Topic: topic, Key: []byte(key), Value: value},
		func(_ *kgo.Record, err error) { done <- err })
	return <-done
}

func (f *floor) token() error {
	basic := base64.StdEncoding.EncodeToString([]byte(f.s.ClientID + ":" + f.s.ClientSecret))
	status, body, err := f.call("POST", f.base+"/oauth2/token", http.Header{
		"Authorization": {"Basic " + basic},
		"Content-Type":  {"application/x-www-form-urlencoded"},
	}, []byte("grant_type=client_credentials"))
	if err != nil {
		return err
	}
	var answer struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.AccessToken == "" {
		return fmt.Errorf("token: HTTP %d: %s", status, body)
	}
	f.auth = "Bearer " + answer.AccessToken
	return nil
}

func (f *floor) document(value []byte) error {
	var event arrival
	if err := json.Unmarshal(value, &event); err != nil {
		return err
	}
	if event.Attributes == nil {
		event.Attributes = map[string]string{}
	}
	request, err := json.Marshal(struct {
		QueryID *string `json:"query_id"`
	}{event.QueryID})
	if err != nil {
		return err
	}
	status, body, err := f.call("POST", f.base+"/v2/submission", http.Header{
		"Authorization": {f.auth},
		"Accept":        {"application/json"},
		"Content-Type":  {"application/json"},
	}, request)
	if err != nil {
		return err
	}
	var created struct {
		SubmissionID string `json:"submission_id"`
		UploadURL    string `json:"upload_url"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.SubmissionID == "" {
		return fmt.Errorf("create: HTTP %d", status)
	}
	id := created.SubmissionID
	// The connector's three state records, at the same points: CREATED before the upload (so that
	// a crash cannot create a second submission), UPLOADED after it, DONE after the results.
	state := func(status string) error {
		record, err := json.Marshal(struct {
			EventID      string `json:"event_id"`
			SubmissionID string `json:"submission_id"`
			Status       string `json:"status"`
		}{event.EventID, id, status})
		if err != nil {
			return err
		}
		return f.write(f.s.StateTopic, event.EventID, record)
	}
	if err := state("CREATED"); err != nil {
		return err
	}
	blob, err := url.Parse(event.Blob.URL)
	if err != nil {
		return err
	}
	file, err := os.ReadFile(blob.Path)
	if err != nil {
		return err
	}
	if status, _, err := f.call("PUT", created.UploadURL, http.Header{
		"Content-Type": {"application/octet-stream"},
	}, file); err != nil || status >= 300 {
		return fmt.Errorf("upload: HTTP %d: %v", status, err)
	}
	if err := state("UPLOADED"); err != nil {
		return err
	}
	// When results are usually ready, learned like the connector's readiness estimate (later after
	// an early GET, a little sooner after a timely one): nearly every result needs one GET.
	f.mu.Lock()
	wait := f.readyAfter
	f.mu.Unlock()
	time.Sleep(wait)
	doc := identity{submissionID: id, eventID: event.EventID, queryID: event.QueryID, attributes: event.Attributes}
	errs := make(chan error, len(resultKinds))
	for _, kind := range resultKinds {
		go func() { errs <- f.result(doc, kind) }()
	}
	var failed error
	for range resultKinds {
		failed = errors.Join(failed, <-errs)
	}
	if failed != nil {
		return failed
	}
	return state("DONE")
}

func (f *floor) result(doc identity, kind string) error {
	header := http.Header{"Authorization": {f.auth}, "Accept": {"application/json"}}
	target := f.base + "/v2/submission/" + doc.submissionID + "/" + kind
	for attempt := 0; ; attempt++ {
		status, body, err := f.call("GET", target, header, nil)
		if err != nil {
			return err
		}
		if status == 200 {
			if attempt == 0 {
				f.mu.Lock()
				f.readyAfter = max(time.Duration(f.s.LatencyMs)*time.Millisecond, f.readyAfter-2*time.Millisecond)
				f.mu.Unlock()
			}
			value, err := f.codecs[kind].encode(doc, body)
			if err != nil {
				return fmt.Errorf("%s: %w", kind, err)
			}
			return f.write(f.s.ResultTopics[kind], doc.submissionID, value)
		}
		notReady.Add(1)
		if attempt == 0 {
			f.mu.Lock()
			f.readyAfter = min(5*time.Second, f.readyAfter+25*time.Millisecond)
			f.mu.Unlock()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startProfile writes a pprof CPU profile of the measured documents (settings.cpuProfile); a
// profile that cannot be written is said on stderr and does not stop the run.
func startProfile(file string) *os.File {
	out, err := os.Create(file)
	if err == nil {
		if err = pprof.StartCPUProfile(out); err == nil {
			return out
		}
		_ = out.Close()
	}
	fmt.Fprintf(os.Stderr, "go-floor: cpu profile: %v\n", err)
	return nil
}

func run(s settings) error {
	base, err := url.Parse(s.BaseURL)
	if err != nil {
		return err
	}
	f := &floor{
		s:          s,
		base:       base.Scheme + "://" + base.Host,
		codecs:     map[string]*resultCodec{},
		readyAfter: time.Duration(s.LatencyMs+50) * time.Millisecond,
	}
	for _, kind := range resultKinds {
		ref, ok := s.ResultSchemas[kind]
		if !ok {
			return fmt.Errorf("settings: no resultSchemas.%s", kind)
		}
		if f.codecs[kind], err = loadCodec(kind, ref); err != nil {
			return err
		}
	}
	// The connector's pool (src/client/wire.ts): 256 keep-alive connections per origin.
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	f.http = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err == nil {
				sockets.Add(1)
			}
			return conn, err
		},
		MaxConnsPerHost:     256,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}}
	defer f.http.CloseIdleConnections()
	if err := f.token(); err != nil {
		return err
	}
	f.kafka, err = kgo.NewClient(
		kgo.SeedBrokers(s.Brokers...),
		kgo.ClientID("docstream-floor"),
		kgo.WithHooks(produceCounter{}),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ConsumerGroup(s.GroupID),
		kgo.ConsumeTopics(s.ArrivedTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.DisableAutoCommit(),
	)
	if err != nil {
		return err
	}
	defer f.kafka.Close()

	total := s.WarmupDocs + s.Docs
	var (
		mu        sync.Mutex
		clockOn   bool
		started   time.Time
		cpuStart  int64
		coldCPUUs *int64
		completed int
		atWarm    = map[string]int64{}
	)
	finished := make(chan struct{})
	var finishOnce sync.Once
	finish := func() { finishOnce.Do(func() { close(finished) }) }
	slots := make(chan struct{}, s.MaxInFlight)
	var profile *os.File

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	polled := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			fetches := f.kafka.PollFetches(ctx)
			if ctx.Err() != nil {
				break
			}
			var fetchErr error
			fetches.EachError(func(t string, p int32, err error) {
				fetchErr = errors.Join(fetchErr, fmt.Errorf("fetch %s[%d]: %w", t, p, err))
			})
			if fetchErr != nil {
				polled <- fetchErr
				return
			}
			for _, record := range fetches.Records() {
				mu.Lock()
				if !clockOn {
					clockOn, started, cpuStart = true, time.Now(), cpuUs()
					if completed >= s.WarmupDocs && s.CPUProfile != "" && profile == nil {
						profile = startProfile(s.CPUProfile)
					}
				}
				mu.Unlock()
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				go func(value []byte) {
					err := f.document(value)
					<-slots
					if err != nil {
						fmt.Fprintf(os.Stderr, "floor: %v\n", err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					completed++
					if s.WarmupDocs > 0 && completed == s.WarmupDocs {
						cold := cpuUs() - cpuStart
						coldCPUUs = &cold
						atWarm["http"], atWarm["notReady"], atWarm["kafka"] = httpCalls.Load(), notReady.Load(), kafkaRequests.Load()
						clockOn = false // the measured clock starts at the next record
						say(map[string]string{"type": "warm"})
					}
					if completed >= total {
						finish()
					}
				}(record.Value)
			}
			if err := f.kafka.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "go-floor: commit: %v\n", err)
			}
		}
		polled <- nil
	}()

	timer := time.NewTimer(max(time.Second, time.Until(time.UnixMilli(s.Deadline))))
	defer timer.Stop()
	select {
	case <-finished:
	case <-timer.C:
	case err := <-polled:
		if err != nil {
			return err
		}
	}
	cpu := cpuUs()
	mu.Lock()
	if profile != nil {
		pprof.StopCPUProfile()
		_ = profile.Close()
	}
	r := report{
		Type:          "floor",
		Completed:     completed - s.WarmupDocs,
		CPUUs:         cpu - cpuStart,
		ColdCPUUs:     coldCPUUs,
		DurationMs:    time.Since(started).Milliseconds(),
		HTTPCalls:     httpCalls.Load() - atWarm["http"],
		NotReady:      notReady.Load() - atWarm["notReady"],
		KafkaRequests: kafkaRequests.Load() - atWarm["kafka"],
		Sockets:       sockets.Load(),
	}
	mu.Unlock()
	say(r)
	if s.HoldAfterReport {
		_, _ = io.Copy(io.Discard, os.Stdin)
	}
	stop()
	return nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go-floor <settings.json>")
		os.Exit(2)
	}
	text, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-floor: %v\n", err)
		os.Exit(2)
	}
	var s settings
	if err := json.Unmarshal(text, &s); err != nil {
		fmt.Fprintf(os.Stderr, "go-floor: %s: %v\n", os.Args[1], err)
		os.Exit(2)
	}
	if err := run(s); err != nil {
		fmt.Fprintf(os.Stderr, "floor failed: %v\n", err)
		os.Exit(1)
	}
}
