import type { RecordFeed, ViewRecord } from '../../kafka/view.js';
import { decodeState, encodeState, type DocumentState } from './codec.js';
import { StateStore } from './store.js';
import { StateWriter } from './writer.js';

function state(overrides: Partial<DocumentState> = {}): DocumentState {
  return {
    v: 1,
    event_id: 'evt-1',
    submission_id: 'sub-1',
    status: 'CREATED',
    partition: 0,
    offset: '5',
    query_id: null,
    pipeline: 'FRAUD_ONLY',
    enable_decision: false,
    attributes: {},
    traceparent: null,
    awaited: ['fraud'],
    published: [],
    created_at: 1,
    updated_at: 1,
    ...overrides,
  };
}

class FakeFeed implements RecordFeed {
  push: (record: ViewRecord) => void = () => undefined;
  started = false;
  async start(): Promise<void> {
    this.started = true;
  }
  async stop(): Promise<void> {}
  async caughtUp(): Promise<void> {}
}

function store() {
  const feed = new FakeFeed();
  const s = new StateStore((onRecord) => {
    feed.push = onRecord;
    return feed;
  });
  const record = (key: string, value: DocumentState | null): void =>
    feed.push({ key, value: value ? encodeState(value) : null, partition: 0, offset: '0' });
  return { s, feed, record };
}

describe('state codec', () => {
  it('round-trips a state through its JSON bytes', () => {
    const s = state({ pending: undefined, error: { stage: 'poll', code: 'x', message: 'y' } });
    expect(decodeState(encodeState(s))).toEqual(JSON.parse(JSON.stringify(s)));
  });

  it('rejects values of another version or without an event id', () => {
    expect(decodeState(Buffer.from(JSON.stringify({ ...state(), v: 2 })))).toBeNull();
    expect(decodeState(Buffer.from(JSON.stringify({ v: 1 })))).toBeNull();
    expect(decodeState(Buffer.from('null'))).toBeNull();
  });
});

describe('StateStore', () => {
  it('materialises records read from the topic, by event and by submission', () => {
    const { s, record } = store();
    record('evt-1', state());
    record('evt-2', state({ event_id: 'evt-2', submission_id: 'sub-2', partition: 1 }));
    expect(s.size).toBe(2);
    expect(s.get('evt-2')?.partition).toBe(1);
    expect(s.bySubmission('sub-2')?.event_id).toBe('evt-2');
    expect(s.bySubmission('sub-3')).toBeUndefined();
  });

  it('never moves a document backwards when an older record is read after a newer write', () => {
    const { s, record } = store();
    s.apply(state({ status: 'DONE', updated_at: 10 }));
    record('evt-1', state({ status: 'UPLOADED', updated_at: 5 }));
    expect(s.get('evt-1')?.status).toBe('DONE');
    record('evt-1', state({ status: 'FAILED', updated_at: 11 }));
    expect(s.get('evt-1')?.status).toBe('FAILED');
  });

  it('forgets a document on a tombstone', () => {
    const { s, record } = store();
    record('evt-1', state());
    record('evt-1', null);
    expect(s.get('evt-1')).toBeUndefined();
    expect(s.bySubmission('sub-1')).toBeUndefined();
    expect(s.size).toBe(0);
  });

  it('lists the unfinished documents of one partition only', () => {
    const { s } = store();
    s.apply(state({ event_id: 'a', status: 'CREATED' }));
    s.apply(state({ event_id: 'b', status: 'UPLOADED' }));
    s.apply(state({ event_id: 'c', status: 'DONE' }));
    s.apply(state({ event_id: 'd', status: 'FAILED' }));
    s.apply(state({ event_id: 'e', status: 'CREATED', partition: 1 }));
    expect(
      s
        .unfinished(0)
        .map((x) => x.event_id)
        .sort(),
    ).toEqual(['a', 'b']);
    expect(s.unfinished(1).map((x) => x.event_id)).toEqual(['e']);
  });

  it('starts its feed', async () => {
    const { s, feed } = store();
    await s.start();
    expect(feed.started).toBe(true);
  });
});

describe('StateWriter', () => {
  it('writes to the input partition, keyed by event id, and applies the state once acknowledged', async () => {
    const sent: Array<{ topic: string; key: unknown; partition: unknown; value: unknown }> = [];
    const { s } = store();
    let ack: () => void = () => undefined;
    const writer = new StateWriter(
      {
        send: (topic, m) => {
          sent.push({ topic, key: m.key, partition: m.partition, value: m.value });
          return new Promise<void>((resolve) => (ack = resolve));
        },
      },
      'state-topic',
      s,
    );
    const written = writer.writeState(state({ partition: 3 }));
    await Promise.resolve();
    expect(s.get('evt-1')).toBeUndefined();
    ack();
    await written;
    expect(s.get('evt-1')?.partition).toBe(3);
    expect(sent).toEqual([
      { topic: 'state-topic', key: 'evt-1', partition: 3, value: encodeState(state({ partition: 3 })) },
    ]);
  });

  it('leaves the store unchanged when Kafka refuses the write', async () => {
    const { s } = store();
    const writer = new StateWriter({ send: async () => Promise.reject(new Error('down')) }, 't', s);
    await expect(writer.writeState(state())).rejects.toThrow('down');
    expect(s.get('evt-1')).toBeUndefined();
  });
});
