/**
 * Makes services on the host's loopback (the local stack's Kafka and registry, a sandbox) answer on
 * the same ports of a container's own loopback, so that a container in its own network namespace
 * reaches them at the addresses they advertise (Kafka's is `localhost:9092`, which inside the
 * container is the container's loopback). Per port, two socat processes joined by a Unix socket, which
 * crosses network namespaces through the file system: one listens on the container's 127.0.0.1:<port>
 * (started inside its namespace with nsenter), one connects each stream to the host's
 * 127.0.0.1:<port>. Nothing listens on any host interface: the host side is a socket file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sleep } from './harness.js';

export interface LoopbackRelay {
  /** Stops every socat of the relay and removes its sockets. */
  close(): void;
}

/** The loopback port a URL or host:port names (default ports by scheme), for the relay. */
export function loopbackPort(address: string): number {
  const url = new URL(/^[a-z]+:\/\//.test(address) ? address : `tcp://${address}`);
  if (!['localhost', '127.0.0.1', '[::1]'].includes(url.hostname))
    throw new Error(`${address}: not on this host's loopback, nothing to relay`);
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return port;
}

/**
 * Relays each of `ports` from the host's loopback into the network namespace at `netnsPath` (as
 * `podman inspect` gives it: `.NetworkSettings.SandboxKey`). Resolves once every listener is up.
 */
export async function relayLoopbackPorts(netnsPath: string, ports: number[]): Promise<LoopbackRelay> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-relay-'));
  const children: ChildProcess[] = [];
  const relay: LoopbackRelay = {
    close() {
      for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  const start = (command: string, args: string[]) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    children.push(child);
    return () => stderr;
  };
  try {
    const errors: (() => string)[] = [];
    for (const port of [...new Set(ports)]) {
      const socket = path.join(dir, `${port}.sock`);
      errors.push(start('socat', [`UNIX-LISTEN:${socket},fork,mode=600`, `TCP:127.0.0.1:${port}`]));
      errors.push(
        start('nsenter', [
          `--net=${netnsPath}`,
          'socat',
          `TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr`,
          `UNIX-CONNECT:${socket}`,
        ]),
      );
    }
    // socat says nothing when it listens: a moment for both ends, then any that exited failed.
    await sleep(300);
    const failed = children.findIndex((c) => c.exitCode !== null);
    if (failed >= 0)
      throw new Error(
        `relaying loopback ports ${ports.join(', ')} into ${netnsPath} failed: ${errors[failed]!().trim()}`,
      );
    return relay;
  } catch (err) {
    relay.close();
    throw err;
  }
}
