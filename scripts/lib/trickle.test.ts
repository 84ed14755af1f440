import type { KafkaProducer, OutgoingMessage } from '../../src/kafka/index.js';
import { cpuRatio, produceTrickle, trickleCount, trickleMeasure } from './trickle.js';

const tree = (cpuMs: number) => ({ pids: [1], cpuMs, rssKb: 0 });

describe('trickleCount', () => {
  it('is the documents due in the window at the rate', () => {
    expect(trickleCount(10, 60)).toBe(600);
    expect(trickleCount(10, 15)).toBe(150);
    expect(trickleCount(0.1, 10)).toBe(1);
    expect(trickleCount(0.1, 4)).toBe(0);
  });
});

describe('trickleMeasure', () => {
  it('divides the whole window’s CPU, nothing subtracted, by the documents settled', () => {
    const m = trickleMeasure(tree(1000), tree(7600), { docs: 600, settled: 600, seconds: 60.43 });
    expect(m).toEqual({ docs: 600, settled: 600, seconds: 60.4, cpuMsPerDoc: 11 });
  });

  it('charges the window to the documents that did settle', () => {
    expect(trickleMeasure(tree(0), tree(300), { docs: 100, settled: 60, seconds: 10 }).cpuMsPerDoc).toBe(5);
  });

  it('does not divide by zero when none settled', () => {
    expect(trickleMeasure(tree(10), tree(30), { docs: 5, settled: 0, seconds: 1 }).cpuMsPerDoc).toBe(20);
  });
});

describe('cpuRatio', () => {
  it('is the connector’s CPU per document over the floor’s', () => {
    expect(cpuRatio(11.2, 4)).toBe(2.8);
    expect(cpuRatio(3, 4)).toBe(0.75);
  });

  it('is null when the floor used nothing measurable', () => {
    expect(cpuRatio(11.2, 0)).toBeNull();
  });
});

describe('produceTrickle', () => {
  const producer = () => {
    const requests: Array<{ topic: string; messages: OutgoingMessage[] }> = [];
    const fake = {
      send: async (topic: string, messages: OutgoingMessage[]) => {
        requests.push({ topic, messages });
      },
    };
    return { requests, producer: fake as unknown as KafkaProducer };
  };
  const arrivals = ['a', 'b', 'c'].map((id) => ({ event_id: id, value: `{"event_id":"${id}"}` }));

  it('sends each arrival alone, in order, keyed by its event id', async () => {
    const { requests, producer: p } = producer();
    const sent = await produceTrickle(p, 'in', arrivals, 1000, Date.now() + 60_000);
    expect(sent).toEqual(['a', 'b', 'c']);
    expect(requests.map((r) => r.topic)).toEqual(['in', 'in', 'in']);
    expect(requests.map((r) => r.messages.map((m) => m.key))).toEqual([['a'], ['b'], ['c']]);
    expect(requests[1]!.messages[0]!.value).toBe('{"event_id":"b"}');
  });

  it('sends nothing past the deadline', async () => {
    const { requests, producer: p } = producer();
    expect(await produceTrickle(p, 'in', arrivals, 1000, Date.now() - 1)).toEqual([]);
    expect(requests).toEqual([]);
  });
});
