import { nextGeneration, writeReplayMarkers } from './replay-markers.js';
import { MAX_GENERATION, REPLAY_KEY, decodeReplayMarker } from './replay-marker.js';

describe('replay markers', () => {
  it('takes the generation after every marker written so far', () => {
    expect(nextGeneration(new Map())).toBe(1);
    const m = (generation: number) => ({ generation, until_offset: '0', at: 0 });
    expect(
      nextGeneration(
        new Map([
          [0, m(4)],
          [1, m(7)],
          [2, m(2)],
        ]),
      ),
    ).toBe(8);
    expect(() => nextGeneration(new Map([[0, m(MAX_GENERATION)]]))).toThrow('no further replay');
  });

  it('writes one marker per partition under the reserved key, to that partition', async () => {
    const sent: Array<{ topic: string; messages: unknown[] }> = [];
    const producer = {
      send: async (topic: string, messages: unknown[]) => {
        sent.push({ topic, messages });
        return [];
      },
    };
    await writeReplayMarkers(
      producer,
      'state',
      3,
      new Map([
        [0, '12'],
        [2, '40'],
      ]),
      1000,
    );
    expect(sent).toHaveLength(1);
    const messages = sent[0]!.messages as Array<{ key: Buffer; value: Buffer; partition: number }>;
    expect(messages.map((m) => [m.key.toString(), m.partition, decodeReplayMarker(m.value)])).toEqual([
      [REPLAY_KEY, 0, { generation: 3, until_offset: '12', at: 1000 }],
      [REPLAY_KEY, 2, { generation: 3, until_offset: '40', at: 1000 }],
    ]);
  });
});
