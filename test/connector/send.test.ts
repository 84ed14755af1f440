/**
 * `docstream send` as a new user tries a connector: the built CLI publishes one arrival event for a
 * local file (Avro through the real registry), and a running `docstream run` with the same
 * configuration analyses it end to end; invalid input exits 2 with a message and sends nothing.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { sampleBytes } from '../../src/demo/corpus.js';
import { valueSubject } from '../../src/serde/registry.js';
import { E2E, REGISTRY_URL, waitFor } from '../harness/e2e.js';

const exec = promisify(execFile);
const CLI = path.resolve('dist/cli/index.js');

/** The CLI's exit code, stdout and stderr (a non-zero exit is an answer here, not a failure). */
async function send(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [CLI, 'send', ...args], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('docstream send', () => {
  let env: E2E;
  let config: string;
  let file: string;

  beforeAll(async () => {
    env = await new E2E().start();
    file = await env.writeFile('invoice.pdf', await sampleBytes('clean-pdf'));
    config = env.writeConfig();
    env.spawnConnector();
    await env.collect();
  });
  afterAll(async () => {
    await env.stop();
  });

  it('publishes an Avro arrival event for a local file that the running connector analyses', async () => {
    const eventId = `${env.id}-sent`;
    const out = await send([
      file,
      '--config',
      config,
      '--event-id',
      eventId,
      '--query-id',
      eventId,
      '--attribute',
      'tenant=acme',
    ]);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(
      new RegExp(
        `^sent ${eventId} to ${env.topics.arrived} partition \\d+ offset \\d+ \\(Avro, schema id \\d+\\)`,
      ),
    );
    await env.waitForResults(eventId);
    const fraud = env.forEvent(eventId).find((o) => env.kindOf(o) === 'fraud')!;
    expect(fraud.value.status).toBe('SUCCESS');
    expect(fraud.value.attributes).toEqual({ tenant: 'acme' });
    expect(env.on('dlq')).toEqual([]);
    expect(await env.submissions(eventId)).toHaveLength(1);
    // Encoded as a producer would: the event's schema registered under the input's subject, and the id it printed.
    const schemaId = Number(/schema id (\d+)/.exec(out.stdout)![1]);
    const latest = await fetch(
      `${REGISTRY_URL}/subjects/${encodeURIComponent(valueSubject(env.topics.arrived))}/versions/latest`,
    );
    expect(((await latest.json()) as { id: number }).id).toBe(schemaId);
  });

  it('warns when the configuration would not let the connector read the file, and sends it', async () => {
    const outside = path.join(path.dirname(CLI), 'index.js');
    const eventId = `${env.id}-outside`;
    const out = await send([outside, '--config', config, '--event-id', eventId]);
    expect(out.code).toBe(0);
    expect(out.stderr).toMatch(
      /warning: a connector with this configuration will dead-letter it \(blob_not_allowed\).*blobs\.fileRoots/,
    );
    await waitFor(
      `${eventId}'s dead letter`,
      () => env.on('dlq').some((o) => o.value.event_id === eventId),
      60_000,
    );
  });

  it.each([
    [['/nonexistent/invoice.pdf'], /no such file/],
    [['ftp://example.com/invoice.pdf'], /scheme ftp is not allowed/],
    [['FILE', '--event-id', ''], /event_id/],
    [['FILE', '--pipeline', 'EVERYTHING'], /--pipeline/],
    [['FILE', '--attribute', 'tenant'], /--attribute/],
    [['FILE', '--characteristics', '/nonexistent/characteristics.json'], /--characteristics/],
  ])('%j exits 2 with a message', async (args, message) => {
    const out = await send([...args.map((a) => (a === 'FILE' ? file : a)), '--config', config]);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(message);
    expect(out.stdout).toBe('');
  });
});
