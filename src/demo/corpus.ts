/**
 * Generates the sample documents the demo, the end-to-end tests and the benchmark send: PDFs that
 * trip (or do not trip) the sandbox's documented fraud rules, a PNG image, and an unsupported file.
 * Everything is made here, so no binary fixture is checked in and the bytes are deterministic.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { PDFDocument, StandardFonts } from 'pdf-lib';

export type SampleKind =
  'clean-pdf' | 'edited-pdf' | 'trusted-pdf' | 'backdated-pdf' | 'png-image' | 'unsupported';

export interface Sample {
  kind: SampleKind;
  file: string;
  sha256: string;
  size: number;
  /** What the sandbox's rules should answer, for display and assertions. */
  expectedFileType: 'pdf' | 'image' | 'unsupported';
}

const FIXED_DATE = new Date('2026-01-15T10:00:00Z');

async function pdf(options: {
  title: string;
  producer: string;
  creator: string;
  modDate?: Date;
  pages?: number;
}) {
  const doc = await PDFDocument.create({ updateMetadata: false });
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let i = 0; i < (options.pages ?? 1); i++) {
    const page = doc.addPage([595, 842]);
    page.drawText(`${options.title} — page ${i + 1}`, { x: 50, y: 780, size: 18, font });
    page.drawText('Net pay: 2,345.67 EUR', { x: 50, y: 740, size: 12, font });
  }
  doc.setTitle(options.title);
  doc.setProducer(options.producer);
  doc.setCreator(options.creator);
  doc.setAuthor('docstream demo');
  doc.setCreationDate(FIXED_DATE);
  doc.setModificationDate(options.modDate ?? FIXED_DATE);
  return Buffer.from(await doc.save({ useObjectStreams: false }));
}

function crc32(buf: Buffer): number {
  let c = ~0;
  for (const byte of buf) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/** A valid RGB PNG of the given size with a simple gradient, so it is not trivially tiny. */
export function png(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // RGB
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3);
    for (let x = 0; x < width; x++) {
      row[1 + x * 3] = (x * 255) / width;
      row[2 + x * 3] = (y * 255) / height;
      row[3 + x * 3] = 128;
    }
    rows.push(row);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(Buffer.concat(rows))),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

export async function sampleBytes(kind: SampleKind): Promise<Buffer> {
  switch (kind) {
    case 'clean-pdf':
      return pdf({ title: 'Payslip March', producer: 'PayrollSuite 4.2', creator: 'PayrollSuite' });
    case 'edited-pdf':
      return pdf({ title: 'Payslip March', producer: 'Adobe Photoshop 25.0', creator: 'Adobe Photoshop' });
    case 'trusted-pdf':
      return pdf({
        title: 'Bank statement',
        producer: 'docstream-trusted issuer',
        creator: 'Bank core system',
      });
    case 'backdated-pdf':
      return pdf({
        title: 'Invoice 2026-001',
        producer: 'InvoiceMaker 2.0',
        creator: 'InvoiceMaker',
        modDate: new Date('2026-06-30T10:00:00Z'),
        pages: 2,
      });
    case 'png-image':
      return png(640, 400);
    case 'unsupported':
      return Buffer.from('name,amount\nAda,2345.67\n', 'utf8');
  }
}

const EXPECTED_TYPE: Record<SampleKind, Sample['expectedFileType']> = {
  'clean-pdf': 'pdf',
  'edited-pdf': 'pdf',
  'trusted-pdf': 'pdf',
  'backdated-pdf': 'pdf',
  'png-image': 'image',
  unsupported: 'unsupported',
};

const EXTENSION: Record<SampleKind, string> = {
  'clean-pdf': 'pdf',
  'edited-pdf': 'pdf',
  'trusted-pdf': 'pdf',
  'backdated-pdf': 'pdf',
  'png-image': 'png',
  unsupported: 'csv',
};

const SAMPLE_KINDS = Object.keys(EXPECTED_TYPE) as SampleKind[];

/**
 * A clean PDF payslip of `tenant`, written into `dir`: its title names the tenant, so its bytes are
 * its own and no other document of a run makes it a repeat (the sandbox's `serial_fraud` rule).
 */
export async function writeTenantPayslip(dir: string, tenant: string): Promise<Sample> {
  await fs.mkdir(dir, { recursive: true });
  const bytes = await pdf({
    title: `Payslip March, ${tenant}`,
    producer: 'PayrollSuite 4.2',
    creator: 'PayrollSuite',
  });
  const file = path.join(dir, `clean-pdf-${tenant}.pdf`);
  await fs.writeFile(file, bytes);
  return {
    kind: 'clean-pdf',
    file,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    size: bytes.length,
    expectedFileType: 'pdf',
  };
}

/** Writes one file per kind into `dir` and describes them. */
export async function writeCorpus(
  dir: string,
  kinds: readonly SampleKind[] = SAMPLE_KINDS,
): Promise<Sample[]> {
  await fs.mkdir(dir, { recursive: true });
  const out: Sample[] = [];
  for (const kind of kinds) {
    const bytes = await sampleBytes(kind);
    const file = path.join(dir, `${kind}.${EXTENSION[kind]}`);
    await fs.writeFile(file, bytes);
    out.push({
      kind,
      file,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      size: bytes.length,
      expectedFileType: EXPECTED_TYPE[kind],
    });
  }
  return out;
}
