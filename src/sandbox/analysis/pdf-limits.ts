/**
 * Bounds on what a PDF may expand to before pdf-lib is let near it. pdf-lib has no limits of its
 * own: loading a document decodes every object and cross-reference stream in full, so a 1 MB
 * upload whose object stream inflates to 1 GB took the sandbox to 3 GB of memory. This pass
 * inflates each stream once, counting and discarding the output, and stops at the first bound
 * crossed; only documents within every bound are parsed.
 */
import { createInflate } from 'node:zlib';

export interface PdfLimits {
  /** Inflated bytes of all FlateDecode streams of one document. */
  maxInflatedBytes: number;
  /** Inflated bytes of the streams pdf-lib decodes while loading (object and xref streams). */
  maxObjectStreamBytes: number;
  /** Page objects, counted in plain syntax and inside object streams. */
  maxPages: number;
}

export const PDF_LIMITS: PdfLimits = {
  maxInflatedBytes: 64 * 1024 * 1024,
  maxObjectStreamBytes: 8 * 1024 * 1024,
  maxPages: 2000,
};

/** Filters that can expand without a bound and that this pass does not count. */
const UNCOUNTED_EXPANDING = new Set(['LZWDecode', 'LZW', 'RunLengthDecode', 'RL']);
const FLATE = new Set(['FlateDecode', 'Fl']);
const PAGE = /\/Type\s*\/Page(?![a-zA-Z])/g;
/** How far back from `stream` the dictionary of its object is looked for. */
const DICT_WINDOW = 16 * 1024;

type PdfLimitReason = string;

interface StreamInfo {
  dict: string;
  dataStart: number;
  dataEnd: number;
}

function* streams(text: string): Generator<StreamInfo> {
  const keyword = /(?<!end)stream(?:\r\n|\n|\r)/g;
  for (let m = keyword.exec(text); m !== null; m = keyword.exec(text)) {
    const dataStart = m.index + m[0].length;
    const end = text.indexOf('endstream', dataStart);
    const dataEnd = end < 0 ? text.length : end;
    const from = Math.max(0, m.index - DICT_WINDOW);
    const window = text.slice(from, m.index);
    const obj = window.lastIndexOf(' obj');
    yield { dict: obj < 0 ? window : window.slice(obj), dataStart, dataEnd };
    keyword.lastIndex = dataEnd;
  }
}

function filtersOf(dict: string): string[] | 'indirect' {
  const m = /\/Filter\s*(\[[^\]]*\]|\/[A-Za-z0-9]+|\d+\s+\d+\s+R)/.exec(dict);
  if (!m) return [];
  const value = m[1] as string;
  if (/R$/.test(value)) return 'indirect';
  return [...value.matchAll(/\/([A-Za-z0-9]+)/g)].map((f) => f[1] as string);
}

/** Object and xref streams, and streams whose /Type is indirect (pdf-lib resolves it). */
function isDecodedAtLoad(dict: string): boolean {
  return /\/Type\s*\/(ObjStm|XRef)(?![a-zA-Z])/.test(dict) || /\/Type\s+\d+\s+\d+\s+R/.test(dict);
}

interface Inflated {
  bytes: number;
  pages: number;
}

/** Inflates `data`, keeping only a byte count and a page count; stops once `limit` is passed. */
function countInflated(data: Buffer, limit: number, countPages: boolean): Promise<Inflated> {
  return new Promise((resolve) => {
    const inflate = createInflate({ chunkSize: 64 * 1024 });
    const result: Inflated = { bytes: 0, pages: 0 };
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    inflate.on('data', (chunk: Buffer) => {
      result.bytes += chunk.length;
      // A /Type /Page split across two chunks is missed: the count is a bound, not a census.
      if (countPages) result.pages += chunk.toString('latin1').match(PAGE)?.length ?? 0;
      if (result.bytes > limit) {
        inflate.destroy();
        settle();
      }
    });
    // A corrupt stream ends the count where inflation stopped; pdf-lib stops there too.
    inflate.on('error', settle);
    inflate.on('end', settle);
    inflate.on('close', settle);
    inflate.end(data);
  });
}

/**
 * Why the PDF must not be parsed, or null when it stays within `limits`. `pageObjects` is the
 * scanner's count of page objects in plain syntax.
 */
export async function exceedsPdfLimits(
  bytes: Buffer,
  pageObjects: number,
  limits: PdfLimits = PDF_LIMITS,
): Promise<PdfLimitReason | null> {
  let pages = pageObjects;
  if (pages > limits.maxPages) return `more than ${limits.maxPages} pages`;
  const text = bytes.toString('latin1');
  let inflated = 0;
  let objectStreamBytes = 0;
  for (const stream of streams(text)) {
    const filters = filtersOf(stream.dict);
    if (filters === 'indirect') return 'a stream whose /Filter is an indirect reference';
    const expanding = filters.find((f) => UNCOUNTED_EXPANDING.has(f));
    if (expanding) return `a ${expanding} stream (not expanded by the sandbox)`;
    const flateAt = filters.findIndex((f) => FLATE.has(f));
    if (flateAt < 0) continue;
    if (flateAt > 0)
      return `a filter chain with FlateDecode after ${filters[0]} (not expanded by the sandbox)`;
    const atLoad = isDecodedAtLoad(stream.dict);
    const budget = atLoad
      ? Math.min(limits.maxInflatedBytes - inflated, limits.maxObjectStreamBytes - objectStreamBytes)
      : limits.maxInflatedBytes - inflated;
    const data = bytes.subarray(stream.dataStart, stream.dataEnd);
    const counted = await countInflated(data, budget, atLoad);
    inflated += counted.bytes;
    if (atLoad) objectStreamBytes += counted.bytes;
    pages += counted.pages;
    if (inflated > limits.maxInflatedBytes) {
      return `streams inflating to more than ${limits.maxInflatedBytes} bytes`;
    }
    if (objectStreamBytes > limits.maxObjectStreamBytes) {
      return `object streams inflating to more than ${limits.maxObjectStreamBytes} bytes`;
    }
    if (pages > limits.maxPages) return `more than ${limits.maxPages} pages`;
  }
  return null;
}
