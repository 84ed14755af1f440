/**
 * Looks at an upload while it streams to disk: SHA-256, size, the first bytes (for magic-number
 * detection and image headers) and a bounded regex scan of PDF syntax, so that large files are
 * understood without ever being held in memory.
 */
import { createHash, type Hash } from 'node:crypto';

const HEAD_BYTES = 64 * 1024;
/** Bytes kept between chunks so a token split across two chunks is still seen whole. */
const CARRY = 1024;
/** Matches ending this close to the window's end wait for the next chunk (they may grow). */
const HOLD = 300;

export const INFO_KEYS = [
  'Producer',
  'Creator',
  'CreationDate',
  'ModDate',
  'Author',
  'Title',
  'Keywords',
  'Subject',
] as const;
export type InfoKey = (typeof INFO_KEYS)[number];

export interface ScanResult {
  sha256: string;
  size: number;
  head: Buffer;
  /** Occurrences of `%%EOF`: more than one means the PDF was incrementally updated. */
  eofCount: number;
  /** Page objects (`/Type /Page`) seen in uncompressed syntax; a fallback page count. */
  pageObjects: number;
  /** Info dictionary strings seen in uncompressed syntax (first occurrence wins). */
  info: Partial<Record<InfoKey, string>>;
}

const TOKEN =
  /%%EOF|\/Type\s*\/Page(?![a-zA-Z])|\/(Producer|Creator|CreationDate|ModDate|Author|Title|Keywords|Subject)\s*\(((?:\\.|[^\\)]){0,256})\)/g;

export class UploadScanner {
  private readonly hash: Hash = createHash('sha256');
  private size = 0;
  private headParts: Buffer[] = [];
  private headSize = 0;
  private carry = '';
  /** Absolute offset of `carry`'s first character. */
  private carryStart = 0;
  /** Matches ending at or before this absolute offset were already counted. */
  private countedTo = 0;
  private eofCount = 0;
  private pageObjects = 0;
  private readonly info: Partial<Record<InfoKey, string>> = {};

  get bytes(): number {
    return this.size;
  }

  update(chunk: Buffer): void {
    this.hash.update(chunk);
    if (this.headSize < HEAD_BYTES) {
      const part = chunk.subarray(0, HEAD_BYTES - this.headSize);
      this.headParts.push(Buffer.from(part));
      this.headSize += part.length;
    }
    this.size += chunk.length;
    this.scan(chunk.toString('latin1'), false);
  }

  finish(): ScanResult {
    this.scan('', true);
    return {
      sha256: this.hash.digest('hex'),
      size: this.size,
      head: Buffer.concat(this.headParts),
      eofCount: this.eofCount,
      pageObjects: this.pageObjects,
      info: this.info,
    };
  }

  private scan(text: string, final: boolean): void {
    const window = this.carry + text;
    const windowStart = this.carryStart;
    const windowEnd = windowStart + window.length;
    const limit = final ? windowEnd : windowEnd - HOLD;
    TOKEN.lastIndex = 0;
    for (let m = TOKEN.exec(window); m !== null; m = TOKEN.exec(window)) {
      const end = windowStart + m.index + m[0].length;
      if (end <= this.countedTo || end > limit) continue;
      if (m[0] === '%%EOF') this.eofCount++;
      else if (m[1] === undefined) this.pageObjects++;
      else {
        const key = m[1] as InfoKey;
        this.info[key] ??= unescapePdfString(m[2] ?? '');
      }
    }
    this.countedTo = Math.max(this.countedTo, limit);
    const keep = Math.min(window.length, CARRY);
    this.carry = window.slice(window.length - keep);
    this.carryStart = windowEnd - keep;
  }
}

function unescapePdfString(s: string): string {
  return s.replace(/\\([nrtbf()\\]|[0-7]{1,3})/g, (_all, e: string) => {
    const map: Record<string, string> = {
      n: '\n',
      r: '\r',
      t: '\t',
      b: '\b',
      f: '\f',
      '(': '(',
      ')': ')',
      '\\': '\\',
    };
    return map[e] ?? String.fromCharCode(parseInt(e, 8));
  });
}
