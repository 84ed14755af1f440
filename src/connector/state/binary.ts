/**
 * The big-endian writer and reader of the binary state records (`record.ts`) and replay markers
 * (`replay-marker.ts`); `id` is u8 0 + 16 bytes for a lower-case UUID, else u8 1 + str; `str` is
 * u16 length + UTF-8.
 */
import { StateRecordError } from './record-error.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** 16 bytes for a lower-case UUID (the API's ids), else null. */
export function uuidBytes(id: string): Buffer | null {
  return UUID.test(id) ? Buffer.from(id.replaceAll('-', ''), 'hex') : null;
}

export function uuidString(bytes: Uint8Array, at = 0): string {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset + at, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export class Writer {
  private readonly parts: Buffer[] = [];
  u8(n: number): this {
    this.parts.push(Buffer.of(n));
    return this;
  }
  u16(n: number): this {
    const b = Buffer.allocUnsafe(2);
    b.writeUInt16BE(n);
    this.parts.push(b);
    return this;
  }
  u32(n: number): this {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32BE(n);
    this.parts.push(b);
    return this;
  }
  u64(decimal: string): this {
    const b = Buffer.allocUnsafe(8);
    b.writeBigUInt64BE(BigInt(decimal));
    this.parts.push(b);
    return this;
  }
  f64(n: number): this {
    const b = Buffer.allocUnsafe(8);
    b.writeDoubleBE(n);
    this.parts.push(b);
    return this;
  }
  str(s: string): this {
    const bytes = Buffer.from(s, 'utf8');
    if (bytes.length > 0xffff)
      throw new StateRecordError(`a state field is ${bytes.length} bytes (max 65535)`);
    const len = Buffer.allocUnsafe(2);
    len.writeUInt16BE(bytes.length);
    this.parts.push(len, bytes);
    return this;
  }
  id(s: string): this {
    const uuid = uuidBytes(s);
    return uuid ? this.u8(0).push(uuid) : this.u8(1).str(s);
  }
  private push(b: Buffer): this {
    this.parts.push(b);
    return this;
  }
  done(): Buffer {
    return Buffer.concat(this.parts);
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
