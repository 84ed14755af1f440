import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { constants, deflateRawSync, inflateSync } from 'node:zlib';
import { PDFDocument } from 'pdf-lib';
import { inspectFile } from './inspect.js';
import { exceedsPdfLimits, PDF_LIMITS } from './pdf-limits.js';
import { UploadScanner } from './scanner.js';

const MiB = 1024 * 1024;

/**
 * A valid zlib stream of `mib` MiB of zeros, built without ever holding them: one flushed
 * deflate block of 1 MiB repeated (each copy refers only to itself), a final empty block, and
 * the Adler-32 of n zeros, which is (n mod 65521) << 16 | 1.
 */
export function zeroBomb(mib: number): Buffer {
  const block = deflateRawSync(Buffer.alloc(MiB), { level: 9, finishFlush: constants.Z_FULL_FLUSH });
  const last = deflateRawSync(Buffer.alloc(0));
  const adler = Buffer.alloc(4);
  adler.writeUInt32BE((((mib * MiB) % 65521) * 65536 + 1) >>> 0);
  return Buffer.concat([Buffer.from([0x78, 0xda]), ...Array.from({ length: mib }, () => block), last, adler]);
}

/** A one-page PDF whose only object stream inflates to `data`'s expansion. */
export function pdfWithObjectStream(data: Buffer, filter = '/FlateDecode'): Buffer {
  const head = [
    '%PDF-1.7',
    '1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj',
    '2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj',
    '3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 300 300] >> endobj',
    `4 0 obj << /Type /ObjStm /N 1 /First 4 /Filter ${filter} /Length ${data.length} >>`,
    'stream',
    '',
  ].join('\n');
  const tail = '\nendstream\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF\n';
  return Buffer.concat([Buffer.from(head, 'latin1'), data, Buffer.from(tail, 'latin1')]);
}

async function inspectBytes(bytes: Buffer) {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'docstream-pdf-limits-'));
  try {
    const file = path.join(dir, 'doc.pdf');
    await fs.writeFile(file, bytes);
    const scanner = new UploadScanner();
    scanner.update(bytes);
    return await inspectFile(file, scanner.finish());
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

describe('PDF expansion limits', () => {
  test('the zlib bomb used below is valid and small', () => {
    const bomb = zeroBomb(4);
    expect(bomb.length).toBeLessThan(8 * 1024);
    const inflated = inflateSync(bomb);
    expect(inflated.length).toBe(4 * MiB);
    expect(inflated.every((b) => b === 0)).toBe(true);
  });

  test('an object stream inflating to 1 GiB is refused after the bound, not expanded', async () => {
    const bomb = pdfWithObjectStream(zeroBomb(1024));
    expect(bomb.length).toBeLessThan(2 * MiB);
    const reason = await exceedsPdfLimits(bomb, 1);
    expect(reason).toBe(`object streams inflating to more than ${PDF_LIMITS.maxObjectStreamBytes} bytes`);
  });

  test('an upload of that bomb is reported as a failed parse naming the bound', async () => {
    const facts = await inspectBytes(pdfWithObjectStream(zeroBomb(1024)));
    expect(facts.fileType).toBe('pdf');
    expect(facts.parseFailed).toBe(true);
    expect(facts.parseFailure).toMatch(/does not expand a PDF with object streams inflating to more than/);
    expect(facts.numPages).toBe(1);
  });

  test('the total inflated bytes of all streams are bounded too', async () => {
    const content = zeroBomb(16);
    const reason = await exceedsPdfLimits(
      Buffer.concat([
        Buffer.from(`5 0 obj << /Filter /FlateDecode /Length ${content.length} >>\nstream\n`, 'latin1'),
        content,
        Buffer.from('\nendstream\nendobj\n', 'latin1'),
      ]),
      0,
      { ...PDF_LIMITS, maxInflatedBytes: 8 * MiB },
    );
    expect(reason).toBe(`streams inflating to more than ${8 * MiB} bytes`);
  });

  test('expanding filters the sandbox does not count are refused', async () => {
    expect(await exceedsPdfLimits(pdfWithObjectStream(Buffer.from('x'), '/LZWDecode'), 1)).toMatch(
      /LZWDecode/,
    );
    expect(
      await exceedsPdfLimits(pdfWithObjectStream(Buffer.from('x'), '[/ASCIIHexDecode /FlateDecode]'), 1),
    ).toMatch(/FlateDecode after ASCIIHexDecode/);
    expect(await exceedsPdfLimits(pdfWithObjectStream(Buffer.from('x'), '7 0 R'), 1)).toMatch(/indirect/);
  });

  test('pages are counted in plain syntax and inside object streams', async () => {
    const doc = await PDFDocument.create();
    for (let i = 0; i < 5; i++) doc.addPage([100, 100]);
    const packed = Buffer.from(await doc.save({ useObjectStreams: true }));
    const plain = Buffer.from(await doc.save({ useObjectStreams: false }));
    const limits = { ...PDF_LIMITS, maxPages: 4 };
    expect(await exceedsPdfLimits(packed, 0, limits)).toBe('more than 4 pages');
    expect(await exceedsPdfLimits(plain, 5, limits)).toBe('more than 4 pages');
    expect(await exceedsPdfLimits(packed, 0)).toBeNull();
    expect(await exceedsPdfLimits(plain, 5)).toBeNull();
  });

  test('ordinary documents are still parsed, text included', async () => {
    const doc = await PDFDocument.create();
    doc.addPage([300, 300]).drawText('INVOICE 42', { x: 20, y: 200, size: 12 });
    doc.addPage([300, 300]);
    doc.setTitle('An ordinary document');
    const facts = await inspectBytes(Buffer.from(await doc.save()));
    expect(facts.parseFailed).toBe(false);
    expect(facts.parseFailure).toBeUndefined();
    expect(facts.numPages).toBe(2);
    expect(facts.metadata.title).toBe('An ordinary document');
    expect(facts.pageText[0]).toContain('INVOICE 42');
  });
});
