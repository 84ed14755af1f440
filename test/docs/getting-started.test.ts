/**
 * docs/getting-started.md's walk on one machine, run as a user runs it: every block the page marks
 * `<!-- walk -->` (shell) or `<!-- walk: <file> -->` (a file to write) is taken from the page, in
 * order, and run for real against the local stack's SCRAM-over-TLS listener: `stack up`, the sandbox
 * and `docstream run` (the built CLI) as background processes, `stack env --secure`, the API client
 * secret from a file, `config check`, the readiness loop, `status`, an S3 upload, `send`, `inspect`
 * until DONE. Then the results are read with a read_committed consumer configured from the
 * environment the walk left. The page's own consumer line (the Python sample of consuming.md, which
 * test/examples/samples.test.ts runs) is checked, not run here: its files exist, it sets exactly the
 * variables the sample reads, from variables the walk set. A renamed command, flag, key or variable,
 * or a step that stops working, fails this test.
 *
 * What the test changes, and only so that it shares the stack with other tests: the substitution
 * table below (ports, the bucket, the built CLI for `npx docstream`) and the variables it adds to the
 * user's environment (its own topics and group, the metrics port).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DeleteBucketCommand, DeleteObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort } from '../../scripts/lib/harness.js';
import { loadConfig, prefixedTopics } from '../../src/config/index.js';
import { envName } from '../../src/config/spec.js';
import { OutputReader } from '../../src/connector/outputs/output-reader.js';
import { sampleBytes } from '../../src/demo/corpus.js';
import { kafkaClientOf } from '../../src/kafka/client-from-config.js';
import { silentLogger } from '../../src/observability/logger.js';
import { registryOf } from '../../src/serde/registry-from-config.js';
import { exitOf, waitFor } from '../harness/e2e.js';
import { secureListeners } from '../harness/secure.js';
import { uniqueName } from '../harness/topics.js';

const ROOT = path.resolve('.');
const PAGE = path.join(ROOT, 'docs/getting-started.md');
const CLI = path.resolve('dist/cli/index.js');
/** Bound on one foreground command of the walk (the `until` loops included). */
const STEP_MS = 45_000;

interface Block {
  /** The file a `<!-- walk: <file> -->` block is written to; undefined for shell. */
  file?: string;
  text: string;
}

/** The page's walk blocks, in page order: a marker comment, then the fenced block after it. */
function walkBlocks(markdown: string): Block[] {
  return [...markdown.matchAll(/<!-- walk(?::\s*(\S+))? -->\s*\n```[a-z]*\n([\s\S]*?)```/g)].map((m) => ({
    ...(m[1] ? { file: m[1] } : {}),
    text: m[2]!,
  }));
}

/** Shell lines of a block: continuations joined, blank lines and whole-line comments left out. */
function commandLines(text: string): string[] {
  return text
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** A command line run in the background (`... &`, a comment after it allowed), without its `&`. */
function background(line: string): string | null {
  const m = /^(.*?[^&])&(?:\s+#.*)?$/.exec(line);
  return m ? m[1]!.trim() : null;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('docs/getting-started.md, the walk on one machine (SCRAM over TLS, secrets from files, S3)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-walk-'));
  const bucket = uniqueName('walk').toLowerCase();
  const topics = prefixedTopics(uniqueName('walk'), 3);
  const children: Array<{ line: string; child: ChildProcess }> = [];
  // The test's own client for removing what the walk made in the store (its test credentials).
  const s3 = new S3Client({
    endpoint: process.env.DOCSTREAM_BLOBS_S3_ENDPOINT ?? 'http://localhost:9002',
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });

  afterAll(async () => {
    for (const { child } of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await s3
      .send(new DeleteObjectCommand({ Bucket: bucket, Key: 'invoices/first.pdf' }))
      .catch(() => undefined);
    await s3.send(new DeleteBucketCommand({ Bucket: bucket })).catch(() => undefined);
    s3.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('runs as written: the connector on the secured listener carries one S3 document to its results', async () => {
    const sandboxPort = await freePort();
    const metricsPort = await freePort();
    // The substitution table: what the page says (the stack's default ports, a bucket name, the
    // installed command) -> what this run uses.
    const substitutions: Array<[RegExp, string]> = [
      [/\bnpx docstream\b/g, `${process.execPath} ${CLI}`],
      [/\b8080\b/g, String(sandboxPort)],
      [/\b9464\b/g, String(metricsPort)],
      [/\bacme-documents-incoming\b/g, bucket],
    ];
    const substitute = (text: string) => substitutions.reduce((t, [from, to]) => t.replace(from, to), text);

    const blocks = walkBlocks(fs.readFileSync(PAGE, 'utf8'));
    const lines = blocks.flatMap((b) => (b.file ? [] : commandLines(b.text)));
    // The walk is all there: a step gone from the page fails here, by name, not silently.
    const steps = [
      /^npx docstream stack up$/,
      /^npx docstream sandbox .*&/,
      /^eval "\$\(npx docstream stack env --secure\)"$/,
      /^export DOCSTREAM_API_CLIENT_SECRET_FILE=/,
      /^npx docstream config check docstream\.json$/,
      /^npx docstream run -c docstream\.json .*&$/,
      /readyz/,
      /^npx docstream send s3:\/\/acme-documents-incoming\/\S+ .*--event-id first-document/,
      /^npx docstream inspect first-document -c docstream\.json$/,
    ];
    expect(steps.filter((step) => !lines.some((l) => step.test(l))).map(String)).toEqual([]);
    expect(blocks.filter((b) => b.file === 'docstream.json')).toHaveLength(1);

    // The user's shell: no DOCSTREAM_ variable of the test run (the stack's ports aside, which say
    // where this machine's stack listens), then what this test adds to share the stack.
    let env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) => !k.startsWith('DOCSTREAM_') || k.startsWith('DOCSTREAM_STACK_'),
      ),
    );
    for (const [key, name] of Object.entries(topics))
      if (typeof name === 'string') env[envName('topics', key)] = name;
    env.DOCSTREAM_KAFKA_GROUP_ID = uniqueName('walk-group');
    env.DOCSTREAM_HTTP_PORT = String(metricsPort);
    // The user's document.
    fs.writeFileSync(path.join(dir, 'invoice.pdf'), await sampleBytes('clean-pdf'));

    const envFile = path.join(dir, '.walk-env');
    const outputs: Array<{ line: string; out: string }> = [];
    /** Runs one foreground line in bash, as typed into the user's shell, and keeps what it exports. */
    const run = async (line: string): Promise<string> => {
      const child = spawn('bash', ['-c', `${substitute(line)}\n__rc=$?\nenv -0 > ${envFile}\nexit $__rc`], {
        cwd: dir,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
      child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
      let code: number | null;
      try {
        code = await exitOf(child, STEP_MS);
      } catch (err) {
        process.kill(-child.pid!, 'SIGKILL');
        throw new Error(`${line}: ${(err as Error).message}; output: ${out.slice(-2000)}${logs()}`);
      }
      if (code !== 0) throw new Error(`${line}: exit ${code}; output: ${out.slice(-2000)}${logs()}`);
      env = Object.fromEntries(
        fs
          .readFileSync(envFile, 'utf8')
          .split('\0')
          .filter(Boolean)
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      );
      outputs.push({ line, out });
      return out;
    };
    const logs = () =>
      ['sandbox.log', 'docstream.log']
        .filter((f) => fs.existsSync(path.join(dir, f)))
        .map((f) => `\n--- ${f}: ${fs.readFileSync(path.join(dir, f), 'utf8').slice(-1500)}`)
        .join('');
    const outputOf = (pattern: RegExp) => outputs.filter((o) => pattern.test(o.line)).at(-1)?.out ?? '';

    for (const block of blocks) {
      if (block.file) {
        fs.writeFileSync(path.join(dir, block.file), substitute(block.text));
        continue;
      }
      for (const line of commandLines(block.text)) {
        const bg = background(line);
        if (bg === null) {
          await run(line);
          continue;
        }
        // A background job: `exec` makes the process the one this test stops, as `kill %n` would.
        const child = spawn('bash', ['-c', `exec ${substitute(bg)}`], { cwd: dir, env, stdio: 'ignore' });
        children.push({ line, child });
      }
    }

    // The connector ran on the secured listener, with the secrets from files.
    const secure = secureListeners();
    expect(env.DOCSTREAM_KAFKA_BROKERS).toBe(secure.scramTls.bootstrap);
    expect(env.DOCSTREAM_KAFKA_SASL_MECHANISM).toBe('scram-sha-512');
    expect(fs.readFileSync(env.DOCSTREAM_KAFKA_SASL_PASSWORD_FILE!, 'utf8').trim()).toBe(
      secure.scramTls.password,
    );
    expect(fs.readFileSync(env.DOCSTREAM_API_CLIENT_SECRET_FILE!, 'utf8')).toBe('sandbox-secret');
    expect(outputOf(/config check/)).toMatch(/docstream\.json: ok/);
    expect(outputOf(/docstream send/)).toContain(`sent first-document to ${topics.arrived}`);

    // inspect's last answer: done, with the three results of a FRAUD_ONLY document.
    const inspected = outputOf(/^npx docstream inspect first-document -c docstream\.json$/);
    const submission = /state: +DONE, submission (\S+)/.exec(inspected)?.[1];
    expect(submission).toBeDefined();
    expect(inspected).toMatch(/published fraud,quality,classification/);
    for (const kind of ['fraud', 'quality', 'classification'])
      expect(inspected).toMatch(
        new RegExp(
          `^ +${kind} +\\S+ +${escape(topics[kind as 'fraud'])}\\[\\d\\]@\\d+ +tenant=- +status=SUCCESS`,
          'm',
        ),
      );

    // One submission at the API for the document, made with the client secret from the file.
    const stats = (await (await fetch(`http://127.0.0.1:${sandboxPort}/_sandbox/stats`)).json()) as {
      submissionsCreated: number;
    };
    expect(stats.submissionsCreated).toBe(1);

    // The consumer the page shows next (the Python sample, run by test/examples/samples.test.ts):
    // its files are the clone's, it sets every variable the sample reads and nothing else, and each
    // value it takes from the walk's environment is there.
    const page = fs.readFileSync(PAGE, 'utf8');
    const consumer = [
      ...page.slice(page.indexOf('## The same walk on one machine')).matchAll(/```sh\n([\s\S]*?)```/g),
    ]
      .map((m) => m[1]!.replace(/\\\n\s*/g, ' '))
      .find((b) => b.includes('consume_results.py'));
    expect(consumer).toBeDefined();
    for (const file of consumer!.match(/~\/docstream\/\S+/g) ?? [])
      expect(`${file}: ${fs.existsSync(file.replace('~/docstream', ROOT))}`).toBe(`${file}: true`);
    const sample = fs.readFileSync(path.join(ROOT, 'examples/python/consume_results.py'), 'utf8');
    const required = [...sample.matchAll(/os\.environ\["(\w+)"\]/g)].map((m) => m[1]!);
    const read = new Set([
      ...required,
      ...[...sample.matchAll(/os\.environ\.get\("(\w+)"/g)].map((m) => m[1]!),
    ]);
    const assigned = [...consumer!.matchAll(/(?:^|\s)([A-Z_]+)=/g)].map((m) => m[1]!);
    expect(required.filter((v) => !assigned.includes(v))).toEqual([]);
    expect(assigned.filter((v) => !read.has(v))).toEqual([]);
    const used = [...consumer!.matchAll(/\$(DOCSTREAM_\w+)/g)].map((m) => m[1]!);
    expect(used.length).toBeGreaterThan(0);
    expect(used.filter((v) => !env[v])).toEqual([]);

    // The results, read committed, on the secured listener the walk's environment names.
    const config = loadConfig({ env, files: [path.join(dir, 'docstream.json')], cwd: dir });
    const kafka = kafkaClientOf(config, { clientId: 'walk-reader' });
    const seen: Array<{ topic: string; key: string | null; eventId: string | undefined; status: unknown }> =
      [];
    const reader = new OutputReader({
      kafka,
      topics: config.topics,
      groupId: uniqueName('walk-reader'),
      decoder: registryOf(config, silentLogger),
      kinds: ['fraud', 'quality', 'classification'],
    });
    await reader.start((r) => {
      seen.push({ topic: r.topic, key: r.key, eventId: r.headers.event_id, status: r.value?.status });
    });
    try {
      await waitFor('the three results, read committed', () => seen.length >= 3, 30_000);
    } finally {
      await reader.stop();
    }
    expect(seen.map((r) => r.topic).sort()).toEqual([topics.classification, topics.fraud, topics.quality]);
    for (const r of seen)
      expect(r).toMatchObject({ key: submission, eventId: 'first-document', status: 'SUCCESS' });

    // `kill %1 %2`: SIGTERM; both stop cleanly.
    for (const { line, child } of children) {
      child.kill('SIGTERM');
      expect(`${line}: exit ${await exitOf(child, 40_000)}`).toBe(`${line}: exit 0`);
    }
  });
});
