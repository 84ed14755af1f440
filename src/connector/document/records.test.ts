import type { IncomingMessage } from '../../kafka/consumer.js';
import { silentLogger } from '../../observability/logger.js';
import { arrivalHandler } from './arrivals.js';
import { feedbackHandler } from './feedback.js';
import type { DeadLetter } from '../types.js';

const decoder = {
  decode: async (): Promise<unknown> => {
    throw new Error('no Avro in these tests');
  },
};

function message(value: string | null, topic = 'in'): IncomingMessage {
  return {
    topic,
    partition: 2,
    offset: '9',
    timestamp: '0',
    key: Buffer.from('k'),
    value: value === null ? null : Buffer.from(value),
    headers: { traceparent: Buffer.from('tp') },
  };
}

describe('arrival records', () => {
  function setup() {
    const deadLetters: DeadLetter[] = [];
    const admitted: Array<{ event_id: string; offset: string; existing: unknown }> = [];
    const handle = arrivalHandler({
      decoder,
      engine: {
        admit: async (source, event, existing) => {
          admitted.push({ event_id: event.event_id, offset: source.offset, existing });
          return 'started';
        },
      },
      state: {
        get: (partition, id) =>
          partition === 2 && id === 'seen' ? ({ unfinished: { event_id: 'seen' } } as never) : undefined,
        marker: (partition) => (partition === 2 ? { generation: 1, until_offset: '5', at: 0 } : undefined),
      },
      deadLetter: async (l) => {
        deadLetters.push(l);
      },
      logger: silentLogger,
    });
    return { handle, deadLetters, admitted };
  }

  it('admits a valid event with its source record and any existing state', async () => {
    const { handle, admitted, deadLetters } = setup();
    await handle(message(JSON.stringify({ event_id: 'seen', blob: { url: 'file:///tmp/a.pdf' } })));
    // The state and the replay marker of the record's own partition.
    expect(admitted).toEqual([
      {
        event_id: 'seen',
        offset: '9',
        existing: {
          recorded: { unfinished: { event_id: 'seen' } },
          marker: { generation: 1, until_offset: '5', at: 0 },
        },
      },
    ]);
    expect(deadLetters).toEqual([]);
  });

  it('admits one copy of an event at a time: a second copy reads the state the first recorded', async () => {
    const recorded = new Map<string, string>();
    const seen: Array<{ offset: string; recorded: unknown }> = [];
    let release!: () => void;
    const firstHeld = new Promise<void>((resolve) => (release = resolve));
    const handle = arrivalHandler({
      decoder,
      engine: {
        admit: async (source, event, existing) => {
          seen.push({ offset: source.offset, recorded: existing.recorded });
          if (existing.recorded) return 'running';
          if (source.offset === '1') await firstHeld;
          recorded.set(event.event_id, source.offset);
          return 'started';
        },
      },
      state: {
        get: (_partition, id) =>
          recorded.has(id)
            ? ({ unfinished: { event_id: id, offset: recorded.get(id) } } as never)
            : undefined,
        marker: () => undefined,
      },
      deadLetter: async () => undefined,
      logger: silentLogger,
    });
    const at = (offset: string, id: string, file: string) => ({
      ...message(JSON.stringify({ event_id: id, blob: { url: `file:///tmp/${file}` } })),
      offset,
    });
    const copies = [
      handle(at('1', 'twice', 'a.pdf')),
      handle(at('2', 'twice', 'b.pdf')),
      handle(at('3', 'other', 'c.pdf')),
    ];
    // Another event is not held back by the one being admitted.
    await copies[2];
    expect(seen.map((s) => s.offset)).toEqual(['1', '3']);
    release();
    await Promise.all(copies);
    expect(seen).toEqual([
      { offset: '1', recorded: undefined },
      { offset: '3', recorded: undefined },
      { offset: '2', recorded: { unfinished: { event_id: 'twice', offset: '1' } } },
    ]);
  });

  it('dead-letters unreadable bytes at stage decode and an invalid event at stage validate', async () => {
    const { handle, deadLetters, admitted } = setup();
    await handle(message('{ nope'));
    await handle(message(JSON.stringify({ event_id: 'e-1', blob: 'not an object' })));
    expect(admitted).toEqual([]);
    expect(deadLetters.map((l) => [l.stage, l.error_code, l.source?.offset, l.source?.traceparent])).toEqual([
      ['decode', 'invalid_json', '9', 'tp'],
      ['validate', 'schema_invalid', '9', 'tp'],
    ]);
    expect(deadLetters[1]?.event_id).toBe('e-1');
  });
});

describe('feedback records', () => {
  function setup(fail?: Error & { status?: number; retriable?: boolean }) {
    const deadLetters: DeadLetter[] = [];
    const sent: string[] = [];
    const handle = feedbackHandler({
      decoder,
      api: {
        putFeedback: async (id) => {
          if (fail) throw fail;
          sent.push(id);
        },
      },
      deadLetter: async (l) => {
        deadLetters.push(l);
      },
    });
    return { handle, deadLetters, sent };
  }
  const sub = 'sub-000000000000000000001';
  const feedback = JSON.stringify({ submission_id: sub, feedback: { outcome: 'FRAUD' } });

  it('sends valid feedback to the API', async () => {
    const { handle, sent, deadLetters } = setup();
    await handle(message(feedback, 'fb'));
    expect(sent).toEqual([sub]);
    expect(deadLetters).toEqual([]);
  });

  it('dead-letters an unreadable record and feedback the API refuses for good', async () => {
    const bad = setup();
    await bad.handle(message('[]', 'fb'));
    expect(bad.deadLetters.map((l) => [l.stage, l.error_code])).toEqual([['feedback', 'schema_invalid']]);
    const refused = setup(Object.assign(new Error('gone'), { status: 404, retriable: true }));
    await refused.handle(message(feedback, 'fb'));
    expect(refused.deadLetters.map((l) => [l.stage, l.error_code, l.http_status, l.submission_id])).toEqual([
      ['feedback', 'api_404', 404, sub],
    ]);
  });

  it('throws a retriable failure so the record is tried again', async () => {
    const { handle, deadLetters } = setup(Object.assign(new Error('busy'), { status: 503, retriable: true }));
    await expect(handle(message(feedback, 'fb'))).rejects.toThrow('busy');
    expect(deadLetters).toEqual([]);
  });
});
