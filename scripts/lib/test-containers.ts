/**
 * The integration suite's Kafka and schema registry as containers started with testcontainers, the
 * alternative to the native `docstream stack` that test/harness/global-setup.ts picks with
 * DOCSTREAM_TEST_STACK=containers. testcontainers finds the engine from DOCKER_HOST (podman's Docker
 * API socket here: `podman system service`, see the README; Docker on a laptop). The images are the
 * project's own (scripts/lib/stack-images.ts): nothing is pulled, and testcontainers' reaper (Ryuk,
 * an image from a registry) is off, so the teardown stops the containers itself.
 */
import { GenericContainer, Wait, getContainerRuntimeClient, type StartedTestContainer } from 'testcontainers';
import { randomBytes } from 'node:crypto';
import { freePort } from './harness.js';
import { podman } from './image.js';
import { ensureStackImages } from './stack-images.js';

type Log = (line: string) => void;

export interface StackContainers {
  brokers: string;
  registryUrl: string;
  /** What ran, for the log: engine, images and ports. */
  describe: string;
  stop(): Promise<void>;
}

/**
 * Within this machine's limits: a container may not raise a limit past the host's, and podman's
 * rootful defaults do (so none are left to it).
 */
const ULIMITS = { nofile: { soft: 4096, hard: 4096 }, nproc: { soft: 4096, hard: 4096 } };

/**
 * Ports published on the host's loopback only (these services have no authentication):
 * testcontainers publishes on every interface and has no setting for the address.
 */
class LoopbackContainer extends GenericContainer {
  protected override async beforeContainerCreated(): Promise<void> {
    for (const bindings of Object.values(this.hostConfig.PortBindings ?? {}))
      for (const b of (bindings ?? []) as Array<{ HostIp?: string }>) b.HostIp = '127.0.0.1';
  }
}

/** The engine testcontainers would use, or an error saying how to get one. */
export async function containerEngine(): Promise<string> {
  try {
    const client = await getContainerRuntimeClient();
    const rt = client.info.containerRuntime;
    return `engine at ${process.env.DOCKER_HOST ?? 'the default socket'} (${rt.operatingSystem}, API ${rt.serverVersion})`;
  } catch (err) {
    throw new Error(
      `no container engine answers (DOCKER_HOST=${process.env.DOCKER_HOST ?? ''}): start podman's Docker API ` +
        `with \`podman system service --time=0 unix:///tmp/podman.sock &\` and export ` +
        `DOCKER_HOST=unix:///tmp/podman.sock (${(err as Error).message})`,
    );
  }
}

/** Builds (or finds) the images, starts Kafka and the registry, waits until both serve. */
export async function startStackContainers(log: Log): Promise<StackContainers> {
  process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
  // testcontainers takes a machine with /.dockerenv (this one) for a container and asks the bridge's
  // gateway; the ports are on the host's loopback.
  process.env.TESTCONTAINERS_HOST_OVERRIDE ??= '127.0.0.1';
  const engine = await containerEngine();
  const images = await ensureStackImages(log);
  // Kafka tells clients where to reconnect (advertised.listeners): its port inside and on the host are
  // the same, chosen free here, so the address it advertises is the one the host reaches.
  const port = await freePort();
  const started: StartedTestContainer[] = [];
  // A container whose start failed is not handed back by testcontainers: the run's label finds it.
  const label = { 'io.docstream.test-run': randomBytes(6).toString('hex') };
  const stop = async () => {
    await Promise.allSettled(started.map((c) => c.stop({ timeout: 10_000 })));
    const left = await podman([
      'ps',
      '-aq',
      '--filter',
      `label=io.docstream.test-run=${label['io.docstream.test-run']}`,
    ]);
    const ids = left.stdout.split('\n').filter(Boolean);
    if (ids.length > 0) await podman(['rm', '-f', ...ids]);
  };
  try {
    const t0 = Date.now();
    const [kafka, registry] = await Promise.all([
      new LoopbackContainer(images.kafka)
        .withEnvironment({
          KAFKA_NODE_ID: '1',
          KAFKA_PROCESS_ROLES: 'broker,controller',
          KAFKA_LISTENERS: `PLAINTEXT://:${port},CONTROLLER://:9093`,
          KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${port}`,
          KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
          KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
          KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
          KAFKA_NUM_PARTITIONS: '1',
          KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'true',
          KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
          KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
          KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
          KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR: '1',
          KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR: '1',
          KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
        })
        .withExposedPorts({ container: port, host: port })
        .withUlimits(ULIMITS)
        .withLabels(label)
        .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
        .withStartupTimeout(120_000)
        .start()
        .then((c) => (started.push(c), c)),
      new LoopbackContainer(images.registry)
        .withExposedPorts(8080)
        .withUlimits(ULIMITS)
        .withLabels(label)
        .withWaitStrategy(Wait.forHttp('/apis/ccompat/v7/subjects', 8080).forStatusCode(200))
        .withStartupTimeout(120_000)
        .start()
        .then((c) => (started.push(c), c)),
    ]);
    const brokers = `${kafka.getHost()}:${port}`;
    const registryUrl = `http://${registry.getHost()}:${registry.getMappedPort(8080)}/apis/ccompat/v7`;
    log(
      `containers up in ${((Date.now() - t0) / 1000).toFixed(1)} s: kafka ${brokers}, registry ${registryUrl}`,
    );
    return {
      brokers,
      registryUrl,
      describe: `${engine}; ${images.kafka} (${kafka.getId().slice(0, 12)}), ${images.registry} (${registry.getId().slice(0, 12)})`,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
