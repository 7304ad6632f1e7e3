import { describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import {
  GoJsonError,
  goFloat,
  isEmptyJsonSlice,
  goMap,
  goQuote,
  goRaw,
  goSha256Hex,
  goSlice,
  goStruct,
  marshalGo,
  marshalGoBytes,
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
