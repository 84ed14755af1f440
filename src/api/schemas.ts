/**
 * The Document Analysis API contract (summarised in docs/api.md), declared once.
 *
 * The client validates what it sends and what it receives with these schemas; the sandbox
 * validates requests and shapes its answers with the same ones. Request bodies are strict
 * (an unknown field is an error that names it); response bodies are loose (unknown fields are
 * kept, so a newer server never loses data on its way through the client).
 *
 * Where the spec says "not shown", the sandbox's choice is declared here and documented in
 * docs/sandbox.md, "Sandbox decisions"; such shapes are marked SANDBOX-DEFINED.
 */
import { z } from 'zod';

// ---------------------------------------------------------------------------------------------
// Enums and limits
// ---------------------------------------------------------------------------------------------

export const CELLS = ['eu-1', 'us-1', 'ca-1', 'ap-2', 'ap-3'] as const;
export const Cell = z.enum(CELLS);
export type Cell = z.infer<typeof Cell>;

export const PIPELINES = ['FRAUD_ONLY', 'CLASSIFICATION_ONLY', 'QUALITY_ONLY'] as const;
export const PipelineConfiguration = z.enum(PIPELINES);
export type PipelineConfiguration = z.infer<typeof PipelineConfiguration>;

export const LIMITS = {
  queryIdRequest: 1024,
  queryIdResult: 2048,
  submissionIdMin: 24,
  submissionIdMax: 36,
  sha256: 64,
  mimeType: 256,
  deploymentVersion: 256,
  documentString: 1024,
  ipAddress: 39,
  tenantName: 61,
} as const;

export const SCOPES = {
  read: 'submissions.read',
  write: 'submissions.write',
  tenantApplicationsRead: 'tenants.applications.read',
  /** SANDBOX-DEFINED: the spec does not show the scope for creating tenants. */
  tenantsWrite: 'tenants.write',
} as const;

export const RESULT_KINDS = ['fraud', 'quality', 'classification', 'content'] as const;
export type ResultKind = (typeof RESULT_KINDS)[number];

/** Which results each pipeline produces (the spec: FRAUD_ONLY also checks quality and classifies). */
export const PIPELINE_RESULTS: Record<PipelineConfiguration, readonly ResultKind[]> = {
  FRAUD_ONLY: ['fraud', 'quality', 'classification', 'content'],
  QUALITY_ONLY: ['quality'],
  CLASSIFICATION_ONLY: ['classification', 'content'],
};

// ---------------------------------------------------------------------------------------------
// Submission
// ---------------------------------------------------------------------------------------------

export const SubmissionRequest = z.strictObject({
  query_id: z.string().max(LIMITS.queryIdRequest).nullable().optional(),
  pipeline_configuration: PipelineConfiguration.optional(),
  enable_decision: z.boolean().optional(),
  enable_submission_characteristics: z.boolean().optional(),
});
export type SubmissionRequest = z.infer<typeof SubmissionRequest>;

export const SubmissionResponse = z.looseObject({
  upload_url: z.string().min(1),
  submission_id: z.string().min(LIMITS.submissionIdMin).max(LIMITS.submissionIdMax),
  submission_characteristics_upload_url: z.string().min(1).optional(),
});
export type SubmissionResponse = z.infer<typeof SubmissionResponse>;

// ---------------------------------------------------------------------------------------------
// Submission characteristics
// ---------------------------------------------------------------------------------------------

const DOCUMENT_TYPES = [
  'unknown',
  'id_card',
  'drivers_license',
  'birth_certificate',
  'health_insurance_card',
  'id_certificate',
  'passport',
  'residence_permit',
  'account_confirmation',
  'account_statement',
  'bank_details',
  'delivery_note',
  'company_detail',
  'earnings_confirmation',
  'employer_identification_number',
  'fees_statement',
  'government_registry_confirmation',
  'incorporation_certificate',
  'insurance_claim',
  'insurance_documentation',
  'invoice',
  'order',
  'order_confirmation',
  'payment',
  'payment_confirmation',
  'payslip',
  'proof_of_address',
  'receipt',
  'registration_certificate',
  'rental_agreement',
  'report',
  'residence_certificate',
  'tax_form',
  'tax_information',
  'ticket',
  'tracking_note',
  'transaction_detail',
  'transaction_history',
  'transport_order',
  'utility_bill',
  'vehicle_appraisal',
  'vehicle_registration_certificate',
] as const;
const DocumentType = z.enum(DOCUMENT_TYPES);

const docString = z.string().max(LIMITS.documentString).nullable().optional();
/** SANDBOX-DEFINED: constraints "not shown" in the spec are taken as nullable strings of at most 1024. */
const freeString = z.string().max(LIMITS.documentString).nullable().optional();
const isoDate = z.iso.date().nullable().optional();
const countryCode = z
  .string()
  .regex(/^[A-Z]{2,3}$/, 'must be an ISO 3166-1 alpha-2 or alpha-3 country code')
  .nullable()
  .optional();
const coordinate = z
  .string()
  .max(LIMITS.documentString)
  .regex(
    /^[+-]?\d{1,3}(\.\d+)?\s?[NSEWnsew]?$/,
    'must be decimal degrees, optionally with a hemisphere letter',
  )
  .nullable()
  .optional();
const Corner = z.strictObject({ x: z.number().int(), y: z.number().int() });

const DocumentCharacteristics = z.strictObject({
  document_type: DocumentType.nullable().optional(),
  document_type_string: docString,
  issuing_country_code: countryCode,
  document_id: docString,
  document_filename: docString,
  document_score: docString,
  status: docString,
  document_position_on_image: z
    .strictObject({ corner_1: Corner, corner_2: Corner, corner_3: Corner, corner_4: Corner })
    .nullable()
    .optional(),
  source_channel: z.enum(['api', 'web', 'mobile']).nullable().optional(),
  document_side: z.enum(['front', 'back']).nullable().optional(),
});

const DeviceCharacteristics = z.strictObject({
  device_ip_address: z.string().max(LIMITS.ipAddress).nullable().optional(),
  server_ip_address: z.string().max(LIMITS.ipAddress).nullable().optional(),
  country_code: docString,
  country_name: docString,
  city: docString,
  postal_code: docString,
  gcs_latitude: coordinate,
  gcs_longitude: coordinate,
  isp: freeString,
  referer: freeString,
  user_agent: freeString,
  browser_description: freeString,
  device_platform: freeString,
  device_language: freeString,
  device_fingerprint: freeString,
  screen_height: z.number().int().nullable().optional(),
  screen_width: z.number().int().nullable().optional(),
});

const IdentityCharacteristics = z.strictObject({
  first_name: freeString,
  last_name: freeString,
  email: freeString,
  user_id: freeString,
  user_group_id: freeString,
  phone_number: freeString,
  date_of_birth: isoDate,
  street_name: freeString,
  street_number: freeString,
  unit_or_apartment: freeString,
  city: freeString,
  postal_code: freeString,
  state_or_province_name: freeString,
  country_name: freeString,
  country_code: freeString,
  full_address: freeString,
});

const TransactionCharacteristics = z.strictObject({
  amount_usd: z.number().nullable().optional(),
  maturity_days: z.number().int().nullable().optional(),
});

const stringArray = z.array(z.string().max(LIMITS.documentString)).nullable().optional();
const EmailCharacteristics = z.strictObject({
  originator_address_hashes: stringArray,
  originator_domain_hashes: stringArray,
  subject_hash: freeString,
  number_of_recipients: z.number().int().nullable().optional(),
  recipient_hashes: stringArray,
  body_embedding: z.string().nullable().optional(),
  subject_embedding: z.string().nullable().optional(),
});

const ClaimsCharacteristics = z.strictObject({
  claim_number: freeString,
  policy_number: freeString,
  insurance_type: freeString,
  incident_date: isoDate,
  reported_date: isoDate,
  incident_description: z.string().nullable().optional(),
  incident_location: freeString,
  claim_value: z.number().nullable().optional(),
  payee_email: freeString,
  payee_first_name: freeString,
  payee_last_name: freeString,
  payee_account_number: freeString,
  payee_company_name: freeString,
  payee_company_registration_number: freeString,
});

export const SubmissionCharacteristics = z.strictObject({
  document_characteristics: DocumentCharacteristics.nullable().optional(),
  device_characteristics: DeviceCharacteristics.nullable().optional(),
  identity_characteristics: IdentityCharacteristics.optional(),
  transaction_characteristics: TransactionCharacteristics.optional(),
  email_characteristics: EmailCharacteristics.optional(),
  claims_characteristics: ClaimsCharacteristics.optional(),
  submission_time: z.iso.datetime({ offset: true }).nullable().optional(),
  customer_tenant_id: freeString,
  customer_case_id: freeString,
});
export type SubmissionCharacteristics = z.infer<typeof SubmissionCharacteristics>;

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

const FILE_TYPES = ['unsupported', 'pdf', 'image'] as const;
const FileType = z.enum(FILE_TYPES);
const DOCUMENT_TAGS = ['IMAGE', 'PDF', 'DIGITAL', 'SCAN', 'MODEL_MATCHED', 'TRUSTED'] as const;
export const FRAUD_SCORES = ['NORMAL', 'TRUSTED', 'WARNING', 'HIGH_RISK'] as const;
const QUALITY_SCORES = ['HIGH_QUALITY', 'LOW_QUALITY', 'NOT_RELEVANT_DOCUMENT'] as const;

/**
 * SANDBOX-DEFINED: the status values of the non-success variants ("pipeline failed",
 * "unprocessable input entity", "pipeline skipped"). Their other fields are not shown either;
 * the sandbox sends `message` and the common fields it knows. Clients must treat any status
 * other than SUCCESS as final and keep the body.
 */
export const RESULT_STATUSES = {
  success: 'SUCCESS',
  failed: 'PIPELINE_FAILED',
  unprocessable: 'UNPROCESSABLE_INPUT_ENTITY',
  skipped: 'PIPELINE_SKIPPED',
} as const;

const SampleMetadata = z.looseObject({
  producer: z.string().nullable().optional(),
  creator: z.string().nullable().optional(),
  creation_date: z.string().nullable().optional(),
  mod_date: z.string().nullable().optional(),
  author: z.string().nullable().optional(),
  title: z.string().nullable().optional(),
  keywords: z.string().nullable().optional(),
  subject: z.string().nullable().optional(),
});

const IndicatorMetadata = z.looseObject({
  type: z.string(),
  column_names: z.array(z.string()),
  data: z.array(z.array(z.string())),
  title: z.string().optional(),
});

const SerialFraudIndicatorAttributes = z.looseObject({
  type: z.literal('SerialFraudIndicatorAttributes'),
  serial_fraud_cluster_id: z.string(),
  cluster_submission_ids_sample: z.array(z.string()),
  cluster_query_ids_sample: z.array(z.string()),
  indicator_id: z.string(),
});

const Indicator = z.looseObject({
  indicator_id: z.string(),
  type: z.string(),
  category: z.string(),
  title: z.string(),
  description: z.string(),
  origin: z.string(),
  metadata: IndicatorMetadata.optional(),
  indicator_attributes: SerialFraudIndicatorAttributes.optional(),
});

const analysisCommon = {
  analysis_time: z.string(),
  file_type: FileType,
  mime_type: z.string().max(LIMITS.mimeType),
  deployment_version: z.string().max(LIMITS.deploymentVersion),
  query_id: z.string().max(LIMITS.queryIdResult).nullable(),
  sha256: z.string().length(LIMITS.sha256),
  sample_metadata: SampleMetadata,
  indicators: z.array(Indicator),
};

export const FraudSuccess = z.looseObject({
  status: z.literal(RESULT_STATUSES.success),
  ...analysisCommon,
  filtered_parsed_pages: z.array(z.number().int()),
  num_pages: z.number().int(),
  document_tags: z.array(z.enum(DOCUMENT_TAGS)),
  score: z.enum(FRAUD_SCORES),
});
export type FraudSuccess = z.infer<typeof FraudSuccess>;

export const QualitySuccess = z.looseObject({
  status: z.literal(RESULT_STATUSES.success),
  ...analysisCommon,
  score: z.enum(QUALITY_SCORES),
});
export type QualitySuccess = z.infer<typeof QualitySuccess>;

/** Any non-success variant: a status and whatever else the server sent (kept). */
export const ResultOther = z.looseObject({
  status: z.string().refine((s) => s !== RESULT_STATUSES.success, 'a SUCCESS body must match its variant'),
  message: z.string().optional(),
  query_id: z.string().nullable().optional(),
});
export type ResultOther = z.infer<typeof ResultOther>;

export const FraudResult = z.union([FraudSuccess, ResultOther]);
export type FraudResult = z.infer<typeof FraudResult>;
export const QualityResult = z.union([QualitySuccess, ResultOther]);
export type QualityResult = z.infer<typeof QualityResult>;

/** SANDBOX-DEFINED: the spec does not show ClassificationResponse. */
export const ClassificationSuccess = z.looseObject({
  status: z.literal(RESULT_STATUSES.success),
  analysis_time: z.string(),
  deployment_version: z.string().max(LIMITS.deploymentVersion),
  query_id: z.string().max(LIMITS.queryIdResult).nullable(),
  sha256: z.string().length(LIMITS.sha256),
  file_type: FileType,
  document_type: DocumentType,
  confidence: z.number().min(0).max(1),
  pages: z.array(z.looseObject({ page: z.number().int(), document_type: DocumentType })),
});
export const ClassificationResult = z.union([ClassificationSuccess, ResultOther]);
export type ClassificationResult = z.infer<typeof ClassificationResult>;

/** SANDBOX-DEFINED: the spec does not show ContentResponse (content extraction is "limited"). */
export const ContentSuccess = z.looseObject({
  status: z.literal(RESULT_STATUSES.success),
  analysis_time: z.string(),
  deployment_version: z.string().max(LIMITS.deploymentVersion),
  query_id: z.string().max(LIMITS.queryIdResult).nullable(),
  sha256: z.string().length(LIMITS.sha256),
  pages: z.array(z.looseObject({ page: z.number().int(), text: z.string() })),
});
export const ContentResult = z.union([ContentSuccess, ResultOther]);
export type ContentResult = z.infer<typeof ContentResult>;

export const DecisionSuccess = z.looseObject({
  status: z.literal(RESULT_STATUSES.success),
  adaptive_decision_version: z.string(),
  decision: z.string(),
  decision_inputs: z.record(z.string(), z.looseObject({ url: z.string(), data: z.unknown().nullable() })),
  reason: z.record(z.string(), z.looseObject({ value: z.string(), label: z.string() })),
});
export const DecisionResult = z.union([DecisionSuccess, ResultOther]);
export type DecisionResult = z.infer<typeof DecisionResult>;

/** SANDBOX-DEFINED: the report response's field names are not shown. */
export const ReportResponse = z.looseObject({
  report_url: z.string(),
  expires_at: z.string().optional(),
});
export type ReportResponse = z.infer<typeof ReportResponse>;

// ---------------------------------------------------------------------------------------------
// Feedback (SANDBOX-DEFINED: request and response fields are not shown)
// ---------------------------------------------------------------------------------------------

export const FEEDBACK_OUTCOMES = ['FRAUD', 'NOT_FRAUD', 'UNSURE'] as const;
export const FeedbackRequest = z.strictObject({
  outcome: z.enum(FEEDBACK_OUTCOMES),
  comment: z.string().max(LIMITS.documentString).nullable().optional(),
  labels: z.array(z.string().max(256)).max(32).optional(),
});
export type FeedbackRequest = z.infer<typeof FeedbackRequest>;
export const FeedbackResponse = z.looseObject({
  submission_id: z.string(),
  outcome: z.enum(FEEDBACK_OUTCOMES),
  comment: z.string().nullable().optional(),
  labels: z.array(z.string()).optional(),
  updated: z.string(),
});
export type FeedbackResponse = z.infer<typeof FeedbackResponse>;

// ---------------------------------------------------------------------------------------------
// Tenants
// ---------------------------------------------------------------------------------------------

const TenantName = z
  .string()
  .regex(/^[a-z0-9]{1,61}$/, 'must be 1..61 characters of lowercase a-z and digits 0-9');

export const CreateTenantRequest = z.strictObject({
  name: TenantName,
  cells: z.array(Cell).length(1, 'must hold exactly 1 cell'),
});
export type CreateTenantRequest = z.infer<typeof CreateTenantRequest>;

export const Tenant = z.looseObject({
  id: z.string(),
  name: z.string(),
  created: z.string(),
  updated: z.string(),
  cells: z.array(Cell),
  _links: z.looseObject({
    'documents-ui': z.array(z.looseObject({ href: z.string(), rel: z.string() })),
  }),
});
export type Tenant = z.infer<typeof Tenant>;

export const Application = z.looseObject({
  id: z.string(),
  client_id: z.string(),
  auth_server: z.string(),
  cell: Cell,
  scopes: z.array(z.string()),
  credentials: z.looseObject({ type: z.string(), alg: z.string(), kid: z.string() }),
  _links: z.looseObject({ token_url: z.string() }),
});
export type Application = z.infer<typeof Application>;

export const ApplicationList = z.looseObject({ items: z.array(Application) });
export type ApplicationList = z.infer<typeof ApplicationList>;

// ---------------------------------------------------------------------------------------------
// Errors, tokens, webhooks
// ---------------------------------------------------------------------------------------------

export const ErrorBody = z.looseObject({ message: z.string() });
export type ErrorBody = z.infer<typeof ErrorBody>;

export const TokenResponse = z.looseObject({
  access_token: z.string().min(1),
  token_type: z.string(),
  expires_in: z.number().int().positive(),
  scope: z.string().optional(),
});
export type TokenResponse = z.infer<typeof TokenResponse>;

export const WEBHOOK_EVENT_DECISION_FINISHED = 'documents.adaptive_decision.finished';
export const WebhookEvent = z.looseObject({
  type: z.string(),
  version: z.number().int(),
  tenant_id: z.string(),
  payload: z.looseObject({
    id: z.string(),
    status: z.string(),
    analysis_time: z.string(),
    query_id: z.string().nullable(),
    result_url: z.string(),
  }),
});
export type WebhookEvent = z.infer<typeof WebhookEvent>;

/** Paths of the submission API, shared by the client and the sandbox's router. */
export const PATHS = {
  token: '/oauth2/token',
  submission: '/v2/submission',
  submissionById: (id: string) => `/v2/submission/${encodeURIComponent(id)}`,
  characteristics: (id: string) => `/v2/submission/${encodeURIComponent(id)}/characteristics`,
  result: (id: string, kind: ResultKind | 'decision' | 'report' | 'feedback') =>
    `/v2/submission/${encodeURIComponent(id)}/${kind}`,
  tenants: '/v0/tenants',
  applications: (tenantId: string) => `/v0/tenants/${encodeURIComponent(tenantId)}/applications`,
} as const;

/** Formats a zod error as one line naming each failing field, for 400 messages and CLI errors. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.length > 0 ? issue.path.join('.') : '(body)';
      if (issue.code === 'unrecognized_keys') {
        const keys = issue.keys.map((k) => (issue.path.length ? `${path}.${k}` : k));
        return `unknown field${keys.length > 1 ? 's' : ''} ${keys.join(', ')}`;
      }
      return `${path}: ${issue.message}`;
    })
    .join('; ');
}
