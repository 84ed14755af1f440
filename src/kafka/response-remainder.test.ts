import { connectionClass, releaseEmptyRemainders, type FramingConnection } from './response-remainder.js';

interface Framing extends FramingConnection {
  bytesNeeded: number;
  authHandlers: null;
  requestQueue: { fulfillRequest(r: { correlationId: number; payload: Buffer; size: number }): void };
}

/** A real kafkajs Connection's framing state, without a socket. */
function connection(received: Array<{ correlationId: number; payload: string }>): Framing {
  const c = Object.create(connectionClass().prototype) as Framing;
  c.chunks = [];
  c.bytesBuffered = 0;
  c.bytesNeeded = 4;
  c.authHandlers = null;
  c.requestQueue = {
    fulfillRequest: ({ correlationId, payload }) =>
      received.push({ correlationId, payload: payload.toString() }),
  };
  return c;
}

/** One response as a broker frames it: size, correlation id, payload. */
function frame(correlationId: number, payload: string): Buffer {
  const body = Buffer.from(payload);
  const out = Buffer.alloc(8 + body.length);
  out.writeInt32BE(4 + body.length, 0);
  out.writeInt32BE(correlationId, 4);
  body.copy(out, 8);
  return out;
}

describe('releaseEmptyRemainders', () => {
  beforeAll(() => releaseEmptyRemainders());

  it('keeps no reference to the buffer of a response once nothing follows it', () => {
    const received: Array<{ correlationId: number; payload: string }> = [];
    const c = connection(received);
    const big = Buffer.concat([frame(1, 'x'.repeat(1 << 20))]);
    c.processData(big);
    expect(received.map((r) => [r.correlationId, r.payload.length])).toEqual([[1, 1 << 20]]);
    // Without the fix: one empty slice whose buffer is the whole megabyte.
    expect(c.chunks.every((chunk) => chunk.buffer !== big.buffer)).toBe(true);
    expect(c.chunks).toEqual([]);
  });

  it('still frames responses split across reads and several in one read, keeping a partial one', () => {
    const received: Array<{ correlationId: number; payload: string }> = [];
    const c = connection(received);
    const one = frame(1, 'first');
    c.processData(one.subarray(0, 6));
    c.processData(one.subarray(6));
    const two = frame(2, 'second');
    const three = frame(3, 'third');
    c.processData(Buffer.concat([two, three.subarray(0, 5)]));
    expect(received.map((r) => r.payload)).toEqual(['first', 'second']);
    expect(c.bytesBuffered).toBe(5);
    c.processData(three.subarray(5));
    expect(received.map((r) => [r.correlationId, r.payload])).toEqual([
      [1, 'first'],
      [2, 'second'],
      [3, 'third'],
    ]);
    expect(c.chunks).toEqual([]);
  });
});
