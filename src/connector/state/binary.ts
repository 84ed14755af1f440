/**
 * The big-endian writer and reader of the binary state records (`record.ts`) and replay markers
 * (`replay-marker.ts`); `id` is u8 0 + 16 bytes for a lower-case UUID, else u8 1 + str; `str` is
 * u16 length + UTF-8.
 */
import { StateRecordError } from './document-state.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** 16 bytes for a lower-case UUID (the API's ids), else null. */
export function uuidBytes(id: string): Buffer | null {
  return UUID.test(id) ? Buffer.from(id.replaceAll('-', ''), 'hex') : null;
}

export function uuidString(bytes: Uint8Array, at = 0): string {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset + at, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Writes into one growing buffer (a state record is a few hundred bytes: usually no growth at all). */
export class Writer {
  private b = Buffer.allocUnsafe(256);
  private at = 0;
  /** Reserves `n` bytes and returns where they start (call before reading `this.b`: it may grow). */
  private reserve(n: number): number {
    if (this.at + n > this.b.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.b.length * 2, this.at + n));
      this.b.copy(grown, 0, 0, this.at);
      this.b = grown;
    }
    const at = this.at;
    this.at += n;
    return at;
  }
  u8(n: number): this {
    const at = this.reserve(1);
    this.b[at] = n & 0xff;
    return this;
  }
  u16(n: number): this {
    const at = this.reserve(2);
    this.b.writeUInt16BE(n, at);
    return this;
  }
  u32(n: number): this {
    const at = this.reserve(4);
    this.b.writeUInt32BE(n, at);
    return this;
  }
  u64(decimal: string): this {
    const at = this.reserve(8);
    this.b.writeBigUInt64BE(BigInt(decimal), at);
    return this;
  }
  f64(n: number): this {
    const at = this.reserve(8);
    this.b.writeDoubleBE(n, at);
    return this;
  }
  str(s: string): this {
    const length = Buffer.byteLength(s, 'utf8');
    if (length > 0xffff) throw new StateRecordError(`a state field is ${length} bytes (max 65535)`);
    this.u16(length);
    const at = this.reserve(length);
    this.b.write(s, at, length, 'utf8');
    return this;
  }
  id(s: string): this {
    if (!UUID.test(s)) return this.u8(1).str(s);
    this.u8(0);
    const at = this.reserve(16);
    this.b.write(s.replaceAll('-', ''), at, 16, 'hex');
    return this;
  }
  /** The bytes written, in a buffer of their own. */
  done(): Buffer {
    return Buffer.from(this.b.subarray(0, this.at));
  }
}

export class Reader {
  private at = 0;
  constructor(private readonly b: Buffer) {}
  private need(n: number): number {
    if (this.at + n > this.b.length) throw new StateRecordError('state record is truncated');
    const at = this.at;
    this.at += n;
    return at;
  }
  u8(): number {
    return this.b.readUInt8(this.need(1));
  }
  u16(): number {
    return this.b.readUInt16BE(this.need(2));
  }
  u32(): number {
    return this.b.readUInt32BE(this.need(4));
  }
  get rest(): number {
    return this.b.length - this.at;
  }
  u64(): string {
    return this.b.readBigUInt64BE(this.need(8)).toString();
  }
  f64(): number {
    return this.b.readDoubleBE(this.need(8));
  }
  str(): string {
    const len = this.b.readUInt16BE(this.need(2));
    return this.b.toString('utf8', this.need(len), this.at);
  }
  id(): string {
    const kind = this.u8();
    if (kind === 0) return uuidString(this.b, this.need(16));
    if (kind === 1) return this.str();
    throw new StateRecordError(`unknown id encoding ${kind}`);
  }
  end(): void {
    if (this.at !== this.b.length) throw new StateRecordError('state record has trailing bytes');
  }
}
