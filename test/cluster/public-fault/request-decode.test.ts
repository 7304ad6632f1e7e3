import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import {
  decodePublicFaultRequest,
  KEEP_BYTES,
  WireFormatError,
} from '../../../src/cluster/public-fault/request-decode.js';
import type { PublicFaultMessage } from '../../../src/cluster/public-fault/types.js';
import {
  MAX_DEVICE_IDS,
  MAX_FAULTS,
  MAX_INFLUENCES,
  MAX_LOCATION_ENTRIES,
  validateMessage,
} from '../../../src/cluster/public-fault/validator.js';
import type { PublicFaultRequest } from '../../../src/generated/pubfault/PublicFaultRequest.js';
import { shippedConfig } from './fixtures.js';
import {
  encodeRequest,
  faultBody,
  header,
  influence,
  lenField,
  protobufjsDecode,
  referenceMessage,
  repeated,
  tag,
  varint,
  varintField,
} from './wire-bytes.js';

const ctx = { config: shippedConfig(), nodeBySerial: () => undefined };
const decode = (b: Buffer) => decodePublicFaultRequest(b);
const withFaults = (...bodies: Buffer[]): Buffer => Buffer.concat([header(), ...bodies.map((b) => lenField(5, b))]);

describe('[K] item 2 §2.5 limits applied while decoding', () => {
  test('[K] item 2 the 1.3 M-empty-faults message is counted, not decoded, and refused by rule 5', () => {
    const bytes = repeated(header(), Buffer.from([0x2a, 0x00]), 1_300_000);
    const { message, counts } = decode(bytes);
    expect([message.faults.length, message.faultsSent, counts.faults]).toEqual([0, 1_300_000, 1_300_000]);
    expect(validateMessage(message, ctx)).toMatchObject({ ok: false, detail: 'invalid faults length' });
  });

  test(`§2.5 rule 5: ${MAX_FAULTS} faults are decoded and accepted`, () => {
    const bodies = Array.from({ length: MAX_FAULTS }, (_, i) =>
      faultBody([influence(varintField(3, 0))], `fault-${String(i).padStart(4, '0')}`),
    );
    const { message } = decode(withFaults(...bodies));
    expect([message.faults.length, message.faultsSent]).toEqual([MAX_FAULTS, undefined]);
    expect(validateMessage(message, ctx)).toMatchObject({ ok: true });
  });

  test(`§2.5 rule 5: ${MAX_FAULTS + 1} faults are not decoded and the message is refused`, () => {
    const bodies = Array.from({ length: MAX_FAULTS + 1 }, () => faultBody([influence(varintField(3, 0))]));
    const { message } = decode(withFaults(...bodies));
    expect([message.faults.length, message.faultsSent]).toEqual([0, MAX_FAULTS + 1]);
    expect(validateMessage(message, ctx)).toMatchObject({ ok: false, detail: 'invalid faults length' });
  });

  test('§2.5 rule order kept: an over-long faults list with a bad id is refused for the id (rule 1 first)', () => {
    const bytes = Buffer.concat([
      lenField(1, 'bad'),
      varintField(2, 1_772_330_400_000),
      repeated(Buffer.alloc(0), Buffer.from([0x2a, 0x00]), 200),
    ]);
    expect(validateMessage(decode(bytes).message, ctx)).toMatchObject({ ok: false, detail: 'invalid id' });
  });

  test(`§2.5 influence: ${MAX_INFLUENCES} influences are decoded; 5,000 are counted, ${MAX_INFLUENCES + 1} built, the fault dropped`, () => {
    const ok = decode(
      withFaults(faultBody(Array.from({ length: MAX_INFLUENCES }, () => influence(varintField(3, 1))))),
    );
    expect(ok.message.faults[0]!.influence).toHaveLength(MAX_INFLUENCES);
    const many = Array.from({ length: 5000 }, () => influence(varintField(3, 1)));
    const { message, counts } = decode(withFaults(faultBody(many)));
    expect([message.faults[0]!.influence.length, counts.influences]).toEqual([MAX_INFLUENCES + 1, 5000]);
    expect(validateMessage(message, ctx)).toMatchObject({
      ok: false,
      dropped: [{ reason: 'invalid-influence-length' }],
    });
  });

  test(`§2.5 deviceIds: 100,000 packed ids are counted, ${MAX_DEVICE_IDS + 1} built, the fault dropped`, () => {
    const { message, counts } = decode(withFaults(faultBody([influence(lenField(3, Buffer.alloc(100_000, 1)))])));
    expect([message.faults[0]!.influence[0]!.deviceIds.length, counts.deviceIds]).toEqual([
      MAX_DEVICE_IDS + 1,
      100_000,
    ]);
    expect(validateMessage(message, ctx)).toMatchObject({ dropped: [{ reason: 'invalid-device-ids-length' }] });
  });

  test(`§2.5 deviceIds: ${MAX_DEVICE_IDS} ids split over packed and unpacked fields are all read`, () => {
    const packed = lenField(3, Buffer.from(Array.from({ length: 16 }, (_, i) => i)));
    const unpacked = Array.from({ length: 16 }, (_, i) => varintField(3, 16 + i));
    const { message } = decode(withFaults(faultBody([influence(packed, ...unpacked)])));
    expect(message.faults[0]!.influence[0]!.deviceIds).toEqual(Array.from({ length: 32 }, (_, i) => i));
    expect(validateMessage(message, ctx)).toMatchObject({ ok: true });
  });

  const entry = (k: string, v: string): Buffer => lenField(6, Buffer.concat([lenField(1, k), lenField(2, v)]));

  test(`§2.5 faultLocation: 50,000 distinct keys are counted, ${MAX_LOCATION_ENTRIES + 1} kept, the fault dropped`, () => {
    const entries = Array.from({ length: 50_000 }, (_, i) => entry(`k${i}`, 'v'));
    const { message, counts } = decode(withFaults(faultBody([...entries, influence(varintField(3, 0))])));
    expect([Object.keys(message.faults[0]!.faultLocation!).length, counts.locationEntries]).toEqual([
      MAX_LOCATION_ENTRIES + 1,
      50_000,
    ]);
    expect(validateMessage(message, ctx)).toMatchObject({ dropped: [{ reason: 'invalid-fault-location' }] });
  });

  test('§2.5 faultLocation: a repeated key is one entry, the last value wins (a Go map)', () => {
    const entries = Array.from({ length: 50 }, (_, i) => entry('npuIp', `10.0.0.${i}`));
    const { message } = decode(withFaults(faultBody([...entries, influence(varintField(3, 0))])));
    expect(message.faults[0]!.faultLocation).toEqual({ npuIp: '10.0.0.49' });
    expect(validateMessage(message, ctx)).toMatchObject({ ok: true });
  });
});

describe('§2.11 proto3 decoding with Go semantics', () => {
  test('missing fields are zero values; an empty message decodes', () => {
    expect(decode(Buffer.alloc(0)).message).toEqual({ id: '', timestamp: 0, version: '', resource: '', faults: [] });
  });

  test('a repeated scalar field: the last one wins', () => {
    expect(decode(Buffer.concat([lenField(1, 'first-id'), lenField(1, 'second-id')])).message.id).toBe('second-id');
  });

  test('unknown fields of every wire type are skipped', () => {
    const unknown = Buffer.concat([
      varintField(15, 7),
      lenField(16, 'x'),
      tag(17, 1),
      Buffer.alloc(8),
      tag(18, 5),
      Buffer.alloc(4),
      tag(19, 3),
      tag(19, 4),
    ]);
    expect(decode(Buffer.concat([unknown, header()])).message.resource).toBe('CCAE');
  });

  test('a known field with another wire type is skipped as unknown (Go keeps it as an unknown field)', () => {
    const bytes = Buffer.concat([header(), varintField(1, 5), varintField(5, 3)]);
    expect(decode(bytes).message).toMatchObject({ id: 'msg.20260301-0001', faults: [] });
  });

  test('an empty packed deviceIds field is valid and adds nothing', () => {
    const { message } = decode(withFaults(faultBody([influence(lenField(3, Buffer.alloc(0)), varintField(3, 4))])));
    expect(message.faults[0]!.influence[0]!.deviceIds).toEqual([4]);
  });

  test('a negative device id in its 10-byte encoding is read', () => {
    const { message } = decode(withFaults(faultBody([influence(varintField(3, -1))])));
    expect(message.faults[0]!.influence[0]!.deviceIds).toEqual([-1]);
  });

  test('a map entry without key or value gives ""', () => {
    const { message } = decode(withFaults(faultBody([lenField(6, lenField(2, 'v')), lenField(6, Buffer.alloc(0))])));
    expect(message.faults[0]!.faultLocation).toEqual({ '': '' });
  });

  test('the map key "__proto__" is an ordinary key', () => {
    const { message } = decode(withFaults(faultBody([lenField(6, Buffer.concat([lenField(1, '__proto__')]))])));
    expect(Object.keys(message.faults[0]!.faultLocation!)).toEqual(['__proto__']);
  });
});

describe('[K] item 2 malformed requests give a WireFormatError naming the problem', () => {
  const cases: [string, Buffer, string][] = [
    ['a truncated varint', Buffer.concat([header(), Buffer.from([0x10, 0x96])]), 'truncated varint'],
    ['a length past the end', Buffer.concat([header(), Buffer.from([0x2a, 0x10, 0x00])]), 'length 16 past the end'],
    ['a huge length prefix', Buffer.concat([header(), tag(5, 2), varint(0xffffffff)]), 'length 4294967295 past'],
    [
      'a fault field running past its fault',
      withFaults(Buffer.concat([tag(1, 2), varint(50), Buffer.from('abc')])),
      'length 50 past the end of the enclosing field (3 bytes left)',
    ],
    [
      'a packed id crossing its field',
      withFaults(influence(lenField(3, Buffer.from([0x01, 0x80])))),
      'truncated varint',
    ],
    ['deep group nesting', Buffer.alloc(100_000, 0x0b), 'groups nested deeper than 32'],
    ['invalid UTF-8 in a fault', withFaults(Buffer.concat([tag(1, 2), Buffer.from([2, 0xff, 0xfe])])), 'invalid UTF-8'],
    ['wire type 7', Buffer.from([0x0f]), 'invalid wire type 7'],
    ['field number 0', Buffer.from([0x00, 0x00]), 'field number out of range'],
  ];
  test.each(cases)('%s', (_n, bytes, expected) => {
    expect(() => decode(bytes)).toThrow(WireFormatError);
    expect(() => decode(bytes)).toThrow(expected);
  });

  test('an over-long faults list is refused whole when its framing is malformed', () => {
    const bytes = Buffer.concat([repeated(header(), Buffer.from([0x2a, 0x00]), 200), Buffer.from([0x2a, 0x05])]);
    expect(() => decode(bytes)).toThrow(WireFormatError);
  });
});

// ---- properties against protobufjs ----

const str = fc.string({ unit: 'grapheme', maxLength: 12 });
const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String);
const requestArb: fc.Arbitrary<PublicFaultRequest> = fc.record({
  id: str,
  timestamp: int64,
  version: fc.constantFrom('1.0', '', 'x'),
  resource: str,
  faults: fc.array(
    fc.record({
      faultId: str,
      faultType: str,
      faultCode: str,
      faultTime: int64,
      assertion: str,
      faultLocation: fc
        .array(fc.tuple(str, str), { maxLength: 12 })
        .map((kv) => Object.fromEntries(kv.filter(([k]) => k !== '__proto__'))),
      influence: fc.array(
        fc.record({
          nodeName: str,
          nodeSN: str,
          deviceIds: fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { maxLength: MAX_DEVICE_IDS }),
        }),
        { maxLength: 4 },
      ),
      description: str,
    }),
    { maxLength: 5 },
  ),
});

/** The reference message with the decoder's string cuts applied (KEEP_BYTES). */
function cut(m: PublicFaultMessage): PublicFaultMessage {
  const keep = (s: string, n: number): string => Buffer.from(s).subarray(0, n).toString();
  return {
    ...m,
    id: keep(m.id, KEEP_BYTES.id),
    version: keep(m.version, KEEP_BYTES.version),
    faults: m.faults.map((f) => ({
      ...f,
      faultId: keep(f.faultId, KEEP_BYTES.id),
      faultType: keep(f.faultType, KEEP_BYTES.faultType),
      faultCode: keep(f.faultCode, KEEP_BYTES.faultCode),
      assertion: keep(f.assertion, KEEP_BYTES.assertion),
      description: keep(f.description, KEEP_BYTES.description),
      faultLocation: Object.fromEntries(
        Object.entries(f.faultLocation ?? {}).map(([k, v]) => [
          keep(k, KEEP_BYTES.locationKey),
          keep(v, KEEP_BYTES.locationValue),
        ]),
      ),
      influence: f.influence.map((i) => ({ ...i, nodeName: keep(i.nodeName, KEEP_BYTES.nodeName) })),
    })),
  };
}

/** What validation makes of a message, without the objects (comparable across two decodings). */
function verdict(m: PublicFaultMessage): unknown {
  const r = validateMessage(m, ctx);
  const dropped = r.dropped.map((d) => [d.index, d.reason]);
  return r.ok
    ? { ok: true, kept: r.faults.map((f) => f.fault.faultId), dropped }
    : { ok: false, why: r.reason, dropped };
}

/** Strings of 1-4-byte characters with a length around `n` (in characters or bytes, both get near it). */
const around = (n: number, chars: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc
    .integer({ min: Math.max(0, n - 4), max: n + 4 })
    .chain((len) => fc.array(chars, { minLength: len, maxLength: len }).map((a) => a.join('')));
const idChar = fc.constantFrom('a', 'Z', '9', '-', '_', '.');
const anyChar = fc.constantFrom('a', 'é', '€', '😀', '\t', ' ');
const okOr = <T>(ok: fc.Arbitrary<T>, other: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: ok, weight: 5 }, { arbitrary: other, weight: 1 });
const codes = [...shippedConfig().levels.keys()];
const nearLimitArb: fc.Arbitrary<PublicFaultRequest> = fc.record({
  id: okOr(fc.constant('msg.20260301-0001'), fc.oneof(around(128, idChar), around(128, anyChar))),
  timestamp: fc.constant('1772330400000'),
  version: okOr(fc.constant('1.0'), fc.constantFrom('1.0 ', '1.0é', '1.00', '1.')),
  resource: fc.constant('CCAE'),
  faults: fc.array(
    fc.record({
      faultId: okOr(fc.oneof(fc.constant('fault-0001'), around(128, idChar)), around(128, anyChar)),
      faultType: okOr(
        fc.constantFrom('NPU', 'Node', 'Network', 'Storage'),
        fc.constantFrom('Storage1', 'Network€', 'Networks'),
      ),
      faultCode: okOr(fc.constantFrom(...codes), fc.oneof(around(9, fc.constantFrom('1', 'é')), around(10, anyChar))),
      faultTime: fc.constant('1772330390000'),
      assertion: okOr(fc.constantFrom('occur', 'recover', 'once'), fc.constantFrom('recover1', 'recoveré', 'recovery')),
      faultLocation: okOr(
        fc.constant({}),
        fc
          .array(fc.tuple(around(16, anyChar), around(128, anyChar)), { maxLength: 3 })
          .map((kv) => Object.fromEntries(kv)),
      ),
      influence: fc.array(
        fc.record({
          nodeName: okOr(
            fc.constant('node-1'),
            fc.oneof(around(253, fc.constantFrom('a', '1', '-')), around(253, anyChar)),
          ),
          nodeSN: fc.constant(''),
          deviceIds: fc.constant([0, 1]),
        }),
        { minLength: 1, maxLength: 2 },
      ),
      description: okOr(fc.constant(''), around(512, anyChar)),
    }),
    { minLength: 1, maxLength: 3 },
  ),
});

describe('[K] item 2 decoder against protobufjs (fast-check)', () => {
  test('property: a valid request within the limits decodes to what protobufjs + the old mapping gave (strings cut)', () => {
    fc.assert(
      fc.property(requestArb, (req) => {
        const bytes = encodeRequest(req);
        expect(decode(bytes).message).toEqual(cut(referenceMessage(protobufjsDecode(bytes))));
      }),
      { numRuns: 1000 },
    );
  });

  test('property: cutting strings never changes what validation decides (strings around every §2.5 length)', () => {
    fc.assert(
      fc.property(nearLimitArb, (req) => {
        const bytes = encodeRequest(req);
        const ours = decode(bytes).message;
        expect(verdict(ours)).toEqual(verdict(referenceMessage(protobufjsDecode(bytes))));
      }),
      { numRuns: 2000 },
    );
  });

  test('property: the counts agree with protobufjs for valid requests', () => {
    fc.assert(
      fc.property(requestArb, (req) => {
        const bytes = encodeRequest(req);
        const ref = protobufjsDecode(bytes);
        const influences = ref.faults.flatMap((f) => f.influence);
        expect(decode(bytes).counts).toEqual({
          faults: ref.faults.length,
          influences: influences.length,
          deviceIds: influences.reduce((n, i) => n + i.deviceIds.length, 0),
          locationEntries: ref.faults.reduce((n, f) => n + Object.keys(f.faultLocation).length, 0),
        });
      }),
      { numRuns: 1000 },
    );
  });

  test('property: random bytes decode or throw a WireFormatError, nothing else', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
        try {
          decode(Buffer.from(bytes));
        } catch (e) {
          expect(e).toBeInstanceOf(WireFormatError);
        }
      }),
      { numRuns: 5000 },
    );
  });

  test('property: a valid request with bytes flipped, cut or inserted decodes or throws a WireFormatError', () => {
    const mutation = fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('flip', 'cut', 'insert'));
    fc.assert(
      fc.property(requestArb, fc.array(mutation, { minLength: 1, maxLength: 4 }), (req, mutations) => {
        let bytes = encodeRequest(req);
        for (const [at, byte, how] of mutations) {
          const i = bytes.length === 0 ? 0 : at % bytes.length;
          if (how === 'flip' && bytes.length > 0) bytes[i] = byte;
          else if (how === 'cut') bytes = bytes.subarray(0, i);
          else bytes = Buffer.concat([bytes.subarray(0, i), Buffer.from([byte]), bytes.subarray(i)]);
        }
        try {
          decode(bytes);
        } catch (e) {
          expect(e).toBeInstanceOf(WireFormatError);
        }
      }),
      { numRuns: 3000 },
    );
  });
});

test('[K] item 2 the near-limit generator reaches kept faults and drops by every string rule (not vacuous)', () => {
  const reasons = new Set<string>();
  let kept = 0;
  for (const req of fc.sample(nearLimitArb, { numRuns: 2000, seed: 11 })) {
    const r = validateMessage(decode(encodeRequest(req)).message, ctx);
    for (const d of r.dropped) reasons.add(d.reason);
    if (!r.ok) reasons.add(r.reason);
    else kept += r.faults.length;
  }
  expect(kept).toBeGreaterThan(50);
  expect([...reasons].sort()).toEqual(
    expect.arrayContaining([
      'invalid-assertion',
      'invalid-description',
      'invalid-fault-code',
      'invalid-fault-id',
      'invalid-fault-location',
      'invalid-fault-type',
      'invalid-id',
      'invalid-node-name',
      'invalid-version',
    ]),
  );
});
