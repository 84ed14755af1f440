import fc from 'fast-check';
import kafkajs from 'kafkajs';
import { JavaCompatiblePartitioner, murmur2, partitionOfKey } from './partitioner.js';

const { Partitioners } = kafkajs;

function metadata(n: number, leaderless: number[] = []) {
  return Array.from({ length: n }, (_, partitionId) => ({
    partitionId,
    leader: leaderless.includes(partitionId) ? -1 : 0,
    partitionErrorCode: 0,
    replicas: [0],
    isr: [0],
  }));
}

describe('JavaCompatiblePartitioner', () => {
  it('puts every key where kafkajs’ DefaultPartitioner (the Java client’s murmur2) puts it', () => {
    const theirs = Partitioners.DefaultPartitioner();
    const ours = JavaCompatiblePartitioner();
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'binary', maxLength: 80 }), fc.uint8Array({ maxLength: 80 })),
        fc.integer({ min: 1, max: 64 }),
        (raw, n) => {
          const key = typeof raw === 'string' ? raw : Buffer.from(raw);
          const args = { topic: 't', partitionMetadata: metadata(n), message: { key, value: 'v' } };
          expect(ours(args)).toBe(theirs(args));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('matches known murmur2 values of the Java client', () => {
    // Values from Kafka's UtilsTest.testMurmur2 (org.apache.kafka.common.utils).
    const cases: Array<[string, number]> = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ];
    for (const [text, hash] of cases) expect(murmur2(Buffer.from(text))).toBe(hash);
    expect(partitionOfKey('foobar', 7)).toBe((-790332482 & 0x7fffffff) % 7);
  });

  it('keeps an explicit partition, and spreads keyless messages over partitions with a leader', () => {
    const ours = JavaCompatiblePartitioner();
    const meta = metadata(4, [1]);
    expect(
      ours({ topic: 't', partitionMetadata: meta, message: { key: 'k', value: 'v', partition: 3 } }),
    ).toBe(3);
    const seen = new Set<number>();
    for (let i = 0; i < 12; i++) {
      seen.add(ours({ topic: 't', partitionMetadata: meta, message: { key: null, value: 'v' } }));
    }
    expect([...seen].sort()).toEqual([0, 2, 3]);
  });
});
