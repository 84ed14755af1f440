import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PDFDocument } from 'pdf-lib';
import { png, writeCorpus, writeTenantPayslip } from './corpus.js';

describe('demo corpus', () => {
  const dirs: string[] = [];
  const tmp = (): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corpus-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('writes valid PDFs with the metadata the fraud rules read, a PNG and an unsupported file', async () => {
    const samples = await writeCorpus(tmp());
    const byKind = Object.fromEntries(samples.map((s) => [s.kind, s]));
    const edited = await PDFDocument.load(fs.readFileSync(byKind['edited-pdf']!.file), {
      updateMetadata: false,
    });
    expect(edited.getProducer()).toContain('Photoshop');
    const backdated = await PDFDocument.load(fs.readFileSync(byKind['backdated-pdf']!.file), {
      updateMetadata: false,
    });
    expect(backdated.getPageCount()).toBe(2);
    expect(fs.readFileSync(byKind['png-image']!.file).subarray(1, 4).toString()).toBe('PNG');
    expect(byKind.unsupported!.expectedFileType).toBe('unsupported');
    for (const s of samples) {
      expect(s.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(fs.statSync(s.file).size).toBe(s.size);
    }
    const again = await writeCorpus(tmp());
    expect(again.map((s) => s.sha256)).toEqual(samples.map((s) => s.sha256));
  });

  it("writes each tenant's clean payslip with bytes of its own, as clean as the corpus's", async () => {
    const dir = tmp();
    const clean = (await writeCorpus(dir, ['clean-pdf']))[0]!;
    const [acme, globex] = await Promise.all([
      writeTenantPayslip(dir, 'acme'),
      writeTenantPayslip(dir, 'globex'),
    ]);
    expect(new Set([clean.sha256, acme!.sha256, globex!.sha256]).size).toBe(3);
    const doc = await PDFDocument.load(fs.readFileSync(acme!.file), { updateMetadata: false });
    expect([doc.getTitle(), doc.getProducer(), doc.getModificationDate()]).toEqual([
      'Payslip March, acme',
      'PayrollSuite 4.2',
      doc.getCreationDate(),
    ]);
    expect((await writeTenantPayslip(tmp(), 'acme')).sha256).toBe(acme!.sha256);
  });

  it('encodes the PNG size in its header', () => {
    const img = png(3, 2);
    expect(img.readUInt32BE(16)).toBe(3);
    expect(img.readUInt32BE(20)).toBe(2);
  });
});
