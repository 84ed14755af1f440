import { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { brokerAnswers } from '../kafka/broker-check.js';

/** Resolves true when a TCP connection to host:port succeeds within `timeoutMs`. */
function tcpOpen(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(port, host, () => done(true));
  });
}

/** Resolves the HTTP status of a GET, or undefined when nothing answers within `timeoutMs`. */
export async function httpStatus(url: string, timeoutMs = 2000): Promise<number | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return undefined;
  }
}

/** A real Kafka check: the port is open and a metadata request lists at least `minBrokers` brokers. */
export async function kafkaHealthy(broker: string, timeoutMs = 3000, minBrokers = 1): Promise<boolean> {
  const [host, portText] = splitHostPort(broker);
  if (!(await tcpOpen(host, Number(portText), Math.min(timeoutMs, 1000)))) return false;
  return brokerAnswers(broker, timeoutMs, minBrokers);
}

function splitHostPort(hostPort: string): [string, string] {
  const i = hostPort.lastIndexOf(':');
  return [hostPort.slice(0, i), hostPort.slice(i + 1)];
}

interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Stop waiting early when this returns false (e.g. the process exited). */
  stillRunning?: () => boolean;
}

type WaitResult = 'healthy' | 'timeout' | 'exited';

/** Polls `check` until it resolves true, the timeout passes, or the process is gone. */
export async function waitUntilHealthy(
  check: () => Promise<boolean>,
  opts: WaitOptions,
): Promise<WaitResult> {
  const deadline = Date.now() + opts.timeoutMs;
  const interval = opts.intervalMs ?? 500;
  for (;;) {
    if (await check()) return 'healthy';
    if (opts.stillRunning && !opts.stillRunning()) {
      // one last look: it may have become healthy just before a wrapper exited
      return (await check()) ? 'healthy' : 'exited';
    }
    if (Date.now() >= deadline) return 'timeout';
    await sleep(interval);
  }
}
