import avro from 'avsc';
import { avroSchemaJson } from './avro-schemas.js';
import { AvroBoundsError, checkAvroBounds, minimumWidth } from './avro-bounds.js';

/** Zig-zag varint, as Avro writes longs. */
function varint(n: number): Buffer {
  let z = n >= 0 ? n * 2 : -n * 2 - 1;
  const out: number[] = [];
  while (z >= 128) {
    out.push((z % 128) | 0x80);
    z = Math.floor(z / 128);
  }
  out.push(z);
  return Buffer.from(out);
}

const type = (schema: unknown) => avro.Type.forSchema(schema as avro.Schema);

describe('checkAvroBounds', () => {
  it('refuses the 32-byte array<null> record claiming 10^12 items, before avsc loops over them', () => {
    const arrayOfNull = type({ type: 'array', items: 'null' });
    const payload = Buffer.concat([varint(1e12), Buffer.alloc(32 - varint(1e12).length)]);
    expect(payload).toHaveLength(32);
    expect(() => checkAvroBounds(arrayOfNull, payload)).toThrow(AvroBoundsError);
    expect(() => checkAvroBounds(arrayOfNull, payload)).toThrow(
      /block of 1000000000000 empty items, more than the record's 32 bytes allow/,
    );
  });

  it('refuses nested arrays of empty items that would multiply the budget', () => {
    const nested = type({ type: 'array', items: { type: 'array', items: 'null' } });
    // 10 inner arrays of 20 nulls each: 200 empty items in a record of about 40 bytes.
    const inner = Buffer.concat([varint(20), varint(0)]);
    const payload = Buffer.concat([varint(10), ...Array.from({ length: 10 }, () => inner), varint(0)]);
    expect(() => checkAvroBounds(nested, payload)).toThrow(/empty items/);
  });

  it('accepts as many empty items as the record has bytes', () => {
    const arrayOfNull = type({ type: 'array', items: 'null' });
    const payload = Buffer.concat([varint(2), varint(0)]);
    expect(() => checkAvroBounds(arrayOfNull, payload)).not.toThrow();
    expect(arrayOfNull.fromBuffer(payload)).toEqual([null, null]);
  });

  it('refuses array and map counts the remaining bytes cannot hold', () => {
    const ints = type({ type: 'array', items: 'int' });
    expect(() => checkAvroBounds(ints, Buffer.concat([varint(1e9), Buffer.alloc(20)]))).toThrow(
      /block of 1000000000 items of at least 1 bytes, but only 20 bytes are left/,
    );
    const doubles = type({ type: 'array', items: 'double' });
    expect(() => checkAvroBounds(doubles, Buffer.concat([varint(3), Buffer.alloc(16), varint(0)]))).toThrow(
      /3 items of at least 8 bytes/,
    );
    const map = type({ type: 'map', values: 'null' });
    expect(() => checkAvroBounds(map, Buffer.concat([varint(1e12), Buffer.alloc(8)]))).toThrow(
      /items of at least 1 bytes/,
    );
  });

  it('refuses negative-count blocks whose byte size exceeds the record', () => {
    const ints = type({ type: 'array', items: 'int' });
    const payload = Buffer.concat([varint(-2), varint(1e9), varint(1), varint(2), varint(0)]);
    expect(() => checkAvroBounds(ints, payload)).toThrow(/block size of 1000000000 bytes/);
    const fine = Buffer.concat([varint(-2), varint(2), varint(1), varint(2), varint(0)]);
    expect(() => checkAvroBounds(ints, fine)).not.toThrow();
    expect(ints.fromBuffer(fine)).toEqual([1, 2]);
  });

  it('refuses string and bytes lengths beyond the record, and negative ones', () => {
    const string = type('string');
    expect(() => checkAvroBounds(string, Buffer.concat([varint(1e12), Buffer.from('abc')]))).toThrow(
      /a string of 1000000000000 bytes, but only 3 bytes are left/,
    );
    expect(() => checkAvroBounds(type('bytes'), varint(-5))).toThrow(/negative length/);
  });

  it('refuses union and enum indexes that do not exist, runaway varints and trailing data', () => {
    const union = type(['null', 'string']);
    expect(() => checkAvroBounds(union, varint(7))).toThrow(/union index 7 outside its 2 branches/);
    const enumType = type({ type: 'enum', name: 'E', symbols: ['A', 'B'] });
    expect(() => checkAvroBounds(enumType, varint(2))).toThrow(/enum index 2/);
    expect(() => checkAvroBounds(type('long'), Buffer.alloc(11, 0xff))).toThrow(/longer than 10 bytes/);
    expect(() => checkAvroBounds(type('int'), Buffer.from([0x80]))).toThrow(/ends inside a number/);
    expect(() => checkAvroBounds(type('int'), Buffer.from([2, 0]))).toThrow(/1 bytes of trailing data/);
  });

  it('limits nesting of recursive schemas', () => {
    const list = type({
      type: 'record',
      name: 'Node',
      fields: [{ name: 'next', type: ['null', 'Node'] }],
    });
    // 5,000 levels of "branch 1" then the terminating null branch.
    const deep = Buffer.concat([Buffer.alloc(5000, 2), Buffer.from([0])]);
    expect(() => checkAvroBounds(list, deep)).toThrow(/nested deeper than/);
    const shallow = Buffer.concat([Buffer.alloc(10, 2), Buffer.from([0])]);
    expect(() => checkAvroBounds(list, shallow)).not.toThrow();
  });

  it('accepts every valid value avsc writes, for the real input schema', () => {
    const arrived = type(avroSchemaJson('DocumentArrived'));
    const value = {
      event_id: 'evt-1',
      blob: {
        url: 'file:///a.pdf',
        content_type: 'application/pdf',
        size_bytes: 1234567890123,
        sha256: null,
      },
      query_id: null,
      pipeline_configuration: 'QUALITY_ONLY',
      enable_decision: true,
      submission_characteristics: '{"a":1}',
      attributes: { a: 'b', ü: '😀' },
      reprocess: false,
    };
    expect(() => checkAvroBounds(arrived, arrived.toBuffer(value))).not.toThrow();
    const mixed = type({
      type: 'record',
      name: 'Mixed',
      fields: [
        { name: 'f', type: 'float' },
        { name: 'd', type: 'double' },
        { name: 'b', type: 'boolean' },
        { name: 'x', type: { type: 'fixed', name: 'F', size: 3 } },
        { name: 'ts', type: { type: 'long', logicalType: 'timestamp-millis' } },
        { name: 'm', type: { type: 'map', values: { type: 'array', items: 'bytes' } } },
      ],
    });
    const bytes = mixed.toBuffer({
      f: 1.5,
      d: 2.5,
      b: true,
      x: Buffer.from('abc'),
      ts: Date.now(),
      m: { k: [Buffer.from('1'), Buffer.alloc(0)] },
    });
    expect(() => checkAvroBounds(mixed, bytes)).not.toThrow();
    expect(() => checkAvroBounds(mixed, bytes.subarray(0, bytes.length - 1))).toThrow(AvroBoundsError);
  });
});

describe('minimumWidth', () => {
  it('is zero only for types that never take a byte', () => {
    expect(minimumWidth(type('null'))).toBe(0);
    expect(minimumWidth(type({ type: 'record', name: 'R', fields: [{ name: 'n', type: 'null' }] }))).toBe(0);
    expect(minimumWidth(type({ type: 'fixed', name: 'Z', size: 0 }))).toBe(0);
    expect(minimumWidth(type(['null', 'int']))).toBe(1);
    expect(minimumWidth(type({ type: 'array', items: 'null' }))).toBe(1);
    expect(
      minimumWidth(
        type({
          type: 'record',
          name: 'P',
          fields: [
            { name: 'a', type: 'double' },
            { name: 'b', type: 'int' },
          ],
        }),
      ),
    ).toBe(9);
  });
});
