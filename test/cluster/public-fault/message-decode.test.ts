import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { decodePublicFaultMessage, MessageDecodeError } from '../../../src/cluster/public-fault/message-decode.js';
import {
  MAX_DEVICE_IDS,
  MAX_FAULTS,
  MAX_INFLUENCES,
  MAX_LOCATION_ENTRIES,
  validateMessage,
} from '../../../src/cluster/public-fault/validator.js';
import type { PublicFaultMessage } from '../../../src/cluster/public-fault/types.js';
import { shippedConfig } from './fixtures.js';
import { decodePublicFaultMessage as referenceDecode } from './message-decode-reference.js';

const DOC = `{"id":"msg.20260301-0001","timestamp":1772330400000,"version":"1.0","resource":"CCAE",
 "faults":[{"faultId":"fault-0001","faultType":"Storage","faultCode":"010001001",
            "faultTime":1772330390000,"assertion":"occur","faultLocation":{"npuIp":"10.0.0.1"},
            "influence":[{"nodeName":"node-1","deviceIds":[0,1]},{"nodeSN":"2102313ABCD","deviceIds":[7]}],
            "description":"storage latency high"}]}`;

describe('§2.1 JSON decoding of the ConfigMap value (Go semantics)', () => {
  test('§2.1 the documented example decodes', () => {
    const m = decodePublicFaultMessage(DOC);
    expect([m.timestamp, m.faults[0]!.influence[1], m.faults[0]!.faultLocation]).toEqual([
      1772330400000,
      { nodeName: '', nodeSN: '2102313ABCD', deviceIds: [7] },
      { npuIp: '10.0.0.1' },
    ]);
  });

  test('§2.1 a raw control character in a string makes the value unparsable', () => {
    expect(() => decodePublicFaultMessage('{"id":"ab\u0001c"}')).toThrow(MessageDecodeError);
  });

  test('§2.1 an unterminated string makes the value unparsable', () => {
    expect(() => decodePublicFaultMessage('{"id":"abc')).toThrow(MessageDecodeError);
  });

  test('§2.1 escapes in member names and values are decoded', () => {
    expect(decodePublicFaultMessage(String.raw`{"\u0069d":"a\"b\\c\u00e9"}`).id).toBe('a"b\\c\u00e9');
  });

  test('§2.1 field names match case-insensitively', () => {
    expect(decodePublicFaultMessage('{"ID":"abc","Resource":"CCAE"}')).toMatchObject({ id: 'abc', resource: 'CCAE' });
  });

  test('§2.1 unknown fields are ignored', () => {
    expect(decodePublicFaultMessage('{"id":"abc","extra":{"x":[1,2]}}').id).toBe('abc');
  });

  test('§2.1 null is the zero value', () => {
    expect(decodePublicFaultMessage('{"id":null,"timestamp":null,"faults":null}')).toMatchObject({
      id: '',
      timestamp: 0,
      faults: [],
    });
  });

  const unparsable: [string, string][] = [
    ['§2.1 a timestamp given as a string', '{"timestamp":"1772330400000"}'],
    ['§2.1 a non-integer timestamp', '{"timestamp":1772330400000.5}'],
    ['§2.1 an exponent for an integer', '{"timestamp":1.7e12}'],
    ['§2.1 a timestamp beyond int64', '{"timestamp":9223372036854775808}'],
    ['§2.1 a faultTime given as a string', '{"faults":[{"faultTime":"1"}]}'],
    ['§2.1 a device id given as a string', '{"faults":[{"influence":[{"deviceIds":["1"]}]}]}'],
    ['§2.1 a device id beyond int32', '{"faults":[{"influence":[{"deviceIds":[2147483648]}]}]}'],
    ['§2.1 a number for a string field', '{"id":12345678}'],
    ['§2.1 an object for faults', '{"faults":{}}'],
    ['§2.1 a number as a faultLocation value', '{"faults":[{"faultLocation":{"a":1}}]}'],
    ['§2.1 a top-level array', '[]'],
    ['§2.1 invalid JSON', '{"id":'],
    ['§2.1 trailing data', '{} x'],
  ];
  test.each(unparsable)('%s makes the message unparsable', (_n, text) => {
    expect(() => decodePublicFaultMessage(text)).toThrow(MessageDecodeError);
  });

  test('§2.1 int32 minimum is a valid device id encoding', () => {
    expect(
      decodePublicFaultMessage('{"faults":[{"influence":[{"deviceIds":[-2147483648]}]}]}').faults[0]!.influence[0]!
        .deviceIds,
    ).toEqual([-2147483648]);
  });

  test('§2.1 the error names the JSON path', () => {
    expect(() => decodePublicFaultMessage('{"faults":[{},{"faultTime":"x"}]}')).toThrow('$.faults[1].faultTime');
  });

  test('§2.1 deep nesting is refused, not a stack overflow', () => {
    expect(() => decodePublicFaultMessage('{"x":' + '['.repeat(10_000) + ']'.repeat(10_000) + '}')).toThrow(
      MessageDecodeError,
    );
  });
});

describe('[K] item 2 §2.5 limits applied while decoding the ConfigMap value', () => {
  const list = (n: number, item: string): string => Array.from({ length: n }, () => item).join(',');
  const oneFault = (members: string): string =>
    `{"id":"msg.20260301-0001","timestamp":1772330400000,"version":"1.0","resource":"CCAE","faults":[{"faultId":"fault-0001","faultType":"Storage","faultCode":"220001001","faultTime":1772330390000,"assertion":"occur",${members}}]}`;
  const ctx = { config: shippedConfig(), nodeBySerial: () => undefined };

  test('[K] item 2 a 1 MiB value of 350,000 empty faults is counted, not built, and refused by rule 5', () => {
    const head = '"id":"msg.20260301-0001","timestamp":1772330400000,"version":"1.0","resource":"CCAE"';
    const m = decodePublicFaultMessage(`{${head},"faults":[${list(350_000, '{}')}]}`);
    expect([m.faults.length, m.faultsSent]).toEqual([0, 350_000]);
    expect(validateMessage(m, ctx)).toMatchObject({ ok: false, detail: 'invalid faults length' });
  });

  test(`§2.5 rule 5: ${MAX_FAULTS} faults are built, ${MAX_FAULTS + 1} are not`, () => {
    expect(decodePublicFaultMessage(`{"faults":[${list(MAX_FAULTS, '{}')}]}`).faults).toHaveLength(MAX_FAULTS);
    expect(decodePublicFaultMessage(`{"faults":[${list(MAX_FAULTS + 1, '{}')}]}`)).toMatchObject({
      faults: [],
      faultsSent: MAX_FAULTS + 1,
    });
  });

  test('§2.1 faults that are not built are still type-checked (a wrong type anywhere: unparsable)', () => {
    const text = `{"faults":[${list(150, '{}')},{"influence":[{"deviceIds":["1"]}]}]}`;
    expect(() => decodePublicFaultMessage(text)).toThrow('$.faults[150].influence[0].deviceIds[0]');
  });

  test(`§2.5 influence: 5,000 influences, ${MAX_INFLUENCES + 1} built, the fault dropped`, () => {
    const m = decodePublicFaultMessage(
      oneFault(`"influence":[${list(5000, '{"nodeName":"node-1","deviceIds":[0]}')}]`),
    );
    expect(m.faults[0]!.influence).toHaveLength(MAX_INFLUENCES + 1);
    expect(validateMessage(m, ctx)).toMatchObject({ ok: false, dropped: [{ reason: 'invalid-influence-length' }] });
  });

  test(`§2.5 deviceIds: 200,000 ids, ${MAX_DEVICE_IDS + 1} built, the fault dropped`, () => {
    const m = decodePublicFaultMessage(
      oneFault(`"influence":[{"nodeName":"node-1","deviceIds":[${list(200_000, '7')}]}]`),
    );
    expect(m.faults[0]!.influence[0]!.deviceIds).toHaveLength(MAX_DEVICE_IDS + 1);
    expect(validateMessage(m, ctx)).toMatchObject({ dropped: [{ reason: 'invalid-device-ids-length' }] });
  });

  test(`§2.5 faultLocation: 50,000 keys, ${MAX_LOCATION_ENTRIES + 1} kept, the fault dropped`, () => {
    const keys = Array.from({ length: 50_000 }, (_, i) => `"k${i}":"v"`).join(',');
    const m = decodePublicFaultMessage(
      oneFault(`"faultLocation":{${keys}},"influence":[{"nodeName":"node-1","deviceIds":[0]}]`),
    );
    expect(Object.keys(m.faults[0]!.faultLocation!)).toHaveLength(MAX_LOCATION_ENTRIES + 1);
    expect(validateMessage(m, ctx)).toMatchObject({ dropped: [{ reason: 'invalid-fault-location' }] });
  });

  test('§2.1 an error path quotes at most 32 characters of a member name', () => {
    expect(() => decodePublicFaultMessage(`{"faults":[{"${'x'.repeat(1000)}":1,"faultTime":"1"}]}`)).toThrow(
      /^\$\.faults\[0\]\.faultTime: /,
    );
    expect(() => decodePublicFaultMessage(`{"faults":{"${'x'.repeat(1000)}":1}}`)).toThrow(MessageDecodeError);
  });
});

describe('§2.1 repeated member names decode as in Go encoding/json', () => {
  test('the last string wins; null leaves the earlier value', () => {
    expect(decodePublicFaultMessage('{"id":"first-id","ID":"second-id"}').id).toBe('second-id');
    expect(decodePublicFaultMessage('{"id":"first-id","id":null}').id).toBe('first-id');
  });

  test('a wrong type in an earlier occurrence still makes the message unparsable', () => {
    expect(() => decodePublicFaultMessage('{"id":12345678,"id":"abcdefgh"}')).toThrow(MessageDecodeError);
  });

  test('a later faults array replaces the earlier one', () => {
    const m = decodePublicFaultMessage(`{"faults":[${Array(150).fill('{}').join(',')}],"faults":[{"faultId":"x"}]}`);
    expect([m.faults.map((f) => f.faultId), m.faultsSent]).toEqual([['x'], undefined]);
  });

  test('a later faultLocation adds to the earlier one; null clears it', () => {
    const loc = (text: string) => decodePublicFaultMessage(`{"faults":[{${text}}]}`).faults[0]!.faultLocation;
    expect(loc('"faultLocation":{"a":"1","b":"2"},"faultLocation":{"b":"3"}')).toEqual({ a: '1', b: '3' });
    expect(loc('"faultLocation":{"a":"1"},"faultLocation":null')).toBeNull();
  });
});

// ---- against the pre-[K] decoder ----

const keyCase = (k: string) => fc.constantFrom(k, k.toUpperCase(), k[0]!.toUpperCase() + k.slice(1));
const anyJson = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.string({ maxLength: 6 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
);
const strOr = fc.oneof({ arbitrary: fc.string({ maxLength: 8 }), weight: 15 }, { arbitrary: anyJson, weight: 1 });
const intOr = fc.oneof(
  { arbitrary: fc.maxSafeInteger(), weight: 14 },
  { arbitrary: fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }), weight: 1 },
  { arbitrary: anyJson, weight: 1 },
);
const int32Or = fc.oneof(
  { arbitrary: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), weight: 30 },
  { arbitrary: fc.bigInt({ min: -(2n ** 40n), max: 2n ** 40n }), weight: 1 },
  { arbitrary: anyJson, weight: 1 },
);
/** An object with the given members under random spellings, plus maybe an unknown one; JSON text. */
function objectText(members: [string, fc.Arbitrary<string>][]): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.tuple(...members.map(([k, v]) => fc.option(fc.tuple(keyCase(k), v), { freq: 3 }))),
      fc.option(fc.tuple(fc.constantFrom('extra', 'zz'), fc.json({ maxDepth: 2 }))),
    )
    .map(([known, extra]) => {
      const parts = known.filter((p): p is [string, string] => p !== null).map(([k, v]) => `${JSON.stringify(k)}:${v}`);
      if (extra) parts.push(`${JSON.stringify(extra[0])}:${extra[1]}`);
      return `{${parts.join(',')}}`;
    });
}
const jsonOf = (a: fc.Arbitrary<unknown>): fc.Arbitrary<string> =>
  a.map((v) => (typeof v === 'bigint' ? String(v) : JSON.stringify(v)));
const orNull = (a: fc.Arbitrary<string>) =>
  fc.oneof({ arbitrary: a, weight: 5 }, { arbitrary: jsonOf(anyJson), weight: 1 });
const influenceText = objectText([
  ['nodeName', jsonOf(strOr)],
  ['nodeSN', jsonOf(strOr)],
  ['deviceIds', orNull(fc.array(jsonOf(int32Or), { maxLength: 4 }).map((a) => `[${a.join(',')}]`))],
]);
const faultText = objectText([
  ['faultId', jsonOf(strOr)],
  ['faultType', jsonOf(strOr)],
  ['faultCode', jsonOf(strOr)],
  ['faultTime', jsonOf(intOr)],
  ['assertion', jsonOf(strOr)],
  [
    'faultLocation',
    orNull(fc.dictionary(fc.string({ maxLength: 4 }), strOr, { maxKeys: 12 }).map((d) => JSON.stringify(d))),
  ],
  ['influence', orNull(fc.array(influenceText, { maxLength: 3 }).map((a) => `[${a.join(',')}]`))],
  ['description', jsonOf(strOr)],
]);
const messageText = objectText([
  ['id', jsonOf(strOr)],
  ['timestamp', jsonOf(intOr)],
  ['version', jsonOf(strOr)],
  ['resource', jsonOf(strOr)],
  ['faults', orNull(fc.array(faultText, { maxLength: 4 }).map((a) => `[${a.join(',')}]`))],
]);

function outcome(decode: (t: string) => unknown, text: string): unknown {
  try {
    return { ok: decode(text) };
  } catch (e) {
    return { error: (e as Error).name, path: (e as { path?: string }).path };
  }
}

describe('[K] item 2 the bounded decoder against the pre-[K] one (fast-check)', () => {
  test('property: any message-shaped text within the limits decodes the same (or fails at the same path)', () => {
    fc.assert(
      fc.property(messageText, (text) => {
        expect(outcome(decodePublicFaultMessage, text)).toEqual(outcome(referenceDecode, text));
      }),
      { numRuns: 3000 },
    );
  });

  test('property: any JSON or text decodes the same (or both fail)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.json(), fc.string()), (text) => {
        expect(outcome(decodePublicFaultMessage, text)).toEqual(outcome(referenceDecode, text));
      }),
      { numRuns: 3000 },
    );
  });
});

test('[K] item 2 the generator above reaches decodable messages with faults, influences and device ids', () => {
  const decoded = fc
    .sample(messageText, { numRuns: 2000, seed: 7 })
    .map((t) => outcome(decodePublicFaultMessage, t))
    .filter((o): o is { ok: PublicFaultMessage } => 'ok' in (o as object));
  const withIds = decoded.filter((o) => o.ok.faults.some((f) => f.influence.some((i) => i.deviceIds.length > 0)));
  expect([decoded.length > 200, withIds.length > 20]).toEqual([true, true]);
});
