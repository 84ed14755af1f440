/**
 * TypeScript shapes of the Avro records in `avro/*.avsc`, as avsc reads and writes them:
 * nullable fields are `T | null`, maps are records, longs and timestamp-millis are numbers.
 * Keep in step with the `.avsc` files (a unit test round-trips a sample of each through avsc).
 */

/** Fields every result event carries, so downstream systems can correlate without a lookup. */
export interface ResultEnvelope {
  submission_id: string;
  event_id: string;
  query_id: string | null;
  attributes: Record<string, string>;
  status: string;
  /** Milliseconds since the epoch. */
  produced_at: number;
  message: string | null;
  /** The tenant the document was analysed for; null (or absent) for the default credentials. */
  tenant?: string | null;
}

export type FileTypeSymbol = 'unsupported' | 'pdf' | 'image' | 'unknown';
export type DocumentTagSymbol =
  'IMAGE' | 'PDF' | 'DIGITAL' | 'SCAN' | 'MODEL_MATCHED' | 'TRUSTED' | 'UNKNOWN';
export type FraudScoreSymbol = 'NORMAL' | 'TRUSTED' | 'WARNING' | 'HIGH_RISK' | 'UNKNOWN';
export type QualityScoreSymbol = 'HIGH_QUALITY' | 'LOW_QUALITY' | 'NOT_RELEVANT_DOCUMENT' | 'UNKNOWN';

export interface SampleMetadataValue {
  producer: string | null;
  creator: string | null;
  creation_date: string | null;
  mod_date: string | null;
  author: string | null;
  title: string | null;
  keywords: string | null;
  subject: string | null;
}

export interface IndicatorValue {
  indicator_id: string;
  type: string;
  category: string;
  title: string;
  description: string;
  origin: string;
  metadata_json: string | null;
  indicator_attributes: {
    type: string;
    serial_fraud_cluster_id: string;
    cluster_submission_ids_sample: string[];
    cluster_query_ids_sample: string[];
    indicator_id: string;
  } | null;
}

interface AnalysisFields {
  analysis_time: string | null;
  file_type: FileTypeSymbol | null;
  mime_type: string | null;
  deployment_version: string | null;
  sha256: string | null;
  sample_metadata: SampleMetadataValue | null;
  indicators: IndicatorValue[] | null;
  /** The whole API response body as JSON. */
  response_json: string;
}

export interface FraudResultValue extends ResultEnvelope, AnalysisFields {
  filtered_parsed_pages: number[] | null;
  num_pages: number | null;
  document_tags: DocumentTagSymbol[] | null;
  score: FraudScoreSymbol | null;
  report_url: string | null;
}

export interface QualityResultValue extends ResultEnvelope, AnalysisFields {
  score: QualityScoreSymbol | null;
}

export interface ClassificationResultValue extends ResultEnvelope {
  document_type: string | null;
  confidence: number | null;
  analysis_time: string | null;
  deployment_version: string | null;
  sha256: string | null;
  response_json: string;
}

export interface DecisionResultValue extends ResultEnvelope {
  decision: string | null;
  adaptive_decision_version: string | null;
  reason: Record<string, { value: string; label: string }> | null;
  decision_inputs_json: string | null;
  source: 'poll' | 'webhook';
  response_json: string;
}

export const DEAD_LETTER_STAGES = [
  'decode',
  'validate',
  'blob',
  'create',
  'upload',
  'characteristics',
  'poll',
  'decision',
  'publish',
  'feedback',
  'delete',
] as const;
export type DeadLetterStage = (typeof DEAD_LETTER_STAGES)[number];

export interface DeadLetterValue {
  key: Buffer | null;
  value: Buffer | null;
  source_topic: string;
  source_partition: number;
  source_offset: number;
  event_id: string | null;
  submission_id: string | null;
  stage: DeadLetterStage;
  error_code: string;
  message: string;
  http_status: number | null;
  attempts: number;
  failed_at: number;
  attributes: Record<string, string>;
  /** The document's tenant when known; null (or absent) for the default credentials. */
  tenant?: string | null;
}

export interface FeedbackEventValue {
  submission_id: string;
  feedback: { outcome: string; comment: string | null; labels: string[] };
  event_id: string | null;
  attributes: Record<string, string>;
}
