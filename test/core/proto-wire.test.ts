import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import {
  MAX_GROUP_DEPTH,
  WIRE_EGROUP,
  WIRE_I32,
  WIRE_I64,
  WIRE_LEN,
  WIRE_SGROUP,
  WIRE_VARINT,
  WireFormatError,
  WireReader,
} from '../../src/core/proto-wire.js';
import { tag, varint } from '../cluster/public-fault/wire-bytes.js';

const reader = (bytes: number[] | Buffer): WireReader => new WireReader(Buffer.from(bytes));

function problem(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof WireFormatError) return e.problem;
    throw e;
  }
  throw new Error('no WireFormatError');
}

describe('[K] item 2 protobuf wire reader: varints', () => {
  test.each([
    [0, [0x00]],
    [1, [0x01]],
    [300, [0xac, 0x02]],
    [2 ** 31 - 1, [0xff, 0xff, 0xff, 0xff, 0x07]],
    [2 ** 53 - 1, [...varint(2 ** 53 - 1)]],
  ])('int64 reads %d', (n, bytes) => {
    expect(reader(bytes).int64()).toBe(n);
  });

  test('int64 reads negative values (10-byte two’s complement)', () => {
    expect(reader(varint(-5n)).int64()).toBe(-5);
    expect(reader(varint(-(2n ** 63n))).int64()).toBe(-(2 ** 63));
  });

  test('int64 beyond 2^53 rounds like Number(BigInt)', () => {
    const v = 2n ** 60n + 12345n;
    expect(reader(varint(v)).int64()).toBe(Number(v));
  });

  test('int32 truncates to the low 32 bits, signed (Go and protobufjs)', () => {
    expect(reader(varint(-1n)).int32()).toBe(-1);
    expect(reader(varint(2n ** 32n + 5n)).int32()).toBe(5);
  });

  test('a non-canonical (padded) varint is accepted, as in Go', () => {
    expect(reader([0x81, 0x80, 0x80, 0x00]).int64()).toBe(1);
  });

  test('a truncated varint is refused with its offset', () => {
    const r = reader([0x08, 0x96]);
    r.pos = 1;
    expect(() => r.int64()).toThrow(new WireFormatError('truncated varint', 1));
  });

  test('a varint of 11 bytes is refused', () => {
    expect(problem(() => reader([...Array<number>(10).fill(0xff), 0x01]).int64())).toBe('varint longer than 64 bits');
  });

  test('a 10th byte above 1 is refused (Go: overflow)', () => {
    expect(problem(() => reader([...Array<number>(9).fill(0xff), 0x02]).int64())).toBe('varint longer than 64 bits');
  });

  test('property: every 64-bit value round-trips', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (v) => {
        const r = reader(varint(v));
        expect(r.int64()).toBe(Number(v));
        expect(r.atLimit).toBe(true);
      }),
    );
  });
});

describe('[K] item 2 protobuf wire reader: tags and lengths', () => {
  test('a tag gives field number and wire type', () => {
    const t = reader(tag(5, WIRE_LEN)).tag();
    expect([t >>> 3, t & 7]).toEqual([5, WIRE_LEN]);
  });

  test('field number 0 is refused', () => {
    expect(problem(() => reader([0x02]).tag())).toBe('field number out of range');
  });

  test('a field number over 2^29 - 1 is refused', () => {
    expect(problem(() => reader(varint(2n ** 32n)).tag())).toBe('field number out of range');
  });

  test.each([6, 7])('wire type %d is refused', (w) => {
    expect(problem(() => reader(tag(1, w)).tag())).toBe(`invalid wire type ${w}`);
  });

  test('a length past the end of the message is refused', () => {
    const r = reader([0x0a, 0x05, 0x61]);
    r.tag();
    expect(() => r.lengthEnd()).toThrow(
      new WireFormatError('length 5 past the end of the enclosing field (1 bytes left)', 1),
    );
  });

  test('a huge length prefix is refused before anything is read', () => {
    const r = reader(Buffer.concat([Buffer.from([0x0a]), varint(2n ** 40n)]));
    r.tag();
    expect(problem(() => r.lengthEnd())).toBe('length over 2^32 past the end of the enclosing field (0 bytes left)');
  });

  test('a length past the enclosing field is refused even when the buffer has the bytes', () => {
    const r = reader([0x03, 0x61, 0x62, 0x63]);
    r.limit = 2;
    expect(problem(() => r.lengthEnd())).toMatch(/^length 3 past the end/);
  });

  test('a string must be valid UTF-8 (Go, proto3)', () => {
    expect(reader([0x02, 0xc3, 0xa9]).string()).toBe('é');
    expect(problem(() => reader([0x02, 0xc3, 0x28]).string())).toBe('invalid UTF-8 in a string field');
    expect(problem(() => reader([0x03, 0xed, 0xa0, 0x80]).skipString())).toBe('invalid UTF-8 in a string field');
  });

  test('a long ASCII and a long multi-byte string decode', () => {
    const s = 'x'.repeat(100) + 'é'.repeat(100);
    const b = Buffer.from(s);
    expect(reader(Buffer.concat([varint(b.length), b])).string()).toBe(s);
  });
});

describe('[K] item 2 protobuf wire reader: skipping unknown fields', () => {
  test.each([
    ['varint', WIRE_VARINT, [0x96, 0x01]],
    ['64-bit', WIRE_I64, [1, 2, 3, 4, 5, 6, 7, 8]],
    ['length-delimited', WIRE_LEN, [0x02, 0x61, 0x62]],
    ['32-bit', WIRE_I32, [1, 2, 3, 4]],
  ])('a %s field is skipped', (_n, w, body) => {
    const r = reader([...tag(9, w), ...body]);
    r.skip(r.tag());
    expect(r.atLimit).toBe(true);
  });

  test('a truncated fixed field is refused', () => {
    const r = reader([...tag(9, WIRE_I64), 1, 2, 3]);
    expect(problem(() => r.skip(r.tag()))).toBe('truncated 64-bit field');
  });

  test('nested groups are skipped to their end tag', () => {
    const r = reader([...tag(9, WIRE_SGROUP), ...tag(2, WIRE_SGROUP), ...tag(2, WIRE_EGROUP), ...tag(9, WIRE_EGROUP)]);
    r.skip(r.tag());
    expect(r.atLimit).toBe(true);
  });

  test(`groups nested ${MAX_GROUP_DEPTH} deep are skipped, deeper ones refused (no stack overflow)`, () => {
    const nested = (depth: number): Buffer =>
      Buffer.concat([
        ...Array.from({ length: depth }, () => tag(1, WIRE_SGROUP)),
        ...Array.from({ length: depth }, () => tag(1, WIRE_EGROUP)),
      ]);
    const ok = reader(nested(MAX_GROUP_DEPTH));
    ok.skip(ok.tag());
    expect(ok.atLimit).toBe(true);
    const over = reader(nested(MAX_GROUP_DEPTH + 1));
    expect(problem(() => over.skip(over.tag()))).toBe(`groups nested deeper than ${MAX_GROUP_DEPTH}`);
    const deep = reader(Buffer.alloc(1_000_000, tag(1, WIRE_SGROUP)[0]));
    expect(problem(() => deep.skip(deep.tag()))).toBe(`groups nested deeper than ${MAX_GROUP_DEPTH}`);
  });

  test('an unterminated group is refused', () => {
    const r = reader([...tag(9, WIRE_SGROUP), ...tag(1, WIRE_VARINT), 0x01]);
    expect(problem(() => r.skip(r.tag()))).toBe('unterminated group');
  });

  test('an end-group tag of another field is refused', () => {
    const r = reader([...tag(9, WIRE_SGROUP), ...tag(8, WIRE_EGROUP)]);
    expect(problem(() => r.skip(r.tag()))).toBe('end-group tag of another group');
  });

  test('an end-group tag outside a group is refused', () => {
    const r = reader(tag(9, WIRE_EGROUP));
    expect(problem(() => r.skip(r.tag()))).toBe('end-group tag outside a group');
  });
});

describe('[K] item 2 protobuf wire reader: fuzz', () => {
  test('property: on any bytes, skipping field after field ends or throws a WireFormatError, never anything else', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const r = reader(Buffer.from(bytes));
        try {
          while (!r.atLimit) r.skip(r.tag());
        } catch (e) {
          expect(e).toBeInstanceOf(WireFormatError);
        }
        expect(r.pos).toBeLessThanOrEqual(bytes.length);
      }),
      { numRuns: 5000 },
    );
  });
});
