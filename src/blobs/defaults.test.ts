/**
 * What an arrival event can reach with the configuration nobody changed: nothing. Before,
 * `file://` read anything under the working directory (config/docstream.json with the client
 * secret, .env) or the temp directory, and `s3://` any bucket the credentials could see.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../config/index.js';
import { createBlobSource, type BlobSource } from './index.js';
import { blobError, CountingBlobServer, s3TestClient } from './test-helpers.js';

describe('blob access with the default configuration', () => {
  const { blobs } = loadConfig({ env: {}, files: [] });
  /** Stands for S3: counts what would have been asked. */
  let s3: CountingBlobServer;
  let source: BlobSource;
  let dir: string;

  beforeAll(async () => {
    s3 = await new CountingBlobServer().start();
    source = createBlobSource(blobs, {
      s3Client: s3TestClient(s3.origin),
      resolveHost: async () => [{ address: '93.184.216.34', family: 4 }],
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-defaults-'));
    fs.writeFileSync(path.join(dir, 'secret.json'), '{"clientSecret":"s"}');
  });

  afterAll(async () => {
    source.close();
    await s3.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['a file in the temp directory', () => pathToFileURL(path.join(dir, 'secret.json')).href],
    ['a file in the working directory', () => pathToFileURL(path.resolve('package.json')).href],
  ])('refuses %s, naming blobs.fileRoots', async (_name, url) => {
    const error = await blobError(source.resolve({ url: url() }));
    expect(error.code).toBe('blob_not_allowed');
    expect(error.retriable).toBe(false);
    expect(error.message).toMatch(/file:\/\/ blobs are not allowed.*blobs\.fileRoots/);
  });

  it('refuses any bucket, naming blobs.s3Buckets, without asking S3', async () => {
    const error = await blobError(source.resolve({ url: 's3://company-private/payroll.pdf' }));
    expect(error.code).toBe('blob_not_allowed');
    expect(error.message).toMatch(/blobs\.s3Buckets/);
    expect(s3.requests).toBe(0);
  });

  it('refuses any http(s) host, naming blobs.httpHosts', async () => {
    const error = await blobError(source.resolve({ url: 'https://example.com/a.pdf' }));
    expect(error.code).toBe('blob_not_allowed');
    expect(error.message).toMatch(/blobs\.httpHosts/);
  });
});
