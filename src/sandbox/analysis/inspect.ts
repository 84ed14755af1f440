/**
 * Turns an uploaded file into the facts the simulated analyses decide on: file type and MIME type
 * from magic bytes, page count and the PDF Info dictionary, page text, image dimensions.
 * PDFs up to PDF_PARSE_CAP bytes are parsed with pdf-lib; larger ones rely on the streaming scan.
 */
import { readFile } from 'node:fs/promises';
import { constants, inflateSync } from 'node:zlib';
import { fileTypeFromBuffer } from 'file-type';
import { PDFArray, PDFDocument, PDFName, PDFRawStream, type PDFPage } from 'pdf-lib';
import { exceedsPdfLimits, PDF_LIMITS, type PdfLimits } from './pdf-limits.js';
import type { InfoKey, ScanResult } from './scanner.js';

const PDF_PARSE_CAP = 8 * 1024 * 1024;
const IMAGE_MIME = new Set(['image/png', 'image/jpeg', 'image/tiff', 'image/webp']);
const MAX_TEXT_PAGES = 50;
const MAX_TEXT_PER_PAGE = 4000;
/** A content stream is inflated at most this far for its text. */
const MAX_CONTENT_STREAM_BYTES = 1024 * 1024;

export interface Inspection {
  facts: FileFacts;
  /** False when the outcome depended on more than the bytes (reading them failed). */
  cacheable: boolean;
}

export interface SampleMetadataFacts {
  producer: string | null;
  creator: string | null;
  creation_date: string | null;
  mod_date: string | null;
  author: string | null;
  title: string | null;
  keywords: string | null;
  subject: string | null;
}

export interface FileFacts {
  sha256: string;
  size: number;
  fileType: 'pdf' | 'image' | 'unsupported';
  mimeType: string;
  numPages: number;
  metadata: SampleMetadataFacts;
  creationDate: Date | null;
  modDate: Date | null;
  eofCount: number;
  /** The file claims to be a PDF but could not be parsed (or was too large once expanded). */
  parseFailed: boolean;
  /** Why, when it is not plain malformed syntax: a bound of PdfLimits that was crossed. */
  parseFailure?: string;
  pageText: string[];
  image: { width: number; height: number } | null;
}

export const EMPTY_METADATA: SampleMetadataFacts = {
  producer: null,
  creator: null,
  creation_date: null,
  mod_date: null,
  author: null,
  title: null,
  keywords: null,
  subject: null,
};

/** Parses a PDF date (`D:YYYYMMDDHHmmSSOHH'mm'`) into a Date; null when it is not one. */
export function parsePdfDate(value: string | undefined | null): Date | null {
  if (!value) return null;
  const m = /^(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?([Zz]|[+-]\d{2}'?\d{2}'?)?/.exec(
    value.trim(),
  );
  if (!m) return null;
  const [, y, mo = '01', d = '01', h = '00', mi = '00', s = '00', tz] = m;
  let offset = 'Z';
  if (tz && tz.toUpperCase() !== 'Z') {
    const digits = tz.replace(/'/g, '');
    offset = `${digits.slice(0, 3)}:${digits.slice(3, 5) || '00'}`;
  }
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}${offset}`);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** The facts of an upload kept in a file (`path`) or in memory (`bytes`). */
export async function inspectFile(
  source: string | Buffer,
  scan: ScanResult,
  limits: PdfLimits = PDF_LIMITS,
): Promise<FileFacts> {
  return (await inspectUpload(source, scan, limits)).facts;
}

/** inspectFile, telling whether the facts depend on the bytes alone (the file could be read). */
export async function inspectUpload(
  source: string | Buffer,
  scan: ScanResult,
  limits: PdfLimits = PDF_LIMITS,
): Promise<Inspection> {
  const detected = scan.size > 0 ? await fileTypeFromBuffer(scan.head) : undefined;
  const mime = detected?.mime ?? 'application/octet-stream';
  const base: FileFacts = {
    sha256: scan.sha256,
    size: scan.size,
    fileType: 'unsupported',
    mimeType: mime,
    numPages: 0,
    metadata: { ...EMPTY_METADATA },
    creationDate: null,
    modDate: null,
    eofCount: scan.eofCount,
    parseFailed: false,
    pageText: [],
    image: null,
  };
  if (IMAGE_MIME.has(mime)) {
    const image = imageSize(scan.head, mime);
    return { facts: { ...base, fileType: 'image', numPages: 1, image }, cacheable: true };
  }
  if (mime !== 'application/pdf') return { facts: base, cacheable: true };
  const pdf: FileFacts = {
    ...base,
    fileType: 'pdf',
    numPages: scan.pageObjects,
    metadata: fromScan(scan.info),
  };
  pdf.creationDate = parsePdfDate(scan.info.CreationDate);
  pdf.modDate = parsePdfDate(scan.info.ModDate);
  if (scan.size > PDF_PARSE_CAP) return { facts: pdf, cacheable: true };
  let bytes: Buffer;
  try {
    bytes = typeof source === 'string' ? await readFile(source) : source;
  } catch {
    pdf.parseFailed = true;
    return { facts: pdf, cacheable: false };
  }
  try {
    const exceeded = await exceedsPdfLimits(bytes, scan.pageObjects, limits);
    if (exceeded !== null) {
      pdf.parseFailed = true;
      pdf.parseFailure = `the sandbox does not expand a PDF with ${exceeded}`;
      return { facts: pdf, cacheable: true };
    }
    const doc = await PDFDocument.load(bytes, {
      ignoreEncryption: true,
      updateMetadata: false,
      throwOnInvalidObject: true,
    });
    const creation = doc.getCreationDate() ?? null;
    const mod = doc.getModificationDate() ?? null;
    pdf.numPages = doc.getPageCount();
    pdf.creationDate = creation;
    pdf.modDate = mod;
    pdf.metadata = {
      producer: doc.getProducer() ?? null,
      creator: doc.getCreator() ?? null,
      creation_date: creation ? creation.toISOString() : null,
      mod_date: mod ? mod.toISOString() : null,
      author: doc.getAuthor() ?? null,
      title: doc.getTitle() ?? null,
      keywords: doc.getKeywords() ?? null,
      subject: doc.getSubject() ?? null,
    };
    pdf.pageText = doc
      .getPages()
      .slice(0, MAX_TEXT_PAGES)
      .map((page) => pageText(page));
  } catch {
    pdf.parseFailed = true;
  }
  return { facts: pdf, cacheable: true };
}

function fromScan(info: Partial<Record<InfoKey, string>>): SampleMetadataFacts {
  const date = (v: string | undefined) => (v === undefined ? null : (parsePdfDate(v)?.toISOString() ?? v));
  return {
    producer: info.Producer ?? null,
    creator: info.Creator ?? null,
    creation_date: date(info.CreationDate),
    mod_date: date(info.ModDate),
    author: info.Author ?? null,
    title: info.Title ?? null,
    keywords: info.Keywords ?? null,
    subject: info.Subject ?? null,
  };
}

/** Literal strings shown by text operators inside BT…ET blocks: "limited" content extraction. */
function pageText(page: PDFPage): string {
  try {
    const contents = page.node.Contents();
    const streams =
      contents instanceof PDFArray ? contents.asArray().map((r) => page.doc.context.lookup(r)) : [contents];
    let text = '';
    for (const stream of streams) {
      if (!(stream instanceof PDFRawStream)) continue;
      const bytes = contentBytes(stream);
      if (bytes === null) continue;
      const source = bytes.toString('latin1');
      for (const block of source.match(/BT[\s\S]*?ET/g) ?? []) {
        // Text operands are literal `(...)` or hex `<...>` strings (pdf-lib writes hex).
        for (const [, literal, hex] of block.matchAll(/\(((?:\\.|[^\\)])*)\)|<([0-9A-Fa-f\s]*)>/g)) {
          text +=
            literal !== undefined
              ? literal.replace(/\\(.)/g, '$1')
              : Buffer.from((hex ?? '').replace(/\s/g, ''), 'hex').toString('latin1');
        }
        text += '\n';
        if (text.length > MAX_TEXT_PER_PAGE) return text.slice(0, MAX_TEXT_PER_PAGE);
      }
    }
    return text.trim();
  } catch {
    return '';
  }
}

/**
 * The bytes of an unfiltered or FlateDecode content stream, inflated at most
 * MAX_CONTENT_STREAM_BYTES; null for other filters, whose text the sandbox does not extract
 * (pdf-lib's decoders have no output bound).
 */
function contentBytes(stream: PDFRawStream): Buffer | null {
  const filter = stream.dict.lookup(PDFName.of('Filter'));
  const names = filter instanceof PDFArray ? filter.asArray() : filter === undefined ? [] : [filter];
  if (names.length === 0) return Buffer.from(stream.contents);
  if (names.length > 1 || names[0] !== PDFName.of('FlateDecode')) return null;
  try {
    // Sync flush: a truncated stream still gives the text before the cut, as pdf-lib's decoder did.
    return inflateSync(stream.contents, {
      maxOutputLength: MAX_CONTENT_STREAM_BYTES,
      finishFlush: constants.Z_SYNC_FLUSH,
    });
  } catch {
    return null;
  }
}

/** Width and height from PNG IHDR or a JPEG SOF marker within the first bytes; null otherwise. */
export function imageSize(head: Buffer, mime: string): { width: number; height: number } | null {
  if (mime === 'image/png' && head.length >= 24) {
    return { width: head.readUInt32BE(16), height: head.readUInt32BE(20) };
  }
  if (mime === 'image/jpeg') {
    let i = 2;
    while (i + 9 < head.length) {
      if (head[i] !== 0xff) {
        i++;
        continue;
      }
      const marker = head[i + 1] as number;
      const length = head.readUInt16BE(i + 2);
      const isSof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
      if (isSof) return { height: head.readUInt16BE(i + 5), width: head.readUInt16BE(i + 7) };
      i += 2 + length;
    }
  }
  return null;
}
