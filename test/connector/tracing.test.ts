/**
 * Traces on the real stack with a real backend: Jaeger v2 (`docstream stack up --services jaeger`,
 * built once from the Go module proxy), the connector exporting over OTLP/HTTP. A document whose event
 * carries a producer's traceparent is one trace in Jaeger: its span a child of the producer's, every
 * step (the blob fetch, the create, the upload, each poll, each result's send) a child of it, and its
 * outputs carry its span's traceparent. A dead letter's trace says why (its span's error status). No
 * span names the blob's address.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { sampleBytes } from '../../src/demo/corpus.js';
import { defaultStackOptions, stackDown, stackUp } from '../../src/stack/index.js';
import { arrival, E2E, waitFor } from '../harness/e2e.js';

const JAEGER = 'http://127.0.0.1:16686';
const CLI = path.resolve('dist/cli/index.js');

interface JaegerSpan {
  spanID: string;
  operationName: string;
  references: Array<{ refType: string; spanID: string; traceID: string }>;
  tags: Array<{ key: string; value: unknown }>;
}

async function traceSpans(traceId: string): Promise<JaegerSpan[]> {
  const res = await fetch(`${JAEGER}/api/traces/${traceId}`);
  if (res.status !== 200) return [];
  const body = (await res.json()) as { data?: Array<{ spans: JaegerSpan[] }> };
  return body.data?.[0]?.spans ?? [];
}

/** Polls Jaeger until `done(spans)` holds for the trace, at most `timeoutMs`. */
async function spansWhen(
  traceId: string,
  done: (spans: JaegerSpan[]) => boolean,
  timeoutMs = 30_000,
): Promise<JaegerSpan[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const spans = await traceSpans(traceId);
    if (done(spans)) return spans;
    if (Date.now() > deadline)
      throw new Error(`trace ${traceId} in Jaeger: ${JSON.stringify(spans.map((s) => s.operationName))}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const tag = (span: JaegerSpan, key: string) => span.tags.find((t) => t.key === key)?.value;
const parentOf = (span: JaegerSpan) => span.references.find((r) => r.refType === 'CHILD_OF')?.spanID;

describe('document traces in Jaeger', () => {
  const env = new E2E(1);
  let startedJaeger = false;

  beforeAll(async () => {
    // Builds Jaeger first when the cache has none (minutes, once); `.ci/run` installs it beforehand.
    const up = await stackUp(
      defaultStackOptions({
        services: ['jaeger'],
        timeoutMs: 900_000,
        log: (l) => process.stderr.write(`[stack] ${l}\n`),
      }),
    );
    startedJaeger = up.started.includes('jaeger');
    await env.start();
    await env.collect();
    await env.startConnector({
      tracing: { enabled: true, endpoint: 'http://127.0.0.1:4318/v1/traces', sampleRatio: 1 },
    });
  }, 960_000);
  afterAll(async () => {
    await env.stop();
    if (startedJaeger && !process.env.DOCSTREAM_TEST_KEEP_STACK)
      await stackDown(defaultStackOptions({ services: ['jaeger'], log: () => undefined }));
  }, 120_000);

  it("shows a document's every step under the producer's span, and its outputs continue the trace", async () => {
    const traceId = randomBytes(16).toString('hex');
    const producerSpan = randomBytes(8).toString('hex');
    const file = await env.writeFile('traced.pdf', await sampleBytes('clean-pdf'));
    await env.produce(
      [arrival('evt-traced', file, { pipeline_configuration: 'QUALITY_ONLY' })],
      undefined,
      () => ({ traceparent: `00-${traceId}-${producerSpan}-01` }),
    );
    await waitFor(
      'its quality result',
      () => env.on('quality').some((o) => o.headers.event_id === 'evt-traced'),
      60_000,
    );

    const wanted = ['process', 'fetch blob', 'POST', 'PUT', 'GET', `send ${env.topics.quality}`];
    const spans = await spansWhen(traceId, (found) =>
      wanted.every((w) => found.some((s) => s.operationName.startsWith(w))),
    );
    const doc = spans.find((s) => s.operationName === `process ${env.topics.arrived}`)!;
    expect(parentOf(doc)).toBe(producerSpan);
    expect(tag(doc, 'messaging.system')).toBe('kafka');
    expect(tag(doc, 'messaging.message.id')).toBe('evt-traced');
    expect(tag(doc, 'docstream.outcome')).toBe('done');
    // Every step is the document span's child.
    const steps = spans.filter((s) => s !== doc);
    expect(steps.length).toBeGreaterThanOrEqual(wanted.length - 1);
    for (const s of steps)
      expect({ step: s.operationName, parent: parentOf(s) }).toEqual({
        step: s.operationName,
        parent: doc.spanID,
      });
    const create = steps.find((s) => s.operationName === 'POST')!;
    expect(tag(create, 'url.template')).toBe('/v2/submission');
    expect(tag(create, 'http.response.status_code')).toBe(201);
    const polls = steps.filter((s) => s.operationName === 'GET');
    expect(polls.map((p) => tag(p, 'docstream.poll.outcome'))).toContain('ready');
    // No attribute names the blob's address.
    for (const s of spans) for (const t of s.tags) expect(String(t.value)).not.toContain('traced.pdf');

    // The result names docstream's span: same trace, the document span as parent.
    const result = env.on('quality').find((o) => o.headers.event_id === 'evt-traced')!;
    expect(result.headers.traceparent).toBe(`00-${traceId}-${doc.spanID}-01`);

    // `inspect` names each result's trace, the way from a document to its trace in Jaeger.
    const env2 = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [CLI, 'inspect', '-c', env.writeConfig(), 'evt-traced', '--json'],
      { env: env2, timeout: 60_000 },
    );
    const inspected = JSON.parse(stdout) as { results: Array<{ trace_id: string | null }> };
    expect(inspected.results.map((r) => r.trace_id)).toEqual(inspected.results.map(() => traceId));
  }, 120_000);

  it("says why in a dead letter's trace", async () => {
    const traceId = randomBytes(16).toString('hex');
    await env.produce([arrival('evt-traced-missing', `${env.dir}/no-such-file.pdf`)], undefined, () => ({
      traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
    }));
    await waitFor(
      'its dead letter',
      () => env.on('dlq').some((o) => o.headers.event_id === 'evt-traced-missing'),
      60_000,
    );
    const spans = await spansWhen(
      traceId,
      (found) =>
        found.some((s) => s.operationName === `send ${env.topics.dlq}`) &&
        found.some((s) => s.operationName.startsWith('process')),
    );
    const doc = spans.find((s) => s.operationName.startsWith('process'))!;
    expect(tag(doc, 'docstream.outcome')).toBe('dead-lettered');
    expect(tag(doc, 'otel.status_code')).toBe('ERROR');
    expect(tag(doc, 'otel.status_description')).toBe('blob/blob_not_found');
    const sent = spans.find((s) => s.operationName === `send ${env.topics.dlq}`)!;
    expect(tag(sent, 'docstream.dead_letter.code')).toBe('blob_not_found');
    const deadLetter = env.on('dlq').find((o) => o.headers.event_id === 'evt-traced-missing')!;
    expect(deadLetter.headers.traceparent).toBe(`00-${traceId}-${doc.spanID}-01`);
  }, 120_000);
});
