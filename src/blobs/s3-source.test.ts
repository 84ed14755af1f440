import { S3Client } from '@aws-sdk/client-s3';
import { jest } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { BlobPolicy } from './policy.js';
import { createBlobSource, type BlobSource } from './index.js';
import { s3Error } from './s3-source.js';
import {
  blobError,
  CountingBlobServer,
  policy,
  readAll,
  s3ErrorXml,
  s3TestClient as client,
  TEST_S3_CREDENTIALS,
} from './test-helpers.js';

const { secretAccessKey: SECRET, sessionToken: TOKEN } = TEST_S3_CREDENTIALS;

function sdkError(name: string, status?: number, extra: object = {}): Error {
  return Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status }, ...extra });
}

describe('s3Error', () => {
  it.each([
    [sdkError('NoSuchKey', 404), 'blob_not_found', false],
    [sdkError('NotFound', 404), 'blob_not_found', false],
    [sdkError('NoSuchBucket', 404), 'blob_not_found', false],
    [sdkError('AccessDenied', 403), 'blob_unreadable', false],
    [sdkError('InvalidAccessKeyId', 403), 'blob_unreadable', false],
    [sdkError('SignatureDoesNotMatch', 403), 'blob_unreadable', false],
    [sdkError('InvalidRequest', 400), 'blob_unreadable', false],
    [sdkError('RequestTimeout', 400), 'blob_unreadable', true],
    [sdkError('RequestTimeTooSkewed', 403), 'blob_unreadable', true],
    [sdkError('SlowDown', 503), 'blob_unreadable', true],
    [sdkError('InternalError', 500), 'blob_unreadable', true],
    [sdkError('UnknownError', 502), 'blob_unreadable', true],
    [sdkError('PreconditionFailed', 412), 'blob_unreadable', true],
    [Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'blob_unreadable', true],
  ])('%s → %s (retriable %s)', (error, code, retriable) => {
    const mapped = s3Error(error, 's3://b/k');
    expect(mapped.code).toBe(code);
    expect(mapped.retriable).toBe(retriable);
    expect(mapped.message).toContain('s3://b/k');
  });
});

describe('s3:// GET signed over the pooled client', () => {
  const bytes = randomBytes(40 * 1024);
  let server: CountingBlobServer;
  let source: BlobSource;

  beforeAll(async () => {
    server = await new CountingBlobServer().start();
    server.secretAccessKey = SECRET;
    source = createBlobSource(policy({ s3Buckets: ['docs-in'] }), { s3Client: client(server.origin) });
  });

  afterAll(async () => {
    source.close();
    await server.stop();
  });

  it('sends one GET that an independent SigV4 check accepts, the key encoded as the SDK encodes it', async () => {
    server.put('/docs-in/a%20b/c%21%27%28%29%2A~.pdf', bytes);
    const before = server.gets;
    const blob = await source.resolve({ url: "s3://docs-in/a b/c!'()*~.pdf" });
    expect((await readAll(await blob.open())).equals(bytes)).toBe(true);
    expect((await readAll(await blob.open())).equals(bytes)).toBe(true);
    await blob.cleanup();
    expect(server.gets - before).toBe(1);
    const headers = server.last?.headers ?? {};
    expect(headers['x-amz-content-sha256']).toBe('UNSIGNED-PAYLOAD');
    expect(headers['x-amz-security-token']).toBe(TOKEN);
    expect(headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKUNIT\/\d{8}\/eu-west-1\/s3\/aws4_request, /,
    );
  });

  it('reuses its connections: 20 objects in turn over at most 2', async () => {
    server.put('/docs-in/reuse.pdf', bytes);
    const [gets, connections] = [server.gets, server.connections];
    const reused = createBlobSource(policy({ s3Buckets: ['docs-in'] }), { s3Client: client(server.origin) });
    try {
      for (let i = 0; i < 20; i++) await (await reused.resolve({ url: 's3://docs-in/reuse.pdf' })).cleanup();
    } finally {
      reused.close();
    }
    // undici's pool opens a second connection for the second request (the first one is not yet
    // marked idle when the body has ended), then the two are reused: 20 GETs, 2 connections.
    expect(server.gets - gets).toBe(20);
    expect(server.connections - connections).toBeLessThanOrEqual(2);
  });

  it.each([
    [404, 'NoSuchKey', 'blob_not_found', false],
    [404, 'NoSuchBucket', 'blob_not_found', false],
    [403, 'AccessDenied', 'blob_unreadable', false],
    [400, 'InvalidObjectState', 'blob_unreadable', false],
    [400, 'RequestTimeout', 'blob_unreadable', true],
    [503, 'SlowDown', 'blob_unreadable', true],
    [500, 'InternalError', 'blob_unreadable', true],
  ])(
    'maps an answer %i <Code>%s</Code> to %s (retriable %s), transient failure after 3 GETs',
    async (status, code, kind, retriable) => {
      server.reply(`/docs-in/${code}.pdf`, status, s3ErrorXml(code));
      const before = server.gets;
      const error = await blobError(source.resolve({ url: `s3://docs-in/${code}.pdf` }));
      expect([error.code, error.retriable]).toEqual([kind, retriable]);
      expect(error.message).toContain(`s3://docs-in/${code}.pdf`);
      expect(error.message).toContain(code);
      expect(server.gets - before).toBe(retriable ? 3 : 1);
    },
  );

  it('tries a GET that failed as transient failure again, as the SDK did: two 503 SlowDown, then the object', async () => {
    server.put('/docs-in/flaky.pdf', bytes);
    server.reply('/docs-in/flaky.pdf', 503, s3ErrorXml('SlowDown'), {}, 2);
    const before = server.gets;
    const blob = await source.resolve({ url: 's3://docs-in/flaky.pdf' });
    expect((await readAll(await blob.open())).equals(bytes)).toBe(true);
    await blob.cleanup();
    expect(server.gets - before).toBe(3);
  });

  it('takes an answer without an error document by its status', async () => {
    server.reply('/docs-in/bare-502.pdf', 502, '');
    const error = await blobError(source.resolve({ url: 's3://docs-in/bare-502.pdf' }));
    expect([error.code, error.retriable, error.message]).toEqual([
      'blob_unreadable',
      true,
      's3://docs-in/bare-502.pdf could not be read (UnknownError, HTTP 502)',
    ]);
  });

  it('refuses wrong credentials as S3 does, with no secret in the message', async () => {
    server.put('/docs-in/private.pdf', bytes);
    const wrong = createBlobSource(policy({ s3Buckets: ['docs-in'] }), {
      s3Client: client(server.origin, 'wrong-secret'),
    });
    try {
      const error = await blobError(wrong.resolve({ url: 's3://docs-in/private.pdf' }));
      expect([error.code, error.retriable, error.message]).toEqual([
        'blob_unreadable',
        false,
        's3://docs-in/private.pdf is not readable with these credentials (SignatureDoesNotMatch)',
      ]);
      expect(JSON.stringify(error)).not.toMatch(/wrong-secret|unit-session-token|Signature=/);
    } finally {
      wrong.close();
    }
  });

  it('signs on S3 clock once an answer shows ours more than 5 minutes off', async () => {
    const ahead = new Date(Date.now() + 3 * 3600_000);
    server.reply('/docs-in/skewed.pdf', 403, s3ErrorXml('RequestTimeTooSkewed'), {
      date: ahead.toUTCString(),
    });
    server.put('/docs-in/after-skew.pdf', bytes);
    const skewed = createBlobSource(policy({ s3Buckets: ['docs-in'] }), { s3Client: client(server.origin) });
    try {
      const error = await blobError(skewed.resolve({ url: 's3://docs-in/skewed.pdf' }));
      expect([error.code, error.retriable]).toEqual(['blob_unreadable', true]);
      await (await skewed.resolve({ url: 's3://docs-in/after-skew.pdf' })).cleanup();
      const signedAt = String(server.last?.headers['x-amz-date']);
      const hour = Number(signedAt.slice(9, 11));
      expect(hour).toBe(ahead.getUTCHours());
    } finally {
      skewed.close();
    }
  });

  it('refuses a key that is not valid Unicode as the fault of the event, asking nothing', async () => {
    const before = server.requests;
    const error = await blobError(source.resolve({ url: 's3://docs-in/bad-\ud800.pdf' }));
    expect([error.code, error.retriable]).toEqual(['blob_invalid_url', false]);
    expect(server.requests).toBe(before);
  });

  it('refuses an object larger than maxBytes from its Content-Length', async () => {
    server.put('/docs-in/big.pdf', bytes);
    const small = createBlobSource(policy({ s3Buckets: ['docs-in'], maxBytes: bytes.length - 1 }), {
      s3Client: client(server.origin),
    });
    try {
      expect((await blobError(small.resolve({ url: 's3://docs-in/big.pdf' }))).code).toBe('blob_too_large');
    } finally {
      small.close();
    }
  });

  it('takes credentials from the default chain when no client is given (here: the environment)', async () => {
    server.put('/docs-in/env.pdf', bytes);
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: 'AKENV',
      AWS_SECRET_ACCESS_KEY: SECRET,
      AWS_SESSION_TOKEN: 'env-token',
    });
    const fromEnv = createBlobSource(policy({ s3Buckets: ['docs-in'], s3Endpoint: server.origin }));
    try {
      const blob = await fromEnv.resolve({ url: 's3://docs-in/env.pdf' });
      expect((await readAll(await blob.open())).equals(bytes)).toBe(true);
      await blob.cleanup();
      expect(server.last?.headers.authorization).toMatch(/Credential=AKENV\/\d{8}\/us-east-1\/s3\//);
      expect(server.last?.headers['x-amz-security-token']).toBe('env-token');
    } finally {
      fromEnv.close();
      process.env = saved;
    }
  });
});

describe('s3:// buckets whose endpoint wants another signature', () => {
  it('are fetched through the SDK (S3 Express directory buckets)', async () => {
    const bytes = randomBytes(1000);
    const express = new S3Client({
      region: 'us-east-1',
      credentials: { accessKeyId: 'AKUNIT', secretAccessKey: SECRET },
    });
    const send = jest
      .spyOn(express, 'send')
      .mockImplementation(async () => ({ Body: Readable.from([bytes]), ContentLength: bytes.length }));
    const bucket = 'docs--use1-az4--x-s3';
    const source = createBlobSource(policy({ s3Buckets: [bucket] }), { s3Client: express });
    try {
      const blob = await source.resolve({ url: `s3://${bucket}/k.pdf` });
      expect((await readAll(await blob.open())).equals(bytes)).toBe(true);
      await blob.cleanup();
      expect(send).toHaveBeenCalledTimes(1);
      expect((send.mock.calls[0]?.[0] as { input: unknown }).input).toEqual({ Bucket: bucket, Key: 'k.pdf' });
    } finally {
      source.close();
    }
  });
});

describe('s3:// bucket allowlist', () => {
  it('refuses unlisted buckets, and every bucket when the list is empty, before any request', async () => {
    const server = await new CountingBlobServer().start();
    const listed = createBlobSource(policy({ s3Buckets: ['docs-in'] }), { s3Client: client(server.origin) });
    const closed = createBlobSource(policy({ s3Buckets: [] }), { s3Client: client(server.origin) });
    try {
      expect((await blobError(listed.resolve({ url: 's3://other-bucket/k.pdf' }))).code).toBe(
        'blob_not_allowed',
      );
      expect(server.requests).toBe(0);
      expect((await blobError(listed.resolve({ url: 's3://docs-in/k.pdf' }))).code).toBe('blob_not_found');
      const refused = await blobError(closed.resolve({ url: 's3://any-bucket/k.pdf' }));
      expect(refused.code).toBe('blob_not_allowed');
      expect(refused.message).toMatch(/blobs\.s3Buckets/);
      expect(server.requests).toBe(1);
    } finally {
      listed.close();
      closed.close();
      await server.stop();
    }
  });
});

describe('s3:// transfer bounds', () => {
  let server: CountingBlobServer;

  beforeAll(async () => {
    server = await new CountingBlobServer().start();
    server.trickle('/docs-in/slow.pdf');
  });

  afterAll(() => server.stop());

  it('ends a body that trickles past blobs.transferTimeoutMs in blob_timeout', async () => {
    const source = createBlobSource(
      policy({ s3Buckets: ['docs-in'], transferTimeoutMs: 300, minBytesPerSecond: 0 }),
      { s3Client: client(server.origin) },
    );
    try {
      const error = await blobError(source.resolve({ url: 's3://docs-in/slow.pdf' }));
      expect([error.code, error.message]).toEqual([
        'blob_timeout',
        's3://docs-in/slow.pdf was not transferred within 300 ms (blobs.transferTimeoutMs)',
      ]);
    } finally {
      source.close();
    }
  });

  it('ends a body slower than blobs.minBytesPerSecond in blob_too_slow', async () => {
    const source = createBlobSource(
      {
        ...policy({ s3Buckets: ['docs-in'], transferTimeoutMs: 0, minBytesPerSecond: 1000 }),
        rateWindowMs: 100,
      } as BlobPolicy,
      { s3Client: client(server.origin) },
    );
    try {
      expect((await blobError(source.resolve({ url: 's3://docs-in/slow.pdf' }))).code).toBe('blob_too_slow');
    } finally {
      source.close();
    }
  });
});
