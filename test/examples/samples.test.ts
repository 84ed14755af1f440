/**
 * The producer and consumer samples of docs/producing.md and docs/consuming.md, run as a user runs
 * them, against the local stack's secured listeners: each producer (Python JSON and Avro, kcat, Go,
 * Java JSON and Avro) sends one arrival event that a real `docstream run` (exactly-once delivery)
 * analyses end to end; then each consumer (Python, Java, kcat) reads the result topics with
 * isolation.level=read_committed and must print every document's submission id, event id and
 * decision as docstream published them. The samples' tools are prepared by examples/setup.sh
 * (cached under .cache/examples); the producers run concurrently. The page's
 * command that registers the input schema (jq and curl) runs too, against the local registry.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { sampleBytes } from '../../src/demo/corpus.js';
import { scramPasswordFile, type SecureListeners } from '../../src/stack/index.js';
import { E2E, REGISTRY_URL, waitFor, type Decoded } from '../harness/e2e.js';
import { secureListeners } from '../harness/secure.js';
import { uniqueName } from '../harness/topics.js';

const exec = promisify(execFile);
const ROOT = path.resolve('.');
type Tool = 'python' | 'kcat' | 'jq' | 'go' | 'java';

/** What a sample printed, or why it failed (a failure is an answer the tests assert on). */
interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * How long one sample may run. Generous: the samples start JVMs and librdkafka clients beside the
 * other integration files on a small machine, and a run that is killed says so in its stderr.
 */
const SAMPLE_BOUND_MS = 180_000;

async function run(
  command: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs = SAMPLE_BOUND_MS,
): Promise<Run> {
  try {
    const { stdout, stderr } = await exec(command, args, {
      cwd: ROOT,
      // A Python sample killed at the bound prints where each of its threads was (faulthandler
      // dumps them on SIGABRT); the others are killed as usual.
      env: { ...process.env, PYTHONFAULTHANDLER: '1', ...env },
      timeout: timeoutMs,
      killSignal: command.includes('python') ? 'SIGABRT' : 'SIGTERM',
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; killed?: boolean; stdout?: string; stderr?: string; message: string };
    const killed = e.killed
      ? `\n(killed after ${timeoutMs / 1000} s without exiting; its output: ${(e.stdout ?? '').slice(-500)})`
      : '';
    return {
      code: typeof e.code === 'number' ? e.code : -1,
      stdout: e.stdout ?? '',
      stderr: (e.stderr ?? e.message) + killed,
    };
  }
}

/** examples/setup.sh for one tool: the path it prints last (interpreter, binary or classpath file). */
async function setup(tool: Tool): Promise<string> {
  const out = await run('bash', ['examples/setup.sh', tool], {}, 420_000);
  if (out.code !== 0)
    throw new Error(`examples/setup.sh ${tool} failed (${out.code}): ${out.stderr.slice(-2000)}`);
  return out.stdout.trim().split('\n').at(-1)!;
}

/** The JVM options the Java samples run with: quiet client logs, no perf data file in /tmp. */
const JAVA_OPTS = ['-XX:-UsePerfData', '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn'];

describe('the producer and consumer samples (examples/) against the local stack', () => {
  let s: SecureListeners;
  let env: E2E;
  let blobUrl: string;
  let tools: Record<Tool, string>;
  let scram: Record<string, string>;
  let mtls: Record<string, string>;
  /** Each producer's run, started together in beforeAll, by event id. */
  const sent = new Map<string, Promise<Run>>();
  const PRODUCERS = ['python-json', 'python-avro', 'kcat', 'go', 'java-json', 'java-avro'] as const;
  const eventOf = (producer: string) => `${env.id}-${producer}`;

  beforeAll(async () => {
    s = secureListeners();
    // The tools are prepared while the connector starts.
    const prepared = Promise.all((['python', 'kcat', 'jq', 'go', 'java'] as const).map(setup));
    env = await new E2E().start();
    const file = await env.writeFile('invoice.pdf', await sampleBytes('clean-pdf'));
    blobUrl = `file://${file}`;
    env.spawnConnector({ connector: { delivery: 'exactly-once' } });
    await env.collect();
    const [python, kcat, jq, go, java] = await prepared;
    tools = { python: python!, kcat: kcat!, jq: jq!, go: go!, java: java! };
    scram = {
      KAFKA_BOOTSTRAP: s.scramTls.bootstrap,
      KAFKA_USERNAME: s.scramTls.username,
      KAFKA_PASSWORD_FILE: scramPasswordFile(s),
      KAFKA_CA_FILE: s.caFile,
      REGISTRY_URL,
      TOPIC: env.topics.arrived,
    };
    mtls = {
      KAFKA_BOOTSTRAP: s.mtls.bootstrap,
      KAFKA_CA_FILE: s.caFile,
      KAFKA_CERT_FILE: s.mtls.certFile,
      KAFKA_KEY_FILE: s.mtls.keyFile,
      TOPIC: env.topics.arrived,
    };
    const javaCp = fs.readFileSync(tools.java, 'utf8').trim();
    const commands: Record<(typeof PRODUCERS)[number], [string, string[], Record<string, string>]> = {
      'python-json': [tools.python, ['examples/python/produce_arrival.py'], scram],
      'python-avro': [tools.python, ['examples/python/produce_arrival.py'], scram],
      kcat: ['sh', ['examples/kcat/produce-arrival.sh'], mtls],
      go: [tools.go, [], scram],
      'java-json': ['java', [...JAVA_OPTS, '-cp', javaCp, 'examples/java/SendArrival.java'], scram],
      'java-avro': ['java', [...JAVA_OPTS, '-cp', javaCp, 'examples/java/SendArrival.java'], scram],
    };
    for (const producer of PRODUCERS) {
      const [command, args, vars] = commands[producer];
      const extra = producer === 'python-avro' ? ['--avro'] : producer === 'java-avro' ? ['avro'] : [];
      sent.set(producer, run(command, [...args, eventOf(producer), blobUrl, ...extra], vars));
    }
  }, 450_000);

  afterAll(async () => {
    await Promise.allSettled(sent.values());
    await env?.stop();
  });

  /** The event's four results, once out (each keyed by the one submission the connector made). */
  async function resultsOf(eventId: string): Promise<Decoded[]> {
    await env.waitForResults(eventId);
    await waitFor(`${eventId}'s decision`, () =>
      env.forEvent(eventId).some((o) => env.kindOf(o) === 'decision'),
    );
    return env.forEvent(eventId);
  }

  it.each(PRODUCERS)(
    'the %s producer sends an event that docstream analyses',
    async (producer) => {
      const eventId = eventOf(producer);
      // Set by beforeAll: without it (the set-up failed) there is nothing to wait for.
      expect(sent.has(producer)).toBe(true);
      const out = await sent.get(producer)!;
      expect({ code: out.code, stderr: out.code === 0 ? '' : out.stderr }).toEqual({ code: 0, stderr: '' });
      expect(out.stdout).toContain(`sent ${eventId} to ${env.topics.arrived}`);
      const results = await resultsOf(eventId);
      const submissions = await env.submissions(eventId);
      expect(submissions).toHaveLength(1);
      expect(results.map((o) => env.kindOf(o)).sort()).toEqual([
        'classification',
        'decision',
        'fraud',
        'quality',
      ]);
      for (const o of results) {
        expect(o.key).toBe(submissions[0]!.id);
        expect(o.value).toMatchObject({ event_id: eventId, query_id: eventId, status: 'SUCCESS' });
      }
      // The Python and Java samples send attributes, which every result echoes.
      if (/^(python|java)/.test(producer))
        for (const o of results) expect(o.value.attributes).toEqual({ tenant: 'acme' });
      expect(env.on('dlq').filter((o) => o.headers.event_id === eventId)).toEqual([]);
    },
    300_000,
  );

  it("the page's registration command (jq and curl) registers DocumentArrived under the subject it names", async () => {
    const page = fs.readFileSync('docs/producing.md', 'utf8');
    const block = /```sh\n(jq -n --rawfile schema avro\/DocumentArrived\.avsc[\s\S]*?)```/.exec(page)?.[1];
    expect(block).toContain(
      'https://schema-registry.internal:8081/subjects/documents.arrived-value/versions',
    );
    // The page's registry and subject, swapped for the local registry and a subject of this test.
    const subject = `${uniqueName('samples-registered')}-value`;
    const command = block!
      .replace('https://schema-registry.internal:8081', REGISTRY_URL)
      .replace('documents.arrived-value', subject);
    const out = await run('bash', ['-c', `set -o pipefail; ${command}`], {});
    expect({ code: out.code, stderr: out.stderr }).toEqual({ code: 0, stderr: '' });
    const id = (JSON.parse(out.stdout) as { id: number }).id;
    expect(Number.isInteger(id)).toBe(true);
    const latest = (await (await fetch(`${REGISTRY_URL}/subjects/${subject}/versions/latest`)).json()) as {
      id: number;
      schema: string;
    };
    expect(latest.id).toBe(id);
    const registered = JSON.parse(latest.schema) as {
      name: string;
      namespace: string;
      fields: Array<{ name: string }>;
    };
    const file = JSON.parse(fs.readFileSync('avro/DocumentArrived.avsc', 'utf8')) as typeof registered;
    expect([registered.namespace, registered.name]).toEqual(['io.docstream.v1', 'DocumentArrived']);
    expect(registered.fields.map((f) => f.name)).toEqual(file.fields.map((f) => f.name));
  });

  describe('the read_committed consumers', () => {
    /** What every consumer must report: one row per fraud and decision result of the samples' events. */
    let expected: Array<Record<string, unknown>>;

    beforeAll(async () => {
      expect(sent.size).toBe(PRODUCERS.length);
      for (const producer of PRODUCERS) await resultsOf(eventOf(producer));
      expected = env.outputs
        .filter((o) => env.kindOf(o) === 'fraud' || env.kindOf(o) === 'decision')
        .map((o) => ({
          topic: o.topic,
          submission_id: o.key,
          event_id: o.value.event_id,
          ...(env.kindOf(o) === 'decision' ? { decision: o.value.decision } : {}),
        }))
        .sort(byRow);
      expect(expected).toHaveLength(PRODUCERS.length * 2);
    }, 180_000);

    function consumerEnv(): Record<string, string> {
      return {
        ...scram,
        GROUP_ID: uniqueName('samples-consumer'),
        TOPICS: [env.topics.fraud, env.topics.decision, env.topics.dlq].join(','),
        MAX_RECORDS: String(PRODUCERS.length * 2),
      };
    }

    /** The JSON lines a consumer printed, reduced to what `expected` holds. */
    function rows(out: Run): Array<Record<string, unknown>> {
      // On a failure, what it printed before it too (how far it got).
      expect({
        code: out.code,
        output: out.code === 0 ? '' : `${out.stderr}\nstdout: ${out.stdout}`,
      }).toEqual({
        code: 0,
        output: '',
      });
      return out.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .map((r) => ({
          topic: r.topic,
          submission_id: r.submission_id,
          event_id: r.event_id,
          ...(r.topic === env.topics.decision ? { decision: r.decision } : {}),
        }))
        .sort(byRow);
    }

    it('Python prints every fraud and decision result, with its submission id and decision', async () => {
      const out = await run(tools.python, ['examples/python/consume_results.py'], consumerEnv());
      expect(rows(out)).toEqual(expected);
    }, 240_000);

    it('Java prints every fraud and decision result, with its submission id and decision', async () => {
      const javaCp = fs.readFileSync(tools.java, 'utf8').trim();
      const out = await run(
        'java',
        [...JAVA_OPTS, '-cp', javaCp, 'examples/java/ConsumeResults.java'],
        consumerEnv(),
      );
      expect(rows(out)).toEqual(expected);
    }, 240_000);

    it('kcat prints every fraud result with its submission id and event_id header', async () => {
      const out = await run('sh', ['examples/kcat/consume-results.sh', env.topics.fraud], mtls);
      expect({ code: out.code, stderr: out.code === 0 ? '' : out.stderr }).toEqual({ code: 0, stderr: '' });
      const printed = out.stdout
        .trim()
        .split('\n')
        .map((line) => {
          const m = /^partition=\d+ key=(\S+) headers=(.*)$/.exec(line);
          return { submission_id: m?.[1], event_id: /(?:^|,)event_id=([^,]+)/.exec(m?.[2] ?? '')?.[1] };
        })
        .sort(byRow);
      const fraud = expected
        .filter((r) => r.topic === env.topics.fraud)
        .map((r) => ({ submission_id: r.submission_id, event_id: r.event_id }))
        .sort(byRow);
      expect(printed).toEqual(fraud);
    }, 240_000);
  });
});

function byRow(a: Record<string, unknown>, b: Record<string, unknown>): number {
  return JSON.stringify(a) < JSON.stringify(b) ? -1 : JSON.stringify(a) > JSON.stringify(b) ? 1 : 0;
}
