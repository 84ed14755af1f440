/**
 * What an arrival event can reach with the configuration nobody changed: nothing. Before,
 * `file://` read anything under the working directory (config/docstream.json with the client
 * secret, .env) or the temp directory, and `s3://` any bucket the credentials could see.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { S3Client } from '@aws-sdk/client-s3';
import { loadConfig } from '../config/index.js';
import { createBlobSource } from './index.js';
import { blobError } from './test-helpers.js';

describe('blob access with the default configuration', () => {
  const { blobs } = loadConfig({ env: {}, files: [] });
  let requests = 0;
  const s3Client = {
    send: async () => {
      requests++;
      return { ContentLength: 3, ETag: '"e"' };
    },
    destroy: () => undefined,
  } as unknown as S3Client;
  const source = createBlobSource(blobs, {
    s3Client,
    resolveHost: async () => [{ address: '93.184.216.34', family: 4 }],
  });
  let dir: string;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-defaults-'));
    fs.writeFileSync(path.join(dir, 'secret.json'), '{"clientSecret":"s"}');
  });

  afterAll(() => {
    source.close();
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
    expect(requests).toBe(0);
  });

  it('refuses any http(s) host, naming blobs.httpHosts', async () => {
    const error = await blobError(source.resolve({ url: 'https://example.com/a.pdf' }));
    expect(error.code).toBe('blob_not_allowed');
    expect(error.message).toMatch(/blobs\.httpHosts/);
  });
});
