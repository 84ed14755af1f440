import type { IncomingMessage } from '../../kafka/consumer.js';
import { InputRecords } from './inputs.js';

const decoder = {
  decode: async (): Promise<unknown> => {
    throw new Error('no Avro in these tests');
  },
};

function record(offset: number, value: string): IncomingMessage {
  return {
    topic: 'in',
    partition: 1,
    offset: String(offset),
    timestamp: '0',
    key: Buffer.from('k'),
    value: Buffer.from(value),
    headers: { traceparent: Buffer.from('tp-1') },
  };
}

describe('InputRecords', () => {
  const log = new Map<number, IncomingMessage>([
    [3, record(3, JSON.stringify({ event_id: 'e-3', blob: { url: 'file:///tmp/a.pdf' }, query_id: 'q' }))],
    [4, record(4, '{ not json')],
  ]);
  const asked: Array<Array<{ partition: number; offset: string | number }>> = [];
  const reader = {
    topic: 'in',
    readMany: async (pointers: Array<{ partition: number; offset: string | number }>) => {
      asked.push(pointers);
      return pointers.map((p) => log.get(Number(p.offset)) ?? null);
    },
  };
  const inputs = new InputRecords(reader, decoder);

  it('reads a resumed document back by pointer: its source and its event', async () => {
    const [found, gone, bad, elsewhere] = await inputs.recall([
      { topic: 'in', partition: 1, offset: '3' },
      { topic: 'in', partition: 1, offset: '9' },
      { topic: 'in', partition: 1, offset: '4' },
      { topic: 'renamed', partition: 1, offset: '3' },
    ]);
    expect(found?.event).toMatchObject({ event_id: 'e-3', query_id: 'q' });
    expect(found?.source).toMatchObject({ topic: 'in', partition: 1, offset: '3', traceparent: 'tp-1' });
    // Gone from the log, unreadable, or on another topic: null, never a guess.
    expect([gone, bad, elsewhere]).toEqual([null, null, null]);
    // Only the configured input topic is asked for.
    expect(asked.at(-1)?.map((p) => p.offset)).toEqual(['3', '9', '4']);
  });

  it('gives a dead letter the original bytes, or null when the record is gone', async () => {
    const source = await inputs.read({ topic: 'in', partition: 1, offset: '4' });
    expect(source?.value?.toString()).toBe('{ not json');
    expect(await inputs.read({ topic: 'in', partition: 1, offset: '8' })).toBeNull();
  });
});
