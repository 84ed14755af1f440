/** Request-level helpers shared by the routes: the error type, JSON bodies, validation. */
import { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { describeZodError } from '../api/schemas.js';

/** Error messages are cut here: one listing thousands of unknown fields must not answer megabytes. */
const MAX_MESSAGE_CHARS = 1024;

export function capMessage(message: string): string {
  if (message.length <= MAX_MESSAGE_CHARS) return message;
  const rest = message.length - MAX_MESSAGE_CHARS;
  return `${message.slice(0, MAX_MESSAGE_CHARS)}... (${rest} more characters)`;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(capMessage(message));
  }
}

/** JSON request bodies above this size are refused with 413. */
const MAX_JSON_BYTES = 1024 * 1024;

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  if (length !== undefined) return Number(length) > 0;
  return request.headers['transfer-encoding'] !== undefined;
}

export function mediaType(request: FastifyRequest): string {
  return (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

/** 415 when a request carries a body that is not JSON (the spec lists 415 on these endpoints). */
export function requireJsonIfBody(request: FastifyRequest): void {
  if (hasBody(request) && mediaType(request) !== 'application/json') {
    throw new HttpError(
      415,
      `Content-Type: must be application/json, got ${request.headers['content-type'] ?? 'none'}`,
    );
  }
}

function bodyStream(request: FastifyRequest): Readable {
  return request.body instanceof Readable ? request.body : request.raw;
}

/** Reads and parses a JSON body; `undefined` when there is none and it is optional. */
export async function readJson(request: FastifyRequest, required: boolean): Promise<unknown> {
  if (!hasBody(request)) {
    if (required) throw new HttpError(400, '(body): a JSON request body is required');
    return undefined;
  }
  requireJsonIfBody(request);
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > MAX_JSON_BYTES) throw new HttpError(413, `(body): larger than ${MAX_JSON_BYTES} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of bodyStream(request)) {
    size += (chunk as Buffer).length;
    if (size > MAX_JSON_BYTES) throw new HttpError(413, `(body): larger than ${MAX_JSON_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') {
    if (required) throw new HttpError(400, '(body): a JSON request body is required');
    return undefined;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new HttpError(400, `(body): invalid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export function validate<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new HttpError(400, describeZodError(parsed.error));
  return parsed.data;
}

/** A boolean query parameter: absent, `true` or `false`; anything else is a 400 naming it. */
export function booleanQuery(query: Record<string, unknown>, name: string): boolean {
  const value = query[name];
  if (value === undefined) return false;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new HttpError(400, `${name}: must be true or false`);
}

/**
 * The base of the URLs a response hands out to be fetched next (upload, report). Listening on a
 * wildcard address (0.0.0.0, ::), the sandbox has no one address: each client reaches it by the name
 * its network gives it (`sandbox:8080` on a compose network, `localhost:8080` through a published
 * port), and the URL it prints (127.0.0.1) is the container's own loopback to the others. There the
 * URLs follow the request's Host header; a caller sending another Host only misdirects its own next
 * request (token audiences never follow it: routes/token.ts). On a named address, `baseUrl`.
 */
export function fetchBaseUrl(baseUrl: string, listenHost: string, hostHeader: string | undefined): string {
  if ((listenHost !== '0.0.0.0' && listenHost !== '::') || !hostHeader) return baseUrl;
  let url: URL;
  try {
    url = new URL(`http://${hostHeader}`);
  } catch {
    return baseUrl;
  }
  // A bare host[:port] only: one with a path, credentials or a query parses to another origin.
  return `http://${hostHeader}`.toLowerCase() === url.origin ? url.origin : baseUrl;
}

/** fetchBaseUrl for a request of this sandbox (the context's shape, not its type: no import cycle). */
export function requestBaseUrl(
  ctx: { baseUrl(): string; listenHost: string },
  request: FastifyRequest,
): string {
  return fetchBaseUrl(ctx.baseUrl(), ctx.listenHost, request.headers.host);
}
