import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { OPTIMISATIONS_OFF_ENV } from '../util/optimisations.js';
import { GotWire } from './got-wire.js';
import { ApiHealth } from './health.js';
import { HttpSender } from './http.js';
import { AdaptiveRateLimiter } from './limiter.js';
import { DEFAULT_RETRY_POLICY } from './retry.js';
import { Wire, WireError } from './wire.js';

function sender(): HttpSender {
  return new HttpSender({
    limiter: new AdaptiveRateLimiter({ ratePerSecond: 100 }),
    health: new ApiHealth({}),
    retry: DEFAULT_RETRY_POLICY,
    timeoutMs: 1000,
  });
}

describe('http-client-wire switched off', () => {
  afterEach(() => {
    delete process.env[OPTIMISATIONS_OFF_ENV];
  });

  it("the API client's requests go through got instead of its own layer", () => {
    const own = sender();
    expect(own.wire).toBeInstanceOf(Wire);
    own.close();
    process.env[OPTIMISATIONS_OFF_ENV] = 'http-client-wire';
    const plain = sender();
    expect(plain.wire).toBeInstanceOf(GotWire);
    plain.close();
  });
});

describe('GotWire answers as Wire does', () => {
  let server: http.Server;
  let base: string;
  const wire = new GotWire(4);

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        if (req.url?.startsWith('/silent')) return;
        res.writeHead(req.url?.startsWith('/missing') ? 404 : 201, {
          'x-seen': req.headers['content-type'] ?? '',
        });
        res.end(JSON.stringify({ url: req.url, body }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    wire.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('sends JSON, forms and query strings and returns status, headers and body, 4xx included', async () => {
    const json = await wire.exchange({
      method: 'POST',
      url: `${base}/a`,
      headers: {},
      json: { k: 1 },
      searchParams: { q: 'x y' },
      timeoutMs: 2000,
    });
    expect(json.statusCode).toBe(201);
    expect(json.headers['x-seen']).toBe('application/json');
    expect(JSON.parse(json.body)).toEqual({ url: '/a?q=x+y', body: '{"k":1}' });
    const form = await wire.exchange({
      method: 'POST',
      url: `${base}/f`,
      headers: {},
      form: { a: 'b' },
      timeoutMs: 2000,
    });
    expect(form.headers['x-seen']).toBe('application/x-www-form-urlencoded');
    expect(JSON.parse(form.body).body).toBe('a=b');
    const missing = await wire.exchange({
      method: 'GET',
      url: `${base}/missing`,
      headers: {},
      timeoutMs: 2000,
    });
    expect(missing.statusCode).toBe(404);
  });

  it('reports no answer in time as ETIMEDOUT and a refused connection as ECONNREFUSED', async () => {
    const late = wire.exchange({ method: 'GET', url: `${base}/silent`, headers: {}, timeoutMs: 200 });
    await expect(late).rejects.toBeInstanceOf(WireError);
    await expect(late).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    const refused = wire.exchange({
      method: 'GET',
      url: 'http://127.0.0.1:1/',
      headers: {},
      timeoutMs: 2000,
    });
    await expect(refused).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});
