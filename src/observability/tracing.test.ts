import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { documentTraces, NO_TRACES } from './tracing.js';
import { silentLogger } from './logger.js';

const settings = { endpoint: '', sampleRatio: 1, serviceName: 'docstream', serviceVersion: 'test' };
const record = { topic: 'documents.arrived', partition: 2, offset: '41', eventId: 'evt-1' };

describe('document traces', () => {
  it('off: the no-op traces, no traceparent of their own', async () => {
    const traces = await documentTraces({ ...settings, enabled: false }, silentLogger);
    expect(traces).toBe(NO_TRACES);
    const trace = traces.start(
      { ...record, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
      0,
    );
    expect(trace.traceparent).toBeNull();
    trace.step('fetch blob', 0);
    trace.end('done');
  });

  describe('on, exporting to an OTLP/HTTP receiver', () => {
    let server: http.Server;
    const posts: Array<{ url: string; type: string | undefined; bytes: number }> = [];
    let endpoint = '';
    beforeAll(async () => {
      server = http.createServer((req, res) => {
        let bytes = 0;
        req.on('data', (c: Buffer) => (bytes += c.length));
        req.on('end', () => {
          posts.push({ url: req.url ?? '', type: req.headers['content-type'], bytes });
          res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("continues the producer's trace, names its own span, and exports the spans on shutdown", async () => {
      const traces = await documentTraces({ ...settings, enabled: true, endpoint }, silentLogger);
      const parent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const trace = traces.start({ ...record, traceparent: parent }, Date.now() - 5);
      expect(trace.traceparent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
      expect(trace.traceparent).not.toBe(parent);
      trace.step('fetch blob', Date.now() - 2, { 'url.scheme': 'file' });
      trace.end('done');
      // A document of an unsampled producer's trace is not recorded, and says so onwards.
      const unsampled = traces.start({ ...record, traceparent: parent.replace(/-01$/, '-00') }, Date.now());
      expect(unsampled.traceparent).toMatch(/-00$/);
      // A document without a producer's trace starts one.
      const alone = traces.start({ ...record, traceparent: null }, Date.now());
      expect(alone.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      await traces.shutdown(5000);
      expect(posts.length).toBeGreaterThan(0);
      expect(posts[0]).toMatchObject({ url: '/v1/traces', type: 'application/x-protobuf' });
      expect(posts[0]!.bytes).toBeGreaterThan(0);
    });
  });
});
