/**
 * Uploads over HTTP: file facts are inspected once per distinct content, and what the results
 * say about a file is the same whichever upload of it was inspected; small uploads are kept in
 * memory, larger ones (and small ones past the memory budget) in storageDir.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { api, pdf, TINY_PNG, token, until200, upload } from './helpers.js';

let sb: Sandbox;
let c: ReturnType<typeof api>;

beforeAll(async () => {
  sb = await startSandbox({ processing: { distribution: 'fixed', meanMs: 20 }, seed: 3 });
  c = api(sb, await token(sb));
});

afterAll(async () => {
  await sb.close();
});

/** Uploads `bytes` to a new submission and answers its fraud and content results. */
async function analyse(bytes: Uint8Array) {
  const s = await c.create({ query_id: 'uploads-test' });
  expect((await upload(s.upload_url, bytes)).status).toBe(200);
  const fraud = await until200(() => c.get(`/v2/submission/${s.submission_id}/fraud?with_metadata=true`));
  const content = await until200(() => c.get(`/v2/submission/${s.submission_id}/content`));
  return { id: s.submission_id, fraud: fraud.body as Record<string, unknown>, content: content.body };
}

/** What a result says about the file, without what belongs to the submission (serial fraud). */
function aboutFile(result: Record<string, unknown>) {
  const indicators = (result.indicators as { indicator_id: string }[]).filter(
    (i) => i.indicator_id !== 'serial_fraud',
  );
  const { submission_id: _id, analysis_time: _time, query_id: _query, score: _score, ...rest } = result;
  return { ...rest, indicators };
}

describe('file facts by content', () => {
  test('the same bytes are inspected once; other bytes are inspected', async () => {
    const bytes = await pdf({ producer: 'Adobe Photoshop 25.0', title: 'Payslip', text: 'Net pay 100' });
    const before = sb.stats().inspections;
    const first = await analyse(bytes);
    expect(sb.stats().inspections).toBe(before + 1);
    const second = await analyse(Buffer.from(bytes));
    expect(sb.stats().inspections).toBe(before + 1);
    expect(sb.stats().uploads).toBeGreaterThanOrEqual(2);

    expect(second.id).not.toBe(first.id);
    expect(aboutFile(second.fraud)).toEqual(aboutFile(first.fraud));
    expect(first.fraud).toMatchObject({ status: 'SUCCESS', score: 'HIGH_RISK', num_pages: 1 });
    expect(aboutFile(first.fraud)).toMatchObject({
      sample_metadata: { producer: 'Adobe Photoshop 25.0', title: 'Payslip' },
      indicators: [{ indicator_id: 'editing_tool' }],
    });
    const { analysis_time: _t1, ...content1 } = first.content as Record<string, unknown>;
    const { analysis_time: _t2, ...content2 } = second.content as Record<string, unknown>;
    expect(content2).toEqual(content1);
    expect(content1).toMatchObject({ pages: [{ page: 1, text: 'Net pay 100' }] });

    await analyse(TINY_PNG);
    expect(sb.stats().inspections).toBe(before + 2);
  });
});

describe('where uploads are kept', () => {
  let dir: string;
  let kept: Sandbox;
  let k: ReturnType<typeof api>;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docstream-uploads-test-'));
    kept = await startSandbox({
      processing: { distribution: 'fixed', meanMs: 20 },
      storageDir: dir,
      inMemoryUploads: { maxFileBytes: 64 * 1024, maxTotalBytes: 100 * 1024 },
    });
    k = api(kept, await token(kept));
  });

  afterAll(async () => {
    await kept.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const files = () => fs.readdirSync(dir).sort();

  async function put(bytes: Uint8Array) {
    const s = await k.create({});
    expect((await upload(s.upload_url, bytes)).status).toBe(200);
    const fraud = await until200(() => k.get(`/v2/submission/${s.submission_id}/fraud`));
    return { id: s.submission_id, fraud: fraud.body as Record<string, unknown> };
  }

  test('small in memory, large in storageDir, past the budget in storageDir; delete frees both', async () => {
    const small = await pdf({ producer: 'PayrollSuite 4.2', text: 'small' });
    const a = await put(small);
    expect(files()).toEqual([]);
    expect(a.fraud).toMatchObject({ status: 'SUCCESS', file_type: 'pdf', num_pages: 1 });

    // 80 KiB: over maxFileBytes, so on disk, and inspected like the small one.
    const large = Buffer.concat([Buffer.from(await pdf({ text: 'large' })), Buffer.alloc(80 * 1024, 0x20)]);
    const b = await put(large);
    expect(files()).toEqual([`${b.id}.bin`]);
    expect(fs.readFileSync(path.join(dir, `${b.id}.bin`)).equals(large)).toBe(true);
    expect(b.fraud).toMatchObject({ status: 'SUCCESS', file_type: 'pdf', num_pages: 1 });

    // Two 60 KiB files: the second would take the memory held past 100 KiB.
    const c = await put(Buffer.concat([TINY_PNG, Buffer.alloc(60 * 1024 - TINY_PNG.length, 1)]));
    const d = await put(Buffer.concat([TINY_PNG, Buffer.alloc(60 * 1024 - TINY_PNG.length, 2)]));
    expect(files()).toEqual([`${b.id}.bin`, `${d.id}.bin`].sort());
    expect(d.fraud).toMatchObject({ status: 'SUCCESS', file_type: 'image' });

    // Deleting the in-memory one frees its bytes: the next 60 KiB file fits in memory again.
    expect((await k.del(`/v2/submission/${c.id}`)).status).toBe(204);
    expect((await k.del(`/v2/submission/${b.id}`)).status).toBe(204);
    await new Promise((r) => setTimeout(r, 50));
    expect(files()).toEqual([`${d.id}.bin`]);
    await put(Buffer.concat([TINY_PNG, Buffer.alloc(60 * 1024 - TINY_PNG.length, 3)]));
    expect(files()).toEqual([`${d.id}.bin`]);
  });
});
