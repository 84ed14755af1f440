/**
 * `docstream dlq list|redrive` on the real stack, through the built CLI: dead letters of a run whose API
 * answered 503 to every create until the documents' (short) deadline are listed by reason, re-driven
 * once the fault is off, and their documents finish with one submission each; a second redrive sends nothing; a document analysed
 * since is refused unless --reprocess; a dead letter whose original is gone is refused and named.
 * `--tenant` selects the dead letters of named tenants (`-`: of no tenant) for list and redrive, and
 * an empty tenant id is refused with exit 2.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { sampleBytes } from '../../src/demo/corpus.js';
import { E2E, arrival, waitFor } from '../harness/e2e.js';

const run = promisify(execFile);
const CLI = path.resolve('dist/cli/index.js');

async function cli(args: string[]): Promise<string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
  const { stdout } = await run(process.execPath, [CLI, ...args], { env, timeout: 120_000 });
  return stdout;
}

interface RedriveJson {
  sent: number;
  entries: Array<{
    letter: { id: string; event_id: string | null; error_code: string };
    decision: { action: string; reason?: string; reprocess?: boolean; detail?: string };
  }>;
}

describe('docstream dlq', () => {
  let e2e: E2E;

  beforeAll(async () => {
    e2e = await new E2E(2).start();
  });

  afterAll(async () => {
    await e2e.stop();
  });

  it('lists dead letters by reason, re-drives them once the fault is off, and never twice', async () => {
    // A transient API failure is retried until a document's deadline: a short one makes the dead letters.
    const overrides = { connector: { deadlineMs: 4000 } };
    const config = e2e.writeConfig(overrides);
    e2e.sandbox.configure({ faults: { errorRate: 1 } });
    const connector = await e2e.startConnector(overrides);
    await e2e.collect();
    const ids = ['a1', 'a2', 'a3', 'e'].map((s) => `${e2e.id}-${s}`);
    const bytes = await sampleBytes('clean-pdf');
    const files = await Promise.all(ids.map((_, i) => e2e.writeFile(`${i}.pdf`, bytes)));
    await e2e.produce(
      ids.map((id, i) => arrival(id, files[i]!)),
      (i) => ids[i]!,
    );
    await waitFor('4 deadline dead letters', () => e2e.on('dlq').length >= 4, 90_000);
    // The API is down: the input is paused, so the next record waits until the API answers again.
    await waitFor('the input paused for the API outage', () => connector.pausedForOutage, 60_000);
    await e2e.produce(['{not json'], () => 'bad');
    // Nothing can show that a paused input did not read a record: this bounded look is the window in
    // which an input that kept reading would have dead-lettered it (a malformed record ends at once).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(connector.pausedForOutage).toBe(true);
    expect(e2e.on('dlq')).toHaveLength(4);
    e2e.sandbox.configure({ faults: { errorRate: 0 } });
    await waitFor('5 dead letters', () => e2e.on('dlq').length >= 5, 60_000);

    const listed = JSON.parse(await cli(['dlq', 'list', '--json', '--config', config])) as {
      total: number;
      by_reason: Array<{ stage: string; error_code: string; count: number }>;
      letters: Array<{ event_id: string | null }>;
    };
    expect(listed.total).toBe(5);
    expect(listed.by_reason).toEqual([
      expect.objectContaining({ stage: 'create', error_code: 'deadline', count: 4 }),
      expect.objectContaining({ stage: 'decode', error_code: 'invalid_json', count: 1 }),
    ]);
    const human = await cli(['dlq', 'list', '--code', 'deadline', '--config', config]);
    expect(human).toContain('4 of 5 dead letters match');
    expect(human).toMatch(/4\s+create\s+deadline/);

    // The fault is fixed; event "e" is sent again upstream and finishes before any redrive.
    await e2e.produce([arrival(ids[3]!, files[3]!)], () => ids[3]!);
    await waitFor(
      'e analysed',
      () => e2e.forEvent(ids[3]!).some((o) => o.topic === e2e.topics.fraud),
      60_000,
    );

    const dry = JSON.parse(
      await cli(['dlq', 'redrive', '--code', 'deadline', '--dry-run', '--json', '--config', config]),
    ) as RedriveJson;
    expect(dry.sent).toBe(0);
    expect(dry.entries.filter((e) => e.decision.action === 'send')).toHaveLength(3);
    // Whatever the dry run might have sent is in the input by now: once the group has handled the input
    // to its end, a sent record would have been submitted.
    await e2e.waitForHandled();
    for (const id of ids.slice(0, 3)) expect(await e2e.submissions(id)).toHaveLength(0);

    const first = JSON.parse(
      await cli(['dlq', 'redrive', '--code', 'deadline', '--json', '--config', config]),
    ) as RedriveJson;
    expect(first.sent).toBe(3);
    const refusedE = first.entries.find((e) => e.letter.event_id === ids[3]);
    expect(refusedE?.decision).toMatchObject({ action: 'refuse', reason: 'analysed' });
    for (const id of ids.slice(0, 3)) {
      await waitFor(
        `${id} analysed`,
        () => e2e.forEvent(id).some((o) => o.topic === e2e.topics.fraud),
        60_000,
      );
      expect(await e2e.submissions(id)).toHaveLength(1);
    }

    const second = JSON.parse(
      await cli(['dlq', 'redrive', '--code', 'deadline', '--json', '--config', config]),
    ) as RedriveJson;
    expect(second.sent).toBe(0);
    expect(
      second.entries
        .filter((e) => e.decision.reason === 'already-redriven')
        .map((e) => e.letter.event_id)
        .sort(),
    ).toEqual(ids.slice(0, 3).sort());

    // --reprocess re-sends the analysed one with reprocess: true: a second submission, by request.
    const again = JSON.parse(
      await cli(['dlq', 'redrive', '--event-id', ids[3]!, '--reprocess', '--json', '--config', config]),
    ) as RedriveJson;
    expect(again.sent).toBe(1);
    expect(again.entries[0]!.decision).toMatchObject({ action: 'send', reprocess: true });
    await waitFor(
      'e submitted again',
      () => e2e.forEvent(ids[3]!).filter((o) => o.topic === e2e.topics.fraud).length >= 2,
      60_000,
    );
    const fraudResults = (id: string) => e2e.forEvent(id).filter((o) => o.topic === e2e.topics.fraud).length;
    for (const id of ids.slice(0, 3)) expect(fraudResults(id)).toBe(1);

    // The malformed record's original is deleted (as retention would): refused, and named.
    const bad = e2e.on('dlq').find((o) => o.value.error_code === 'invalid_json')!;
    const admin = e2e.kafka.admin();
    await admin.connect();
    await admin.deleteRecordsBefore(
      e2e.topics.arrived,
      Number(bad.value.source_partition),
      String(Number(bad.value.source_offset) + 1),
    );
    await admin.disconnect();
    const gone = await cli(['dlq', 'redrive', '--code', 'invalid_json', '--config', config]);
    expect(gone).toContain('re-drove 0 of 1 dead letters');
    expect(gone).toMatch(/refused \(original-gone\).*no longer in the topic/);
  }, 360_000);

  it('says a dead-letter topic that does not exist is missing and exits 2, for list and redrive', async () => {
    const missing = `${e2e.id}-no-such-dlq`;
    const config = e2e.writeConfig({ topics: { dlq: missing } });
    for (const args of [
      ['dlq', 'list', '--config', config],
      ['dlq', 'redrive', '--all', '--config', config],
    ]) {
      const env = Object.fromEntries(
        Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')),
      );
      const failed = await run(process.execPath, [CLI, ...args], { env, timeout: 120_000 }).then(
        () => ({ code: 0, stdout: 'exited 0', stderr: '' }),
        (err: { code: number; stdout: string; stderr: string }) => err,
      );
      expect({ args, code: failed.code }).toEqual({ args, code: 2 });
      expect(failed.stdout).not.toContain('0 of 0');
      expect(failed.stderr).toContain(`the dead-letter topic ${missing} (topics.dlq) does not exist`);
    }
  }, 120_000);
});

describe('docstream dlq --tenant', () => {
  let e2e: E2E;

  beforeAll(async () => {
    e2e = await new E2E(1).start();
  });

  afterAll(async () => {
    await e2e.stop();
  });

  /** The CLI's exit code and output, whatever the code. */
  const exited = async (args: string[]) => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DOCSTREAM_')));
    return run(process.execPath, [CLI, ...args], { env, timeout: 120_000 }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
  };

  it('lists and re-drives the dead letters of the selected tenants only; - selects those of none', async () => {
    // No tenant directory: an event naming a tenant waits the (short) grace, then is dead-lettered
    // validate/unknown_tenant with its tenant; a malformed record is dead-lettered with none.
    const overrides = { tenants: { unknownGraceMs: 500 } };
    const config = e2e.writeConfig(overrides);
    await e2e.startConnector(overrides);
    await e2e.collect();
    const file = await e2e.writeFile('t.pdf', await sampleBytes('clean-pdf'));
    const [a1, g1, a2] = ['a1', 'g1', 'a2'].map((s) => `${e2e.id}-${s}`);
    await e2e.produce(
      [
        arrival(a1!, file, { tenant: 'acme' }),
        arrival(g1!, file, { tenant: 'globex' }),
        arrival(a2!, file, { tenant: 'acme' }),
        '{not json',
      ],
      (i) => [a1!, g1!, a2!, 'bad'][i]!,
    );
    await waitFor('4 dead letters', () => e2e.on('dlq').length >= 4, 60_000);

    type Listed = {
      total: number;
      matched: number;
      letters: Array<{ event_id: string | null; tenant: string | null; error_code: string }>;
    };
    const list = async (...args: string[]) =>
      JSON.parse(await cli(['dlq', 'list', '--json', '--config', config, ...args])) as Listed;
    const acme = await list('--tenant', 'acme');
    expect([acme.total, acme.matched]).toEqual([4, 2]);
    expect(acme.letters.map((l) => [l.event_id, l.tenant, l.error_code]).sort()).toEqual([
      [a1, 'acme', 'unknown_tenant'],
      [a2, 'acme', 'unknown_tenant'],
    ]);
    const none = await list('--tenant', '-');
    expect(none.letters.map((l) => [l.tenant, l.error_code])).toEqual([[null, 'invalid_json']]);
    const globexOrNone = await list('--tenant', 'globex,-');
    // The malformed record is dead-lettered at once, the others after the grace: sorted, not in order.
    expect(globexOrNone.letters.map((l) => String(l.tenant)).sort()).toEqual(['globex', 'null']);
    expect((await list('--tenant', 'acme', '--tenant', 'globex')).matched).toBe(3);
    expect((await list('--tenant', 'initech')).matched).toBe(0);

    const human = await cli(['dlq', 'list', '--tenant', 'globex', '--config', config]);
    expect(human).toContain('1 of 4 dead letters match');
    expect(human).toMatch(/stage\/code\s+tenant\s+event id/);
    expect(human).toMatch(new RegExp(`validate/unknown_tenant\\s+globex\\s+${g1}`));

    for (const value of ['', 'acme,', 'acme,,globex']) {
      const refused = await exited(['dlq', 'list', '--tenant', value, '--config', config]);
      expect({ value, code: refused.code, stdout: refused.stdout }).toEqual({ value, code: 2, stdout: '' });
      expect(refused.stderr).toBe(
        'docstream dlq list: --tenant: an empty tenant id: give tenant names (a-z, 0-9), or - for records of no tenant\n',
      );
    }
    const redriveRefused = await exited(['dlq', 'redrive', '--tenant', '', '--config', config]);
    expect(redriveRefused.code).toBe(2);
    expect(redriveRefused.stderr).toContain('docstream dlq redrive: --tenant: an empty tenant id');

    // The re-drive of one tenant: globex's dead letter only, the others untouched.
    const dry = JSON.parse(
      await cli(['dlq', 'redrive', '--tenant', 'globex', '--dry-run', '--json', '--config', config]),
    ) as RedriveJson;
    expect(dry.entries.map((e) => [e.letter.event_id, e.decision.action])).toEqual([[g1, 'send']]);
    const sent = JSON.parse(
      await cli(['dlq', 'redrive', '--tenant', 'globex', '--json', '--config', config]),
    ) as RedriveJson;
    expect(sent.sent).toBe(1);
    expect(sent.entries.map((e) => e.letter.event_id)).toEqual([g1]);
    // Still no globex in the directory: the re-driven event is dead-lettered again, as globex's.
    const globexLetters = () => e2e.on('dlq').filter((o) => o.value.event_id === g1);
    await waitFor('the re-driven dead letter', () => globexLetters().length >= 2, 60_000);
    expect(globexLetters().map((o) => o.value.tenant)).toEqual(['globex', 'globex']);
    expect(e2e.on('dlq')).toHaveLength(5);
    const acmeAfter = JSON.parse(
      await cli(['dlq', 'redrive', '--tenant', 'acme', '--dry-run', '--json', '--config', config]),
    ) as RedriveJson;
    expect(acmeAfter.entries.map((e) => [e.letter.event_id, e.decision.action]).sort()).toEqual([
      [a1, 'send'],
      [a2, 'send'],
    ]);
    const text = await cli(['dlq', 'redrive', '--tenant', 'acme', '--dry-run', '--config', config]);
    expect(text).toMatch(/dead letter\s+tenant\s+event id\s+what/);
    expect(text).toMatch(new RegExp(`acme\\s+${a1}\\s+would send`));
  }, 240_000);
});
