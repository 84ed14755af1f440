import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Readable } from 'node:stream';
import { Wire, WireError } from './wire.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server;
let baseUrl: string;
let connections: number;
let seen: Seen[];
let answer: (req: IncomingMessage, body: string, res: ServerResponse) => void;
const sockets = new Set<Socket>();

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      answer(req, body, res);
    });
  });
  server.on('connection', (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  connections = 0;
  seen = [];
  answer = (_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'r-1' });
    res.end('{"ok":true}');
  };
});

describe('Wire', () => {
  it('sends the path and query of every URL exactly as Node would, fast path or not', async () => {
    const wire = new Wire(4);
    const port = (server.address() as AddressInfo).port;
    try {
      const urls = [
        `${baseUrl}/v2/submission/abc/fraud`,
        `${baseUrl}/up?sig=a%2Fb&x=1`,
        `http://LOCALHOST:${port}/Case/Kept`,
        `${baseUrl}/frag#part`,
        `${baseUrl}/with space`,
        `${baseUrl}/ü`,
        `${baseUrl}`,
      ];
      for (const url of urls) {
        await wire.exchange({ method: 'GET', url, headers: {}, timeoutMs: 5000 });
      }
      expect(seen.map((s) => s.url)).toEqual([
        '/v2/submission/abc/fraud',
        '/up?sig=a%2Fb&x=1',
        '/Case/Kept',
        '/frag',
        '/with%20space',
        '/%C3%BC',
        '/',
      ]);
    } finally {
      wire.close();
    }
  });

  it('reaches an IPv6 literal origin', async () => {
    const v6 = createServer((req, res) => res.end(req.url));
    const listening = await new Promise<boolean>((resolve) => {
      v6.once('error', () => resolve(false));
      v6.listen(0, '::1', () => resolve(true));
    });
    // A machine without IPv6 loopback cannot run this case: it checks nothing then, and says so.
    if (!listening) {
      expect(listening).toBe(false);
      return;
    }
    const wire = new Wire(2);
    try {
      const port = (v6.address() as AddressInfo).port;
      const response = await wire.exchange({
        method: 'GET',
        url: `http://[::1]:${port}/six?x=1`,
        headers: {},
        timeoutMs: 5000,
      });
      expect(response.body).toBe('/six?x=1');
    } finally {
      wire.close();
      await new Promise<void>((resolve) => v6.close(() => resolve()));
    }
  });

  it('reuses one keep-alive connection for calls one after another', async () => {
    const wire = new Wire(4);
    try {
      for (let i = 0; i < 5; i++) {
        const response = await wire.exchange({
          method: 'GET',
          url: `${baseUrl}/a`,
          headers: {},
          timeoutMs: 2000,
        });
        expect(response).toMatchObject({ statusCode: 200, body: '{"ok":true}' });
        expect(response.headers['x-request-id']).toBe('r-1');
      }
      expect(connections).toBe(1);
    } finally {
      wire.close();
    }
  });

  it('opens no more connections than the pool size, however many calls wait', async () => {
    const wire = new Wire(3);
    try {
      await Promise.all(
        Array.from({ length: 12 }, () =>
          wire.exchange({ method: 'GET', url: `${baseUrl}/b`, headers: {}, timeoutMs: 2000 }),
        ),
      );
      expect(seen).toHaveLength(12);
      expect(connections).toBeLessThanOrEqual(3);
    } finally {
      wire.close();
    }
  });

  it('sends JSON, forms and query strings with their content type and length', async () => {
    const wire = new Wire();
    try {
      await wire.exchange({
        method: 'POST',
        url: `${baseUrl}/json`,
        headers: {},
        json: { query_id: 'é' },
        timeoutMs: 2000,
      });
      await wire.exchange({
        method: 'POST',
        url: `${baseUrl}/form`,
        headers: {},
        form: { grant_type: 'client_credentials', scope: 'a b' },
        timeoutMs: 2000,
      });
      await wire.exchange({
        method: 'GET',
        url: `${baseUrl}/q`,
        headers: {},
        searchParams: { with_metadata: 'true', embed: 'fraud,quality' },
        timeoutMs: 2000,
      });
      expect(seen[0]).toMatchObject({ body: '{"query_id":"é"}' });
      expect(seen[0]?.headers['content-type']).toBe('application/json');
      expect(seen[0]?.headers['content-length']).toBe(String(Buffer.byteLength('{"query_id":"é"}')));
      expect(seen[1]?.body).toBe('grant_type=client_credentials&scope=a+b');
      expect(seen[1]?.headers['content-type']).toBe('application/x-www-form-urlencoded');
      expect(seen[2]?.url).toBe('/q?with_metadata=true&embed=fraud%2Cquality');
    } finally {
      wire.close();
    }
  });

  it('streams a Readable body', async () => {
    const wire = new Wire();
    try {
      await wire.exchange({
        method: 'PUT',
        url: `${baseUrl}/upload`,
        headers: { 'content-type': 'application/octet-stream' },
        body: Readable.from([Buffer.from('abc'), Buffer.from('def')]),
        timeoutMs: 2000,
      });
      expect(seen[0]).toMatchObject({ method: 'PUT', body: 'abcdef' });
    } finally {
      wire.close();
    }
  });

  it('fails with ETIMEDOUT when no answer comes in time, and ends the body stream', async () => {
    answer = () => undefined;
    const wire = new Wire();
    const body = new Readable({ read() {} });
    body.push('partial');
    try {
      const error = await wire
        .exchange({ method: 'PUT', url: `${baseUrl}/slow`, headers: {}, body, timeoutMs: 100 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WireError);
      expect((error as WireError).code).toBe('ETIMEDOUT');
      expect(body.destroyed).toBe(true);
    } finally {
      wire.close();
    }
  });

  it('reports a refused connection with its code', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const wire = new Wire();
    try {
      const error = await wire
        .exchange({ method: 'GET', url: `http://127.0.0.1:${port}/`, headers: {}, timeoutMs: 2000 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WireError);
      expect((error as WireError).code).toBe('ECONNREFUSED');
    } finally {
      wire.close();
    }
  });

  it('reports a connection cut before the answer', async () => {
    answer = (req) => req.socket.destroy();
    const wire = new Wire();
    try {
      const error = await wire
        .exchange({ method: 'POST', url: `${baseUrl}/cut`, headers: {}, json: {}, timeoutMs: 2000 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WireError);
      expect((error as WireError).code).toBe('ECONNRESET');
    } finally {
      wire.close();
    }
  });
});
