/**
 * A bounded pre-check of Avro binary data against its writer schema, run before avsc decodes it.
 *
 * avsc trusts the length prefixes of the data: an array or map block says how many items follow and
 * avsc loops that many times, reading past the end of the buffer as zeros (a tiny `array<null>`
 * record with a huge block count keeps the event loop busy for hours). avsc has no hook for this, so
 * this walker reads the same bytes first, without building values, and refuses any prefix that the
 * remaining bytes cannot hold: a block of n items whose type needs at least w > 0 bytes each needs
 * n × w bytes left; items that take no bytes at all (null, fixed(0), records made only of those) are
 * charged against a budget of one item per byte of the whole payload, so decoding work and memory
 * stay proportional to the record's size (no real writer needs more such items than bytes);
 * bytes/string/fixed lengths must fit in the bytes left; union and enum indexes must exist; nesting
 * is limited (recursive schemas), so neither this walker nor avsc can overflow the stack. The walk is
 * O(payload bytes): every step consumes at least one byte or one unit of the budget.
 */
import type avro from 'avsc';

const MAX_NESTING = 1000;

/** The data is not valid for its writer schema; `reason` says which prefix or index was refused. */
export class AvroBoundsError extends Error {
  readonly offset: number;
  constructor(reason: string, offset: number) {
    super(`${reason} (at byte ${offset})`);
    this.name = 'AvroBoundsError';
    this.offset = offset;
  }
}

type Type = avro.Type;

interface AvscShapes {
  typeName: string;
  itemsType?: Type;
  valuesType?: Type;
  types?: Type[];
  fields?: Array<{ type: Type }>;
  size?: number;
  symbols?: string[];
  underlyingType?: Type;
}

const shape = (type: Type) => type as unknown as AvscShapes;

/** Fewest bytes a value of `type` can take; 0 only for types that always take none. */
export function minimumWidth(type: Type, memo = new Map<Type, number>()): number {
  const known = memo.get(type);
  if (known !== undefined) return known;
  // A recursive reference counts as 0 while it is being computed: an under-estimate is safe.
  memo.set(type, 0);
  const t = shape(type);
  let width: number;
  const name = t.typeName;
  if (name === 'null') width = 0;
  else if (name === 'float') width = 4;
  else if (name === 'double') width = 8;
  else if (name === 'fixed') width = t.size ?? 0;
  else if (name === 'record' || name === 'error') {
    width = (t.fields ?? []).reduce((sum, field) => sum + minimumWidth(field.type, memo), 0);
  } else if (name.startsWith('logical:') && t.underlyingType) width = minimumWidth(t.underlyingType, memo);
  // boolean, int, long, enum, bytes, string, array, map and unions all start with at least one byte.
  else width = 1;
  memo.set(type, width);
  return width;
}

class Walker {
  private pos: number;
  private zeroWidthBudget: number;
  private readonly widths = new Map<Type, number>();

  constructor(private readonly buf: Buffer) {
    this.pos = 0;
    this.zeroWidthBudget = buf.length;
  }

  walk(type: Type): void {
    this.value(type, 0);
    if (this.pos !== this.buf.length) {
      throw new AvroBoundsError(`${this.buf.length - this.pos} bytes of trailing data`, this.pos);
    }
  }

  private left(): number {
    return this.buf.length - this.pos;
  }

  private width(type: Type): number {
    return minimumWidth(type, this.widths);
  }

  private long(): number {
    const start = this.pos;
    let result = 0;
    let factor = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw new AvroBoundsError('the data ends inside a number', start);
      const byte = this.buf[this.pos++]!;
      result += (byte & 0x7f) * factor;
      if ((byte & 0x80) === 0) return result % 2 === 0 ? result / 2 : -(result + 1) / 2;
      factor *= 128;
    }
    throw new AvroBoundsError('a variable-length number longer than 10 bytes', start);
  }

  private skip(count: number, what: string): void {
    if (count > this.left()) {
      throw new AvroBoundsError(
        `${what} of ${count} bytes, but only ${this.left()} bytes are left`,
        this.pos,
      );
    }
    this.pos += count;
  }

  private value(type: Type, depth: number): void {
    if (depth > MAX_NESTING) throw new AvroBoundsError(`values nested deeper than ${MAX_NESTING}`, this.pos);
    const t = shape(type);
    switch (t.typeName) {
      case 'null':
        return;
      case 'boolean':
        return this.skip(1, 'a boolean');
      case 'int':
      case 'long':
      case 'abstract:long':
        this.long();
        return;
      case 'float':
        return this.skip(4, 'a float');
      case 'double':
        return this.skip(8, 'a double');
      case 'bytes':
      case 'string': {
        const at = this.pos;
        const length = this.long();
        if (length < 0) throw new AvroBoundsError(`a ${t.typeName} with negative length ${length}`, at);
        return this.skip(length, `a ${t.typeName}`);
      }
      case 'fixed':
        return this.skip(t.size ?? 0, 'a fixed');
      case 'enum': {
        const at = this.pos;
        const index = this.long();
        if (index < 0 || index >= (t.symbols?.length ?? 0)) {
          throw new AvroBoundsError(`enum index ${index} outside its ${t.symbols?.length ?? 0} symbols`, at);
        }
        return;
      }
      case 'union:unwrapped':
      case 'union:wrapped': {
        const at = this.pos;
        const index = this.long();
        const branch = t.types?.[index];
        if (index < 0 || branch === undefined) {
          throw new AvroBoundsError(`union index ${index} outside its ${t.types?.length ?? 0} branches`, at);
        }
        return this.value(branch, depth + 1);
      }
      case 'record':
      case 'error':
        for (const field of t.fields ?? []) this.value(field.type, depth + 1);
        return;
      case 'array':
        return this.blocks(t.itemsType!, false, depth);
      case 'map':
        return this.blocks(t.valuesType!, true, depth);
      default:
        if (t.typeName.startsWith('logical:') && t.underlyingType) {
          return this.value(t.underlyingType, depth);
        }
        throw new AvroBoundsError(`unsupported Avro type ${t.typeName}`, this.pos);
    }
  }

  private blocks(itemType: Type, isMap: boolean, depth: number): void {
    // A map entry is a string key (at least one byte) and a value.
    const itemWidth = (isMap ? 1 : 0) + this.width(itemType);
    for (;;) {
      const at = this.pos;
      let count = this.long();
      if (count === 0) return;
      if (count < 0) {
        count = -count;
        const size = this.long();
        if (size < 0 || size > this.left()) {
          throw new AvroBoundsError(
            `a block size of ${size} bytes, but only ${this.left()} bytes are left`,
            at,
          );
        }
      }
      if (itemWidth === 0) {
        if (count > this.zeroWidthBudget) {
          throw new AvroBoundsError(
            `a block of ${count} empty items, more than the record's ${this.buf.length} bytes allow`,
            at,
          );
        }
        // Such items take no bytes and hold nothing to check.
        this.zeroWidthBudget -= count;
        continue;
      }
      if (count * itemWidth > this.left()) {
        throw new AvroBoundsError(
          `a block of ${count} items of at least ${itemWidth} bytes, but only ${this.left()} bytes are left`,
          at,
        );
      }
      for (let i = 0; i < count; i++) {
        if (isMap) this.value(MAP_KEY, depth + 1);
        this.value(itemType, depth + 1);
      }
    }
  }
}

const MAP_KEY = { typeName: 'string' } as unknown as Type;

/** Throws AvroBoundsError when `payload` is not a well-formed value of `writer`. */
export function checkAvroBounds(writer: Type, payload: Buffer): void {
  new Walker(payload).walk(writer);
}
