import { describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { checkCodeOf, deviceInfoGo } from '../../src/kube/device-info.js';
import {
  GoJsonError,
  compareGoStrings,
  goFloat,
  isEmptyJsonSlice,
  goMap,
  goQuote,
  goRaw,
  goSha256Hex,
  goSlice,
  goStruct,
  marshalDeviceInfo,
  marshalGo,
  marshalGoBytes,
  sortGoStrings,
} from '../../src/core/go-json.js';

// Expected texts below are what Go 1.21 `json.Marshal` emits for the same values.
describe('H.6 strings', () => {
  test('H.6 <, > and & are escaped as \\u003c, \\u003e, \\u0026', () => {
    expect(goQuote('a<b>&c')).toBe('"a\\u003cb\\u003e\\u0026c"');
  });

  test('H.6 quote and backslash are backslash-escaped', () => {
    expect(goQuote('say "hi" \\ bye')).toBe('"say \\"hi\\" \\\\ bye"');
  });

  test('H.6 \\n, \\r and \\t use the short forms', () => {
    expect(goQuote('a\nb\rc\td')).toBe('"a\\nb\\rc\\td"');
  });

  test('H.6 other control characters are \\u00XX with lower-case hex', () => {
    expect(goQuote('\u0000\u0001\u0008\u000c\u001f')).toBe('"\\u0000\\u0001\\u0008\\u000c\\u001f"');
  });

  test('H.6 Go 1.22+ mode writes \\b and \\f', () => {
    expect(goQuote('\u0008\u000c', { shortBackspaceFormFeed: true })).toBe('"\\b\\f"');
  });

  test('H.6 DEL (0x7f) is written raw', () => {
    expect(goQuote('\u007f')).toBe('"\u007f"');
  });

  test('H.6 U+2028 and U+2029 are escaped', () => {
    expect(goQuote('a\u2028b\u2029c')).toBe('"a\\u2028b\\u2029c"');
  });

  test('H.6 other non-ASCII is written raw as UTF-8', () => {
    expect(marshalGoBytes('é昇腾😀').toString('hex')).toBe(Buffer.from('"é昇腾😀"', 'utf8').toString('hex'));
  });

  test('H.6 a lone high surrogate becomes U+FFFD', () => {
    expect(goQuote('a\ud800b')).toBe('"a\ufffdb"');
  });

  test('H.6 a lone low surrogate becomes U+FFFD', () => {
    expect(goQuote('\udc00')).toBe('"\ufffd"');
  });

  test('H.6 a reversed surrogate pair becomes two U+FFFD', () => {
    expect(goQuote('\ude00\ud83d')).toBe('"\ufffd\ufffd"');
  });

  test('H.6 SetEscapeHTML(false) leaves <>& raw', () => {
    expect(goQuote('<&>', { noHtmlEscape: true })).toBe('"<&>"');
  });

  test('H.6 a JSON text nested in a string is escaped again (the -Fault value)', () => {
    const inner = marshalGo(goSlice([goStruct([['fault_code', '80E1<8402']])]));
    expect(marshalGo(goMap({ k: inner }))).toBe('{"k":"[{\\"fault_code\\":\\"80E1\\\\u003c8402\\"}]"}');
  });
});

describe('H.6 maps and structs', () => {
  test('H.6 map keys are sorted by byte order whatever the insertion order', () => {
    expect(marshalGo(goMap({ b: 1, a: 2, B: 3, 'a-10': 4, 'a-2': 5 }))).toBe('{"B":3,"a":2,"a-10":4,"a-2":5,"b":1}');
  });

  test('H.6 map keys sort by UTF-8 bytes, not UTF-16 units', () => {
    // U+FF61 is 0xEF 0xBD 0xA1 in UTF-8 and sorts before U+1F600 (0xF0 …); in UTF-16 it sorts after 0xD83D.
    expect(marshalGo(goMap({ '😀': 1, '｡': 2 }))).toBe('{"｡":2,"😀":1}');
  });

  test('H.6 map keys are escaped like strings', () => {
    expect(marshalGo(goMap({ '<k>': true }))).toBe('{"\\u003ck\\u003e":true}');
  });

  test('H.6 struct members keep declaration order', () => {
    expect(
      marshalGo(
        goStruct([
          ['z', 1],
          ['a', 'x'],
        ]),
      ),
    ).toBe('{"z":1,"a":"x"}');
  });

  test('H.6 omitempty drops zero values but not an empty struct', () => {
    const s = goStruct([
      { name: 'a', value: 0, omitEmpty: true },
      { name: 'b', value: '', omitEmpty: true },
      { name: 'c', value: goSlice([]), omitEmpty: true },
      { name: 'd', value: goStruct([]), omitEmpty: true },
      { name: 'e', value: -2, omitEmpty: true },
    ]);
    expect(marshalGo(s)).toBe('{"d":{},"e":-2}');
  });
});

describe('H.6 nil versus empty', () => {
  test('H.6 a nil slice is null', () => {
    expect(marshalGo(goSlice(null))).toBe('null');
  });

  test('H.6 an empty slice is []', () => {
    expect(marshalGo(goSlice([]))).toBe('[]');
  });

  test('H.6 a nil map is null', () => {
    expect(marshalGo(goMap(null))).toBe('null');
  });

  test('H.6 an empty map is {}', () => {
    expect(marshalGo(goMap({}))).toBe('{}');
  });
});

describe('H.6 numbers', () => {
  test('H.6 integers are decimal, negative ones with a sign', () => {
    expect(marshalGo(goSlice([0, -2, 1744167455784, 9007199254740993n]))).toBe('[0,-2,1744167455784,9007199254740993]');
  });

  test('H.6 an unsafe JS integer is refused rather than rounded', () => {
    expect(() => marshalGo(goStruct([['t', 2 ** 60]]))).toThrow(GoJsonError);
  });

  test('H.6 float64 formatting switches to exponent form below 1e-6 and from 1e21', () => {
    expect(marshalGo(goSlice([1.5, 1e-7, 1e21, 1e20, 0.000001, -0].map(goFloat)))).toBe(
      '[1.5,1e-7,1e+21,100000000000000000000,0.000001,-0]',
    );
  });

  test('H.6 NaN is an unsupported value', () => {
    expect(() => marshalGo(goFloat(NaN))).toThrow(GoJsonError);
  });
});

describe('H.6 raw messages and hashing', () => {
  test('H.6 a RawMessage is inserted verbatim', () => {
    expect(marshalGo(goStruct([['r', goRaw('{"x":[1]}')]]))).toBe('{"r":{"x":[1]}}');
  });

  test('H.3 the hash is over the UTF-8 bytes', () => {
    const bytes = Buffer.from([0x22, 0xc3, 0xa9, 0x22]); // "é"
    expect(goSha256Hex('é')).toBe(createHash('sha256').update(bytes).digest('hex'));
  });
});

describe('spec H.6 omitempty of an encoded slice', () => {
  test.each(['', 'null', '[]', ' [ ] '])('H.6 %j is empty (left out)', (json) => {
    expect(isEmptyJsonSlice(json)).toBe(true);
  });

  test('H.6 a slice with an element is not empty', () => {
    expect(isEmptyJsonSlice('[{"net_layer":0}]')).toBe(false);
  });
});

/** What the generic encoder writes for the DeviceInfo struct: the reference of the direct encoder. */
function genericDeviceInfo(list: Record<string, string> | null, updateTime: number): string {
  return marshalGo(
    goStruct([
      ['DeviceList', goMap(list)],
      ['UpdateTime', updateTime],
    ]),
  );
}

/** Deterministic pseudo-random integers (xorshift32) for the generated cases. */
function rng(seed: number): (n: number) => number {
  let x = seed;
  return (n) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
}

/** Code units and pairs Go and JSON.stringify treat differently, plus ordinary ones. */
const HOSTILE_UNITS = [
  'a',
  'Z',
  '0',
  '-',
  '/',
  '"',
  '\\',
  '<',
  '>',
  '&',
  '\u0000',
  '\b',
  '\f',
  '\n',
  '\r',
  '\t',
  '\u001f',
  '\u007f',
  '\u00e9',
  '\u2028',
  '\u2029',
  '\ud7ff',
  '\ud800',
  '\udbff',
  '\udc00',
  '\udfff',
  '\ue000',
  '\uffff',
  '\ud83d\ude00',
  '\u{10000}',
  '\u{10ffff}',
];

function hostileString(next: (n: number) => number): string {
  let s = '';
  for (let i = next(6); i > 0; i--) s += HOSTILE_UNITS[next(HOSTILE_UNITS.length)]!;
  return s;
}

describe('H.3 / H.6 the direct DeviceInfo encoder (marshalDeviceInfo) writes the generic encoder’s bytes', () => {
  test('H.6 DeviceList keys are sorted by UTF-8 bytes: U+E000 and U+FFFF before a character above U+FFFF', () => {
    const list = { '\u{10000}': 'a', '\uffff': 'b', '\ue000': 'c', 'huawei.com/Ascend910': 'd' };
    const text = marshalDeviceInfo(list, 1);
    expect(text).toBe(genericDeviceInfo(list, 1));
    const order = ['huawei.com/Ascend910', '\ue000', '\uffff', '\u{10000}'].map((k) => text.indexOf(JSON.stringify(k)));
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });

  test('H.6 <, > and & in keys and values are escaped as the generic encoder escapes them', () => {
    const list = { '<k>': 'a&b', '&': '<>' };
    expect(marshalDeviceInfo(list, 0)).toBe(genericDeviceInfo(list, 0));
  });

  test('H.6 U+2028 and U+2029 are escaped in keys and values', () => {
    const list = { '\u2028': '\u2029', x: 'a\u2028b' };
    expect(marshalDeviceInfo(list, 0)).toBe(genericDeviceInfo(list, 0));
  });

  test('H.6 lone surrogates become U+FFFD in keys and values', () => {
    const list = { '\ud800': 'x\udfff', '\udc00\ud800': '\ud83d' };
    expect(marshalDeviceInfo(list, 0)).toBe(genericDeviceInfo(list, 0));
  });

  test('H.6 control characters (\\b and \\f as \\u0008 and \\u000c) are encoded as the generic encoder does', () => {
    const list = { '\b\f': '\u0000\n\r\t\u001f\u007f' };
    expect(marshalDeviceInfo(list, 0)).toBe(genericDeviceInfo(list, 0));
  });

  test('H.6 quotes, backslashes and a nested JSON text (the -Fault value) are escaped', () => {
    const list = { 'huawei.com/Ascend910-Fault': JSON.stringify([{ fault_code: '80E18402', x: 'a"\\b' }]) };
    expect(marshalDeviceInfo(list, 0)).toBe(genericDeviceInfo(list, 0));
  });

  test('H.6 an empty DeviceList is {}', () => {
    expect(marshalDeviceInfo({}, 0)).toBe(genericDeviceInfo({}, 0));
  });

  test('H.3 a nil DeviceList is null (issue [O] item 6)', () => {
    expect(marshalDeviceInfo(null, 0)).toBe(genericDeviceInfo(null, 0));
  });

  test('H.3 the CheckCode of a nil DeviceList is the SHA-256 of the null form', () => {
    const expected = createHash('sha256').update(genericDeviceInfo(null, 0)).digest('hex');
    expect(checkCodeOf(null, 0)).toBe(expected);
  });

  test('H.3 the CheckCode is the SHA-256 of the generic serialisation, non-ASCII included', () => {
    const list = { 'huawei.com/Ascend910': 'Ascend910-0', '\u00e9': '\u{10ffff}' };
    expect(checkCodeOf(list, 1_772_359_200)).toBe(goSha256Hex(deviceInfoGo(list, 1_772_359_200)));
  });

  test('H.6 the largest safe UpdateTime, a negative one and -0 are written as the generic encoder writes them', () => {
    for (const t of [Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, -0, -1]) {
      expect(marshalDeviceInfo({ a: 'b' }, t)).toBe(genericDeviceInfo({ a: 'b' }, t));
    }
  });

  test('H.6 an UpdateTime that is not a safe integer is refused as by the generic encoder', () => {
    for (const t of [2 ** 53, 1.5, Number.NaN]) {
      expect(() => genericDeviceInfo({}, t)).toThrow(GoJsonError);
      expect(() => marshalDeviceInfo({}, t)).toThrow(GoJsonError);
    }
  });

  test('H.6 a key "__proto__" is an ordinary key', () => {
    const list = JSON.parse('{"__proto__":"x","a":"y"}') as Record<string, string>;
    expect(marshalDeviceInfo(list, 0)).toBe(genericDeviceInfo(list, 0));
  });

  test('H.6 2,000 generated DeviceLists of hostile keys and values encode alike', () => {
    const next = rng(0x5eed);
    const mismatches: string[] = [];
    for (let c = 0; c < 2000; c++) {
      const list: Record<string, string> = {};
      for (let k = next(6); k > 0; k--) list[hostileString(next)] = hostileString(next);
      const t = next(2) === 0 ? next(1 << 30) : -next(1000);
      if (marshalDeviceInfo(list, t) !== genericDeviceInfo(list, t)) mismatches.push(JSON.stringify(list));
    }
    expect(mismatches).toEqual([]);
  });
});

describe('H.6 Go string order and quoting paths', () => {
  test('H.6 sortGoStrings orders 2,000 generated lists as a byte-wise sort of their UTF-8 encodings', () => {
    const next = rng(0xbeef);
    const mismatches: string[][] = [];
    for (let c = 0; c < 2000; c++) {
      const keys = Array.from({ length: next(8) }, () => hostileString(next));
      const bytes = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
      const sorted = sortGoStrings([...keys]);
      // strings equal as UTF-8 (lone surrogates are all U+FFFD) may come in either order: compare the encodings
      if (
        sorted.map((k) => Buffer.from(k).toString('hex')).join() !==
        bytes.map((k) => Buffer.from(k).toString('hex')).join()
      ) {
        mismatches.push(keys);
      }
    }
    expect(mismatches).toEqual([]);
  });

  test('H.6 compareGoStrings is the UTF-8 byte order where UTF-16 order differs (U+FFFF < U+10000)', () => {
    expect(compareGoStrings('\uffff', '\u{10000}')).toBe(-1);
    expect('\uffff' < '\u{10000}').toBe(false);
  });

  test('H.6 goQuote writes the same text with and without its JSON.stringify path for every code unit', () => {
    // each unit alone and next to ordinary text; the loop path is taken when the string holds a '<' as well
    const mismatches: number[] = [];
    for (let c = 0; c <= 0xffff; c++) {
      const s = `a${String.fromCharCode(c)}b`;
      const viaLoop = goQuote(`<${s}`);
      if (`"\\u003c${goQuote(s).slice(1)}` !== viaLoop) mismatches.push(c);
    }
    expect(mismatches).toEqual([]);
  });
});
