/**
 * `npm run image:check`: builds the container image from the project's Dockerfile with podman (no
 * Docker engine here), reports its size, starts `docstream run` from it against the local stack and
 * a sandbox, sends one document event and waits for its results on the output topics, checks the
 * image's HEALTHCHECK and the non-root user, then stops the container (a graceful stop must exit 0)
 * and removes it. Exits 1 with the step that failed (and the container's log) on any failure.
 *
 * The container runs as users run it: in its own network namespace (podman's bridge network), with
 * its metrics port published on the host's loopback (`-p 127.0.0.1:<port>:9464`); /readyz and
 * /metrics are asked through that published port, so a server listening on the container's
 * loopback only fails the check. The stack and the sandbox stay on the host's loopback: their ports
 * are relayed onto the container's loopback (scripts/lib/loopback-relay.ts), where Kafka's
 * advertised `localhost:9092` leads.
 *
 *   npm run image:check                      build + one document through a container
 *   npm run image:check -- --skip-build      reuse the docstream:local image already built
 *   npm run image:check -- --keep-stack      leave a stack this run started running
 *   npm run image:check -- --http-host 127.0.0.1   run the container with that DOCSTREAM_HTTP_HOST
 *                                            (the default before the image set 0.0.0.0: it must fail)
 *
 * Tools (podman, runc, debootstrap) are installed from Debian's packages when missing (as root), the
 * base image is made once (scripts/lib/image.ts). The stack is started when it is not running and
 * stopped afterwards only if this run started it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Config } from '../src/config/index.js';
import { envName } from '../src/config/spec.js';
import { OutputReader } from '../src/connector/outputs/output-reader.js';
import { sampleBytes } from '../src/demo/corpus.js';
import { KafkaClient } from '../src/kafka/index.js';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';
import { Registry } from '../src/serde/registry.js';
import { defaultStackOptions, stackDown, stackUp, type ServiceName } from '../src/stack/index.js';
import {
  BROKERS,
  RESULT_KINDS,
  deleteTopics,
  endOfRun,
  ensureInputTopics,
  freePort,
  parseFlags,
  prefixedTopics,
  sleep,
  uniqueName,
  waitUntil,
} from './lib/harness.js';
import { loopbackPort, relayLoopbackPorts, type LoopbackRelay } from './lib/loopback-relay.js';
import {
  LIMIT_FLAGS,
  baseImageName,
  dockerfileNodeVersion,
  ensureBaseImage,
  ensureTools,
  imageSize,
  mb,
  must,
  podman,
  podmanEnv,
  podmanMust,
  tail,
} from './lib/image.js';

const REGISTRY_URL = process.env.DOCSTREAM_REGISTRY_URL ?? 'http://localhost:8081/apis/ccompat/v7';
const IMAGE = 'localhost/docstream:local';
/** http.port inside the container (the image's default), published on a free port of the host. */
const CONTAINER_HTTP_PORT = 9464;

const log = (line: string) =>
  process.stderr.write(`[image ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

/** A step that failed, with what the user needs to see (the container's log, a build's tail). */
class CheckFailed extends Error {}

interface Timings {
  buildS?: number;
  imageBytes?: number;
  baseBytes?: number;
  readyS?: number;
  roundTripMs?: number;
  stopS?: number;
}

/** A URL fit for a log line: user and password replaced. */
function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    if (u.username || u.password) [u.username, u.password] = ['***', ''];
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

async function buildImage(root: string, t: Timings): Promise<void> {
  await ensureTools(log);
  const base = await ensureBaseImage(path.join(root, 'Dockerfile'), log);
  // The build reaches the registry npm here is configured with (a mirror, say) over the host's network.
  const registry = (
    await must('npm config get registry', 'npm', ['config', 'get', 'registry'], { timeoutMs: 30_000 })
  ).stdout.trim();
  log(
    `building ${IMAGE} from ${path.join(root, 'Dockerfile')} (base ${base}, packages from ${withoutCredentials(registry)})`,
  );
  const r = await podman(
    [
      'build',
      '--pull=never',
      '--network',
      'host',
      // The docker format keeps HEALTHCHECK (the OCI format has no field for it and drops it).
      '--format',
      'docker',
      ...LIMIT_FLAGS,
      '--build-arg',
      `NPM_CONFIG_REGISTRY=${registry}`,
      '-t',
      IMAGE,
      root,
    ],
    { timeoutMs: 900_000 },
  );
  if (r.code !== 0)
    throw new CheckFailed(`podman build failed (exit ${r.code}):\n${tail(r.stdout + r.stderr, 40)}`);
  t.buildS = r.ms / 1000;
  log(`built in ${t.buildS.toFixed(1)} s`);
  // Earlier builds' untagged layers pile up: those older than a day go (today's stay as the cache).
  await podman(['image', 'prune', '-f', '--filter', 'until=24h']);
}

/** Every DOCSTREAM_* variable the container gets: this run's topics, group, sandbox and blob root. */
function containerEnv(
  topics: Config['topics'],
  groupId: string,
  sandbox: Sandbox,
  httpHost: string,
): Record<string, string> {
  const env: Record<string, string> = {
    [envName('kafka', 'brokers')]: BROKERS.join(','),
    [envName('kafka', 'groupId')]: groupId,
    [envName('kafka', 'sessionTimeoutMs')]: '10000',
    [envName('kafka', 'heartbeatIntervalMs')]: '1000',
    [envName('registry', 'url')]: REGISTRY_URL,
    [envName('api', 'baseUrl')]: sandbox.baseUrl,
    [envName('blobs', 'fileRoots')]: '/blobs',
    [envName('log', 'format')]: 'json',
  };
  // Unset, the image's own (0.0.0.0) applies: that is what is checked.
  if (httpHost !== '') env[envName('http', 'host')] = httpHost;
  for (const [key, value] of Object.entries(topics)) env[envName('topics', key)] = String(value);
  return env;
}

async function httpStatus(url: string): Promise<number | null> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return null;
  }
}

async function containerLog(name: string): Promise<string> {
  const r = await podman(['logs', '--tail', '40', name]);
  return tail(r.stdout + r.stderr, 40);
}

async function containerRunning(name: string): Promise<boolean> {
  const r = await podman(['inspect', '--format', '{{.State.Running}}', name]);
  return r.code === 0 && r.stdout.trim() === 'true';
}

/** What /readyz answers inside the container, asked from its own loopback (for a failure message). */
async function readyzInside(name: string): Promise<string> {
  const r = await podman([
    'exec',
    name,
    'node',
    '-e',
    `fetch('http://127.0.0.1:${CONTAINER_HTTP_PORT}/readyz').then(r=>console.log(r.status),e=>console.log(e.cause?.code??e.message))`,
  ]);
  return (r.stdout + r.stderr).trim();
}

/** One document through `docstream run` in a container from the image. */
async function roundTrip(t: Timings, nodeVersion: string, httpHost: string): Promise<void> {
  const id = uniqueName('image');
  const topics = prefixedTopics(id, 1);
  const groupId = `${id}-group`;
  const kafka = new KafkaClient({ brokers: BROKERS, clientId: 'docstream-image-check' });
  const blobs = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-image-'));
  // The container runs as uid 1000: the mounted directory and the file must be readable by it.
  fs.chmodSync(blobs, 0o755);
  const bytes = await sampleBytes('clean-pdf');
  fs.writeFileSync(path.join(blobs, 'clean.pdf'), bytes, { mode: 0o644 });
  const container = `docstream-${id}`;
  // Should the check be cut by its time bound, the container goes with it.
  let relay: LoopbackRelay | null = null;
  const removeOnExit = () => {
    relay?.close();
    spawnSync('podman', ['--runtime', 'runc', 'rm', '-f', '-t', '0', container], {
      env: podmanEnv(),
      stdio: 'ignore',
    });
  };
  process.once('exit', removeOnExit);
  let sandbox: Sandbox | null = null;
  let reader: OutputReader | null = null;
  const producer = kafka.producer();
  try {
    sandbox = await startSandbox({ port: 0, processing: { distribution: 'fixed', meanMs: 200 } });
    await ensureInputTopics(kafka, topics);
    const hostPort = await freePort();
    const env = containerEnv(topics, groupId, sandbox, httpHost);
    const started = Date.now();
    await podmanMust('creating the container', [
      'create',
      '--name',
      container,
      // Its own network namespace on podman's bridge, the metrics port published on the host's loopback.
      '--network',
      'bridge',
      '--publish',
      `127.0.0.1:${hostPort}:${CONTAINER_HTTP_PORT}`,
      // No systemd here to run podman's healthcheck timer: the check below runs it once itself.
      '--health-interval',
      'disable',
      ...LIMIT_FLAGS,
      '-v',
      `${blobs}:/blobs:ro`,
      ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
      IMAGE,
      'run',
    ]);
    // `init` makes the container's network namespace without starting docstream: the relay goes in first.
    await podmanMust('initialising the container', ['init', container]);
    const netns = (
      await podmanMust('reading its network namespace', [
        'inspect',
        '--format',
        '{{.NetworkSettings.SandboxKey}}',
        container,
      ])
    ).stdout.trim();
    relay = await relayLoopbackPorts(netns, [
      ...BROKERS.map(loopbackPort),
      loopbackPort(REGISTRY_URL),
      loopbackPort(sandbox.baseUrl),
    ]);
    await podmanMust('starting the container', ['start', container]);
    const published = `http://127.0.0.1:${hostPort}`;
    log(`container ${container} started (own network namespace); waiting for /readyz on ${published}`);
    let ready = false;
    while (!ready && Date.now() - started < 90_000) {
      ready = (await httpStatus(`${published}/readyz`)) === 200;
      if (!ready) {
        if (!(await containerRunning(container)))
          throw new CheckFailed(`docstream run exited during start-up:\n${await containerLog(container)}`);
        await sleep(200);
      }
    }
    if (!ready)
      throw new CheckFailed(
        `/readyz did not answer 200 through the published port ${published} (-> ${CONTAINER_HTTP_PORT}) ` +
          `within 90 s; asked inside the container, /readyz answers: ${await readyzInside(container)} ` +
          `(an answer there means the server listens on the container's loopback only: DOCSTREAM_HTTP_HOST)\n` +
          (await containerLog(container)),
      );
    t.readyS = (Date.now() - started) / 1000;
    log(`ready ${t.readyS.toFixed(1)} s after podman create, through the published port`);
    const metrics = await fetch(`${published}/metrics`, { signal: AbortSignal.timeout(5000) }).then(
      async (r) => ({ status: r.status, body: await r.text() }),
      (err: unknown) => ({ status: 0, body: String(err) }),
    );
    if (metrics.status !== 200 || !/^docstream_documents_in_flight /m.test(metrics.body))
      throw new CheckFailed(
        `/metrics through the published port: ${metrics.status}, ${metrics.body.slice(0, 200)}`,
      );
    log('/metrics 200 through the published port');

    const node = (
      await podmanMust('node --version in the container', ['exec', container, 'node', '--version'])
    ).stdout.trim();
    if (node !== `v${nodeVersion}`)
      throw new CheckFailed(`the image runs node ${node}, the Dockerfile pins ${nodeVersion}`);
    const uid = (await podmanMust('id -u in the container', ['exec', container, 'id', '-u'])).stdout.trim();
    if (uid === '0' || uid === '')
      throw new CheckFailed(`the container runs as uid ${uid || '?'}, not as a non-root user`);
    const health = await podman(['healthcheck', 'run', container]);
    if (health.code !== 0)
      throw new CheckFailed(
        `the image's HEALTHCHECK failed (exit ${health.code}): ${tail(health.stdout + health.stderr, 5)}`,
      );
    if ((await httpStatus(`${published}/healthz`)) !== 200)
      throw new CheckFailed('/healthz did not answer 200');
    log(`HEALTHCHECK healthy, /healthz 200, running as uid ${uid} on node ${node}`);

    const seen = new Map<string, Record<string, unknown> | null>();
    reader = new OutputReader({
      kafka,
      topics,
      groupId: uniqueName('image-collect'),
      decoder: new Registry({ url: REGISTRY_URL }),
    });
    await reader.start((r) => {
      if (r.headers.event_id === id) seen.set(r.kind, r.value);
    });
    await producer.connect();
    const event = {
      event_id: id,
      blob: { url: 'file:///blobs/clean.pdf', content_type: 'application/pdf', size_bytes: bytes.length },
      query_id: id,
      attributes: { source: 'image-check' },
    };
    const sentAt = Date.now();
    await producer.send(topics.arrived, [{ key: id, value: JSON.stringify(event) }]);
    const done = await waitUntil(() => seen.has('dlq') || RESULT_KINDS.every((k) => seen.has(k)), 60_000);
    if (seen.has('dlq')) {
      const v = seen.get('dlq');
      throw new CheckFailed(`the document was dead-lettered: ${v?.stage}/${v?.error_code}: ${v?.message}`);
    }
    if (!done)
      throw new CheckFailed(
        `results after 60 s: ${[...seen.keys()].join(', ') || 'none'} of ${RESULT_KINDS.join(', ')}\n${await containerLog(container)}`,
      );
    t.roundTripMs = Date.now() - sentAt;
    const fraud = seen.get('fraud');
    log(
      `one document through in ${t.roundTripMs} ms: ${RESULT_KINDS.join(', ')} published` +
        (fraud ? ` (submission ${String(fraud.submission_id)})` : ''),
    );

    const stopping = Date.now();
    await podmanMust('stopping the container', ['stop', '-t', '40', container], { timeoutMs: 60_000 });
    t.stopS = (Date.now() - stopping) / 1000;
    const exit = (
      await podmanMust('reading the exit code', ['inspect', '--format', '{{.State.ExitCode}}', container])
    ).stdout.trim();
    if (exit !== '0')
      throw new CheckFailed(
        `docstream run exited ${exit} on SIGTERM (expected 0):\n${await containerLog(container)}`,
      );
    log(`stopped gracefully (exit 0) in ${t.stopS.toFixed(1)} s`);
  } finally {
    process.removeListener('exit', removeOnExit);
    await podman(['rm', '-f', '-t', '0', container]).catch(() => undefined);
    relay?.close();
    await reader?.stop().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await sandbox?.close().catch(() => undefined);
    await deleteTopics(kafka, topics);
    fs.rmSync(blobs, { recursive: true, force: true });
  }
}

async function main(end: (code: number) => Promise<never>): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), {
    skipBuild: false,
    keepStack: false,
    timeoutS: 1500,
    httpHost: '',
  });
  // The hard bound on the whole check: the first run on a fresh machine installs and debootstraps.
  setTimeout(
    () => {
      process.stderr.write(`image check: timed out after ${String(flags.timeoutS)} s\n`);
      void end(1);
    },
    Number(flags.timeoutS) * 1000,
  ).unref();
  const root = path.resolve('.');
  const t: Timings = {};
  const began = Date.now();
  let started: ServiceName[] = [];
  const stackOptions = defaultStackOptions({ log: (line) => log(`stack: ${line}`) });
  try {
    if (flags.skipBuild) {
      if ((await podman(['image', 'exists', IMAGE])).code !== 0)
        throw new CheckFailed(`--skip-build: no image ${IMAGE}; run without --skip-build first`);
    } else await buildImage(root, t);
    t.imageBytes = await imageSize(IMAGE);
    const nodeVersion = dockerfileNodeVersion(path.join(root, 'Dockerfile'));
    t.baseBytes = await imageSize(baseImageName(nodeVersion));
    // A build in the OCI format has no HEALTHCHECK (podman drops it with a warning).
    const healthcheck = (
      await podmanMust('reading the HEALTHCHECK', [
        'image',
        'inspect',
        '--format',
        '{{json .Config.Healthcheck}}',
        IMAGE,
      ])
    ).stdout.trim();
    if (!/"Test":\["CMD"/.test(healthcheck))
      throw new CheckFailed(`the image has no HEALTHCHECK (${healthcheck}): build it with --format docker`);
    log(
      `image ${IMAGE}: ${mb(t.imageBytes)} (base ${mb(t.baseBytes)}, docstream's layers ${mb(t.imageBytes - t.baseBytes)})`,
    );
    started = (await stackUp(stackOptions)).started;
    await roundTrip(t, nodeVersion, String(flags.httpHost));
  } finally {
    if (started.length > 0 && !flags.keepStack)
      await stackDown({ ...stackOptions, services: started }).catch((err: unknown) =>
        log(`stack down: ${String(err)}`),
      );
  }
  const parts = [
    t.buildS !== undefined ? `build ${t.buildS.toFixed(1)} s` : 'build skipped',
    `image ${mb(t.imageBytes ?? 0)} (docstream's layers ${mb((t.imageBytes ?? 0) - (t.baseBytes ?? 0))})`,
    `ready ${t.readyS?.toFixed(1)} s`,
    `one document ${t.roundTripMs} ms`,
    `graceful stop ${t.stopS?.toFixed(1)} s`,
  ];
  console.log(`image check passed in ${((Date.now() - began) / 1000).toFixed(0)} s: ${parts.join(', ')}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // Every way out deletes the topics the check left behind (a failure, the time-out, SIGINT, SIGTERM).
  const end = endOfRun(log);
  main(end).then(
    () => end(0),
    (err: unknown) => {
      const message =
        err instanceof CheckFailed || !(err instanceof Error)
          ? String(err instanceof Error ? err.message : err)
          : (err.stack ?? err.message);
      process.stderr.write(`image check FAILED: ${message}\n`);
      return end(1);
    },
  );
}
