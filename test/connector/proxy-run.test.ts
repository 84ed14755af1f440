/**
 * `docstream run` through a company's proxy, on the real stack: the process started with
 * HTTP_PROXY (and an empty NO_PROXY) in its environment sends its token request, its API calls and
 * its http blob fetch through a real CONNECT proxy (the npm package `proxy`) that asks for
 * credentials; the proxy's log shows a tunnel to each, and the connector's log never shows the
 * proxy's password. Kafka and the registry are reached directly.
 */
import http from 'node:http';
import { createProxy, type ProxyServer } from 'proxy';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';
import { closeServer, listenOnLoopback } from '../harness/proxy.js';

const PROXY_PASSWORD = 'run-proxy-pass-4q8z';

describe('docstream run with HTTP_PROXY', () => {
  const env = new E2E(1);
  let proxy: ProxyServer;
  let blobs: http.Server;
  const proxyLog: string[] = [];
  let proxyPort = 0;
  let blobPort = 0;

  beforeAll(async () => {
    await env.start();
    proxy = createProxy(http.createServer());
    const expected = `Basic ${Buffer.from(`egress:${PROXY_PASSWORD}`).toString('base64')}`;
    proxy.authenticate = (req) => {
      proxyLog.push(
        `${req.method} ${req.url}${req.headers['proxy-authorization'] === expected ? '' : ' (refused)'}`,
      );
      return req.headers['proxy-authorization'] === expected;
    };
    proxyPort = await listenOnLoopback(proxy);
    const pdf = await sampleBytes('clean-pdf');
    blobs = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': pdf.length });
      res.end(pdf);
    });
    blobPort = await listenOnLoopback(blobs);
  });

  afterAll(async () => {
    await env.stop();
    await closeServer(proxy);
    await closeServer(blobs);
  });

  it('sends the token request, the API calls and the blob fetch through the proxy', async () => {
    const api = new URL(env.sandbox.baseUrl);
    await env.collect();
    const child = env.spawnConnector(
      {
        // The token endpoint on another origin of the sandbox: a tunnel of its own in the proxy's log.
        api: { tokenUrl: `http://localhost:${api.port}/oauth2/token` },
        blobs: { httpHosts: [`127.0.0.1:${blobPort}`], allowPrivateNetworks: true },
      },
      {
        HTTP_PROXY: `http://egress:${PROXY_PASSWORD}@127.0.0.1:${proxyPort}`,
        NO_PROXY: '',
        no_proxy: '',
        DOCSTREAM_LOG_LEVEL: 'info',
      },
    );
    // The whole log of the child, at info level.
    const logged: string[] = [];
    child.stderr?.on('data', (chunk: Buffer) => logged.push(chunk.toString('utf8')));
    const named = `"httpProxy":"http://127.0.0.1:${proxyPort}"`;
    await waitFor('the proxy named in the log', () => logged.join('').includes(named), 30_000);
    await env.produce([
      arrival('evt-proxied', '', {
        blob: { url: `http://127.0.0.1:${blobPort}/invoice.pdf` },
        pipeline_configuration: 'FRAUD_ONLY',
      }),
    ]);
    await waitFor(
      'the fraud result of the document fetched through the proxy',
      () => env.forEvent('evt-proxied').some((o) => env.kindOf(o) === 'fraud'),
      90_000,
    );
    expect(env.on('dlq')).toEqual([]);
    expect(proxyLog).toEqual(
      expect.arrayContaining([
        `CONNECT localhost:${api.port}`,
        `CONNECT ${api.host}`,
        `CONNECT 127.0.0.1:${blobPort}`,
      ]),
    );
    expect(proxyLog.filter((line) => line.endsWith('(refused)'))).toEqual([]);
    expect(logged.join('')).not.toContain(PROXY_PASSWORD);
  }, 120_000);
});
