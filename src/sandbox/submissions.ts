/**
 * Submissions and their lifecycle. Results are not pushed by timers: each result records the
 * instant it becomes ready (drawn from the processing distribution when analysis starts) and
 * readers compare with the clock. Only webhook deliveries need the scheduler.
 */
import { randomUUID } from 'node:crypto';
import {
  PIPELINE_RESULTS,
  RESULT_KINDS,
  RESULT_STATUSES,
  type FeedbackResponse,
  type PipelineConfiguration,
  type ResultKind,
} from '../api/schemas.js';
import type { SandboxConfig } from './config.js';
import type { FileFacts } from './analysis/inspect.js';
import {
  ANALYSES,
  failedResult,
  skippedResult,
  type AnalysisContext,
  type SerialCluster,
} from './analysis/rules.js';
import { chance, drawDuration, type Random } from './random.js';
import { SerialIndex } from './serial-index.js';
import type { StoredUpload } from './upload-store.js';

export type Json = Record<string, unknown>;
type SubmissionState =
  'awaiting_upload' | 'uploading' | 'awaiting_characteristics' | 'processing' | 'finished';

export const ADAPTIVE_DECISION_VERSION = 'sandbox-rules-1';
/** Serial-fraud samples keep at most this many earlier submissions. */
const SERIAL_SAMPLE = 10;
const MIB = 1024 * 1024;

export interface ReadyResult {
  readyAt: number;
  body: Json;
}

export interface DecisionOutcome {
  readyAt: number;
  status: string;
  decision: string | null;
  reason: Record<string, { value: string; label: string }>;
  message: string | null;
}

export interface Submission {
  id: string;
  clientId: string;
  /** The tenant whose application created it; null for the sandbox's own clients. Only it sees it. */
  tenantId: string | null;
  /** The cell it was created in; only that cell's listener serves it. */
  cell: string;
  queryId: string | null;
  pipeline: PipelineConfiguration;
  enableDecision: boolean;
  enableCharacteristics: boolean;
  created: number;
  upload: 'none' | 'uploading' | 'done';
  /** The uploaded bytes, in memory or in a file. */
  file: StoredUpload | null;
  characteristicsReceived: boolean;
  /** Set while the uploaded file is being inspected, or once it was. */
  facts: Promise<FileFacts> | null;
  sha256: string | null;
  analysisStarted: boolean;
  /** The instant every result (and the decision) is ready; null before analysis is scheduled. */
  finishedAt: number | null;
  results: Partial<Record<ResultKind, ReadyResult>>;
  decision: DecisionOutcome | null;
  feedback: FeedbackResponse | null;
}

interface LifecycleHooks {
  decisionReady(submission: Submission, at: number): void;
}

export class SubmissionStore {
  private readonly byId = new Map<string, Submission>();
  private readonly bySha = new SerialIndex();

  constructor(
    private readonly getConfig: () => SandboxConfig,
    private readonly random: () => Random,
    private readonly hooks: LifecycleHooks,
  ) {}

  get size(): number {
    return this.byId.size;
  }

  create(
    clientId: string,
    input: {
      queryId: string | null;
      pipeline: PipelineConfiguration;
      enableDecision: boolean;
      enableCharacteristics: boolean;
    },
    owner: { tenantId: string | null; cell: string } = { tenantId: null, cell: 'testing' },
  ): Submission {
    const submission: Submission = {
      id: randomUUID(),
      clientId,
      tenantId: owner.tenantId,
      cell: owner.cell,
      ...input,
      created: Date.now(),
      upload: 'none',
      file: null,
      characteristicsReceived: false,
      facts: null,
      sha256: null,
      analysisStarted: false,
      finishedAt: null,
      results: {},
      decision: null,
      feedback: null,
    };
    this.byId.set(submission.id, submission);
    this.evict();
    return submission;
  }

  get(id: string): Submission | undefined {
    return this.byId.get(id);
  }

  all(): IterableIterator<Submission> {
    return this.byId.values();
  }

  state(s: Submission, now = Date.now()): SubmissionState {
    if (s.upload === 'none') return 'awaiting_upload';
    if (s.upload === 'uploading') return 'uploading';
    if (s.enableCharacteristics && !s.characteristicsReceived) return 'awaiting_characteristics';
    if (s.finishedAt === null || now < s.finishedAt) return 'processing';
    return 'finished';
  }

  /** Called once the file is stored; analysis starts now or when characteristics arrive. */
  uploaded(s: Submission, file: StoredUpload, facts: Promise<FileFacts>): void {
    s.upload = 'done';
    s.file = file;
    s.facts = facts;
    s.sha256 = file.sha256;
    this.maybeStart(s);
  }

  characteristicsReceived(s: Submission): void {
    s.characteristicsReceived = true;
    this.maybeStart(s);
  }

  delete(s: Submission): void {
    this.byId.delete(s.id);
    if (s.sha256) this.bySha.delete(s.sha256, s.id);
    s.file?.discard();
  }

  private maybeStart(s: Submission): void {
    if (s.analysisStarted || s.upload !== 'done' || !s.facts) return;
    if (s.enableCharacteristics && !s.characteristicsReceived) return;
    s.analysisStarted = true;
    const facts = s.facts;
    facts.then(
      (f) => this.schedule(s, f),
      () => undefined,
    );
  }

  private serialCluster(s: Submission, sha256: string): SerialCluster | null {
    const sample = this.bySha
      .takeSampleAndAdd(sha256, s.id, SERIAL_SAMPLE)
      .map((id) => this.byId.get(id))
      .filter((x): x is Submission => x !== undefined);
    if (sample.length === 0) return null;
    return {
      clusterId: `sfc_${sha256.slice(0, 24)}`,
      submissionIds: sample.map((x) => x.id),
      queryIds: sample.map((x) => x.queryId).filter((q): q is string => q !== null),
    };
  }

  private schedule(s: Submission, facts: FileFacts): void {
    if (this.byId.get(s.id) !== s) return;
    const config = this.getConfig();
    const random = this.random();
    const now = Date.now();
    const produced = PIPELINE_RESULTS[s.pipeline];
    const processing = config.processing.byPipeline?.[s.pipeline] ?? config.processing;
    const bySize = Math.round(((config.processing.msPerMiB ?? 0) * facts.size) / MIB);
    const serial = this.serialCluster(s, facts.sha256);
    let finishedAt = now;
    for (const kind of RESULT_KINDS) {
      if (!produced.includes(kind)) {
        s.results[kind] = { readyAt: now, body: skippedResult(kind, s.pipeline, s.queryId) };
        continue;
      }
      const readyAt = now + drawDuration(random, processing) + bySize;
      const ctx: AnalysisContext = {
        submissionId: s.id,
        queryId: s.queryId,
        analysisTime: new Date(readyAt).toISOString(),
        serial,
      };
      const body = chance(random, config.faults.pipelineFailRate)
        ? failedResult(facts, ctx, kind, 'simulated pipeline failure (faults.pipelineFailRate)')
        : ANALYSES[kind](facts, ctx);
      s.results[kind] = { readyAt, body };
      finishedAt = Math.max(finishedAt, readyAt);
    }
    if (s.enableDecision) {
      const fraud = s.results.fraud as ReadyResult;
      // The decision follows the fraud result "a little" later: a quarter of another draw.
      const readyAt = fraud.readyAt + Math.max(1, Math.round(drawDuration(random, processing) / 4));
      s.decision = decide(s, fraud, readyAt, config.decisionRules);
      finishedAt = Math.max(finishedAt, readyAt);
      this.hooks.decisionReady(s, readyAt);
    }
    s.finishedAt = finishedAt;
  }

  /** Removes the oldest submissions that are not mid-flight until the bound holds. */
  private evict(): void {
    const max = this.getConfig().maxSubmissions;
    if (this.byId.size <= max) return;
    const now = Date.now();
    for (const preferFinished of [true, false]) {
      for (const s of this.byId.values()) {
        if (this.byId.size <= max) return;
        const state = this.state(s, now);
        const evictable = preferFinished
          ? state === 'finished'
          : state === 'awaiting_upload' || state === 'awaiting_characteristics';
        if (evictable) this.delete(s);
      }
    }
  }
}

function decide(
  s: Submission,
  fraud: ReadyResult,
  readyAt: number,
  rules: SandboxConfig['decisionRules'],
): DecisionOutcome {
  const status = fraud.body.status as string;
  if (status !== RESULT_STATUSES.success) {
    const why =
      status === RESULT_STATUSES.skipped
        ? `pipeline ${s.pipeline} skips fraud analysis, which Adaptive Decision needs`
        : `the fraud result is ${status}`;
    return {
      readyAt,
      status: RESULT_STATUSES.failed,
      decision: null,
      reason: {},
      message: `decision: ${why}`,
    };
  }
  const score = fraud.body.score as keyof SandboxConfig['decisionRules'];
  return {
    readyAt,
    status: RESULT_STATUSES.success,
    decision: rules[score],
    reason: {
      fraud_score: { value: score, label: `Fraud score is ${score}` },
      rule: { value: `${score}->${rules[score]}`, label: `Rule maps ${score} to ${rules[score]}` },
    },
    message: null,
  };
}
