/**
 * Parsing of `blob.url` into one of the three supported kinds, and the display form used in
 * messages and logs: query strings and user info never appear there, because pre-signed URLs
 * carry their signature in the query.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BlobError } from './errors.js';

/** Longer values are refused before parsing; no real blob URL comes near this. */
const MAX_URL_LENGTH = 8192;

export type ParsedBlobUrl =
  | { kind: 'file'; path: string; display: string }
  | { kind: 'http'; url: URL; display: string }
  | { kind: 's3'; bucket: string; key: string; display: string };

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const MAX_S3_KEY_BYTES = 1024;

/** `scheme://host/path` of a URL, without user info, query or fragment. */
export function displayUrl(url: URL): string {
  if (url.protocol === 'file:') return `file://${url.host}${url.pathname}`;
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** A short, query-free excerpt of a string that failed to parse, safe to put in a message. */
function excerpt(raw: string): string {
  const head = raw.split(/[?#]/, 1)[0] ?? '';
  // User info is cut wherever an authority could start, scheme or not ("://user:pw@host").
  const withoutUserInfo = head.replace(/(^|\/\/)[^/]*@/g, '$1');
  const short = withoutUserInfo.length > 120 ? `${withoutUserInfo.slice(0, 120)}...` : withoutUserInfo;
  return JSON.stringify(short);
}

export function parseBlobUrl(raw: unknown): ParsedBlobUrl {
  if (typeof raw !== 'string' || raw.length === 0) {
    throw new BlobError('blob_invalid_url', 'blob.url must be a non-empty string');
  }
  if (raw.length > MAX_URL_LENGTH) {
    throw new BlobError('blob_invalid_url', `blob.url is longer than ${MAX_URL_LENGTH} characters`);
  }
  const scheme = SCHEME.exec(raw)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    throw new BlobError('blob_invalid_url', `blob.url ${excerpt(raw)} has no scheme`);
  }
  switch (scheme) {
    case 'file':
      return parseFile(raw);
    case 'http':
    case 'https':
      return parseHttp(raw);
    case 's3':
      return parseS3(raw);
    default:
      throw new BlobError(
        'blob_not_allowed',
        `blob.url scheme "${scheme}:" is not allowed; use file://, http://, https:// or s3://`,
      );
  }
}

function parseWhatwg(raw: string): URL {
  try {
    return new URL(raw);
  } catch {
    throw new BlobError('blob_invalid_url', `blob.url ${excerpt(raw)} is not a valid URL`);
  }
}

function parseFile(raw: string): ParsedBlobUrl {
  const url = parseWhatwg(raw);
  if (url.hostname !== '' && url.hostname !== 'localhost') {
    throw new BlobError(
      'blob_not_allowed',
      `file:// URLs must name a local file; host "${url.hostname}" is not allowed`,
    );
  }
  if (url.search !== '' || url.hash !== '') {
    throw new BlobError('blob_invalid_url', 'file:// URLs may not carry a query or fragment');
  }
  let filePath: string;
  try {
    // Decodes %xx and refuses encoded separators, so a name cannot smuggle a "/" past the check.
    filePath = fileURLToPath(url);
  } catch {
    throw new BlobError('blob_invalid_url', `blob.url ${excerpt(raw)} is not a valid file URL`);
  }
  if (filePath.includes('\0')) {
    throw new BlobError('blob_invalid_url', 'file:// path contains a NUL byte');
  }
  return { kind: 'file', path: path.resolve(filePath), display: displayUrl(url) };
}

function parseHttp(raw: string): ParsedBlobUrl {
  const url = parseWhatwg(raw);
  if (url.hostname === '') {
    throw new BlobError('blob_invalid_url', `blob.url ${excerpt(raw)} has no host`);
  }
  return { kind: 'http', url, display: displayUrl(url) };
}

/**
 * `s3://bucket/key`, with the key taken literally as the AWS CLI does (no percent-decoding),
 * so keys with spaces or "%" in them work without the producer having to encode them.
 */
function parseS3(raw: string): ParsedBlobUrl {
  const rest = raw.slice('s3://'.length);
  if (!/^s3:\/\//i.test(raw)) {
    throw new BlobError('blob_invalid_url', `blob.url ${excerpt(raw)} is not of the form s3://bucket/key`);
  }
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const key = slash < 0 ? '' : rest.slice(slash + 1);
  if (!BUCKET.test(bucket) || bucket.includes('..')) {
    throw new BlobError('blob_invalid_url', `blob.url ${excerpt(raw)} does not name a valid S3 bucket`);
  }
  if (key.length === 0) {
    throw new BlobError('blob_invalid_url', `blob.url ${excerpt(raw)} has no object key`);
  }
  if (Buffer.byteLength(key, 'utf8') > MAX_S3_KEY_BYTES || key.includes('\0')) {
    throw new BlobError('blob_invalid_url', `blob.url ${excerpt(raw)} has an invalid object key`);
  }
  return { kind: 's3', bucket, key, display: `s3://${bucket}/${key}` };
}
