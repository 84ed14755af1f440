import type { IncomingMessage } from '../../kafka/consumer.js';
import { MessageTooLargeError } from '../../kafka/errors.js';
import { silentLogger } from '../../observability/logger.js';
import { RegistryUnavailableError } from '../../serde/registry.js';
import { arrivalHandler, type ArrivalLimits } from './arrivals.js';
import type { DeadLetter } from '../types.js';

function message(value: unknown): IncomingMessage {
  return {
    topic: 'in',
    partition: 0,
    offset: '5',
    timestamp: '0',
    key: null,
    value: Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value)),
    headers: {},
  };
}

function setup(
  limits: ArrivalLimits,
  decode: () => Promise<unknown> = async () => ({}),
  admitError: Error | null = null,
) {
  const deadLetters: DeadLetter[] = [];
  const admitted: string[] = [];
  const handle = arrivalHandler({
    decoder: { decode },
    engine: {
      admit: async (_source, event) => {
        if (admitError) throw admitError;
        admitted.push(event.event_id);
        return 'started';
      },
    },
    state: { get: () => undefined, marker: () => undefined },
    deadLetter: async (l) => {
      deadLetters.push(l);
    },
    logger: silentLogger,
    limits,
  });
  return { handle, deadLetters, admitted };
}

const blob = { url: 'file:///tmp/a.pdf' };

describe('the size rule of arrival events', () => {
  it('dead-letters attributes above maxAttributesBytes at validation, without echoing them', async () => {
    const { handle, deadLetters, admitted } = setup({ maxAttributesBytes: 1000 });
    await handle(message({ event_id: 'big', blob, attributes: { pad: 'x'.repeat(2000) } }));
    await handle(message({ event_id: 'small', blob, attributes: { pad: 'x'.repeat(100) } }));
    expect(admitted).toEqual(['small']);
    expect(deadLetters.map((l) => [l.event_id, l.stage, l.error_code, l.attributes])).toEqual([
      ['big', 'validate', 'attributes_too_large', {}],
    ]);
    expect(deadLetters[0]!.message).toContain('connector.maxAttributesBytes');
    expect(deadLetters[0]!.source?.value?.length).toBeGreaterThan(2000);
  });

  it('dead-letters an event whose state record would not fit (event_too_large)', async () => {
    const { handle, deadLetters, admitted } = setup({
      maxAttributesBytes: 1_000_000,
      stateProblem: (_s, e) => (e.event_id === 'huge' ? 'state record of 2000000 bytes' : null),
    });
    await handle(message({ event_id: 'huge', blob }));
    await handle(message({ event_id: 'fine', blob }));
    expect(admitted).toEqual(['fine']);
    expect(deadLetters.map((l) => [l.event_id, l.error_code, l.attributes])).toEqual([
      ['huge', 'event_too_large', {}],
    ]);
  });

  it('dead-letters an event whose state write the broker refused as too large, rethrows other failures', async () => {
    const tooLarge = new MessageTooLargeError({
      topic: 'state',
      size: 2_000_000,
      limit: 1_000_000,
      fromBroker: true,
    });
    const { handle, deadLetters } = setup({ maxAttributesBytes: 1000 }, undefined, tooLarge);
    await handle(message({ event_id: 'e', blob }));
    expect(deadLetters.map((l) => [l.stage, l.error_code])).toEqual([['validate', 'event_too_large']]);
    const other = setup({ maxAttributesBytes: 1000 }, undefined, new Error('state topic unavailable'));
    await expect(other.handle(message({ event_id: 'e', blob }))).rejects.toThrow('state topic unavailable');
    expect(other.deadLetters).toEqual([]);
  });

  it('throws a registry outage (the record is retried), never dead-letters it', async () => {
    const { handle, deadLetters } = setup({ maxAttributesBytes: 1000 }, async () => {
      throw new RegistryUnavailableError('registry answered 503', { status: 503 });
    });
    await expect(handle(message(Buffer.from([0, 0, 0, 0, 9, 1])))).rejects.toBeInstanceOf(
      RegistryUnavailableError,
    );
    expect(deadLetters).toEqual([]);
  });
});
