/**
 * Loaded into a benchmarked child with `node --expose-gc --import <this file>`: answers the
 * parent's IPC requests with the process's own CPU accounting and, after a full collection, its
 * live heap. Nothing of the connector is touched; the probe only reads the process from inside.
 *
 * Request  { type: 'probe', id, gc: boolean }
 * Answer   { type: 'probe', id, cpuUs, gcCpuUs, heapUsed }
 *   cpuUs    user + system CPU of the whole process since it started (process.cpuUsage);
 *   gcCpuUs  CPU the forced collection itself took, for the parent to subtract from the run;
 *   heapUsed V8 heap in use after that collection (live objects only when gc is true);
 *   connections  outgoing TCP connections opened so far, by remote port.
 *
 * Request  { type: 'profile', id, action: 'start' | 'stop', file? }
 * Answer   { type: 'profile', id, ok }
 *   starts V8's CPU profiler in the process (node:inspector), or stops it and writes the profile
 *   to `file`: so that a profile covers the measured documents only, not start-up and warm-up.
 */
import diagnostics from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { InProcessProfiler } from './profiler.js';

interface ProbeRequest {
  type?: unknown;
  id?: unknown;
  gc?: unknown;
  action?: unknown;
  file?: unknown;
}

const profiler = new InProcessProfiler();

async function profile(message: ProbeRequest): Promise<void> {
  if (message.action === 'start') await profiler.start();
  else if (message.action === 'stop' && typeof message.file === 'string') await profiler.stop(message.file);
}

const collect = (globalThis as { gc?: () => void }).gc;

/** New outgoing TCP connections by remote port: keep-alive reuse shows as a count near the socket pool size. */
const connections: Record<string, number> = {};
diagnostics.subscribe('net.client.socket', (message) => {
  const socket = (message as { socket: Socket }).socket;
  socket.once('connect', () => {
    const port = String(socket.remotePort);
    connections[port] = (connections[port] ?? 0) + 1;
  });
});

if (process.send) {
  process.on('message', (message: ProbeRequest) => {
    if (message?.type === 'profile') {
      profile(message).then(
        () => process.send?.({ type: 'profile', id: message.id, ok: true }),
        () => process.send?.({ type: 'profile', id: message.id, ok: false }),
      );
      return;
    }
    if (message?.type !== 'probe') return;
    const before = process.cpuUsage();
    if (message.gc === true && collect) collect();
    const gcCpu = process.cpuUsage(before);
    const cpu = process.cpuUsage();
    process.send?.({
      type: 'probe',
      id: message.id,
      cpuUs: cpu.user + cpu.system,
      gcCpuUs: gcCpu.user + gcCpu.system,
      heapUsed: process.memoryUsage().heapUsed,
      gcAvailable: collect !== undefined,
      connections,
    });
  });
  // The channel must not keep the connector alive: its own shutdown decides when it exits.
  process.channel?.unref();
}

export {};
