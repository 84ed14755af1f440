/**
 * The CLI as an operator lives with it, on the built CLI against the local stack and a sandbox over
 * real HTTP: every command that talks to Kafka, the registry or the API takes its configuration from
 * `-c` files (the client secret, the tenant key and the webhook secret each in a file of its own,
 * named by `…_FILE` lines of a `.env` file), and shows that it used it; `--cell` resolves through
 * `api.cells`; `ps` never shows a secret; every `--json` output parses; and each exit code of the
 * documented table occurs where the table says.
 *
 * The sandbox knows only the client `cli-client` with a random secret, so a command that fell back to
 * the defaults (the sandbox client, localhost:8080) would fail; the CLI sees no DOCSTREAM_* variable
 * but those a case sets.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { exportPKCS8, exportSPKI, generateKeyPair } from 'jose';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.js';
import { EXIT_CODES } from '../../src/cli/exit-codes.js';
import { readDirectory } from '../../src/tenants/directory.js';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, exitOf, waitFor } from '../harness/e2e.js';

const exec = promisify(execFile);
const CLI = path.resolve('dist/cli/index.js');
const SECRET = `cli-secret-${randomBytes(12).toString('hex')}`;
const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('base64')}`;

interface Out {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment of a user without docstream settings (the stack's own variables kept), plus `extra`. */
function environment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith('DOCSTREAM_') || k.startsWith('DOCSTREAM_STACK_'),
    ),
  );
  return { ...env, ...extra };
}

async function cli(args: string[], extraEnv: Record<string, string> = {}): Promise<Out> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [CLI, ...args], {
      env: environment(extraEnv),
      timeout: 90_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** Paths of the commands that have `--json`; each must be run below and its output parsed. */
function commandsWithJson(command: Command, prefix: string[] = []): string[] {
  return command.commands.flatMap((c) => {
    const at = [...prefix, c.name()];
    const has = c.options.some((o) => o.long === '--json');
    return [...(has ? [at.join(' ')] : []), ...commandsWithJson(c, at)];
  });
}
const parsed = new Set<string>();

/** Runs `docstream <command> ... --json`, expects exit `code`, and parses standard output as JSON. */
async function json<T = Record<string, unknown>>(
  command: string,
  args: string[],
  code = 0,
  extraEnv: Record<string, string> = {},
): Promise<T> {
  const out = await cli([...command.split(' '), ...args, '--json'], extraEnv);
  expect({ code: out.code, stderr: out.code === code ? '' : out.stderr }).toEqual({ code, stderr: '' });
  const value = JSON.parse(out.stdout) as T;
  parsed.add(command);
  return value;
}

/** Every process's command line as `ps` shows it to any user of the machine. */
function processList(): string {
  return spawnSync('ps', ['-eo', 'pid,args', '-ww'], { encoding: 'utf8' }).stdout;
}

describe('one way to configure every command, no secret on the command line', () => {
  let env: E2E;
  let dir: string;
  let pdf: string;
  /** The -c files: settings (no secret), then the .env naming the secret files. */
  let c: string[];
  let jsonFile: string;
  let groupId: string;
  let submissionId: string;
  const eventId = `cli-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
    env = await new E2E().start({
      clients: [
        { clientId: 'cli-client', clientSecret: SECRET, scopes: ['submissions.read', 'submissions.write'] },
        {
          clientId: 'cli-tenant-admin',
          publicKeyPem: await exportSPKI(publicKey),
          kid: 'cli-key-1',
          scopes: ['tenants.write', 'tenants.applications.read'],
        },
      ],
    });
    dir = env.dir;
    pdf = await env.writeFile('invoice.pdf', await sampleBytes('clean-pdf'));
    const write = (name: string, content: string) => {
      const file = path.join(dir, name);
      fs.writeFileSync(file, content, { mode: 0o600 });
      return file;
    };
    const base = env.config() as unknown as Record<string, Record<string, unknown>>;
    groupId = String(base.kafka!.groupId);
    const settings = {
      kafka: base.kafka,
      topics: base.topics,
      registry: base.registry,
      api: {
        baseUrl: env.sandbox.baseUrl,
        clientId: 'cli-client',
        ratePerSecond: 200,
        // The cell eu-1 is this sandbox; us-1 has no address.
        cells: { 'eu-1': { baseUrl: env.sandbox.baseUrl, tokenUrl: env.sandbox.tokenUrl } },
      },
      tenant: { clientId: 'cli-tenant-admin', kid: 'cli-key-1' },
      connector: base.connector,
      blobs: { fileRoots: [dir] },
      webhooks: { port: 0 },
      http: { port: 0 },
      log: { level: 'warn', format: 'json' },
    };
    jsonFile = write('settings.json', JSON.stringify(settings));
    const envFile = write(
      'secrets.env',
      [
        `DOCSTREAM_API_CLIENT_SECRET_FILE=${write('api-client-secret', `${SECRET}\n`)}`,
        `DOCSTREAM_TENANT_PRIVATE_KEY_FILE=${write('tenant-admin.pem', await exportPKCS8(privateKey))}`,
        `DOCSTREAM_WEBHOOKS_SECRETS_FILE=${write('webhook-secrets', WEBHOOK_SECRET)}`,
      ].join('\n'),
    );
    c = ['-c', jsonFile, '-c', envFile];
    await env.collect();
  });
  afterAll(async () => {
    await env?.stop();
  });

  it('config check and config show read the -c files: settings, then the secrets by …_FILE', async () => {
    const checked = await json<{ files: Array<{ ok: boolean; errors: string[]; warnings: string[] }> }>(
      'config check',
      c,
    );
    expect(checked.files.map((f) => [f.ok, f.errors, f.warnings])).toEqual([
      [true, [], []],
      [true, [], []],
    ]);
    const shown = await cli(['config', 'show', ...c]);
    expect(shown.code).toBe(0);
    const config = JSON.parse(shown.stdout) as Record<string, Record<string, unknown>>;
    expect([config.api!.baseUrl, config.api!.clientId, config.kafka!.groupId]).toEqual([
      env.sandbox.baseUrl,
      'cli-client',
      groupId,
    ]);
    expect(config.api!.clientSecret).not.toBe('sandbox-secret');
    expect(shown.stdout).not.toContain(SECRET);
  });

  it('analyze, feedback, report and delete use the api.* keys and the secret file, as run does', async () => {
    const analysed = await json<{ submission_id: string; fraud: { status: string } }>('analyze', [
      ...c,
      '--query-id',
      `${eventId}-analyze`,
      pdf,
    ]);
    expect(analysed.fraud.status).toBeDefined();
    expect((await env.submissions(`${eventId}-analyze`)).map((s) => s.id)).toEqual([analysed.submission_id]);
    submissionId = analysed.submission_id;

    const put = await json<{ outcome: string }>('feedback', [...c, submissionId, '--outcome', 'NOT_FRAUD']);
    expect(put.outcome).toBe('NOT_FRAUD');
    expect((await cli(['feedback', ...c, submissionId])).stdout).toMatch(/^outcome +NOT_FRAUD$/m);
    const report = await json<{ report_url: string }>('report', [...c, submissionId]);
    expect(report.report_url).toMatch(/^https?:\/\//);

    // The secret file named in the environment instead of a -c .env file.
    const byEnv = await cli(['analyze', '-c', jsonFile, '--query-id', `${eventId}-env`, pdf], {
      DOCSTREAM_API_CLIENT_SECRET_FILE: path.join(dir, 'api-client-secret'),
    });
    expect({ code: byEnv.code, stderr: byEnv.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(byEnv.stdout).toMatch(/^submission +[0-9a-f-]{36}$/m);
  });

  it('--client-secret-stdin reads the secret from standard input, and ps never shows it', async () => {
    const child = spawn(
      process.execPath,
      [
        CLI,
        'analyze',
        '-c',
        jsonFile,
        '--client-secret-stdin',
        '--json',
        '--query-id',
        `${eventId}-stdin`,
        pdf,
      ],
      { env: environment(), stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stdin.end(`${SECRET}\n`);
    let samples = 0;
    while (child.exitCode === null) {
      const list = processList();
      if (child.exitCode === null && list.includes(`${child.pid} `)) samples++;
      expect(list).not.toContain(SECRET);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await exitOf(child, 1000)).toBe(0);
    expect(samples).toBeGreaterThan(0);
    expect((JSON.parse(stdout) as { submission_id: string }).submission_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('--cell resolves through api.cells (eu-1 is this sandbox), and says what to set where it cannot', async () => {
    const viaCell = await json<{ submission_id: string }>('analyze', [
      ...c,
      '--cell',
      'eu-1',
      '--query-id',
      `${eventId}-cell`,
      pdf,
    ]);
    expect((await env.submissions(`${eventId}-cell`)).map((s) => s.id)).toEqual([viaCell.submission_id]);
    const unmapped = await cli(['analyze', ...c, '--cell', 'us-1', pdf]);
    expect(unmapped.code).toBe(2);
    expect(unmapped.stderr).toMatch(/cell "us-1" has no address.*api\.cells/);
    expect(await env.submissions(`${eventId}-cell`)).toHaveLength(1);
  });

  it('tenants use the api.* address and the tenant.* client, its key from a file', async () => {
    const name = `t${randomBytes(5).toString('hex')}`;
    const tenant = await json<{ id: string; name: string; cells: string[] }>('tenants create', [
      ...c,
      '--name',
      name,
      '--tenant-cell',
      'eu-1',
    ]);
    expect([tenant.name, tenant.cells]).toEqual([name, ['eu-1']]);
    const apps = await json<{ items: unknown[] }>('tenants apps', [...c, tenant.id]);
    expect(Array.isArray(apps.items)).toBe(true);
  });

  it('tenants create prints the directory entry (no secret), which the directory accepts once its files exist', async () => {
    const name = `t${randomBytes(5).toString('hex')}`;
    const human = await cli(['tenants', 'create', ...c, '--name', name, '--tenant-cell', 'eu-1']);
    expect(human.code).toBe(0);
    const fragment = human.stdout.slice(human.stdout.indexOf(`"${name}":`));
    const printed = JSON.parse(`{${fragment}}`) as Record<string, Record<string, string>>;
    expect(printed[name]).toMatchObject({
      cell: 'eu-1',
      clientId: `${name}-eu-1`,
      privateKeyFile: `${name}.pem`,
    });
    const other = `t${randomBytes(5).toString('hex')}`;
    const made = await json<{ id: string; directoryEntry: Record<string, Record<string, string>> }>(
      'tenants create',
      [...c, '--name', other, '--tenant-cell', 'eu-1'],
    );
    expect(made.directoryEntry[other]).toMatchObject({ kid: `${other}-eu-1-key-1`, tenantId: made.id });
    for (const out of [human.stdout, JSON.stringify(made)]) {
      expect(out).not.toContain('PRIVATE KEY');
      expect(out).not.toContain(SECRET);
    }
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const folder = fs.mkdtempSync(path.join(dir, 'directory-'));
    fs.writeFileSync(path.join(folder, `${name}.pem`), await exportPKCS8(privateKey));
    fs.writeFileSync(path.join(folder, `${other}.pem`), await exportPKCS8(privateKey));
    const file = path.join(folder, 'tenants.json');
    fs.writeFileSync(file, JSON.stringify({ tenants: { ...printed, ...made.directoryEntry } }));
    const directory = await readDirectory(file, {
      'eu-1': { baseUrl: env.sandbox.baseUrl, tokenUrl: env.sandbox.tokenUrl },
    });
    expect([...directory.tenants.keys()].sort()).toEqual([name, other].sort());
    expect(directory.tenants.get(other)!.tenantId).toBe(made.id);
  });

  describe('with a connector running from the same files', () => {
    let connector: ChildProcess;
    let log = '';

    beforeAll(async () => {
      connector = spawn(process.execPath, [CLI, 'run', ...c], {
        env: environment(),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      connector.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    });
    afterAll(async () => {
      if (connector.exitCode === null) connector.kill('SIGKILL');
    });

    it('send publishes to the configured topic and run analyses it with the configured client', async () => {
      const sent = await json<{ event_id: string; topic: string; format: string; schema_id: number }>(
        'send',
        [...c, '--event-id', eventId, '--query-id', eventId, pdf],
      );
      expect([sent.event_id, sent.topic, sent.format]).toEqual([eventId, env.topics.arrived, 'avro']);
      expect(sent.schema_id).toBeGreaterThan(0);
      try {
        await env.waitForResults(eventId);
      } catch (error) {
        throw new Error(`${(error as Error).message}; run's log: ${log.slice(-2000)}`);
      }
      expect(await env.submissions(eventId)).toHaveLength(1);
      // A running command with every secret in files: none of them on any command line.
      const list = processList();
      expect(list).toContain(`${connector.pid} `);
      for (const secret of [SECRET, WEBHOOK_SECRET]) expect(list).not.toContain(secret);
    });

    it('inspect, status, dlq and replay read the configured topics and group', async () => {
      const found = await json<{ matched: unknown }>('inspect', [...c, eventId]);
      expect(found.matched).not.toBeNull();
      const status = await json<{ groupId?: string; group?: string }>('status', [...c, '--no-metrics']);
      expect(JSON.stringify(status)).toContain(groupId);

      await env.produce(['not json at all']);
      await waitFor('the dead letter', () => env.on('dlq').length > 0);
      const deadLetters = await json<{ topic: string; matched: number }>('dlq list', c);
      expect([deadLetters.topic, deadLetters.matched]).toEqual([env.topics.dlq, 1]);
      const redrive = await json<{ dryRun: boolean; entries: unknown[] }>('dlq redrive', [
        ...c,
        '--all',
        '--dry-run',
      ]);
      expect([redrive.dryRun, redrive.entries.length]).toEqual([true, 1]);

      const plan = await json<{ groupId: string; topic: string; applied: boolean }>('replay', [
        ...c,
        '--to-earliest',
        '--dry-run',
      ]);
      expect([plan.groupId, plan.topic, plan.applied]).toEqual([groupId, env.topics.arrived, false]);
    });

    it('the exit codes mean what the table says', async () => {
      const meaning = (code: number) => EXIT_CODES.find((e) => e.code === code)!.meaning;
      // 1: the API refused (no such submission); the command refused to act (replay, group active).
      expect(meaning(1)).toMatch(/refused the request/);
      const gone = await cli(['delete', ...c, '00000000-0000-4000-8000-000000000000']);
      expect([gone.code, gone.stderr]).toEqual([1, expect.stringMatching(/^docstream delete: /)]);
      expect(meaning(1)).toMatch(/replay while the group is active/);
      const refused = await cli(['replay', ...c, '--to-earliest']);
      expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/active member/)]);
      // 2: invalid input, nothing changed (more in exit-codes.test.ts).
      expect(meaning(2)).toMatch(/secret given as a flag value/);
      const secretFlag = await cli(['delete', ...c, '--client-secret', SECRET, submissionId]);
      expect([secretFlag.code, secretFlag.stderr.includes(SECRET)]).toEqual([2, false]);
      expect((await env.submissions(`${eventId}-analyze`)).map((s) => s.id)).toEqual([submissionId]);
      // 3: the command worked and the answer is no.
      expect(meaning(3)).toMatch(/`inspect` found no document/);
      const none = await cli(['inspect', ...c, `${eventId}-nothing`, '--json']);
      expect(none.code).toBe(3);
      expect((JSON.parse(none.stdout) as { matched: unknown }).matched).toBeNull();
      // 0: done, here a deletion the API accepted.
      const deleted = await json<{ deleted: boolean }>('delete', [...c, submissionId]);
      expect(deleted.deleted).toBe(true);
    });

    it('run stops cleanly on SIGTERM (exit 0)', async () => {
      connector.kill('SIGTERM');
      expect(await exitOf(connector, 60_000)).toBe(0);
    });
  });

  it('webhooks serves the receiver from the same files (a later file wins: log level info)', async () => {
    const info = path.join(dir, 'info.json');
    fs.writeFileSync(info, JSON.stringify({ log: { level: 'info', format: 'json' } }));
    const child = spawn(process.execPath, [CLI, 'webhooks', ...c, '-c', info], {
      env: environment(),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    try {
      await waitFor(
        'the webhook receiver',
        () => log.includes('webhook receiver running') || child.exitCode !== null,
      );
      expect(log).toContain('webhook receiver listening');
      expect(processList()).not.toContain(WEBHOOK_SECRET);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exitOf(child, 60_000)).toBe(0);
    expect(log).not.toContain(WEBHOOK_SECRET);
  });

  it('run stops cleanly on a SIGTERM during start-up (exit 0, after the step under way)', async () => {
    const info = path.join(dir, 'info-startup.json');
    fs.writeFileSync(info, JSON.stringify({ log: { level: 'info', format: 'json' } }));
    const child = spawn(process.execPath, [CLI, 'run', ...c, '-c', info], {
      env: environment(),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    // Its first line, logged once the signals are heard and before start-up connects to Kafka.
    await waitFor(
      'the first log line of start-up',
      () => log.includes('optimisations') || child.exitCode !== null,
    );
    child.kill('SIGTERM');
    expect(await exitOf(child, 60_000)).toBe(0);
    expect(log).toContain('shutting down once the start-up step under way ends');
    expect(log).toContain('stopped cleanly during start-up');
    expect(log).not.toContain('connector running');
  });

  it('stack status --json: 0 when the stack is healthy, 3 (and ok: false) when a service is not', async () => {
    const healthy = await cli(['stack', 'status', '--json']);
    const status = JSON.parse(healthy.stdout) as { ok: boolean };
    expect(healthy.code).toBe(status.ok ? 0 : 3);
    parsed.add('stack status');
    // Nothing listens on port 1: the S3 service there is not healthy.
    const down = await json<{ ok: boolean }>('stack status', ['--services', 's3', '--s3-port', '1'], 3);
    expect(down.ok).toBe(false);
  });

  it('every command that has --json was run above and printed JSON', () => {
    expect([...parsed].sort()).toEqual(commandsWithJson(buildProgram()).sort());
  });
});
