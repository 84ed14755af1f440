import path from 'node:path';
import { BlobError } from './errors.js';
import { parseBlobUrl } from './url.js';

function refusal(raw: unknown): BlobError {
  try {
    parseBlobUrl(raw);
  } catch (error) {
    if (error instanceof BlobError) return error;
    throw error;
  }
  throw new Error(`parseBlobUrl(${String(raw)}) did not throw`);
}

describe('parseBlobUrl', () => {
  it('parses file URLs into absolute paths, decoding escapes and normalising ..', () => {
    expect(parseBlobUrl('file:///tmp/a%20b.pdf')).toMatchObject({ kind: 'file', path: '/tmp/a b.pdf' });
    expect(parseBlobUrl('file://localhost/tmp/x.pdf')).toMatchObject({ kind: 'file', path: '/tmp/x.pdf' });
    expect(parseBlobUrl('file:///tmp/../etc/passwd')).toMatchObject({ kind: 'file', path: '/etc/passwd' });
    expect(parseBlobUrl('file:///tmp/%2e%2e/etc/passwd')).toMatchObject({
      kind: 'file',
      path: path.resolve('/etc/passwd'),
    });
  });

  it('refuses file URLs naming another host, encoded separators and queries', () => {
    expect(refusal('file://fileserver/share/x.pdf').code).toBe('blob_not_allowed');
    expect(refusal('file:///tmp/a%2F..%2F..%2Fetc%2Fpasswd').code).toBe('blob_invalid_url');
    expect(refusal('file:///tmp/x.pdf?a=1').code).toBe('blob_invalid_url');
    expect(refusal('file:///tmp/x%00.pdf').code).toBe('blob_invalid_url');
  });

  it('parses http(s) URLs and keeps the query for the request but not for display', () => {
    const parsed = parseBlobUrl('https://user:pw@Blobs.Example.com:8443/a/b.pdf?X-Amz-Signature=abc#f');
    expect(parsed.kind).toBe('http');
    if (parsed.kind !== 'http') return;
    expect(parsed.url.search).toBe('?X-Amz-Signature=abc');
    expect(parsed.display).toBe('https://blobs.example.com:8443/a/b.pdf');
  });

  it('parses s3 URLs with the key taken literally', () => {
    expect(parseBlobUrl('s3://my-bucket/dir/a b%20c.pdf')).toEqual({
      kind: 's3',
      bucket: 'my-bucket',
      key: 'dir/a b%20c.pdf',
      display: 's3://my-bucket/dir/a b%20c.pdf',
    });
    expect(parseBlobUrl('S3://my-bucket/k')).toMatchObject({ bucket: 'my-bucket', key: 'k' });
  });

  it('refuses malformed s3 URLs', () => {
    expect(refusal('s3://my-bucket').code).toBe('blob_invalid_url');
    expect(refusal('s3://my-bucket/').code).toBe('blob_invalid_url');
    expect(refusal('s3://Bad_Bucket/k').code).toBe('blob_invalid_url');
    expect(refusal('s3:///k').code).toBe('blob_invalid_url');
  });

  it('refuses other schemes as not allowed and garbage as invalid', () => {
    expect(refusal('ftp://host/x').code).toBe('blob_not_allowed');
    expect(refusal('gopher://host/x').code).toBe('blob_not_allowed');
    expect(refusal('data:application/pdf;base64,AAAA').code).toBe('blob_not_allowed');
    expect(refusal('/tmp/x.pdf').code).toBe('blob_invalid_url');
    expect(refusal('http://').code).toBe('blob_invalid_url');
    expect(refusal('').code).toBe('blob_invalid_url');
    expect(refusal(42).code).toBe('blob_invalid_url');
    expect(refusal(`https://h/${'a'.repeat(9000)}`).code).toBe('blob_invalid_url');
  });

  it('never repeats a query string or credentials in a message', () => {
    const error = refusal('http://user:secret@exa mple.com/x?sig=SECRETSIG');
    expect(error.code).toBe('blob_invalid_url');
    expect(error.message).not.toContain('SECRETSIG');
    expect(error.message).not.toContain('secret');
  });

  it('never repeats credentials of a URL without a scheme (found by the fuzz suite)', () => {
    for (const raw of ['://user:secret@host/x', '//user:secret@host/x', 'user:secret@host']) {
      expect(refusal(raw).message).not.toContain('secret');
    }
  });
});
