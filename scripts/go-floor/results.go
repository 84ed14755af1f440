// The result records of the Go floor: an API result body (JSON) turned into the connector's Avro
// value (avro/FraudResult.avsc, QualityResult.avsc, ClassificationResult.avsc) and framed as the
// connector frames it (Confluent wire format: magic 0, schema id, Avro). The mapping follows
// src/connector/outputs/mapping.ts, so that the floor pays for the same decode and encode; what it
// leaves out is the connector's tolerance of badly typed bodies (a wrong type fails the document).
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/hamba/avro/v2"
)

// resultBody is every field of the three result bodies that the Avro values carry.
type resultBody struct {
	Status              *string         `json:"status"`
	Message             *string         `json:"message"`
	AnalysisTime        *string         `json:"analysis_time"`
	FileType            *string         `json:"file_type"`
	MimeType            *string         `json:"mime_type"`
	DeploymentVersion   *string         `json:"deployment_version"`
	Sha256              *string         `json:"sha256"`
	FilteredParsedPages []int32         `json:"filtered_parsed_pages"`
	NumPages            *int32          `json:"num_pages"`
	DocumentTags        []string        `json:"document_tags"`
	Score               *string         `json:"score"`
	SampleMetadata      *sampleMetadata `json:"sample_metadata"`
	Indicators          []indicatorBody `json:"indicators"`
	DocumentType        *string         `json:"document_type"`
	Confidence          *float64        `json:"confidence"`
}

type sampleMetadata struct {
	Producer     *string `json:"producer" avro:"producer"`
	Creator      *string `json:"creator" avro:"creator"`
	CreationDate *string `json:"creation_date" avro:"creation_date"`
	ModDate      *string `json:"mod_date" avro:"mod_date"`
	Author       *string `json:"author" avro:"author"`
	Title        *string `json:"title" avro:"title"`
	Keywords     *string `json:"keywords" avro:"keywords"`
	Subject      *string `json:"subject" avro:"subject"`
}

type indicatorBody struct {
	IndicatorID         string               `json:"indicator_id"`
	Type                string               `json:"type"`
	Category            string               `json:"category"`
	Title               string               `json:"title"`
	Description         string               `json:"description"`
	Origin              string               `json:"origin"`
	Metadata            json.RawMessage      `json:"metadata"`
	IndicatorAttributes *indicatorAttributes `json:"indicator_attributes"`
}

type indicatorAttributes struct {
	Type                       string   `json:"type" avro:"type"`
	SerialFraudClusterID       string   `json:"serial_fraud_cluster_id" avro:"serial_fraud_cluster_id"`
	ClusterSubmissionIdsSample []string `json:"cluster_submission_ids_sample" avro:"cluster_submission_ids_sample"`
	ClusterQueryIdsSample      []string `json:"cluster_query_ids_sample" avro:"cluster_query_ids_sample"`
	IndicatorID                string   `json:"indicator_id" avro:"indicator_id"`
}

type indicator struct {
	IndicatorID         string               `avro:"indicator_id"`
	Type                string               `avro:"type"`
	Category            string               `avro:"category"`
	Title               string               `avro:"title"`
	Description         string               `avro:"description"`
	Origin              string               `avro:"origin"`
	MetadataJSON        *string              `avro:"metadata_json"`
	IndicatorAttributes *indicatorAttributes `avro:"indicator_attributes"`
}

// Envelope is what every result value starts with (mapping.ts's envelope); hamba/avro reads the
// fields of embedded structs as the record's own.
type Envelope struct {
	SubmissionID string            `avro:"submission_id"`
	EventID      string            `avro:"event_id"`
	QueryID      *string           `avro:"query_id"`
	Attributes   map[string]string `avro:"attributes"`
	Status       string            `avro:"status"`
	ProducedAt   time.Time         `avro:"produced_at"`
	Message      *string           `avro:"message"`
	ResponseJSON string            `avro:"response_json"`
}

// Analysis is what the fraud and quality results share.
type Analysis struct {
	AnalysisTime      *string         `avro:"analysis_time"`
	FileType          *string         `avro:"file_type"`
	MimeType          *string         `avro:"mime_type"`
	DeploymentVersion *string         `avro:"deployment_version"`
	Sha256            *string         `avro:"sha256"`
	SampleMetadata    *sampleMetadata `avro:"sample_metadata"`
	Indicators        []indicator     `avro:"indicators"`
}

type fraudResult struct {
	Envelope
	Analysis
	FilteredParsedPages []int32  `avro:"filtered_parsed_pages"`
	NumPages            *int32   `avro:"num_pages"`
	DocumentTags        []string `avro:"document_tags"`
	Score               *string  `avro:"score"`
	ReportURL           *string  `avro:"report_url"`
}

type qualityResult struct {
	Envelope
	Analysis
	Score *string `avro:"score"`
}

type classificationResult struct {
	Envelope
	DocumentType      *string  `avro:"document_type"`
	Confidence        *float64 `avro:"confidence"`
	AnalysisTime      *string  `avro:"analysis_time"`
	DeploymentVersion *string  `avro:"deployment_version"`
	Sha256            *string  `avro:"sha256"`
}

var (
	fileTypes     = []string{"unsupported", "pdf", "image"}
	documentTags  = []string{"IMAGE", "PDF", "DIGITAL", "SCAN", "MODEL_MATCHED", "TRUSTED"}
	fraudScores   = []string{"NORMAL", "TRUSTED", "WARNING", "HIGH_RISK"}
	qualityScores = []string{"HIGH_QUALITY", "LOW_QUALITY", "NOT_RELEVANT_DOCUMENT"}
)

// symbol is the value when the schema knows it, else the schema's stand-in for an unknown one.
func symbol(v *string, known []string, unknown string) *string {
	if v == nil || slices.Contains(known, *v) {
		return v
	}
	return &unknown
}

func indicators(in []indicatorBody) []indicator {
	if in == nil {
		return nil
	}
	out := make([]indicator, len(in))
	for i, b := range in {
		out[i] = indicator{
			IndicatorID:         b.IndicatorID,
			Type:                b.Type,
			Category:            b.Category,
			Title:               b.Title,
			Description:         b.Description,
			Origin:              b.Origin,
			IndicatorAttributes: b.IndicatorAttributes,
		}
		if b.Metadata != nil {
			text := string(b.Metadata)
			out[i].MetadataJSON = &text
		}
	}
	return out
}

// identity is what a result record carries of its document.
type identity struct {
	submissionID string
	eventID      string
	queryID      *string
	attributes   map[string]string
}

// resultCodec encodes one kind of result against its registered schema.
type resultCodec struct {
	schema avro.Schema
	header [5]byte
	value  func(e Envelope, body *resultBody) any
}

func loadCodec(kind string, s schemaRef) (*resultCodec, error) {
	text, err := os.ReadFile(s.File)
	if err != nil {
		return nil, err
	}
	schema, err := avro.Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	c := &resultCodec{schema: schema}
	binary.BigEndian.PutUint32(c.header[1:], uint32(s.ID))
	switch kind {
	case "fraud":
		c.value = func(e Envelope, b *resultBody) any {
			tags := b.DocumentTags
			if tags != nil {
				tags = make([]string, len(b.DocumentTags))
				for i, t := range b.DocumentTags {
					tags[i] = *symbol(&t, documentTags, "UNKNOWN")
				}
			}
			return &fraudResult{
				Envelope: e, Analysis: analysis(b), FilteredParsedPages: b.FilteredParsedPages,
				NumPages: b.NumPages, DocumentTags: tags, Score: symbol(b.Score, fraudScores, "UNKNOWN"),
			}
		}
	case "quality":
		c.value = func(e Envelope, b *resultBody) any {
			return &qualityResult{Envelope: e, Analysis: analysis(b), Score: symbol(b.Score, qualityScores, "UNKNOWN")}
		}
	case "classification":
		c.value = func(e Envelope, b *resultBody) any {
			return &classificationResult{
				Envelope: e, DocumentType: b.DocumentType, Confidence: b.Confidence,
				AnalysisTime: b.AnalysisTime, DeploymentVersion: b.DeploymentVersion, Sha256: b.Sha256,
			}
		}
	default:
		return nil, fmt.Errorf("unknown result kind %q", kind)
	}
	return c, nil
}

func analysis(b *resultBody) Analysis {
	return Analysis{
		AnalysisTime: b.AnalysisTime, FileType: symbol(b.FileType, fileTypes, "unknown"),
		MimeType: b.MimeType, DeploymentVersion: b.DeploymentVersion, Sha256: b.Sha256,
		SampleMetadata: b.SampleMetadata, Indicators: indicators(b.Indicators),
	}
}

// encode turns a result body into the record value the connector would write for it.
func (c *resultCodec) encode(doc identity, raw []byte) ([]byte, error) {
	var body resultBody
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, err
	}
	status := "UNKNOWN"
	if body.Status != nil {
		status = *body.Status
	}
	envelope := Envelope{
		SubmissionID: doc.submissionID, EventID: doc.eventID, QueryID: doc.queryID,
		Attributes: doc.attributes, Status: status, ProducedAt: time.Now(), Message: body.Message,
		ResponseJSON: string(raw),
	}
	payload, err := avro.Marshal(c.schema, c.value(envelope, &body))
	if err != nil {
		return nil, err
	}
	return append(c.header[:], payload...), nil
}
