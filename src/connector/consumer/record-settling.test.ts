import { silentLogger } from '../../observability/logger.js';
import { settleRecord, type RecordSettling } from './record-settling.js';

class Outage extends Error {}
class KafkaDown extends Error {}

function settling(failures: unknown[], extra: Partial<RecordSettling> = {}) {
  const log: string[] = [];
  const s: RecordSettling = {
    handle: async () => {
      log.push('handle');
      const next = failures.shift();
      if (next) throw next;
    },
    isOutage: (err) => err instanceof Outage,
    outage: async () => {
      log.push('outage');
    },
    retriable: (err) => err instanceof KafkaDown,
    end: async (err) => {
      log.push(`dead letter: ${(err as Error).message}`);
    },
    abandoned: () => false,
    sleep: async (ms) => {
      log.push(`sleep ${ms > 0 ? '>0' : ms}`);
    },
    logger: silentLogger,
    where: { topic: 't', partition: 0, offset: '1' },
    backoff: { initialMs: 1, maxMs: 2 },
    ...extra,
  };
  return { s, log };
}

describe('settleRecord', () => {
  it('handles the record again after an outage and after a retriable failure', async () => {
    const { s, log } = settling([new Outage('registry down'), new KafkaDown('no ack')]);
    await expect(settleRecord(s)).resolves.toBe('done');
    expect(log).toEqual(['handle', 'outage', 'handle', 'sleep >0', 'handle']);
  });

  it('ends a record whose handling throws anything else with a dead letter, tried again until Kafka takes it', async () => {
    const { s, log } = settling([new RangeError('Maximum call stack size exceeded')]);
    let deadLetterTries = 0;
    s.end = async (err) => {
      deadLetterTries += 1;
      if (deadLetterTries === 1) throw new KafkaDown('dead letter not acknowledged');
      log.push(`dead letter: ${(err as Error).message}`);
    };
    await expect(settleRecord(s)).resolves.toBe('done');
    expect(log).toEqual(['handle', 'sleep >0', 'dead letter: Maximum call stack size exceeded']);
  });

  it('gives the record up once it is abandoned (stop, revoke)', async () => {
    let abandoned = false;
    const { s, log } = settling([new KafkaDown('no ack')], {
      abandoned: () => abandoned,
      sleep: async () => {
        abandoned = true;
      },
    });
    await expect(settleRecord(s)).resolves.toBe('abandoned');
    expect(log).toEqual(['handle']);
  });
});
