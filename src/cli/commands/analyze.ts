/**
 * `docstream analyze <file|url>`: create a submission, upload the document (a local file, or
 * an http(s) URL downloaded as a stream), optionally attach characteristics, wait for the
 * results with back-off, and print a summary (or the raw results with --json).
 */
import { readFile, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Readable } from 'node:stream';
import { type Command, Option } from 'commander';
import { got } from 'got';
import type { z } from 'zod';
import {
  ClassificationSuccess,
  ContentSuccess,
  DecisionSuccess,
  FraudSuccess,
  QualitySuccess,
  type ClassificationResult,
  type ContentResult,
  type DecisionResult,
  describeZodError,
  type FraudResult,
  PIPELINE_RESULTS,
  PIPELINES,
  type PipelineConfiguration,
  type QualityResult,
  SubmissionCharacteristics,
} from '../../api/schemas.js';
import type { DocumentAnalysisClient } from '../../client/client.js';
import { pollUntilReady } from '../../client/poll.js';
import { progressWanted } from '../../util/progress.js';
import { secondsOption } from '../durations.js';
import { examples } from '../help.js';
import { addApiOptions, apiConfig, type ApiFlags, clientOf, UsageError } from './api-options.js';

interface AnalyzeFlags extends ApiFlags {
  pipeline: PipelineConfiguration;
  decision?: boolean;
  characteristics?: string;
  withMetadata?: boolean;
  queryId?: string;
  json?: boolean;
  timeout: number;
}

interface AnalysisOutput {
  file: string;
  submission_id: string;
  fraud?: FraudResult;
  quality?: QualityResult;
  classification?: ClassificationResult;
  content?: ContentResult;
  decision?: DecisionResult;
}

export function registerAnalyze(program: Command): void {
  const command = program
    .command('analyze')
    .description('Analyse one document with the Document Analysis API and print the results.')
    .argument('<file|url>', 'a local PDF/image file, or an http(s) URL to download it from')
    .addOption(
      new Option('--pipeline <pipeline>', 'pipeline configuration').choices(PIPELINES).default('FRAUD_ONLY'),
    )
    .option('--decision', 'enable Adaptive Decision and wait for the verdict')
    .option('--characteristics <file.json>', 'submission characteristics to attach (JSON file)')
    .option('--with-metadata', 'include indicator metadata in the fraud result')
    .option('--query-id <id>', 'your id for the document (no personal data)')
    .option('--json', 'print the results as JSON (for scripts)')
    .addOption(secondsOption('--timeout', 'how long to wait for the results').default(120));
  addApiOptions(command).action((input: string, flags: AnalyzeFlags) => analyze(input, flags));
  examples(
    command,
    'docstream analyze invoice.pdf',
    'docstream analyze -c prod.json --cell eu-1 --decision --json invoice.pdf',
    'pass show docstream/api | docstream analyze --client-secret-stdin https://example.com/invoice.pdf',
  );
}

async function analyze(input: string, flags: AnalyzeFlags): Promise<void> {
  // The configuration first: a bad file or flag exits 2 before any download or submission.
  const client = clientOf(await apiConfig(flags));
  const characteristics = flags.characteristics
    ? await readCharacteristics(flags.characteristics)
    : undefined;
  const source = await openSource(input);
  const progress = new Progress(!flags.json || process.stderr.isTTY === true);

  progress.step('creating submission');
  const created = await client.createSubmission({
    pipeline_configuration: flags.pipeline,
    enable_decision: flags.decision === true,
    enable_submission_characteristics: characteristics !== undefined,
    ...(flags.queryId === undefined ? {} : { query_id: flags.queryId }),
  });
  const id = created.submission_id;
  progress.step(`uploading ${source.name} (submission ${id})`);
  await client.upload(created.upload_url, source.body, { contentLength: source.size });
  if (characteristics) {
    progress.step('attaching characteristics');
    await client.putCharacteristics(created.submission_characteristics_upload_url ?? id, characteristics);
  }

  const output: AnalysisOutput = { file: source.name, submission_id: id };
  const deadline = Date.now() + flags.timeout * 1000;
  const wait = <T>(what: string, fetch: () => Promise<T>) => {
    progress.step(`waiting for ${what}`);
    return pollUntilReady(fetch, {
      timeoutMs: Math.max(0, deadline - Date.now()),
      initialDelayMs: 300,
      maxDelayMs: 3000,
      onWait: () => progress.tick(),
    });
  };
  for (const kind of PIPELINE_RESULTS[flags.pipeline]) {
    output[kind] = await wait(`${kind} result`, () => fetchResult(client, kind, id, flags));
  }
  if (flags.decision) output.decision = await wait('decision', () => client.getDecision(id));
  progress.done();

  process.stdout.write(flags.json ? `${JSON.stringify(output, null, 2)}\n` : summary(output));
}

function fetchResult(
  client: DocumentAnalysisClient,
  kind: 'fraud' | 'quality' | 'classification' | 'content',
  id: string,
  flags: AnalyzeFlags,
): Promise<FraudResult | QualityResult | ClassificationResult | ContentResult> {
  switch (kind) {
    case 'fraud':
      return client.getFraud(id, { withMetadata: flags.withMetadata === true });
    case 'quality':
      return client.getQuality(id);
    case 'classification':
      return client.getClassification(id);
    case 'content':
      return client.getContent(id);
  }
}

/** A JSON file of submission characteristics, checked against the API's shape (exit 2 if not). */
export async function readCharacteristics(path: string): Promise<SubmissionCharacteristics> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new UsageError(
      `--characteristics ${path}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const result = SubmissionCharacteristics.safeParse(parsed);
  if (!result.success) throw new UsageError(`--characteristics ${path}: ${describeZodError(result.error)}`);
  return result.data;
}

interface Source {
  name: string;
  size?: number;
  /** A path (re-readable, so uploads may be retried) or a download stream (read once). */
  body: string | Readable;
}

/** Checks the input before anything is created, so a bad path or URL leaves no submission behind. */
async function openSource(input: string): Promise<Source> {
  if (/^https?:\/\//i.test(input)) {
    const url = new URL(input);
    // Streamed through: the download is never held in memory nor written to disk; back-pressure
    // holds it while the submission is being created.
    const stream = got.stream(url, { retry: { limit: 2 } });
    const length = await new Promise<string | undefined>((resolve, reject) => {
      stream.once('response', (response: { headers: Record<string, string | undefined> }) =>
        resolve(response.headers['content-length']),
      );
      stream.once('error', (error: Error) => reject(new UsageError(`${input}: ${error.message}`)));
    });
    return {
      name: basename(url.pathname) || url.hostname,
      size: length === undefined ? undefined : Number(length),
      body: stream,
    };
  }
  try {
    const info = await stat(input);
    if (!info.isFile()) throw new Error('not a regular file');
    return { name: basename(input), size: info.size, body: input };
  } catch (error) {
    throw new UsageError(`${input}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** A progress line on stderr: rewritten in place on a terminal (not with NO_COLOR), one line per step otherwise. */
class Progress {
  private readonly tty = progressWanted(process.stderr, process.env);
  private label = '';
  private started = Date.now();
  private frame = 0;

  constructor(private readonly enabled: boolean) {}

  step(label: string): void {
    if (!this.enabled) return;
    this.label = label;
    this.started = Date.now();
    if (this.tty) this.render();
    else process.stderr.write(`${label}...\n`);
  }

  tick(): void {
    if (this.enabled && this.tty) this.render();
  }

  done(): void {
    if (this.enabled && this.tty) process.stderr.write('\r\x1b[K');
  }

  private render(): void {
    const spinner = '|/-\\'[this.frame++ % 4];
    const seconds = ((Date.now() - this.started) / 1000).toFixed(1);
    process.stderr.write(`\r\x1b[K${spinner} ${this.label} (${seconds}s)`);
  }
}

function statusLine(result: { status: string; message?: string }): string {
  return result.message ? `${result.status}: ${result.message}` : result.status;
}

/** The SUCCESS variant, typed, or undefined for the other variants (printed by status). */
function success<T>(schema: z.ZodType<T>, value: unknown): T | undefined {
  const parsed = schema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** A readable summary of the results. */
function summary(output: AnalysisOutput): string {
  const lines = [`file            ${output.file}`, `submission      ${output.submission_id}`];
  const first = output.fraud ?? output.quality ?? output.classification;
  if (typeof first?.sha256 === 'string') lines.push(`sha256          ${first.sha256}`);
  const row = (label: string, text: string) => lines.push(`${label.padEnd(16)}${text}`);

  if (output.fraud) {
    const fraud = success(FraudSuccess, output.fraud);
    if (fraud) {
      row('fraud score', fraud.score);
      row('tags', fraud.document_tags.join(', ') || '-');
      row('indicators', fraud.indicators.length === 0 ? 'none' : String(fraud.indicators.length));
      for (const indicator of fraud.indicators) {
        lines.push(`  - [${indicator.type}] ${indicator.title} (${indicator.category})`);
      }
    } else {
      row('fraud', statusLine(output.fraud));
    }
  }
  if (output.quality) {
    const quality = success(QualitySuccess, output.quality);
    const issues = quality?.indicators.map((i) => i.title).join('; ');
    row('quality', quality ? `${quality.score}${issues ? ` (${issues})` : ''}` : statusLine(output.quality));
  }
  if (output.classification) {
    const classification = success(ClassificationSuccess, output.classification);
    row(
      'classification',
      classification
        ? `${classification.document_type} (confidence ${classification.confidence.toFixed(2)})`
        : statusLine(output.classification),
    );
  }
  if (output.content) {
    const content = success(ContentSuccess, output.content);
    row('content', content ? `${content.pages.length} page(s) of text` : statusLine(output.content));
  }
  if (output.decision) {
    const decision = success(DecisionSuccess, output.decision);
    const reasons = decision
      ? Object.values(decision.reason)
          .map((r) => r.label)
          .join('; ')
      : '';
    row(
      'decision',
      decision ? `${decision.decision}${reasons ? ` (${reasons})` : ''}` : statusLine(output.decision),
    );
  }
  return `${lines.join('\n')}\n`;
}
