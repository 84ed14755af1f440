/**
 * Forwarding for the loopback proxies some tests put between the connector and a real service (to
 * change an answer, or to stand in for an outage): one request to `upstream`, its answer piped back.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Sends `req` on to `upstream` (its body, or `body` when the proxy read it) and hands the answer to
 * `onAnswer`; a request the upstream does not take destroys the client's connection.
 */
export function sendOn(
  upstream: URL,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  onAnswer: (answer: http.IncomingMessage) => void,
  body?: Buffer,
): void {
  const out = http.request(
    { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
    onAnswer,
  );
  out.on('error', () => res.destroy());
  if (body) out.end(body);
  else req.pipe(out);
}

/** Sends `req` on to `upstream` (its body, or `body` when the proxy read it) and pipes the answer. */
export function forward(
  upstream: URL,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  body?: Buffer,
): void {
  sendOn(
    upstream,
    req,
    res,
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
    body,
  );
}

/** Starts `server` on a free loopback port and returns the port. */
export async function listenOnLoopback(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Closes `server` and every connection it still holds (kept-alive tunnels included). */
export async function closeServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
