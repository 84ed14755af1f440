/**
 * Replay on the real stack: `docstream replay` (the built CLI) plans and applies consumer-group
 * resets and refuses while the group is active; a replayed input reuses the submissions (results are
 * re-emitted, nothing analysed again) and `reprocess: true` forces a new submission.
 */
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

const run = promisify(execFile);
const CLI = path.resolve('dist/cli/index.js');

async function replayCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, 'replay', ...args], {
      env,
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** `docstream replay` left running (for --watch): its output so far, and its end. */
function replayWatching(args: string[]) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
  const child = spawn(process.execPath, [CLI, 'replay', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (out.stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (out.stderr += chunk.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const done = new Promise<{ code: number | null }>((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code });
    }),
  );
  return { out, done };
}

/** The table rows printed by the CLI, by partition: [current, target, re-read, skipped]. */
function rows(stdout: string): Record<number, string[]> {
  const out: Record<number, string[]> = {};
  for (const line of stdout.split('\n')) {
    const cells = line.trim().split(/\s+/);
    if (cells.length === 5 && /^\d+$/.test(cells[0]!)) out[Number(cells[0])] = cells.slice(1);
  }
  return out;
}

describe('docstream replay (CLI) on real Kafka', () => {
  const env = new E2E(2);
  let config: string;
  const group = () => `${env.id}-group`;
  beforeAll(async () => {
    await env.start();
    config = env.writeConfig();
  });
  afterAll(async () => {
    await env.stop();
  });

  async function committed(): Promise<Map<number, string | null>> {
    const admin = env.kafka.admin();
    await admin.connect();
    try {
      return await admin.groupOffsets(group(), env.topics.arrived);
    } finally {
      await admin.disconnect();
    }
  }

  it('prints a dry-run plan, applies earliest / offsets / datetime targets, and refuses while the group is active', async () => {
    // Partition 0 gets 4 records, then (at a later millisecond) 2 more; partition 1 gets 3.
    const send = (partition: number, n: number, tag: string) =>
      env.producer.send(
        env.topics.arrived,
        Array.from({ length: n }, (_, i) => ({ key: null, value: `${tag}-${i}`, partition })),
      );
    await send(0, 4, 'early');
    await send(1, 3, 'early');
    // Records carry the clock of their send (stamped before it is acknowledged): a time one millisecond
    // from now is after every early record, and once the clock has passed it, before every late one.
    const middleMs = Date.now() + 1;
    const middle = new Date(middleMs).toISOString();
    await waitFor('the clock to pass the middle time', () => Date.now() > middleMs, 1000);
    await send(0, 2, 'late');

    // The group has read everything.
    expect((await replayCli(['--config', config, '--to-latest'])).code).toBe(0);
    expect(Object.fromEntries(await committed())).toEqual({ 0: '6', 1: '3' });

    const dry = await replayCli(['--config', config, '--to-earliest', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('dry run');
    expect(rows(dry.stdout)).toEqual({ 0: ['6', '0', '6', '0'], 1: ['3', '0', '3', '0'] });
    expect(Object.fromEntries(await committed())).toEqual({ 0: '6', 1: '3' });

    const explicit = await replayCli(['--config', config, '--to-offset', '0=2']);
    expect(explicit.code).toBe(0);
    expect(rows(explicit.stdout)).toEqual({ 0: ['6', '2', '4', '0'] });
    expect(Object.fromEntries(await committed())).toEqual({ 0: '2', 1: '3' });

    const byTime = await replayCli(['--config', config, '--to-datetime', middle]);
    expect(byTime.code).toBe(0);
    // Partition 0 moves to its first "late" record; partition 1 has nothing after the time: its end.
    expect(Object.fromEntries(await committed())).toEqual({ 0: '4', 1: '3' });

    const outOfRange = await replayCli(['--config', config, '--to-offset', '1=99']);
    expect(outOfRange.code).toBe(1);
    expect(outOfRange.stderr).toMatch(/outside 0\.\.3/);
    // Invalid input exits 2, as for every command.
    const noTarget = await replayCli(['--config', config]);
    expect(noTarget.code).toBe(2);
    expect(noTarget.stderr).toMatch(/exactly one of/);
    const badDate = await replayCli(['--config', config, '--to-datetime', 'yesterday']);
    expect(badDate.code).toBe(2);
    expect(badDate.stderr).toMatch(/ISO 8601/);

    // An active member of the group: refused, nothing changed; a dry run still shows the plan.
    const member = env.kafka.consumer({ groupId: group(), maxWaitTimeMs: 100 });
    await member.connect();
    try {
      await member.subscribe([env.topics.arrived], { fromBeginning: false });
      await member.run(async () => undefined, { autoResolve: false });
      await waitFor(
        'the member to join',
        () => (member.currentAssignment()[env.topics.arrived] ?? []).length > 0,
        30_000,
      );
      const refused = await replayCli(['--config', config, '--to-earliest']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/active member/);
      const dryActive = await replayCli(['--config', config, '--to-earliest', '--dry-run']);
      expect(dryActive.code).toBe(0);
      expect(dryActive.stdout).toMatch(/active members/);
    } finally {
      await member.disconnect();
    }
    expect(Object.fromEntries(await committed())).toEqual({ 0: '4', 1: '3' });
  });
});

describe('replaying the input through the connector', () => {
  const env = new E2E();
  beforeAll(async () => {
    await env.start();
  });
  afterAll(async () => {
    await env.stop();
  });

  it('re-emits results without new submissions, and reprocess forces a new submission', async () => {
    const file = await env.writeFile('doc.pdf', await sampleBytes('clean-pdf'));
    const ids = Array.from({ length: 6 }, (_, i) => `evt-replay-${i}`);
    const first = await env.startConnector();
    await env.collect();
    await env.produce(ids.map((id) => arrival(id, file, { pipeline_configuration: 'QUALITY_ONLY' })));
    await waitFor('the first results', () => env.on('quality').length === ids.length, 30_000);
    await first.stop();

    // --watch: the reset first, then it follows the connector re-reading (started once the reset is done).
    const watching = replayWatching(['--config', env.writeConfig(), '--to-earliest', '--watch']);
    await waitFor('the reset', () => watching.out.stdout.includes('watching group'), 30_000);
    expect(rows(watching.out.stdout)[0]).toEqual([String(ids.length), '0', String(ids.length), '0']);

    const second = await env.startConnector();
    expect(await watching.done).toEqual({ code: 0 });
    expect(watching.out.stdout).toMatch(new RegExp(`re-read ${ids.length} records in \\d+s`));
    // Not a terminal: no progress line, nothing on stderr.
    expect(watching.out.stderr).toBe('');
    // Once the group re-read every record (the watch above), each re-emitted result is published or
    // on its way: wait for them all, read the topic up to its end, then count exactly (an extra copy
    // fails here with the count, not as a time-out).
    await waitFor('the re-emitted results', () => env.on('quality').length >= 2 * ids.length, 60_000);
    await env.waitForOutputsRead(['quality']);
    expect(env.on('quality')).toHaveLength(2 * ids.length);
    const keys = new Map<string, Set<string>>();
    for (const o of env.on('quality')) {
      const set = keys.get(o.headers.event_id!) ?? new Set();
      set.add(o.key!);
      keys.set(o.headers.event_id!, set);
    }
    // Each event's two results carry the same submission id: re-emitted, not re-analysed.
    for (const id of ids) expect([...(keys.get(id) ?? [])]).toHaveLength(1);
    expect(env.sandbox.stats().submissionsByQueryId).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));

    await env.produce([arrival(ids[0]!, file, { pipeline_configuration: 'QUALITY_ONLY', reprocess: true })]);
    await waitFor('the reprocessed result', () => env.forEvent(ids[0]!).length === 3, 30_000);
    expect(new Set(env.forEvent(ids[0]!).map((o) => o.key)).size).toBe(2);
    expect(env.sandbox.stats().submissionsByQueryId[ids[0]!]).toBe(2);
    expect(env.on('dlq')).toEqual([]);
    await second.stop();
  });
});
