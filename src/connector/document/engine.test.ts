import { jest } from '@jest/globals';
import { Readable } from 'node:stream';
import { BlobError } from '../../blobs/errors.js';
import { silentLogger } from '../../observability/logger.js';
import { DocumentEngine, type EngineOptions } from './engine.js';
import { RevocationInProgressError } from './create-gate.js';
import { KafkaError, KafkaUnavailableError } from '../../kafka/errors.js';
import { PollScheduler } from '../../util/scheduler.js';
import type { FinishedDoc } from './ports.js';
import type { DocumentStateV2, InputPointer } from '../state/document-state.js';
import { PartitionState } from '../state/partition-state.js';
import type { ReplayMarker } from '../state/replay-marker.js';
import type { Recorded } from '../state/store.js';
import { createdState } from './run.js';
import { PollTiming } from './poll-timing.js';
import { ResultNotReady, type ApiPort, type InputPort, type OutputPort, type StatePort } from './ports.js';
import type { ArrivalEvent, Awaitable, DeadLetter, OpenedBlob, SourceRecord } from '../types.js';

class FakeApi implements ApiPort {
  calls: string[] = [];
  notReadyPolls = new Map<Awaitable, number>();
  createError: (Error & { status?: number; retriable?: boolean; attempts?: number }) | null = null;
  private n = 0;
  /** While set, a create waits for it before it is sent (queued behind the rate limiter). */
  queued: Promise<void> | null = null;
  /** While set, a create that was sent waits for it before it is answered (a slow API). */
  slowAnswer: Promise<void> | null = null;
  async createSubmission(
    _req?: unknown,
    options: { beforeSend?: () => void } = {},
  ): Promise<{ submission_id: string; upload_url: string }> {
    if (this.queued) await this.queued;
    options.beforeSend?.();
    this.calls.push('create');
    if (this.slowAnswer) await this.slowAnswer;
    if (this.createError) throw this.createError;
    this.n += 1;
    return { submission_id: `sub-${String(this.n).padStart(24, '0')}`, upload_url: 'http://upload/x' };
  }
  async upload(): Promise<void> {
    this.calls.push('upload');
  }
  async putCharacteristics(): Promise<void> {
    this.calls.push('characteristics');
  }
  /** While set, decision GETs wait for it (to make two fetches overlap). */
  holdDecision: Promise<void> | null = null;
  async getResult(kind: Awaitable, id: string): Promise<Record<string, unknown>> {
    this.calls.push(`get:${kind}`);
    if (kind === 'decision' && this.holdDecision) await this.holdDecision;
    const left = this.notReadyPolls.get(kind) ?? 0;
    if (left > 0) {
      this.notReadyPolls.set(kind, left - 1);
      throw new ResultNotReady(kind);
    }
    return { status: 'SUCCESS', kind, id };
  }
  async getReportUrl(): Promise<string> {
    return 'http://report';
  }
  async deleteSubmission(): Promise<void> {
    this.calls.push('delete');
  }
}

class FakeOut implements OutputPort, StatePort {
  results: Array<{ kind: Awaitable; submission_id: string; source: string | undefined }> = [];
  deadLetters: DeadLetter[] = [];
  states: DocumentStateV2[] = [];
  /** While set, a publish waits for it after calling `onPublishing` (to stop or revoke meanwhile). */
  holdPublish: Promise<void> | null = null;
  onPublishing: () => void = () => undefined;
  async publishResult(
    kind: Awaitable,
    doc: { submission_id: string },
    _body: Record<string, unknown>,
    extra?: { source?: string },
  ): Promise<void> {
    if (this.holdPublish) {
      this.onPublishing();
      await this.holdPublish;
    }
    this.results.push({ kind, submission_id: doc.submission_id, source: extra?.source });
  }
  async deadLetter(deadLetter: DeadLetter): Promise<void> {
    this.deadLetters.push(deadLetter);
  }
  /** Each state write with this status fails once (Kafka unavailable), then succeeds. */
  failOnce = new Set<string>();
  /** While set, every state write fails with this error. */
  failAll: Error | null = null;
  /** Each write's status and whether it was asked lazy. */
  paces: Array<[string, boolean]> = [];
  /** While set, a write with this status waits for `releaseHeld` (Kafka slow to acknowledge it). */
  holdStatus: string | null = null;
  releaseHeld: () => void = () => undefined;
  lingeringSent = 0;
  async writeState(state: DocumentStateV2, options: { lazy?: boolean } = {}): Promise<void> {
    this.paces.push([state.status, options.lazy === true]);
    if (this.holdStatus === state.status) {
      this.holdStatus = null;
      await new Promise<void>((r) => (this.releaseHeld = r));
    }
    if (this.failOnce.delete(state.status)) throw new Error('state topic unavailable');
    if (this.failAll) throw this.failAll;
    this.states.push(state);
  }
  sendLingeringNow(): void {
    this.lingeringSent += 1;
  }
}

const blob: OpenedBlob = {
  open: async () => Readable.from([Buffer.from('%PDF-1.7')]),
  size: 8,
  contentType: 'application/pdf',
  sha256: undefined,
  cleanup: async () => undefined,
};

function event(overrides: Partial<ArrivalEvent> = {}): ArrivalEvent {
  return {
    event_id: 'evt-1',
    blob: { url: 'file:///tmp/a.pdf', content_type: null, size_bytes: null, sha256: null },
    query_id: 'q-1',
    pipeline_configuration: 'FRAUD_ONLY',
    enable_decision: false,
    submission_characteristics: null,
    attributes: { tenant: 'acme' },
    reprocess: false,
    ...overrides,
  };
}

const source: SourceRecord = {
  topic: 'documents.arrived',
  partition: 0,
  offset: '7',
  key: null,
  value: Buffer.from('{}'),
  traceparent: null,
};

/** The input topic as the engine reads it back: records by offset (a missing one is gone). */
class FakeInputs implements InputPort {
  records = new Map<string, { source: SourceRecord; event: ArrivalEvent }>();
  reads: InputPointer[] = [];
  add(src: SourceRecord, ev: ArrivalEvent): void {
    this.records.set(src.offset, { source: src, event: ev });
  }
  /** While set, a read-back waits for it (the input topic slow to answer). */
  held: Promise<void> | null = null;
  async recall(pointers: InputPointer[]) {
    this.reads.push(...pointers);
    if (this.held) await this.held;
    return pointers.map((p) => this.records.get(p.offset) ?? null);
  }
  async read(pointer: InputPointer) {
    this.reads.push(pointer);
    return this.records.get(pointer.offset)?.source ?? null;
  }
}

/** What the state store answers for a recorded state: the state put in the partition's state and read back. */
function recorded(
  state: DocumentStateV2,
  marker?: ReplayMarker,
): { recorded: Recorded; marker: ReplayMarker | undefined } {
  // A clock at 0: no finished state of these tests is past the retention window.
  const partitionState = new PartitionState({ inputTopic: 'arrivals', now: () => 0 });
  partitionState.put(0, state);
  const found = partitionState.get(0, state.event_id);
  if (!found) throw new Error(`state of ${state.event_id} not found after put`);
  return { recorded: found, marker };
}

function setup(
  options: Partial<EngineOptions> = {},
  blobError?: Error & { code?: string },
  delivered: string[] = [],
) {
  const api = new FakeApi();
  const out = new FakeOut();
  const inputs = new FakeInputs();
  const scheduler = new PollScheduler();
  const finished: Array<{ state: FinishedDoc; outcome: string }> = [];
  // Tests may replace `resolve` (a blob store with transient failures).
  const blobs = {
    resolve: async (): Promise<OpenedBlob> => {
      if (blobError) throw blobError;
      return blob;
    },
  };
  const leftEmpty: number[] = [];
  const engine = new DocumentEngine(
    {
      api,
      out,
      states: out,
      inputs,
      scheduler,
      logger: silentLogger,
      deliveries: { tenantIdsOf: (id) => (delivered.includes(id) ? [null] : undefined) },
      blobs: { resolve: () => blobs.resolve() },
    },
    {
      pollInitialMs: 5,
      pollMaxMs: 20,
      deadlineMs: 60000,
      decisionPolling: true,
      deleteAfterPublish: false,
      attachReportUrl: false,
      ...options,
    },
    {
      onFinished: (state, outcome) => finished.push({ state, outcome }),
      onSubmissionsLeftEmpty: (n) => leftEmpty.push(n),
    },
  );
  /** Fake time moves on until `n` documents finished (at most 10 s of it). */
  const until = (n: number) => waitUntil(() => finished.length >= n, 10_000);
  return { api, out, engine, finished, until, scheduler, inputs, blobs, leftEmpty };
}

/** A blob store that answers with transient failures (HTTP 503) `times` times, then serves the file. */
function transientFailuresFor(times: number): { resolve: () => Promise<OpenedBlob>; tries: () => number } {
  let tries = 0;
  return {
    resolve: async () => {
      tries += 1;
      if (tries > times) return blob;
      throw new BlobError('blob_unreadable', 'https://blobs.example/a.pdf answered HTTP 503', {
        retriable: true,
      });
    },
    tries: () => tries,
  };
}

/** The recorded state of a document created but not uploaded (`evt-<id>`, input record at `offset`). */
function pendingUpload(id: string, offset: string, awaited: Awaitable, characteristicsPending: boolean) {
  return {
    v: 2 as const,
    event_id: `evt-${id}`,
    submission_id: `sub-${id}`,
    status: 'CREATED' as const,
    input: { topic: 'documents.arrived', partition: 0, offset },
    awaited: [awaited],
    published: [],
    created_at: Date.now(),
    updated_at: Date.now(),
    pending: {
      upload_url: `http://upload/${id}`,
      characteristics_url: null,
      characteristics_pending: characteristicsPending,
    },
  };
}

/**
 * The engine's polls, deadlines and back-offs run on jest's fake clock, moved on by the tests; promise
 * jobs, nextTick and setImmediate stay real, so that the awaited work between two timers runs.
 */
beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] }));
afterEach(() => jest.useRealTimers());

/** Fake time moves on by `ms` (every timer due meanwhile fires, the work it starts runs). */
const pause = (ms: number) => jest.advanceTimersByTimeAsync(ms);

/** Fake time moves on 1 ms at a time until `condition` holds; throws when it does not within `ms`. */
async function waitUntil(condition: () => boolean, ms = 2000): Promise<void> {
  for (let t = 0; !condition(); t++) {
    if (t >= ms) throw new Error(`condition not met within ${ms} ms of fake time`);
    await jest.advanceTimersByTimeAsync(1);
  }
}

/** Fake time moves on until `work` settles (at most `ms` of it); resolves or rejects as `work` does. */
async function settled<T>(work: Promise<T>, ms = 10_000): Promise<T> {
  let done = false;
  work.then(
    () => (done = true),
    () => (done = true),
  );
  await waitUntil(() => done, ms);
  return work;
}

describe('DocumentEngine', () => {
  it.each([
    ['stopped', true],
    ['revoked', false],
  ])(
    'a result published while its document is %s is recorded only if the partition is still this instance’s',
    async (how, recordedAfter) => {
      const { out, engine, finished } = setup();
      let release: () => void = () => undefined;
      out.holdPublish = new Promise<void>((r) => (release = r));
      const publishing = new Promise<void>((r) => (out.onPublishing = r));
      await engine.admit(source, event({ pipeline_configuration: 'QUALITY_ONLY' }));
      await settled(publishing);
      const statesBefore = out.states.length;
      let stopped: Promise<void> = Promise.resolve();
      if (how === 'stopped') stopped = engine.stop(5000);
      else engine.revoke([0]);
      release();
      await settled(stopped);
      // Past any poll or state write the publish could still lead to.
      await pause(1000);
      expect(out.results.map((r) => r.kind)).toEqual(['quality']);
      const after = out.states.slice(statesBefore);
      if (recordedAfter) {
        // Not DONE here: the next owner finds every result published and finishes it.
        expect(after.map((st) => [st.status, st.published])).toEqual([['UPLOADED', ['quality']]]);
      } else {
        expect(after).toEqual([]);
      }
      expect(finished).toEqual([]);
    },
  );

  it('creates once, records state before uploading, publishes every awaited result, then marks done', async () => {
    const { api, out, engine, until } = setup();
    expect(await engine.admit(source, event({ enable_decision: true }), undefined)).toBe('started');
    expect(out.states[0]?.status).toBe('CREATED');
    expect(api.calls[0]).toBe('create');
    await until(1);
    expect(api.calls.filter((c) => c === 'create')).toHaveLength(1);
    expect(api.calls).toContain('upload');
    expect(out.results.map((r) => r.kind).sort()).toEqual(['classification', 'decision', 'fraud', 'quality']);
    const last = out.states.at(-1)!;
    expect(last.status).toBe('DONE');
    // A finished document keeps only what deduplication and replay need.
    expect(Object.keys(last).sort()).toEqual(
      [
        'awaited',
        'blob',
        'event_id',
        'finished_at',
        'input',
        'published',
        'status',
        'submission_id',
        'v',
      ].sort(),
    );
    expect(last.input).toEqual({ topic: 'documents.arrived', partition: 0, offset: '7' });
    // The upload URL is recorded only while the upload is pending.
    expect(out.states[0]).toMatchObject({ status: 'CREATED', pending: { upload_url: 'http://upload/x' } });
    expect(out.states[1]).toMatchObject({ status: 'UPLOADED' });
    expect((out.states[1] as { pending?: unknown }).pending).toBeUndefined();
    expect(engine.inFlight).toBe(0);
  });

  it('records the first state at once and the later ones lazily; the polls do not wait for the upload’s', async () => {
    const { out, engine, until } = setup();
    out.holdStatus = 'UPLOADED';
    await engine.admit(source, event({ pipeline_configuration: 'QUALITY_ONLY' }));
    // The upload's record is not acknowledged, and the result is published and the document ends.
    await until(1);
    expect(out.results.map((r) => r.kind)).toEqual(['quality']);
    expect(out.states.map((s) => s.status)).toEqual(['CREATED', 'DONE']);
    expect(out.paces).toEqual([
      ['CREATED', false],
      ['UPLOADED', true],
      ['DONE', true],
    ]);
    out.releaseHeld();
  });

  it('records an end at once while the consumer waits for a slot, and lingeringSent what lingers', async () => {
    const { out, engine, until } = setup();
    engine.wantCapacity();
    expect(out.lingeringSent).toBe(1);
    await engine.admit(source, event({ pipeline_configuration: 'QUALITY_ONLY' }));
    await until(1);
    expect(out.paces.find(([s]) => s === 'DONE')).toEqual(['DONE', false]);
    // The slot it freed was given: the next document's end lingers again.
    await engine.admit(
      { ...source, offset: '8' },
      event({ event_id: 'evt-2', pipeline_configuration: 'QUALITY_ONLY' }),
    );
    await until(2);
    expect(out.paces.filter(([s]) => s === 'DONE')).toEqual([
      ['DONE', false],
      ['DONE', true],
    ]);
  });

  it.each(['stop', 'revoke'])('sends what lingers at once on a %s', async (how) => {
    const { out, engine } = setup();
    if (how === 'stop') await settled(engine.stop(100));
    else engine.revoke([0]);
    expect(out.lingeringSent).toBe(1);
  });

  it('publishes the results of a document fetched together in one turn, after the last of them arrives', async () => {
    const { api, out, engine, until } = setup();
    let release: () => void = () => undefined;
    api.holdDecision = new Promise<void>((r) => (release = r));
    await engine.admit(source, event({ enable_decision: true }), undefined);
    const fetched = (k: string) => api.calls.includes(`get:${k}`);
    await waitUntil(() => ['fraud', 'quality', 'classification', 'decision'].every(fetched));
    await pause(20);
    // Three results are in, the decision is still being fetched: nothing is published yet.
    expect(out.results).toEqual([]);
    // An event-loop turn: counted by a real setImmediate chain (fake time moves on in many turns).
    const turns: number[] = [];
    let turn = 0;
    let counting = true;
    const count = () => {
      turn += 1;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    const publish = out.publishResult.bind(out);
    out.publishResult = (...a) => {
      turns.push(turn);
      return publish(...a);
    };
    release();
    await until(1);
    counting = false;
    expect(out.results.map((r) => r.kind).sort()).toEqual(['classification', 'decision', 'fraud', 'quality']);
    expect(new Set(turns).size).toBe(1);
  });

  it('does not hold a fetched result for long behind a sibling whose fetch hangs', async () => {
    const { api, out, engine } = setup();
    api.holdDecision = new Promise<void>(() => undefined);
    await engine.admit(source, event({ enable_decision: true }), undefined);
    await waitUntil(() => out.results.length >= 3, 1000).catch(() => undefined);
    expect(out.results.map((r) => r.kind).sort()).toEqual(['classification', 'fraud', 'quality']);
    await settled(engine.stop(100));
  });

  it('sends characteristics before the upload when the event has them', async () => {
    const { api, engine, until } = setup();
    await engine.admit(source, event({ submission_characteristics: { customer_case_id: 'c' } }), undefined);
    await until(1);
    expect(api.calls.indexOf('characteristics')).toBeLessThan(api.calls.indexOf('upload'));
  });

  it('keeps polling while a result is not ready', async () => {
    const { api, engine, until, out } = setup();
    api.notReadyPolls.set('quality', 3);
    await engine.admit(source, event({ pipeline_configuration: 'QUALITY_ONLY' }), undefined);
    await until(1);
    expect(api.calls.filter((c) => c === 'get:quality')).toHaveLength(4);
    expect(out.results.map((r) => r.kind)).toEqual(['quality']);
  });

  it('schedules and teaches the polls by the document’s pipeline and file size', async () => {
    const plan = jest.spyOn(PollTiming.prototype, 'plan');
    const observe = jest.spyOn(PollTiming.prototype, 'observe');
    try {
      const { api, engine, until } = setup();
      api.notReadyPolls.set('quality', 1);
      await engine.admit(source, event({ pipeline_configuration: 'QUALITY_ONLY' }), undefined);
      await until(1);
      const traits = { pipeline: 'QUALITY_ONLY', bytes: blob.size };
      expect(plan.mock.calls.map((c) => c[6])).toEqual([traits, traits]);
      expect(observe).toHaveBeenCalledTimes(1);
      expect(observe.mock.calls[0]![0]).toBe('quality');
      expect(observe.mock.calls[0]![3]).toEqual(traits);
    } finally {
      plan.mockRestore();
      observe.mockRestore();
    }
  });

  it('never submits a recorded document again, nor publishes a finished one again on redelivery', async () => {
    const { api, out, engine, until } = setup();
    await engine.admit(source, event(), undefined);
    await until(1);
    const done = out.states.at(-1)!;
    // A crash redelivery of a finished document's input: nothing is published again.
    expect(await engine.admit(source, event(), recorded(done))).toBe('published-before');
    expect(api.calls.filter((c) => c === 'create')).toHaveLength(1);
    expect(out.results.filter((r) => r.kind === 'fraud')).toHaveLength(1);

    const created = { ...out.states[0]!, event_id: 'evt-2' };
    expect(
      await engine.admit({ ...source, offset: '8' }, event({ event_id: 'evt-2' }), recorded(created)),
    ).toBe('resumed');
    await until(2);
    expect(api.calls.filter((c) => c === 'create')).toHaveLength(1);
    expect(out.states.filter((s) => s.event_id === 'evt-2').at(-1)?.status).toBe('DONE');
  });

  it('dead-letters a copy of an admitted event that points at another blob, running or finished', async () => {
    const { api, out, engine, until } = setup();
    await engine.admit(source, event(), undefined);
    const created = out.states[0]!;
    expect(created.blob).toBeGreaterThan(0);
    const other = event({
      blob: { url: 'file:///tmp/b.pdf', content_type: null, size_bytes: null, sha256: null },
    });
    const copy = { ...source, offset: '9' };
    expect(await engine.admit(copy, other, recorded(created))).toBe('dead-lettered');
    // The same blob again is a redelivery: nothing more.
    expect(await engine.admit(copy, event(), recorded(created))).toBe('running');
    await until(1);
    const done = out.states.at(-1)!;
    expect(done.blob).toBe(created.blob);
    expect(await engine.admit(copy, other, recorded(done))).toBe('dead-lettered');
    // Another sha256 for the same URL is another blob too.
    const resent = event({ blob: { ...event().blob, sha256: 'a'.repeat(64) } });
    expect(await engine.admit(copy, resent, recorded(done))).toBe('dead-lettered');
    // A state written before fingerprints cannot tell: the redelivery rules alone.
    expect(await engine.admit(copy, other, recorded({ ...done, blob: undefined }))).toBe('published-before');
    expect(api.calls.filter((c) => c === 'create')).toHaveLength(1);
    expect(
      out.deadLetters.map((l) => [l.stage, l.error_code, l.event_id, l.source?.offset, l.submission_id]),
    ).toEqual([
      ['validate', 'event_id_reused', 'evt-1', '9', null],
      ['validate', 'event_id_reused', 'evt-1', '9', null],
      ['validate', 'event_id_reused', 'evt-1', '9', null],
    ]);
    expect(out.deadLetters[0]!.message).toContain(`submission ${created.submission_id}`);
  });

  it('re-emits a finished document once per replay marker that covers its record', async () => {
    const { api, out, engine, until } = setup();
    await engine.admit(source, event(), undefined);
    await until(1);
    const marker = { generation: 3, until_offset: '8', at: 0 };
    // Identity of the replay comes from the arriving event.
    const replayed = event({ attributes: { tenant: 'replayed' } });
    expect(await engine.admit(source, replayed, recorded(out.states.at(-1)!, marker))).toBe('replayed');
    await until(2);
    expect(out.results.filter((r) => r.kind === 'fraud')).toHaveLength(2);
    const afterReplay = out.states.at(-1)!;
    expect(afterReplay).toMatchObject({ status: 'DONE', generation: 3 });
    // The same replay delivering it again (interrupted and restarted): published already.
    expect(await engine.admit(source, replayed, recorded(afterReplay, marker))).toBe('published-before');
    // A record at or past the marker's offset is not part of the replay.
    const fresh = { ...out.states[0]!, status: 'DONE' as const, finished_at: 1, generation: 0 };
    delete (fresh as { pending?: unknown }).pending;
    expect(
      await engine.admit({ ...source, offset: '8' }, event(), recorded(fresh as DocumentStateV2, marker)),
    ).toBe('published-before');
    // A newer replay re-emits again.
    expect(await engine.admit(source, replayed, recorded(afterReplay, { ...marker, generation: 4 }))).toBe(
      'replayed',
    );
    await until(3);
    expect(out.results.filter((r) => r.kind === 'fraud')).toHaveLength(3);
    expect(api.calls.filter((c) => c === 'create')).toHaveLength(1);
  });

  it('resumes an unfinished document from its input record, read back by its pointer', async () => {
    const { api, out, engine, until, inputs } = setup();
    const ev = event({ event_id: 'evt-r', submission_characteristics: { customer_case_id: 'c' } });
    inputs.add({ ...source, offset: '11', traceparent: 'tp-1' }, ev);
    const state = pendingUpload('r', '11', 'fraud', true);
    // Its input gone, an unfinished upload cannot be resumed: a dead letter, recorded FAILED.
    const gone = { ...state, event_id: 'evt-gone', input: { ...state.input, offset: '12' } };
    await engine.resume([state, gone]);
    await until(2);
    expect(api.calls.filter((c) => c === 'characteristics')).toHaveLength(1);
    expect(api.calls.filter((c) => c === 'create')).toHaveLength(0);
    expect(out.states.filter((s) => s.event_id === 'evt-r').at(-1)?.status).toBe('DONE');
    expect(out.deadLetters).toHaveLength(1);
    expect(out.deadLetters[0]).toMatchObject({
      event_id: 'evt-gone',
      error_code: 'input_gone',
      stage: 'upload',
    });
    expect(out.deadLetters[0]?.source).toMatchObject({ offset: '12', value: null });
    expect(out.states.filter((s) => s.event_id === 'evt-gone').at(-1)?.status).toBe('FAILED');
  });

  it('starts no resumed document of a partition revoked while its input records were read back', async () => {
    const { api, out, engine, inputs, until } = setup();
    const ev = event({ event_id: 'evt-rv' });
    inputs.add({ ...source, offset: '21' }, ev);
    inputs.add({ ...source, partition: 1, offset: '22' }, { ...ev, event_id: 'evt-kept' });
    let release!: () => void;
    inputs.held = new Promise((resolve) => (release = resolve));
    const revokedState = pendingUpload('rv', '21', 'fraud', false);
    const keptState = {
      ...pendingUpload('kept', '22', 'fraud', false),
      input: { topic: 'documents.arrived', partition: 1, offset: '22' },
    };
    const resuming = engine.resume([revokedState, keptState]);
    await new Promise((resolve) => setImmediate(resolve));
    // Partition 0 goes to another member while its records are read back; partition 1 stays.
    expect(engine.revoke([0])).toBe(0);
    release();
    await resuming;
    expect(engine.unfinishedOn(0)).toBe(0);
    expect(engine.unfinishedOn(1)).toBe(1);
    await until(1);
    expect(out.states.filter((s) => s.event_id === 'evt-rv')).toEqual([]);
    expect(api.calls.filter((c) => c === 'upload')).toHaveLength(1);
    expect(out.states.filter((s) => s.event_id === 'evt-kept').at(-1)?.status).toBe('DONE');

    // Assigned again later: resumed as usual.
    await engine.resume([revokedState]);
    expect(engine.unfinishedOn(0)).toBe(1);
  });

  it('uploads a resumed document again while its blob store fails transiently, until its deadline', async () => {
    const { api, out, engine, until, inputs, blobs } = setup({ deadlineMs: 60 });
    const ev = event({ event_id: 'evt-w', pipeline_configuration: 'QUALITY_ONLY' });
    inputs.add({ ...source, offset: '13' }, ev);
    const state = pendingUpload('w', '13', 'quality', false);
    const store = transientFailuresFor(2);
    blobs.resolve = store.resolve;
    await engine.resume([state]);
    await until(1);
    expect(store.tries()).toBe(3);
    expect(api.calls.filter((c) => c === 'upload')).toHaveLength(1);
    expect(out.deadLetters).toEqual([]);
    expect(out.states.at(-1)?.status).toBe('DONE');

    // Transient failure to the end: the deadline timer ends it, naming the blob's last error.
    blobs.resolve = transientFailuresFor(Infinity).resolve;
    inputs.add({ ...source, offset: '14' }, { ...ev, event_id: 'evt-w2' });
    const input = { ...state.input, offset: '14' };
    await engine.resume([
      { ...state, event_id: 'evt-w2', submission_id: 'sub-w2', input, created_at: Date.now() },
    ]);
    await until(2);
    expect(api.calls.filter((c) => c === 'upload')).toHaveLength(1);
    expect(out.deadLetters).toHaveLength(1);
    expect(out.deadLetters[0]).toMatchObject({
      event_id: 'evt-w2',
      stage: 'upload',
      error_code: 'deadline_exceeded',
    });
    expect(out.deadLetters[0]?.message).toMatch(
      /its blob could not be read: \d+ tries; last: blob_unreadable: /,
    );
    expect(out.states.filter((s) => s.event_id === 'evt-w2').at(-1)?.status).toBe('FAILED');
  });

  it('submits again when the event asks to reprocess', async () => {
    const { api, out, engine, until } = setup();
    await engine.admit(source, event(), undefined);
    await until(1);
    expect(await engine.admit(source, event({ reprocess: true }), recorded(out.states.at(-1)!))).toBe(
      'started',
    );
    await until(2);
    expect(api.calls.filter((c) => c === 'create')).toHaveLength(2);
  });

  it('dead-letters a blob it may not read, without creating a submission', async () => {
    const err = Object.assign(new Error('file:///etc/passwd is outside the allowed roots'), {
      code: 'blob_not_allowed',
    });
    const { api, out, engine } = setup({}, err);
    expect(await engine.admit(source, event(), undefined)).toBe('dead-lettered');
    expect(api.calls).toEqual([]);
    expect(out.deadLetters[0]).toMatchObject({
      stage: 'blob',
      error_code: 'blob_not_allowed',
      event_id: 'evt-1',
    });
    expect(out.deadLetters[0]?.source?.offset).toBe('7');
  });

  it('tries a record again while its blob store answers with transient failures, then submits it once', async () => {
    const { api, out, engine, until, blobs } = setup();
    const store = transientFailuresFor(2);
    blobs.resolve = store.resolve;
    await expect(engine.admit(source, event(), undefined)).rejects.toThrow('answered HTTP 503');
    await expect(engine.admit(source, event(), undefined)).rejects.toThrow('answered HTTP 503');
    expect(api.calls).toEqual([]);
    expect(await engine.admit(source, event(), undefined)).toBe('started');
    await until(1);
    expect(store.tries()).toBe(3);
    expect(api.calls.filter((c) => c === 'create')).toHaveLength(1);
    expect(out.deadLetters).toEqual([]);
    expect(out.states.at(-1)?.status).toBe('DONE');
  });

  it('ends a record whose blob store fails transiently until the deadline in a deadline dead letter naming it', async () => {
    const { api, out, engine, blobs } = setup({ deadlineMs: 40 });
    const store = transientFailuresFor(Infinity);
    blobs.resolve = store.resolve;
    let outcome: string | null = null;
    // The consumer's back-off between tries, shortened; bounded in count.
    for (let i = 0; i < 200 && outcome === null; i++) {
      outcome = await engine.admit(source, event(), undefined).catch(() => null);
      if (outcome === null) await pause(5);
    }
    expect(outcome).toBe('dead-lettered');
    expect(api.calls).toEqual([]);
    expect(out.deadLetters).toHaveLength(1);
    expect(store.tries()).toBeGreaterThan(1);
    expect(out.deadLetters[0]).toMatchObject({
      stage: 'blob',
      error_code: 'deadline',
      event_id: 'evt-1',
      attempts: store.tries(),
      http_status: null,
    });
    expect(out.deadLetters[0]?.message).toContain(`${store.tries()} tries; last: blob_unreadable:`);
    expect(out.deadLetters[0]?.message).toContain('https://blobs.example/a.pdf answered HTTP 503');
    // The record ended: the same event admitted again counts from its own first attempt.
    await expect(engine.admit(source, event(), undefined)).rejects.toThrow('answered HTTP 503');
    expect(out.deadLetters).toHaveLength(1);
  });

  it('dead-letters a blob error no retry can change at once, after transient failure too', async () => {
    const { api, out, engine, blobs } = setup();
    const store = transientFailuresFor(1);
    blobs.resolve = async () => {
      if (store.tries() === 0) return store.resolve();
      throw new BlobError('blob_not_found', 'https://blobs.example/a.pdf answered HTTP 404');
    };
    await expect(engine.admit(source, event(), undefined)).rejects.toThrow('answered HTTP 503');
    expect(await engine.admit(source, event(), undefined)).toBe('dead-lettered');
    expect(api.calls).toEqual([]);
    expect(out.deadLetters).toHaveLength(1);
    expect(out.deadLetters[0]).toMatchObject({ stage: 'blob', error_code: 'blob_not_found', attempts: 1 });
  });

  it('forgets the transient blob failures of a revoked partition: its next admission counts afresh', async () => {
    const { out, engine, blobs } = setup({ deadlineMs: 30 });
    blobs.resolve = transientFailuresFor(Infinity).resolve;
    await expect(engine.admit(source, event(), undefined)).rejects.toThrow('answered HTTP 503');
    await pause(40);
    engine.revoke([1]);
    // Another partition's revocation keeps it: past the deadline, a dead letter.
    expect(await engine.admit(source, event(), undefined)).toBe('dead-lettered');
    await expect(engine.admit(source, event(), undefined)).rejects.toThrow('answered HTTP 503');
    await pause(40);
    engine.revoke([0]);
    await expect(engine.admit(source, event(), undefined)).rejects.toThrow('answered HTTP 503');
    expect(out.deadLetters).toHaveLength(1);
  });

  it('dead-letters a create refused by the API with its status', async () => {
    const { api, out, engine } = setup();
    api.createError = Object.assign(new Error('query_id: too long'), { status: 400, retriable: false });
    expect(await engine.admit(source, event(), undefined)).toBe('dead-lettered');
    expect(out.deadLetters[0]).toMatchObject({ stage: 'create', error_code: 'api_400', http_status: 400 });
  });

  it('says in the dead letter how many times the API client tried', async () => {
    const { api, out, engine } = setup();
    api.createError = Object.assign(new Error('unavailable'), { status: 503, retriable: true, attempts: 6 });
    expect(await engine.admit(source, event(), undefined)).toBe('dead-lettered');
    expect(out.deadLetters[0]).toMatchObject({ stage: 'create', error_code: 'api_503', attempts: 6 });
  });

  it('dead-letters a document whose results miss the deadline and records it as failed', async () => {
    const { api, out, engine, until, inputs } = setup({ deadlineMs: 30 });
    api.notReadyPolls.set('quality', 1000);
    const ev = event({ pipeline_configuration: 'QUALITY_ONLY' });
    inputs.add(source, ev);
    await engine.admit(source, ev, undefined);
    await until(1);
    expect(out.deadLetters[0]).toMatchObject({ stage: 'poll', error_code: 'deadline_exceeded' });
    // Raised long after admission, the dead letter carries the original record, read back by pointer.
    expect(inputs.reads).toEqual([{ topic: 'documents.arrived', partition: 0, offset: '7' }]);
    expect(out.deadLetters[0]?.source?.value?.toString()).toBe('{}');
    expect(out.states.at(-1)?.status).toBe('FAILED');
    expect(out.states.at(-1)).not.toHaveProperty('error');
  });

  it('fetches a decision once when a webhook delivery says it is ready, with polling off', async () => {
    const { api, out, engine, until } = setup({ decisionPolling: false });
    await engine.admit(
      source,
      event({ pipeline_configuration: 'QUALITY_ONLY', enable_decision: true }),
      undefined,
    );
    const sub = out.states[0]!.submission_id;
    // Many polls' worth of time (well before the deadline): no poll fetches the decision.
    await pause(1000);
    expect(api.calls).not.toContain('get:decision');
    expect(engine.inFlight).toBe(1);
    // The document's input partition has one running here (the group's share reads it).
    expect([engine.unfinishedOn(0), engine.unfinishedOn(1)]).toEqual([1, 0]);
    engine.decisionReady(sub);
    engine.decisionReady(sub);
    engine.decisionReady('unknown');
    await until(1);
    expect(api.calls.filter((c) => c === 'get:decision')).toHaveLength(1);
    expect(out.results.filter((r) => r.kind === 'decision')).toEqual([
      { kind: 'decision', submission_id: sub, source: 'webhook' },
    ]);
    expect(engine.unfinishedOn(0)).toBe(0);
    expect(out.states.at(-1)?.status).toBe('DONE');
    // A delivery after the end changes nothing.
    engine.decisionReady(sub);
    await pause(1000);
    expect(out.results.filter((r) => r.kind === 'decision')).toHaveLength(1);
  });

  it('fetches the fraud result at once when a webhook delivery says the decision made from it is out', async () => {
    // Polls far apart: only the delivery can bring the fraud result within the test.
    const { api, out, engine, scheduler } = setup({
      decisionPolling: false,
      pollInitialMs: 10_000,
      pollMaxMs: 60_000,
    });
    await engine.admit(source, event({ enable_decision: true }), undefined);
    await pause(20);
    expect(api.calls.filter((c) => c.startsWith('get:'))).toEqual([]);
    engine.decisionReady(out.states[0]!.submission_id);
    await waitUntil(() => out.results.length >= 2, 1000).catch(() => undefined);
    expect(out.results.map((r) => r.kind).sort()).toEqual(['decision', 'fraud']);
    // The other results wait for their own polls.
    expect(api.calls).not.toContain('get:quality');
    await settled(engine.stop(100));
    scheduler.stop();
  });

  it('keeps fetching a delivered decision that is not there yet, polling off or not', async () => {
    const { api, out, engine, until } = setup({ decisionPolling: false });
    api.notReadyPolls.set('decision', 2);
    await engine.admit(
      source,
      event({ pipeline_configuration: 'QUALITY_ONLY', enable_decision: true }),
      undefined,
    );
    await pause(20);
    engine.decisionReady(out.states[0]!.submission_id);
    await until(1);
    expect(api.calls.filter((c) => c === 'get:decision')).toHaveLength(3);
    expect(out.results.find((r) => r.kind === 'decision')?.source).toBe('webhook');
  });

  it('publishes a decision once when a webhook and a poll fetch it at the same time', async () => {
    const { api, out, engine, until } = setup({ decisionPolling: true });
    let release: () => void = () => undefined;
    api.holdDecision = new Promise<void>((r) => (release = r));
    await engine.admit(
      source,
      event({ pipeline_configuration: 'QUALITY_ONLY', enable_decision: true }),
      undefined,
    );
    const sub = out.states[0]!.submission_id;
    // The poll's GET is out when the delivery comes: a second GET starts, and both succeed.
    await waitUntil(() => api.calls.includes('get:decision'), 500);
    engine.decisionReady(sub);
    await pause(10);
    expect(api.calls.filter((c) => c === 'get:decision')).toHaveLength(2);
    release();
    await until(1);
    await pause(1000);
    expect(out.results.filter((r) => r.kind === 'decision')).toHaveLength(1);
  });

  it('fetches the decision of a resumed document at once when a delivery was recorded meanwhile', async () => {
    const { api, out, engine, until } = setup({ decisionPolling: false }, undefined, ['sub-resumed']);
    const state = {
      ...createdState(
        source,
        event({ pipeline_configuration: 'QUALITY_ONLY', enable_decision: true }),
        { submission_id: 'sub-resumed', upload_url: 'http://upload/x' },
        Date.now(),
        undefined,
      ),
      status: 'UPLOADED' as const,
      pending: undefined,
      published: ['quality' as const],
    };
    expect(await engine.admit(source, event({ enable_decision: true }), recorded(state))).toBe('resumed');
    await until(1);
    expect(api.calls).toEqual(['get:decision']);
    expect(out.results).toEqual([{ kind: 'decision', submission_id: 'sub-resumed', source: 'webhook' }]);
  });

  it('ends a document whose decision never comes by its deadline: decision/deadline, slot released', async () => {
    const { out, engine, until, scheduler } = setup({ decisionPolling: false, deadlineMs: 60 });
    await engine.admit(
      source,
      event({ pipeline_configuration: 'QUALITY_ONLY', enable_decision: true }),
      undefined,
    );
    await until(1);
    expect(out.deadLetters).toHaveLength(1);
    expect(out.deadLetters[0]).toMatchObject({
      stage: 'decision',
      error_code: 'deadline',
      event_id: 'evt-1',
    });
    expect(out.deadLetters[0]?.message).toContain('decision polling is off');
    expect(out.results.map((r) => r.kind)).toEqual(['quality']);
    expect(out.states.at(-1)?.status).toBe('FAILED');
    expect(engine.inFlight).toBe(0);
    expect(scheduler.size).toBe(0);
  });

  it('names every missing result at the deadline when more than the decision is missing', async () => {
    const { api, out, engine, until } = setup({ decisionPolling: false, deadlineMs: 40 });
    api.notReadyPolls.set('quality', 1000);
    await engine.admit(
      source,
      event({ pipeline_configuration: 'QUALITY_ONLY', enable_decision: true }),
      undefined,
    );
    await until(1);
    expect(out.deadLetters).toHaveLength(1);
    expect(out.deadLetters[0]).toMatchObject({ stage: 'poll', error_code: 'deadline_exceeded' });
    expect(out.deadLetters[0]?.message).toContain('quality, decision');
  });

  it('cancels the deadline when the document finishes, and times a replay from its start', async () => {
    const { out, engine, until, scheduler } = setup({ deadlineMs: 1000 });
    await engine.admit(source, event({ pipeline_configuration: 'QUALITY_ONLY' }), undefined);
    await until(1);
    expect(scheduler.size).toBe(0);
    // Finished long before the deadline window: a replay still re-emits its results.
    const done = out.states.at(-1)!;
    const replay = { generation: 1, until_offset: '1000', at: Date.now() };
    expect(
      await engine.admit(source, event({ pipeline_configuration: 'QUALITY_ONLY' }), recorded(done, replay)),
    ).toBe('replayed');
    await until(2);
    expect(out.deadLetters).toEqual([]);
    expect(out.results.map((r) => r.kind)).toEqual(['quality', 'quality']);
  });

  it('stops a revoked partition without failing its documents', async () => {
    const { api, out, engine } = setup();
    api.notReadyPolls.set('quality', 1000);
    await engine.admit(source, event({ pipeline_configuration: 'QUALITY_ONLY' }), undefined);
    // Another partition's revoke stops nothing; its own counts the document it stopped.
    expect(engine.revoke([1])).toBe(0);
    expect(engine.inFlight).toBe(1);
    expect(engine.revoke([0])).toBe(1);
    expect(engine.inFlight).toBe(0);
    // Past its deadline: nothing of it runs on.
    await pause(61_000);
    expect(out.deadLetters).toEqual([]);
    expect(out.states.some((s) => s.status === 'FAILED')).toBe(false);
  });

  it('deletes the submission after publishing when configured', async () => {
    const { api, engine, until } = setup({ deleteAfterPublish: true });
    await engine.admit(source, event({ pipeline_configuration: 'QUALITY_ONLY' }), undefined);
    await until(1);
    await pause(10);
    expect(api.calls.at(-1)).toBe('delete');
  });

  it('never creates twice when the state write after a create fails and the record comes back', async () => {
    const { api, out, engine, until } = setup();
    out.failOnce.add('CREATED');
    await expect(engine.admit(source, event(), undefined)).rejects.toThrow('state topic unavailable');
    expect(await engine.admit(source, event(), undefined)).toBe('started');
    await until(1);
    expect(api.calls.filter((c) => c === 'create')).toHaveLength(1);
    expect(out.states[0]?.submission_id).toBe(out.states.at(-1)?.submission_id);
    expect(out.states.at(-1)?.status).toBe('DONE');
  });

  it('records a create whose state write failed once its partition left (a crash), but uploads nothing', async () => {
    const { api, out, engine } = setup();
    out.failOnce.add('CREATED');
    await expect(engine.admit(source, event(), undefined)).rejects.toThrow('state topic unavailable');
    // The consumer crashed and left its group: the partition may be another member's by now.
    engine.holdCreates();
    await expect(engine.admit(source, event(), undefined)).rejects.toThrow(/being revoked/);
    await pause(1000);
    // Recorded (its owner resumes it from the state), never given the file here.
    expect(out.states.map((st) => st.status)).toEqual(['CREATED']);
    expect(api.calls.filter((c) => c === 'create')).toHaveLength(1);
    expect(api.calls).not.toContain('upload');
    expect(engine.inFlight).toBe(0);
  });

  it('retries a state write that fails in the background instead of leaving the document in flight', async () => {
    const { out, engine, until } = setup();
    out.failOnce.add('UPLOADED');
    out.failOnce.add('DONE');
    await engine.admit(source, event(), undefined);
    await until(1);
    expect(out.states.map((st) => st.status)).toEqual([
      'CREATED',
      'UPLOADED',
      'UPLOADED',
      'UPLOADED',
      'DONE',
    ]);
    expect(engine.inFlight).toBe(0);
  });

  describe('before a partition is released', () => {
    const transient = () => new KafkaError('the state topic has no leader', { retriable: true });
    const second = { ...source, offset: '8' };

    it('sends no create once the revocation began, and records the creates already sent first', async () => {
      const { api, out, engine } = setup();
      let answer: () => void = () => undefined;
      api.slowAnswer = new Promise<void>((r) => (answer = r));
      const first = engine.admit(source, event());
      await waitUntil(() => api.calls.includes('create'));
      let barrierDone = false;
      const barrier = engine.recordBeforeRevocation(5000).then((n) => {
        barrierDone = true;
        return n;
      });
      await expect(engine.admit(second, event({ event_id: 'evt-2' }))).rejects.toBeInstanceOf(
        RevocationInProgressError,
      );
      // Most of the barrier's bound: it still waits for the create that was sent.
      await pause(4000);
      expect(barrierDone).toBe(false);
      answer();
      expect(await settled(first)).toBe('started');
      expect(await settled(barrier)).toBe(0);
      expect(api.calls.filter((c) => c === 'create')).toHaveLength(1);
      expect(out.states.map((st) => [st.event_id, st.status])).toContainEqual(['evt-1', 'CREATED']);
    });

    it('never sends a create that was queued behind the rate limiter when the revocation began', async () => {
      const { api, engine } = setup();
      let release: () => void = () => undefined;
      api.queued = new Promise<void>((r) => (release = r));
      const queued = engine.admit(source, event());
      await pause(5);
      expect(await settled(engine.recordBeforeRevocation(5000))).toBe(0);
      release();
      await expect(queued).rejects.toBeInstanceOf(RevocationInProgressError);
      expect(api.calls).not.toContain('create');
    });

    it('creates again after the group settled, only for the partitions it kept', async () => {
      const { api, engine } = setup();
      await settled(engine.recordBeforeRevocation(1000));
      engine.assigned([0]);
      expect(await engine.admit(source, event())).toBe('started');
      await expect(
        engine.admit({ ...source, partition: 1 }, event({ event_id: 'evt-2' })),
      ).rejects.toBeInstanceOf(RevocationInProgressError);
      expect(api.calls.filter((c) => c === 'create')).toHaveLength(1);
    });

    it('keeps a created submission whose state Kafka refused, creates nothing new meanwhile, and records it before release', async () => {
      const { api, out, engine, leftEmpty } = setup();
      out.failAll = transient();
      await expect(engine.admit(source, event())).rejects.toThrow('no leader');
      expect(engine.gate.kafkaUnavailableReason).toMatch(/state topic did not take a write/);
      await expect(engine.admit(second, event({ event_id: 'evt-2' }))).rejects.toBeInstanceOf(
        KafkaUnavailableError,
      );
      setTimeout(() => (out.failAll = null), 30);
      expect(await settled(engine.recordBeforeRevocation(5000))).toBe(0);
      engine.assigned([1]);
      expect(leftEmpty).toEqual([]);
      expect(out.states.map((st) => [st.event_id, st.status])).toEqual([['evt-1', 'CREATED']]);
      expect(engine.gate.kafkaUnavailableReason).toBeNull();
      expect(api.calls.filter((c) => c === 'create')).toHaveLength(1);
    });

    it('counts a submission it could not record within the bound as left empty once its partition is gone', async () => {
      const { out, engine, leftEmpty } = setup();
      out.failAll = transient();
      await expect(engine.admit(source, event())).rejects.toThrow('no leader');
      expect(await settled(engine.recordBeforeRevocation(50))).toBe(1);
      engine.assigned([0]);
      expect(leftEmpty).toEqual([]);
      engine.assigned([1]);
      expect(leftEmpty).toEqual([1]);
    });

    it('writes what it kept when Kafka is probed, and admits again', async () => {
      const { api, out, engine } = setup();
      out.failAll = transient();
      await expect(engine.admit(source, event())).rejects.toThrow('no leader');
      await expect(engine.recordUnrecorded()).rejects.toThrow('no leader');
      out.failAll = null;
      await engine.recordUnrecorded();
      expect(engine.gate.kafkaUnavailableReason).toBeNull();
      expect(await engine.admit(second, event({ event_id: 'evt-2' }))).toBe('started');
      expect(api.calls.filter((c) => c === 'create')).toHaveLength(2);
    });
  });
});
