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
 */
import diagnostics from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import type * as LimiterModule from '../../src/client/limiter.js';
import type * as ConsumerModule from '../../src/kafka/consumer.js';

interface ProbeRequest {
  type?: unknown;
  id?: unknown;
  gc?: unknown;
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

/**
 * `BENCH_EMULATE_SHARE=<arrived topic>:<partitions>` (the benchmark's `--emulate-share`): a preview
 * of the group-shared limit before the connector is wired to it. On every group join of the
 * connector's consumer, the share of the input topic's partitions it now holds is applied to its
 * API limiter with `setShare`, exactly as the connector is meant to do; the benchmark labels the
 * result as emulated. Patches the prototypes of the built modules the connector itself loads.
 */
const emulate = /^(.+):(\d+)$/.exec(process.env.BENCH_EMULATE_SHARE ?? '');
if (emulate) {
  const [, arrived, totalText] = emulate as unknown as [string, string, string];
  const total = Number(totalText);
  const dist = new URL('../../../../dist/', import.meta.url);
  const { AdaptiveRateLimiter } = (await import(
    new URL('client/limiter.js', dist).href
  )) as typeof LimiterModule;
  const { KafkaConsumer } = (await import(new URL('kafka/consumer.js', dist).href)) as typeof ConsumerModule;
  let owned = total;
  const acquire = AdaptiveRateLimiter.prototype.acquire;
  AdaptiveRateLimiter.prototype.acquire = function (this: InstanceType<typeof AdaptiveRateLimiter>) {
    const share = this.share();
    if (share.owned !== owned || share.total !== total) this.setShare(owned, total);
    return acquire.call(this);
  };
  const onGroupJoin = KafkaConsumer.prototype.onGroupJoin;
  KafkaConsumer.prototype.onGroupJoin = function (this: InstanceType<typeof KafkaConsumer>, listener) {
    return onGroupJoin.call(this, (join) => {
      owned = Math.min(total, (join.assignment[arrived] ?? []).length);
      listener(join);
    });
  };
}

if (process.send) {
  process.on('message', (message: ProbeRequest) => {
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
