import { jest } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { OPTIMISATIONS_OFF_ENV } from '../util/optimisations.js';
import { createBlobSource } from './index.js';
import {
  CountingBlobServer,
  policy,
  readAll,
  s3TestClient as client,
  TEST_S3_CREDENTIALS,
} from './test-helpers.js';

describe('s3-signed-get switched off', () => {
  let server: CountingBlobServer;

  beforeAll(async () => {
    server = await new CountingBlobServer().start();
    server.secretAccessKey = TEST_S3_CREDENTIALS.secretAccessKey;
  });

  afterAll(async () => {
    delete process.env[OPTIMISATIONS_OFF_ENV];
    await server.stop();
  });

  it("fetches a SigV4 bucket's object through the SDK's send(), not its own signed GET", async () => {
    const bytes = randomBytes(1000);
    server.put('/docs-in/k.pdf', bytes);
    const s3 = client(server.origin);
    const send = jest
      .spyOn(s3, 'send')
      .mockImplementation(async () => ({ Body: Readable.from([bytes]), ContentLength: bytes.length }));
    // On: the signed GET reaches the server, send() is not called.
    const own = createBlobSource(policy({ s3Buckets: ['docs-in'] }), { s3Client: s3 });
    try {
      const blob = await own.resolve({ url: 's3://docs-in/k.pdf' });
      expect((await readAll(await blob.open())).equals(bytes)).toBe(true);
      await blob.cleanup();
    } finally {
      own.close();
    }
    expect(send).not.toHaveBeenCalled();
    const gets = server.gets;
    process.env[OPTIMISATIONS_OFF_ENV] = 's3-signed-get';
    const plain = createBlobSource(policy({ s3Buckets: ['docs-in'] }), { s3Client: s3 });
    try {
      const blob = await plain.resolve({ url: 's3://docs-in/k.pdf' });
      expect((await readAll(await blob.open())).equals(bytes)).toBe(true);
      await blob.cleanup();
    } finally {
      plain.close();
    }
    expect(send).toHaveBeenCalledTimes(1);
    expect((send.mock.calls[0]?.[0] as { input: unknown }).input).toEqual({
      Bucket: 'docs-in',
      Key: 'k.pdf',
    });
    expect(server.gets).toBe(gets);
  });
});
