/** Test helpers of the client (left out of dist by tsconfig.build.json). */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from './limiter.js';

export interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (req: Recorded, res: ServerResponse) => void | Promise<void>;

/** A tiny HTTP server on 127.0.0.1 that records every request and answers through `handler`. */
export class MockServer {
  readonly requests: Recorded[] = [];
  handler: Handler = (_req, res) => json(res, 404, { message: 'no handler' });
  private server?: Server;
  baseUrl = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://x');
        const recorded: Recorded = {
          method: req.method ?? '',
          path: url.pathname,
          query: url.searchParams,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
        this.requests.push(recorded);
        void Promise.resolve(this.handler(recorded, res)).catch((error: unknown) => {
          json(res, 599, { message: String(error) });
        });
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    this.baseUrl = `http://127.0.0.1:${port}`;
    return this;
  }

  count(method: string, path: string | RegExp): number {
    return this.requests.filter(
      (r) => r.method === method && (typeof path === 'string' ? r.path === path : path.test(r.path)),
    ).length;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(text);
}

/**
 * Virtual time that jumps forward on every sleep, so retries and limiter pauses take no real
 * time, and every requested sleep is recorded for assertions.
 */
export class JumpingClock implements Clock {
  readonly sleeps: number[] = [];
  private offset = 0;

  now(): number {
    return performance.now() + this.offset;
  }

  sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.offset += Math.max(0, ms);
    return new Promise((resolve) => setImmediate(resolve));
  }
}

/** A manual clock: `sleep` resolves only when `advance` moves time past its deadline. */
export class FakeClock implements Clock {
  private time = 0;
  private timers: { at: number; resolve: () => void }[] = [];

  now(): number {
    return this.time;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.timers.push({ at: this.time + Math.max(0, ms), resolve });
    });
  }

  /** Moves time forward in steps, firing due timers and letting their continuations run. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    await flush();
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.time = Math.max(this.time, next.at);
      next.resolve();
      await flush();
    }
    this.time = end;
    await flush();
  }
}

async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}
