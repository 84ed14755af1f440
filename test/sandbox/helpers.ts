/** Helpers for the sandbox's HTTP tests: tokens, raw requests, generated documents, polling. */
import { request as httpRequest } from 'node:http';
import { PDFDocument } from 'pdf-lib';
import type { z } from 'zod';
import type { Sandbox } from '../../src/sandbox/index.js';

interface Res {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

export async function call(url: string, init: RequestInit = {}): Promise<Res> {
  const response = await fetch(url, init);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: response.status, headers: response.headers, body, text };
}

export function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
}

export async function token(
  sb: Sandbox,
  id = 'sandbox-client',
  secret = 'sandbox-secret',
  scope?: string,
): Promise<string> {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (scope) form.set('scope', scope);
  const res = await call(sb.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(id, secret) },
    body: form.toString(),
  });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${res.text}`);
  return (res.body as { access_token: string }).access_token;
}

/** A small API client bound to one sandbox and token. */
export function api(sb: Sandbox, accessToken: string) {
  const auth = { authorization: `Bearer ${accessToken}` };
  return {
    get: (path: string) => call(`${sb.baseUrl}${path}`, { headers: auth }),
    del: (path: string) => call(`${sb.baseUrl}${path}`, { method: 'DELETE', headers: auth }),
    json: (method: string, path: string, body: unknown) =>
      call(`${sb.baseUrl}${path}`, {
        method,
        headers: { ...auth, 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    create: async (body: unknown = {}) => {
      const res = await call(`${sb.baseUrl}/v2/submission`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (res.status !== 200) throw new Error(`create: ${res.status} ${res.text}`);
      return res.body as {
        submission_id: string;
        upload_url: string;
        submission_characteristics_upload_url?: string;
      };
    },
  };
}

export function upload(
  url: string,
  bytes: Uint8Array,
  contentType = 'application/octet-stream',
): Promise<Res> {
  return call(url, { method: 'PUT', headers: { 'content-type': contentType }, body: Buffer.from(bytes) });
}

/** A request with a body on any method (fetch refuses bodies on GET). */
export function raw(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export async function pdf(
  options: {
    producer?: string;
    creator?: string;
    title?: string;
    created?: Date;
    modified?: Date;
    pages?: number;
    text?: string;
  } = {},
): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  for (let i = 0; i < (options.pages ?? 1); i++) {
    const page = doc.addPage([300, 300]);
    if (options.text) page.drawText(options.text, { x: 20, y: 200, size: 12 });
  }
  if (options.producer) doc.setProducer(options.producer);
  if (options.creator) doc.setCreator(options.creator);
  if (options.title) doc.setTitle(options.title);
  if (options.created) doc.setCreationDate(options.created);
  if (options.modified) doc.setModificationDate(options.modified);
  return doc.save({ useObjectStreams: false });
}

/** A valid 1×1 PNG: a small, low-resolution image. */
export const TINY_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

/** Polls until `fn` returns a status other than 404, or gives up after `attempts`. */
export async function until200(fn: () => Promise<Res>, attempts = 200): Promise<Res> {
  let last: Res | undefined;
  for (let i = 0; i < attempts; i++) {
    last = await fn();
    if (last.status !== 404) return last;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`still ${last?.status} after ${attempts} polls: ${last?.text}`);
}

export async function waitFor(check: () => boolean | Promise<boolean>, attempts = 400): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('condition not met in time');
}

export function expectSchema<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success)
    throw new Error(`body does not match schema: ${parsed.error.message}\n${JSON.stringify(body)}`);
  return parsed.data;
}
