/**
 * `docstream inspect` and `docstream status` on the real stack, through the built CLI, against two
 * `docstream run` processes of one group: inspect finds a finished, a running and a dead-lettered
 * document by event id and by submission id, with its partition, owner, state, results and dead letter;
 * status shows both members, their partitions and what their metrics endpoints say. Each record shows
 * its tenant, and `--tenant` narrows what inspect shows to the selected tenants' records.
 */
import { execFile } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { sampleBytes } from '../../src/demo/corpus.js';
import type { Inspection } from '../../src/operator/inspect.js';

/** `inspect --json`: the inspection, its dead letters under the field name scripts read (`letters`). */
type InspectionJson = Omit<Inspection, 'deadLetters'> & { letters: Inspection['deadLetters'] };
import type { GroupStatus } from '../../src/operator/status.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

const run = promisify(execFile);
const CLI = path.resolve('dist/cli/index.js');

async function cli(args: string[]): Promise<string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
  try {
    const { stdout } = await run(process.execPath, [CLI, ...args], { env, timeout: 120_000 });
    return stdout;
  } catch (err) {
    // inspect exits 3 when nothing matches; its output still says so.
    const e = err as { code?: number; stdout?: string };
    if (e.code === 3 && e.stdout !== undefined) return e.stdout;
    throw err;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

describe('docstream inspect and status', () => {
  let e2e: E2E;

  beforeAll(async () => {
    e2e = await new E2E(2).start({ maxUploadBytes: 60_000 });
  });

  afterAll(async () => {
    await e2e.stop();
  });

  it('finds finished, running and dead-lettered documents; shows two members and their partitions', async () => {
    const [p1, p2] = [await freePort(), await freePort()];
    // No tenant directory, a short grace: an event naming a tenant is dead-lettered unknown_tenant, as its.
    const tenants = { unknownGraceMs: 1000 };
    e2e.spawnConnector({ http: { port: p1 }, tenants });
    e2e.spawnConnector({ http: { port: p2 }, tenants });
    const config = e2e.writeConfig({ tenants });
    await e2e.collect();

    const status = async () => JSON.parse(await cli(['status', '--json', '--config', config])) as GroupStatus;
    // One status at a time, a second apart: the command is a process of its own.
    let s: GroupStatus | null = null;
    const deadline = Date.now() + 90_000;
    for (;;) {
      s = await status().catch(() => null);
      if (
        s !== null &&
        s.members.length === 2 &&
        s.members.every((m) => m.partitions.length === 1 && m.metrics?.ready === true)
      )
        break;
      if (Date.now() > deadline)
        throw new Error(
          `no stable group of two ready members: ${JSON.stringify(s)}; ${e2e.childLogs.flat().slice(-5).join('')}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    expect(s.members.flatMap((m) => m.partitions).sort()).toEqual([0, 1]);
    expect(s.unassigned).toEqual([]);
    expect(s.members.map((m) => new URL(m.metrics!.url).port).sort()).toEqual(
      [String(p1), String(p2)].sort(),
    );
    for (const m of s.members) {
      expect(m.metrics).toMatchObject({ reachable: true, in_flight: expect.any(Number), ready: true });
      expect(m.metrics!.api_share_per_second).toBeGreaterThan(0);
      expect(m.metrics!.limiter_rate_per_second).toBeGreaterThan(0);
    }
    const human = await cli(['status', '--config', config]);
    expect(human).toMatch(/Stable, 2 member\(s\), protocol docstream-sticky/);

    const done = `${e2e.id}-done`;
    const dead = `${e2e.id}-dead`;
    const running = `${e2e.id}-running`;
    const acme = `${e2e.id}-acme`;
    const pdf = await e2e.writeFile('ok.pdf', await sampleBytes('clean-pdf'));
    // Larger than the sandbox accepts: the upload is refused (413) after the submission exists.
    const big = await e2e.writeFile(
      'big.pdf',
      Buffer.concat([await sampleBytes('clean-pdf'), Buffer.alloc(80_000, 0x20)]),
    );
    await e2e.produce(
      [arrival(done, pdf), arrival(dead, big), arrival(acme, pdf, { tenant: 'acme' })],
      (i) => [done, dead, acme][i]!,
    );
    await waitFor(
      'the finished document',
      () => e2e.forEvent(done).filter((o) => o.topic !== e2e.topics.dlq).length >= 3,
    );
    await waitFor('the dead letter', () => e2e.forEvent(dead).some((o) => o.topic === e2e.topics.dlq));
    await waitFor("acme's dead letter", () => e2e.forEvent(acme).some((o) => o.topic === e2e.topics.dlq));
    e2e.sandbox.configure({ processing: { distribution: 'fixed', meanMs: 600_000, maxMs: 600_000 } });
    await e2e.produce([arrival(running, pdf)], () => running);
    let runningSubmission: string | undefined;
    for (const until = Date.now() + 60_000; runningSubmission === undefined;) {
      const items = (await e2e.submissions(running)) as Array<{ id: string; state?: string }>;
      runningSubmission = items.find((i) => i.state === 'processing')?.id;
      if (Date.now() > until) throw new Error('the running document was not uploaded');
      await new Promise((resolve) => setTimeout(resolve, 300));
    }

    const byEvent = async (id: string) =>
      JSON.parse(await cli(['inspect', id, '--json', '--config', config])) as InspectionJson;
    // A document's owner is the member that holds its partition when inspect asks. The group may
    // rebalance between two commands (a session lost on a loaded machine), so inspect's answer is
    // checked against the owner the last status before it showed and the one just after it.
    const ownerOf = (g: GroupStatus, partition: number) =>
      g.partitions.find((p) => p.partition === partition)?.owner ?? null;
    let lastStatus: GroupStatus = s;
    const inspectOwned = async (id: string) => {
      const before = lastStatus;
      const x = await byEvent(id);
      lastStatus = await status();
      const partition = x.input!.partition;
      expect([ownerOf(before, partition), ownerOf(lastStatus, partition)]).toContain(x.owner?.member_id);
      return x;
    };

    const finished = await inspectOwned(done);
    expect(finished).toMatchObject({ matched: 'event_id', event_id: done, state: { status: 'DONE' } });
    expect(finished.state!.published).toEqual(expect.arrayContaining(['fraud', 'quality', 'classification']));
    expect(finished.results.map((r) => r.kind).sort()).toEqual(['classification', 'fraud', 'quality']);
    expect(finished.letters).toEqual([]);

    const deadLettered = await inspectOwned(dead);
    expect(deadLettered).toMatchObject({ matched: 'event_id', state: { status: 'FAILED' } });
    expect(deadLettered.letters).toHaveLength(1);
    expect(deadLettered.letters[0]).toMatchObject({ stage: 'upload', error_code: 'api_413' });

    const inFlight = await inspectOwned(running);
    expect(inFlight.matched).toBe('event_id');
    expect(['CREATED', 'UPLOADED']).toContain(inFlight.state!.status);
    expect(inFlight.results).toEqual([]);
    expect(inFlight.submission_ids).toEqual([runningSubmission]);

    // The same documents by submission id.
    for (const x of [finished, deadLettered, inFlight]) {
      const sid = x.state!.submission_id;
      const bySubmission = await byEvent(sid);
      expect(bySubmission).toMatchObject({ matched: 'submission_id', event_id: x.event_id });
      expect(bySubmission.state!.status).toBe(x.state!.status);
      expect(bySubmission.results).toHaveLength(x.results.length);
      expect(bySubmission.letters).toHaveLength(x.letters.length);
    }

    const text = await cli(['inspect', dead, '--config', config]);
    expect(text).toContain(`document ${dead}`);
    expect(text).toMatch(/state:\s+FAILED/);
    expect(text).toMatch(/upload\/api_413/);
    // Tenants: the document's, each result's and dead letter's; --tenant shows only the selected ones.
    expect(finished.tenant).toBeNull();
    expect(finished.results.map((r) => r.tenant)).toEqual([null, null, null]);
    const ofAcme = await byEvent(acme);
    expect(ofAcme).toMatchObject({ matched: 'event_id', tenant: 'acme' });
    expect(ofAcme.letters.map((l) => [l.tenant, l.error_code])).toEqual([['acme', 'unknown_tenant']]);
    const selected = async (id: string, ...tenantArgs: string[]) =>
      JSON.parse(await cli(['inspect', id, '--json', '--config', config, ...tenantArgs])) as InspectionJson;
    expect(await selected(acme, '--tenant', 'globex,acme')).toMatchObject({
      matched: 'event_id',
      tenant: 'acme',
      letters: [expect.objectContaining({ tenant: 'acme' })],
      hidden: { state: false, results: 0, dead_letters: 0 },
    });
    expect(await selected(acme, '--tenant', '-')).toMatchObject({
      matched: null,
      event_id: null,
      letters: [],
      hidden: { dead_letters: 1 },
    });
    const defaultOnly = await selected(done, '--tenant', '-');
    expect(defaultOnly.matched).toBe('event_id');
    expect(defaultOnly.results).toHaveLength(3);
    expect((await selected(done, '--tenant', 'acme')).matched).toBeNull();
    const acmeText = await cli(['inspect', acme, '--config', config]);
    expect(acmeText).toMatch(/tenant:\s+acme\n/);
    expect(acmeText).toMatch(/validate\/unknown_tenant .*tenant=acme/);
    expect(await cli(['inspect', done, '--config', config])).toMatch(/fraud .*tenant=- status=/);
    const hiddenText = await cli(['inspect', acme, '--tenant', 'globex', '--config', config]);
    expect(hiddenText).toBe(
      `${acme}: no document of the selected tenants with this event id or submission id in the topics (not shown, of other tenants: 1 dead letter)\n`,
    );
    const emptyTenant = await run(
      process.execPath,
      [CLI, 'inspect', acme, '--tenant', 'acme,', '--config', config],
      {
        timeout: 60_000,
      },
    ).catch((err: { code?: number; stdout?: string; stderr?: string }) => err);
    expect('code' in emptyTenant ? emptyTenant.code : 0).toBe(2);
    expect(emptyTenant.stderr).toBe(
      'docstream inspect: --tenant: an empty tenant id: give tenant names (a-z, 0-9), or - for records of no tenant\n',
    );

    const none = await cli(['inspect', `${e2e.id}-nothing`, '--config', config]);
    expect(none).toContain('no document with this event id or submission id');
    // An id no document can have (100 KB, control characters) is refused, echoed cut and escaped.
    const hostile = await run(process.execPath, [CLI, 'inspect', `\u001b]0;x\u0007${'i'.repeat(100_000)}`], {
      timeout: 60_000,
    }).catch((err: { code?: number; stdout?: string; stderr?: string }) => err);
    expect('code' in hostile ? hostile.code : 0).toBe(2);
    expect(hostile.stdout).toBe('');
    expect(hostile.stderr!.length).toBeLessThan(300);
    expect(hostile.stderr).toMatch(
      /is not an event id or a submission id: 100006 characters \(at most 256\)/,
    );
    // eslint-disable-next-line no-control-regex -- no raw control character reaches the terminal
    expect(hostile.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f]/);
  }, 360_000);
});
