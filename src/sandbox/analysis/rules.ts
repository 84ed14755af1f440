/**
 * The sandbox's simulated analyses: small, documented, deterministic rules over the file's facts
 * (see docs/sandbox.md, "Analysis rules"). The same file always gives the same result, apart
 * from the serial-fraud indicator, which depends on what was submitted before.
 */
import { RESULT_STATUSES, type PipelineConfiguration, type ResultKind } from '../../api/schemas.js';
import type { FileFacts } from './inspect.js';

const DEPLOYMENT_VERSION = 'docstream-sandbox-1.0.0';

const EDITING_TOOLS =
  /photoshop|gimp|canva|ilovepdf|smallpdf|pdfescape|sejda|inkscape|pixelmator|paint\.net|pdf-?xchange editor/i;
const SCANNER_PRODUCERS = /scan|epson|canon|xerox|ricoh|kyocera|brother|naps2/i;
const TRUSTED_GENERATORS = /docstream-trusted/i;
const DATE_GAP_DAYS = 30;
const LOW_QUALITY_MIN_BYTES = 10 * 1024;
const LOW_QUALITY_MIN_SIDE_PX = 300;

type Json = Record<string, unknown>;

export interface SerialCluster {
  clusterId: string;
  submissionIds: string[];
  queryIds: string[];
}

export interface AnalysisContext {
  submissionId: string;
  queryId: string | null;
  analysisTime: string;
  serial: SerialCluster | null;
}

const CLASS_KEYWORDS: Array<[RegExp, string]> = [
  [/invoice|rechnung|facture/i, 'invoice'],
  [/pay ?slip|salary|payroll/i, 'payslip'],
  [/(bank|account) statement|kontoauszug/i, 'account_statement'],
  [/receipt/i, 'receipt'],
  [/utility|electricity|water bill|gas bill/i, 'utility_bill'],
  [/passport/i, 'passport'],
  [/rental|lease|tenancy/i, 'rental_agreement'],
  [/tax/i, 'tax_form'],
  [/insurance claim/i, 'insurance_claim'],
  [/proof of address/i, 'proof_of_address'],
];

function common(facts: FileFacts, ctx: AnalysisContext): Json {
  return {
    analysis_time: ctx.analysisTime,
    deployment_version: DEPLOYMENT_VERSION,
    query_id: ctx.queryId,
    sha256: facts.sha256,
  };
}

function dataOnly(title: string | null, rows: Array<[string, string]>): Json {
  const metadata: Json = {
    type: 'DataOnly',
    column_names: ['field', 'value'],
    data: rows.map((r) => [...r]),
  };
  if (title !== null) metadata.title = title;
  return metadata;
}

function unprocessable(facts: FileFacts, ctx: AnalysisContext, kind: string): Json {
  return {
    status: RESULT_STATUSES.unprocessable,
    message: `${kind}: file type ${facts.mimeType} is not supported; upload a PDF, PNG, JPEG, TIFF or WebP file`,
    ...common(facts, ctx),
    file_type: 'unsupported',
    mime_type: facts.mimeType,
  };
}

function parseFailure(facts: FileFacts): string {
  return facts.parseFailure ?? 'the PDF structure could not be parsed';
}

export function failedResult(facts: FileFacts, ctx: AnalysisContext, kind: string, reason: string): Json {
  return { status: RESULT_STATUSES.failed, message: `${kind}: ${reason}`, ...common(facts, ctx) };
}

export function skippedResult(
  kind: ResultKind,
  pipeline: PipelineConfiguration,
  queryId: string | null,
): Json {
  return {
    status: RESULT_STATUSES.skipped,
    message: `${kind}: pipeline ${pipeline} does not produce this result`,
    query_id: queryId,
  };
}

function sampleMetadata(facts: FileFacts): Json {
  return { ...facts.metadata };
}

function classify(facts: FileFacts): { type: string; matched: boolean } {
  const haystack = [facts.metadata.title, facts.metadata.subject, facts.metadata.keywords, facts.pageText[0]]
    .filter(Boolean)
    .join(' ');
  for (const [re, type] of CLASS_KEYWORDS) if (re.test(haystack)) return { type, matched: true };
  return { type: 'unknown', matched: false };
}

function isScan(facts: FileFacts): boolean {
  return SCANNER_PRODUCERS.test(`${facts.metadata.producer ?? ''} ${facts.metadata.creator ?? ''}`);
}

const SEVERITY = { TRUSTED: 0, NORMAL: 1, WARNING: 2, HIGH_RISK: 3 } as const;

function fraudResult(facts: FileFacts, ctx: AnalysisContext): Json {
  if (facts.fileType === 'unsupported') return unprocessable(facts, ctx, 'fraud');
  if (facts.parseFailed) return failedResult(facts, ctx, 'fraud', parseFailure(facts));
  const indicators: Json[] = [];
  let score: keyof typeof SEVERITY = 'NORMAL';
  const raise = (to: keyof typeof SEVERITY) => {
    if (SEVERITY[to] > SEVERITY[score]) score = to;
  };
  const tool = `${facts.metadata.producer ?? ''} ${facts.metadata.creator ?? ''}`.match(EDITING_TOOLS)?.[0];
  if (tool) {
    raise('HIGH_RISK');
    indicators.push({
      indicator_id: 'editing_tool',
      type: 'RISK',
      category: 'modification',
      title: 'Edited with an image or PDF editing tool',
      description: `The file was produced or last saved by ${tool}, a tool commonly used to alter documents.`,
      origin: 'fraud',
      metadata: dataOnly('Producer and creator', [
        ['producer', facts.metadata.producer ?? ''],
        ['creator', facts.metadata.creator ?? ''],
      ]),
    });
  }
  if (facts.fileType === 'pdf' && facts.eofCount > 1) {
    raise('WARNING');
    indicators.push({
      indicator_id: 'incremental_update',
      type: 'RISK',
      category: 'modification',
      title: 'Modified after creation',
      description: `The PDF was saved ${facts.eofCount - 1} more time(s) after it was first written (incremental updates).`,
      origin: 'fraud',
      metadata: dataOnly('Revisions', [['revisions', String(facts.eofCount)]]),
    });
  }
  if (facts.creationDate && facts.modDate) {
    const days = Math.abs(facts.modDate.getTime() - facts.creationDate.getTime()) / 86_400_000;
    if (days > DATE_GAP_DAYS) {
      raise('WARNING');
      indicators.push({
        indicator_id: 'date_mismatch',
        type: 'RISK',
        category: 'metadata',
        title: 'Modified long after creation',
        description: `The modification date is ${Math.round(days)} days after the creation date.`,
        origin: 'fraud',
        metadata: dataOnly('Dates', [
          ['creation_date', facts.creationDate.toISOString()],
          ['mod_date', facts.modDate.toISOString()],
        ]),
      });
    }
  }
  if (ctx.serial) {
    raise('WARNING');
    indicators.push({
      indicator_id: 'serial_fraud',
      type: 'RISK',
      category: 'serial_fraud',
      title: 'Same document submitted before',
      description: `This exact file was submitted ${ctx.serial.submissionIds.length} time(s) before.`,
      origin: 'fraud',
      metadata: dataOnly(
        'Earlier submissions',
        ctx.serial.submissionIds.map((id) => ['submission_id', id]),
      ),
      indicator_attributes: {
        type: 'SerialFraudIndicatorAttributes',
        serial_fraud_cluster_id: ctx.serial.clusterId,
        cluster_submission_ids_sample: ctx.serial.submissionIds,
        cluster_query_ids_sample: ctx.serial.queryIds,
        indicator_id: 'serial_fraud',
      },
    });
  }
  const tags: string[] = facts.fileType === 'pdf' ? ['PDF', isScan(facts) ? 'SCAN' : 'DIGITAL'] : ['IMAGE'];
  if (classify(facts).matched) tags.push('MODEL_MATCHED');
  if (score === 'NORMAL' && TRUSTED_GENERATORS.test(facts.metadata.producer ?? '')) {
    score = 'TRUSTED';
    tags.push('TRUSTED');
    indicators.push({
      indicator_id: 'trusted_generator',
      type: 'TRUST',
      category: 'trust',
      title: 'Produced by a trusted generator',
      description: `The producer ${facts.metadata.producer ?? ''} is a known trusted document generator.`,
      origin: 'fraud',
      metadata: dataOnly('Producer', [['producer', facts.metadata.producer ?? '']]),
    });
  }
  return {
    status: RESULT_STATUSES.success,
    ...common(facts, ctx),
    file_type: facts.fileType,
    mime_type: facts.mimeType,
    filtered_parsed_pages: [],
    num_pages: facts.numPages,
    document_tags: tags,
    score,
    sample_metadata: sampleMetadata(facts),
    indicators,
  };
}

function qualityResult(facts: FileFacts, ctx: AnalysisContext): Json {
  if (facts.fileType === 'unsupported') return unprocessable(facts, ctx, 'quality');
  if (facts.parseFailed) return failedResult(facts, ctx, 'quality', parseFailure(facts));
  const indicators: Json[] = [];
  let score = 'HIGH_QUALITY';
  if (facts.fileType === 'pdf' && facts.numPages === 0) score = 'NOT_RELEVANT_DOCUMENT';
  if (facts.fileType === 'image') {
    const small = facts.size < LOW_QUALITY_MIN_BYTES;
    const side = facts.image ? Math.min(facts.image.width, facts.image.height) : null;
    const lowRes = side !== null && side < LOW_QUALITY_MIN_SIDE_PX;
    if (small || lowRes) {
      score = 'LOW_QUALITY';
      indicators.push({
        indicator_id: 'low_resolution',
        type: 'RISK',
        category: 'quality',
        title: 'Low resolution image',
        description: lowRes
          ? `The image is ${facts.image?.width}x${facts.image?.height} pixels; at least ${LOW_QUALITY_MIN_SIDE_PX} on each side is needed.`
          : `The image has only ${facts.size} bytes; at least ${LOW_QUALITY_MIN_BYTES} are needed.`,
        origin: 'quality',
        metadata: dataOnly(null, [
          ['bytes', String(facts.size)],
          ['width', String(facts.image?.width ?? '')],
          ['height', String(facts.image?.height ?? '')],
        ]),
      });
    }
  }
  return {
    status: RESULT_STATUSES.success,
    ...common(facts, ctx),
    file_type: facts.fileType,
    mime_type: facts.mimeType,
    score,
    sample_metadata: sampleMetadata(facts),
    indicators,
  };
}

function classificationResult(facts: FileFacts, ctx: AnalysisContext): Json {
  if (facts.fileType === 'unsupported') return unprocessable(facts, ctx, 'classification');
  if (facts.parseFailed) return failedResult(facts, ctx, 'classification', parseFailure(facts));
  const { type, matched } = classify(facts);
  const pages = Array.from({ length: Math.min(facts.numPages, 50) }, (_v, i) => ({
    page: i + 1,
    document_type: type,
  }));
  return {
    status: RESULT_STATUSES.success,
    ...common(facts, ctx),
    file_type: facts.fileType,
    document_type: type,
    confidence: matched ? 0.9 : 0.2,
    pages,
  };
}

function contentResult(facts: FileFacts, ctx: AnalysisContext): Json {
  if (facts.fileType === 'unsupported') return unprocessable(facts, ctx, 'content');
  if (facts.parseFailed) return failedResult(facts, ctx, 'content', parseFailure(facts));
  const pages =
    facts.fileType === 'image'
      ? [{ page: 1, text: '' }]
      : facts.pageText.map((text, i) => ({ page: i + 1, text }));
  return { status: RESULT_STATUSES.success, ...common(facts, ctx), pages };
}

export const ANALYSES: Record<ResultKind, (facts: FileFacts, ctx: AnalysisContext) => Json> = {
  fraud: fraudResult,
  quality: qualityResult,
  classification: classificationResult,
  content: contentResult,
};

/** Removes indicator metadata, as the API does when with_metadata is false or omitted. */
export function withoutIndicatorMetadata(result: Json): Json {
  if (!Array.isArray(result.indicators)) return result;
  return {
    ...result,
    indicators: (result.indicators as Json[]).map((indicator) => {
      const { metadata: _metadata, ...rest } = indicator;
      return rest;
    }),
  };
}
