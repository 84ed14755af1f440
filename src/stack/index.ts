import { existsSync, rmdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { waitUntilHealthy } from './health.js';
import {
  DEFAULT_SERVICES,
  kafkaNodePorts,
  selectedServices,
  validateOptions,
  type ServiceName,
  type StackOptions,
} from './options.js';
import { servicePaths } from './paths.js';
import {
  isOurProcess,
  isPortInUse,
  readPidFile,
  removePidFile,
  spawnDetached,
  stopProcess,
  tailFile,
  withLock,
  writePidFile,
  type PidRecord,
} from './process.js';
import { allKafkaUnits, registryUrl, serviceUnits, SERVICES, type ServiceDef } from './services.js';
import { describeRemoved, partitionDirWarning, processesUsing, removeServiceDir } from './state-dir.js';

export { defaultStackOptions, DEFAULT_PORTS, PORT_ENV, SERVICE_NAMES } from './options.js';
export type { ServiceName, StackOptions } from './options.js';
export { readSecureListeners, scramPasswordFile, type SecureListeners } from './secure.js';
export { startOidcServer, type OidcServer } from './oidc-server.js';
export { partitionDirWarning } from './state-dir.js';
export { currentRunId, newRunId, RUN_ENV, scratchName, sweepRunTopics } from './scratch-topics.js';

/** A failure with a message meant for the user (no stack trace needed). */
class StackError extends Error {
  override name = 'StackError';
}

function checkOptions(o: StackOptions): void {
  const problems = validateOptions(o);
  if (problems.length > 0) throw new StackError(problems.join('; '));
}

function lockFile(o: StackOptions): string {
  return join(o.runDir, '.lock');
}

function installLockFile(o: StackOptions): string {
  return join(o.cacheDir, '.install.lock');
}

/** A unit's pid file: the service's, or a cluster node's. */
function pidFileOf(o: StackOptions, def: ServiceDef): string {
  return def.pidFile?.(o) ?? servicePaths(o.runDir, def.name).pidFile;
}

/** How messages name a unit: the service, or a cluster node (`kafka-2`). */
function labelOf(def: ServiceDef): string {
  return def.label ?? def.name;
}

/** The pid record of a unit if the process it names is ours and alive; clears stale pid files. */
function runningRecord(o: StackOptions, def: ServiceDef): PidRecord | undefined {
  const file = pidFileOf(o, def);
  const rec = readPidFile(file);
  if (!rec) return undefined;
  if (isOurProcess(rec)) return rec;
  removePidFile(file);
  return undefined;
}

/** Whether a running service listens on the ports asked for now. */
function samePorts(rec: PidRecord, def: ServiceDef, o: StackOptions): boolean {
  const want = def.ports(o).map((p) => p.port);
  return want.length === rec.ports.length && want.every((p, i) => p === rec.ports[i]);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

function failureReport(o: StackOptions, def: ServiceDef, why: string): string {
  const logs = def.logFiles(o).filter((f) => existsSync(f) && statSync(f).size > 0);
  const lines = [`${labelOf(def)}: ${why}; log: ${logs[0] ?? def.logFiles(o)[0]}`];
  for (const f of logs) lines.push(`--- last 20 lines of ${f} ---`, tailFile(f, 20));
  return lines.join('\n');
}

interface UpResult {
  started: ServiceName[];
  alreadyRunning: ServiceName[];
}

/**
 * Starts the selected services that are not running yet (idempotent), detached, and waits until each
 * is healthy. Fails, naming the service and its log, when one does not come up, and before starting
 * anything when a port is taken by another process.
 */
export async function stackUp(o: StackOptions): Promise<UpResult> {
  checkOptions(o);
  return withLock(lockFile(o), o.timeoutMs, async () => {
    const names = selectedServices(o);
    const result: UpResult = { started: [], alreadyRunning: [] };

    const units = names.flatMap((name) => serviceUnits(name, { ...o, brokers: o.brokers ?? 1 }));
    if (names.includes('kafka')) refuseOtherKafkaLayout(o, units);

    if (o.fresh) {
      for (const def of [...units].reverse()) {
        const rec = runningRecord(o, def);
        if (rec) {
          o.log(`${labelOf(def)}: stopping (pid ${rec.pid}) for --fresh`);
          await stopProcess(rec, 30_000);
          removePidFile(pidFileOf(o, def));
        }
        def.wipe(o);
        o.log(`${labelOf(def)}: data wiped`);
      }
    }

    // Services already running from this run dir: make sure they are (or become) healthy. A cluster
    // node's health needs every node, so with some of its nodes to start it is waited for after them.
    const toStart = units.filter((def) => !runningRecord(o, def));
    const waitAfterStart: Array<() => Promise<void>> = [];
    for (const def of units) {
      const name = labelOf(def);
      const rec = runningRecord(o, def);
      if (!rec) continue;
      if (!samePorts(rec, def, o)) {
        throw new StackError(
          `${name}: already running from ${o.runDir} on port(s) ${rec.ports.join(',')} (pid ${rec.pid}), ` +
            `not ${def
              .ports(o)
              .map((p) => p.port)
              .join(',')}; run \`docstream stack down\` first or use another --run-dir`,
        );
      }
      const check = async () => {
        const health = await waitUntilHealthy(() => def.healthy(o), {
          timeoutMs: o.timeoutMs,
          stillRunning: () => isOurProcess(rec),
        });
        if (health !== 'healthy') {
          throw new StackError(failureReport(o, def, `running (pid ${rec.pid}) but not healthy (${health})`));
        }
        await def.afterHealthy?.(o);
        o.log(`${name}: already running (pid ${rec.pid}, ${def.endpoint(o)})`);
        if (!result.alreadyRunning.includes(def.name)) result.alreadyRunning.push(def.name);
      };
      if (def.label && toStart.some((d) => d.name === def.name)) waitAfterStart.push(check);
      else await check();
    }

    // Pre-flight: every port of every service to start must be free, before anything starts.
    const busy: string[] = [];
    for (const def of toStart) {
      for (const { label, port } of def.ports(o)) {
        if (await isPortInUse(port)) {
          const what = label === labelOf(def) ? '' : ` (${label})`;
          busy.push(`${labelOf(def)}: port ${port}${what} is already in use by another process`);
        }
      }
    }
    if (busy.length > 0) {
      busy.push('stop that process, or choose other ports (--kafka-port, ..., or DOCSTREAM_STACK_*_PORT)');
      throw new StackError(busy.join('\n'));
    }

    if (toStart.length > 0) {
      await withLock(installLockFile(o), Math.max(o.timeoutMs, 600_000), async () => {
        // Once per service: a cluster's nodes share their artifacts.
        for (const name of new Set(toStart.map((d) => d.name))) await SERVICES[name].install(o);
      });
    }

    const pending: Array<{ def: ServiceDef; rec: PidRecord; started: number }> = [];
    for (const def of toStart) {
      const spec = await def.prepare(o);
      const started = Date.now();
      const pid = spawnDetached(spec);
      const rec: PidRecord = {
        service: def.name,
        pid,
        argv: [spec.command, ...spec.args],
        ports: def.ports(o).map((p) => p.port),
        startedAt: new Date(started).toISOString(),
      };
      writePidFile(pidFileOf(o, def), rec);
      o.log(`${labelOf(def)}: started (pid ${pid}), waiting until healthy`);
      pending.push({ def, rec, started });
    }

    const outcomes = await Promise.all([
      ...waitAfterStart.map((check) =>
        check().then(
          () => undefined,
          (err: unknown) => (err as Error).message,
        ),
      ),
      ...pending.map(async ({ def, rec, started }) => {
        const health = await waitUntilHealthy(() => def.healthy(o), {
          timeoutMs: o.timeoutMs,
          stillRunning: () => isOurProcess(rec),
        });
        if (health === 'healthy') {
          await def.afterHealthy?.(o);
          o.log(`${labelOf(def)}: healthy in ${seconds(Date.now() - started)} (${def.endpoint(o)})`);
          if (!result.started.includes(def.name)) result.started.push(def.name);
          return undefined;
        }
        const why =
          health === 'exited'
            ? 'exited before becoming healthy'
            : `not healthy within ${seconds(o.timeoutMs)}; stopped it`;
        if (health === 'timeout') await stopProcess(rec, 10_000);
        removePidFile(pidFileOf(o, def));
        return failureReport(o, def, why);
      }),
    ]);
    const failures = outcomes.filter((f): f is string => f !== undefined);
    if (failures.length > 0) throw new StackError(failures.join('\n'));
    // A cluster with some nodes started now is "started", not also "already running".
    result.alreadyRunning = result.alreadyRunning.filter((n) => !result.started.includes(n));
    warnOfManyPartitions(o);
    return result;
  });
}

/**
 * Stops what `up` started from this run dir (verified through the pid file and the process's argv).
 * With `wipe`, then removes each selected service's directory, saying what it held; a directory that
 * a process still names on its command line (the service run by hand, or from a lost pid file) is
 * kept, and the command fails naming the pids.
 */
export async function stackDown(o: StackOptions): Promise<void> {
  checkOptions(o);
  const inUse: string[] = [];
  await withLock(lockFile(o), o.timeoutMs, async () => {
    for (const name of [...selectedServices(o, true)].reverse()) {
      // Jaeger, when not named: only if this run dir ever ran it (else not a line about it).
      const optional = !o.services?.length && !DEFAULT_SERVICES.includes(name);
      if (optional && !existsSync(servicePaths(o.runDir, name).dir)) continue;
      // Every Kafka process of this run dir, single node or cluster, whatever `brokers` says.
      const units = name === 'kafka' ? allKafkaUnits(o) : [SERVICES[name]];
      const recs = units.map((def) => ({
        def,
        file: pidFileOf(o, def),
        rec: readPidFile(pidFileOf(o, def)),
      }));
      const live = recs.filter((r) => r.rec && isOurProcess(r.rec));
      for (const r of recs) if (!live.includes(r)) removePidFile(r.file);
      if (live.length === 0) o.log(`${name}: not running`);
      await Promise.all(
        live.map(async ({ def, file, rec }) => {
          if (!rec) return;
          const started = Date.now();
          const how = await stopProcess(rec, Math.min(o.timeoutMs, 30_000));
          removePidFile(file);
          o.log(
            `${labelOf(def)}: ${how === 'killed' ? 'killed (did not stop on SIGTERM)' : 'stopped'} (pid ${rec.pid}) in ${seconds(Date.now() - started)}`,
          );
        }),
      );
      if (o.wipe) wipeService(o, name, inUse);
    }
  });
  if (o.wipe) {
    try {
      rmdirSync(o.runDir); // only when empty: a run dir given by hand may hold other things
    } catch {
      // not empty, or already gone
    }
  }
  if (inUse.length > 0) throw new StackError(inUse.join('\n'));
}

function wipeService(o: StackOptions, name: ServiceName, inUse: string[]): void {
  const dir = servicePaths(o.runDir, name).dir;
  const users = processesUsing(dir);
  if (users.length > 0) {
    inUse.push(
      `${name}: not removed: ${dir} is still in use by pid ${users.join(', ')}; stop ${users.length > 1 ? 'them' : 'it'} and run \`docstream stack down --wipe\` again`,
    );
    return;
  }
  const removed = removeServiceDir(o.runDir, name);
  o.log(
    removed.existed
      ? `${name}: removed ${removed.dir} (${describeRemoved(removed)})`
      : `${name}: nothing to remove (${removed.dir} does not exist)`,
  );
}

/**
 * Refuses to start one Kafka layout over the other in the same run dir (a single node while a cluster
 * runs there, or the other way round): they would share ports and the run dir's meaning.
 */
function refuseOtherKafkaLayout(o: StackOptions, wanted: ServiceDef[]): void {
  const other = allKafkaUnits(o).filter((d) => !wanted.some((w) => labelOf(w) === labelOf(d)));
  const running = other.map((d) => [d, runningRecord(o, d)] as const).filter(([, rec]) => rec);
  if (running.length === 0) return;
  const what = running.map(([d, rec]) => `${labelOf(d)} (pid ${rec!.pid})`).join(', ');
  const asked = (o.brokers ?? 1) > 1 ? `a ${o.brokers}-node cluster` : 'a single Kafka node';
  throw new StackError(
    `kafka: ${what} already running from ${o.runDir}, not ${asked}; run \`docstream stack down\` first or use another --run-dir`,
  );
}

/** Kafka's partition directories, when there are so many that the broker may run out of memory. */
function warnOfManyPartitions(o: StackOptions): void {
  if (!selectedServices(o).includes('kafka')) return;
  const warning = partitionDirWarning(o.runDir);
  if (warning) o.log(warning);
}

interface ServiceStatus {
  service: ServiceName;
  /** A cluster's node (`kafka-2`); absent for a service that runs as one process. */
  node?: string;
  /** Set when the process was started by `up` from this run dir and is alive. */
  pid?: number;
  ports: number[];
  endpoint: string;
  healthy: boolean;
}

/** The state of each selected service; prints one line each. `ok` is true when all are healthy. */
export async function stackStatus(o: StackOptions): Promise<{ ok: boolean; services: ServiceStatus[] }> {
  checkOptions(o);
  const services: ServiceStatus[] = [];
  for (const def of selectedServices(o).flatMap((name) => serviceUnits(name, o))) {
    const name = labelOf(def);
    const found = runningRecord(o, def);
    const elsewhere = found && !samePorts(found, def, o) ? found : undefined;
    const rec = elsewhere ? undefined : found;
    const healthy = await def.healthy(o);
    const st: ServiceStatus = {
      service: def.name,
      ...(def.label ? { node: def.label } : {}),
      ports: def.ports(o).map((p) => p.port),
      endpoint: def.endpoint(o),
      healthy,
    };
    if (rec) st.pid = rec.pid;
    services.push(st);
    let state = healthy
      ? rec
        ? 'healthy'
        : 'healthy (not started from this run dir)'
      : rec
        ? 'running, NOT healthy'
        : 'stopped';
    if (elsewhere)
      state += ` (this run dir runs it on port(s) ${elsewhere.ports.join(',')}, pid ${elsewhere.pid})`;
    o.log(
      `${name.padEnd(9)} pid ${String(rec?.pid ?? '-').padEnd(8)} port ${st.ports.join(',').padEnd(11)} ${state}`,
    );
  }
  warnOfManyPartitions(o);
  return { ok: services.every((s) => s.healthy), services };
}

/** The Kafka nodes of the layout asked for, else of the one the run dir runs (for `env`). */
export function kafkaBrokerCount(o: StackOptions): number {
  return o.brokers ?? serviceUnits('kafka', o).length;
}

/** Shell `export` lines pointing docstream (and AWS SDKs) at this stack. */
export function stackEnv(o: Pick<StackOptions, 'ports' | 'brokers' | 'nodePorts'>): string[] {
  const brokers = kafkaNodePorts(o).map((n) => `localhost:${n.kafka}`);
  return [
    `export DOCSTREAM_KAFKA_BROKERS=${brokers.join(',')}`,
    `export DOCSTREAM_REGISTRY_URL=${registryUrl(o)}`,
    `export DOCSTREAM_BLOBS_S3_ENDPOINT=http://localhost:${o.ports.s3}`,
    'export AWS_ACCESS_KEY_ID=test',
    'export AWS_SECRET_ACCESS_KEY=test',
    'export AWS_REGION=us-east-1',
  ];
}

/** Downloads and installs the artifacts of the selected services (and a Java runtime if needed). */
export async function stackInstall(o: StackOptions): Promise<void> {
  checkOptions(o);
  await withLock(installLockFile(o), Math.max(o.timeoutMs, 600_000), async () => {
    const started = Date.now();
    for (const name of selectedServices(o)) await SERVICES[name].install(o);
    o.log(`install: all artifacts ready in ${o.cacheDir} (${seconds(Date.now() - started)})`);
  });
}
