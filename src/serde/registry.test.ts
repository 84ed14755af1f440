import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeDocumentArrived } from './input.js';
import { avroType } from './avro-schemas.js';
import {
  DecodeError,
  EncodeError,
  Registry,
  RegistryUnavailableError,
  type RegistryError,
} from './registry.js';

/** A local registry whose answer per schema id is set by each test; counts the lookups. */
let server: Server;
let url: string;
const answers = new Map<number, { status: number; body: string }>();
const lookups: number[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    if (request.url?.startsWith('/config/')) {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"compatibilityLevel":"BACKWARD"}');
      return;
    }
    if (request.method === 'POST' && /\/subjects\/[^/]+\/versions$/.test(request.url ?? '')) {
      request.resume();
      request.on('end', () =>
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"id":7}'),
      );
      return;
    }
    if (request.url?.endsWith('/schemas/types')) {
      response.writeHead(200, { 'content-type': 'application/json' }).end('["AVRO"]');
      return;
    }
    const match = /\/schemas\/ids\/(\d+)$/.exec(request.url ?? '');
    const id = Number(match?.[1]);
    lookups.push(id);
    const answer = answers.get(id) ?? { status: 404, body: '{"error_code":40403,"message":"not found"}' };
    response.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  answers.clear();
  lookups.length = 0;
});

const wire = (schemaId: number, payload: Buffer) => {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(schemaId, 1);
  return Buffer.concat([header, payload]);
};

const schema = (value: unknown) => ({ status: 200, body: JSON.stringify({ schema: JSON.stringify(value) }) });

describe('schema lookups by id', () => {
  it('looks an unknown id up once for 50 records, then again after the negative cache expires', async () => {
    let now = 1_000;
    const registry = new Registry({ url, unknownSchemaTtlMs: 60_000, now: () => now });
    const results = await Promise.all(
      Array.from({ length: 50 }, () => decodeDocumentArrived(wire(404_001, Buffer.from([0])), registry)),
    );
    for (const result of results) expect(result).toMatchObject({ ok: false, code: 'unknown_schema' });
    await decodeDocumentArrived(wire(404_001, Buffer.from([0])), registry);
    expect(lookups).toEqual([404_001]);
    expect(registry.schemaLookupCount).toBe(1);
    now += 60_001;
    await expect(registry.writerType(404_001)).rejects.toMatchObject({ code: 'unknown_schema' });
    expect(lookups).toEqual([404_001, 404_001]);
  });

  it.each([
    [422, 'schema_rejected'],
    [400, 'schema_rejected'],
    [404, 'unknown_schema'],
  ])('treats %i as the data fault %s, with the id and status', async (status, code) => {
    answers.set(7, { status, body: '{"error_code":42202,"message":"invalid id"}' });
    const registry = new Registry({ url });
    const error = await registry.writerType(7).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DecodeError);
    expect(error).toMatchObject({ code, schemaId: 7, status });
    await expect(registry.writerType(7)).rejects.toBe(error);
    expect(lookups).toEqual([7]);
  });

  it.each([500, 503, 408, 429, 401, 403])(
    'treats %i as an outage: retriable, not cached, never a dead letter',
    async (status) => {
      answers.set(8, { status, body: 'busy' });
      const registry = new Registry({ url });
      const attempt = decodeDocumentArrived(wire(8, Buffer.from([0])), registry);
      await expect(attempt).rejects.toBeInstanceOf(RegistryUnavailableError);
      await expect(registry.writerType(8)).rejects.toMatchObject({ retriable: true, status });
      expect(lookups).toEqual([8, 8]);
      answers.set(8, schema('string'));
      await expect(registry.writerType(8)).resolves.toBeDefined();
    },
  );

  it('treats a refused connection, a timeout and a non-JSON body as outages', async () => {
    const closed = new Registry({ url: 'http://127.0.0.1:1' });
    await expect(closed.writerType(1)).rejects.toBeInstanceOf(RegistryUnavailableError);
    const slow = new Registry({
      url,
      requestTimeoutMs: 50,
      fetch: ((_input: unknown, init?: RequestInit) =>
        new Promise((_resolve, reject) =>
          init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
        )) as typeof fetch,
    });
    const timedOut = await slow.writerType(1).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(RegistryUnavailableError);
    expect((timedOut as RegistryError).retriable).toBe(true);
    answers.set(9, { status: 200, body: '<html>proxy error</html>' });
    await expect(new Registry({ url }).writerType(9)).rejects.toBeInstanceOf(RegistryUnavailableError);
  });

  it('shares one request among concurrent lookups of a known id and caches it', async () => {
    answers.set(11, schema('string'));
    const registry = new Registry({ url });
    await Promise.all(Array.from({ length: 20 }, () => registry.writerType(11)));
    await registry.writerType(11);
    expect(lookups).toEqual([11]);
  });

  it('rejects a schema that is not Avro or not usable, as schema_rejected', async () => {
    answers.set(12, { status: 200, body: JSON.stringify({ schema: '{}', schemaType: 'PROTOBUF' }) });
    answers.set(13, { status: 200, body: JSON.stringify({ schema: '{"type":"nope"}' }) });
    const registry = new Registry({ url });
    await expect(registry.writerType(12)).rejects.toMatchObject({ code: 'schema_rejected' });
    await expect(registry.writerType(13)).rejects.toMatchObject({ code: 'schema_rejected' });
  });
});

describe('checkAvailable', () => {
  it('resolves when the registry answers and throws RegistryUnavailableError when it does not', async () => {
    await expect(new Registry({ url }).checkAvailable()).resolves.toBeUndefined();
    await expect(new Registry({ url: 'http://127.0.0.1:1' }).checkAvailable()).rejects.toBeInstanceOf(
      RegistryUnavailableError,
    );
  });
});

describe('bounded decoding', () => {
  it('dead-letters the 32-byte array<null> record claiming 10^12 items as invalid_avro', async () => {
    answers.set(21, schema({ type: 'array', items: 'null' }));
    const registry = new Registry({ url });
    // 10^12 as a zig-zag varint, padded to 32 bytes of payload.
    const count: number[] = [];
    for (let z = 2e12; ; z = Math.floor(z / 128)) {
      if (z < 128) {
        count.push(z);
        break;
      }
      count.push((z % 128) | 0x80);
    }
    const payload = Buffer.concat([Buffer.from(count), Buffer.alloc(32 - count.length)]);
    const result = await decodeDocumentArrived(wire(21, payload), registry);
    expect(result).toMatchObject({ ok: false, code: 'invalid_avro', format: 'avro' });
    if (!result.ok) expect(result.message).toMatch(/1000000000000 empty items/);
  });
});

describe('encode', () => {
  const value = (message: string | null) => ({
    submission_id: 'sub-1',
    event_id: 'evt-1',
    query_id: null,
    attributes: {},
    status: 'SUCCESS',
    produced_at: 1,
    message,
    document_type: 'invoice',
    confidence: 0.5,
    analysis_time: null,
    deployment_version: null,
    sha256: null,
    response_json: '{}',
  });

  it('writes the wire header and the Avro bytes, values larger than its scratch buffer included', async () => {
    const registry = new Registry({ url });
    await registry.registerValueSchema('out', 'ClassificationResult');
    const type = avroType('ClassificationResult');
    for (const v of [value('short'), value('x'.repeat(100_000)), value(null)]) {
      const encoded = registry.encode('out', v);
      expect(encoded[0]).toBe(0);
      expect(encoded.readUInt32BE(1)).toBe(7);
      expect(encoded.subarray(5)).toEqual(type.toBuffer(v));
    }
  });

  it('refuses a value that does not match, naming the fields', async () => {
    const registry = new Registry({ url });
    await registry.registerValueSchema('out', 'ClassificationResult');
    const bad = { ...value(null), confidence: 'high', status: 3 };
    let error: unknown;
    try {
      registry.encode('out', bad);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EncodeError);
    expect((error as EncodeError).paths).toEqual(expect.arrayContaining(['confidence', 'status']));
  });
});
