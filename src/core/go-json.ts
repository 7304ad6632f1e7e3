/**
 * A serialiser that produces the exact bytes Go's `encoding/json` `Marshal` produces (spec H.6), for JSON that a Go
 * consumer re-serialises and hashes (the device-info `CheckCode`, spec H.3) or compares byte-wise.
 *
 * JavaScript values do not carry Go's type information, so the caller says what each value is:
 * - a Go struct is {@link goStruct}: members in declaration order, optional `omitempty`;
 * - a Go map is {@link goMap}: members sorted by the UTF-8 bytes of their keys, whatever order they were given in;
 * - a Go slice is {@link goSlice}: `null` for a nil slice, `[]` for an empty one;
 * - a JS `number` is a Go integer (it must be a safe integer); a `bigint` too; {@link goFloat} is a float64;
 * - a JS `string` is a Go string, `boolean` a bool, `null` a nil pointer / interface;
 * - {@link goRaw} is a `json.RawMessage` (already-encoded text, inserted as given).
 */
import { hash } from 'node:crypto';

/** A value with the Go type information the encoding needs. */
export type GoValue = null | boolean | number | bigint | string | GoStruct | GoMap | GoSlice | GoFloat | GoRaw;

/** One struct member: JSON name, value, and whether Go's `omitempty` applies to it. */
export interface GoField {
  readonly name: string;
  readonly value: GoValue;
  readonly omitEmpty?: boolean;
}

/** A Go struct: members in declaration order. */
export interface GoStruct {
  readonly goKind: 'struct';
  readonly fields: readonly GoField[];
}

/** A Go `map[string]T` (`nil` when `entries` is null). */
export interface GoMap {
  readonly goKind: 'map';
  readonly entries: ReadonlyMap<string, GoValue> | null;
}

/** A Go slice (`nil` when `items` is null). */
export interface GoSlice {
  readonly goKind: 'slice';
  readonly items: readonly GoValue[] | null;
}

/** A Go float64. */
export interface GoFloat {
  readonly goKind: 'float';
  readonly value: number;
}

/** A `json.RawMessage`: trusted, already-encoded JSON text. */
export interface GoRaw {
  readonly goKind: 'raw';
  readonly json: string;
}

/** Encoder options. */
export interface GoJsonOptions {
  /**
   * Escape `\b` and `\f` as the short forms, as Go ≥ 1.22 does; Go ≤ 1.21 (the upstream `go.mod` level, and the
   * rule written in spec H.6) writes `\u0008` and `\u000c`. Default false.
   */
  readonly shortBackspaceFormFeed?: boolean;
  /** `SetEscapeHTML(false)`: leave `<`, `>`, `&` raw. Default false (`json.Marshal` escapes them). */
  readonly noHtmlEscape?: boolean;
}

/** A value the encoder cannot represent (Go's `UnsupportedValueError` and friends). */
export class GoJsonError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(`${message} at ${path || '(top)'}`);
    this.name = 'GoJsonError';
  }
}

/** Builds a struct from `[name, value]` pairs or {@link GoField}s, in declaration order. */
export function goStruct(fields: readonly (GoField | readonly [string, GoValue])[]): GoStruct {
  return {
    goKind: 'struct',
    fields: fields.map((f) => (Array.isArray(f) ? { name: f[0] as string, value: f[1] as GoValue } : (f as GoField))),
  };
}

/** Builds a map; `null` is a nil map (`null`), an empty object or Map an empty one (`{}`). */
export function goMap(entries: ReadonlyMap<string, GoValue> | Readonly<Record<string, GoValue>> | null): GoMap {
  if (entries === null) return { goKind: 'map', entries: null };
  return { goKind: 'map', entries: entries instanceof Map ? entries : new Map(Object.entries(entries)) };
}

/** Builds a slice; `null` is a nil slice (`null`), `[]` an empty one. */
export function goSlice(items: readonly GoValue[] | null): GoSlice {
  return { goKind: 'slice', items };
}

/** A float64 value. */
export function goFloat(value: number): GoFloat {
  return { goKind: 'float', value };
}

/** Already-encoded JSON inserted verbatim (the caller guarantees it is what Go would emit). */
export function goRaw(json: string): GoRaw {
  return { goKind: 'raw', json };
}

/** Go `omitempty` of an already-encoded slice: `''`, `null` or `[]` (whitespace aside) is left out. */
export function isEmptyJsonSlice(json: string): boolean {
  return /^\s*(null|\[\s*\])?\s*$/.test(json);
}

/** `json.Marshal(v)` as a JS string (its UTF-8 encoding is Go's byte output). */
export function marshalGo(value: GoValue, options: GoJsonOptions = {}): string {
  const out: string[] = [];
  encode(value, out, options, []);
  return out.join('');
}

/** `json.Marshal(v)` as UTF-8 bytes. */
export function marshalGoBytes(value: GoValue, options: GoJsonOptions = {}): Buffer {
  return Buffer.from(marshalGo(value, options), 'utf8');
}

/** Lower-case hex SHA-256 of Go's serialisation of `value` (spec H.3 `CheckCode`). */
export function goSha256Hex(value: GoValue, options: GoJsonOptions = {}): string {
  return sha256HexOfText(marshalGo(value, options));
}

/** Lower-case hex SHA-256 of the UTF-8 encoding of `text` (one-shot `crypto.hash`: no Hash object, no Buffer). */
export function sha256HexOfText(text: string): string {
  return hash('sha256', text, 'hex');
}

/**
 * Go's string order (`sort.Strings`, map keys in `encoding/json`): the bytes of the UTF-8 encoding. For code units
 * below U+D800 the UTF-16 order is the UTF-8 byte order; from the first difference at or above it (surrogates,
 * U+E000 up, whose UTF-16 order differs: U+FFFF sorts before a supplementary character in UTF-8 bytes but after it
 * in UTF-16 units) the two strings are encoded and compared as bytes.
 */
export function compareGoStrings(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 || y >= 0xd800) return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
    return x < y ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** A code unit from which UTF-16 order and UTF-8 byte order can disagree (see {@link compareGoStrings}). */
const HIGH_UNIT = /[\ud800-\uffff]/;

/**
 * Sorts `keys` in place in Go's string order: the native UTF-16 sort when no key holds a code unit at or above
 * U+D800 (the two orders are then the same), else {@link compareGoStrings}.
 */
export function sortGoStrings(keys: string[]): string[] {
  for (const k of keys) if (HIGH_UNIT.test(k)) return keys.sort(compareGoStrings);
  return keys.sort();
}

/**
 * `json.Marshal` of the device-info `DeviceInfo` struct (spec H.3 / H.6:
 * `{"DeviceList":<map[string]string>,"UpdateTime":<int64>}`), written directly: the same bytes as
 * {@link marshalGo} of `goStruct([['DeviceList', goMap(deviceList)], ['UpdateTime', updateTime]])`, without the value
 * tree (issue [O]: the CheckCode check of 10,000 device-info ConfigMaps at start). `null` is a nil map (`null`).
 * Throws {@link GoJsonError} when `updateTime` is not a safe integer, as the generic encoder does.
 */
export function marshalDeviceInfo(deviceList: Readonly<Record<string, string>> | null, updateTime: number): string {
  if (!Number.isSafeInteger(updateTime)) {
    throw new GoJsonError(`${updateTime} is not a safe integer (use goFloat or a bigint)`, '.UpdateTime');
  }
  let out = '{"DeviceList":';
  if (deviceList === null) {
    out += 'null';
  } else {
    const keys = sortGoStrings(Object.keys(deviceList));
    out += '{';
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      if (i > 0) out += ',';
      out += goQuote(k) + ':' + goQuote(deviceList[k]!);
    }
    out += '}';
  }
  return out + ',"UpdateTime":' + (Object.is(updateTime, -0) ? '0' : String(updateTime)) + '}';
}

/**
 * Where the encoder is in the value: member names and slice indexes, turned into text (`.a[2].b`) only for an error
 * (a path string per value was most of the encoder's allocation: issue [P] item 5).
 */
type GoPath = (string | number)[];

function pathText(path: GoPath): string {
  let s = '';
  for (const p of path) s += typeof p === 'number' ? `[${p}]` : `.${p}`;
  return s;
}

function encode(v: GoValue, out: string[], o: GoJsonOptions, path: GoPath): void {
  if (v === null) {
    out.push('null');
    return;
  }
  switch (typeof v) {
    case 'boolean':
      out.push(v ? 'true' : 'false');
      return;
    case 'string':
      out.push(goQuote(v, o));
      return;
    case 'bigint':
      out.push(v.toString(10));
      return;
    case 'number':
      if (!Number.isSafeInteger(v)) {
        throw new GoJsonError(`${v} is not a safe integer (use goFloat or a bigint)`, pathText(path));
      }
      out.push(Object.is(v, -0) ? '0' : String(v));
      return;
    default:
      break;
  }
  switch (v.goKind) {
    case 'float':
      out.push(formatFloat(v.value, path));
      return;
    case 'raw':
      out.push(v.json);
      return;
    case 'slice': {
      const items = v.items;
      if (items === null) {
        out.push('null');
        return;
      }
      out.push('[');
      for (let i = 0; i < items.length; i++) {
        if (i > 0) out.push(',');
        path.push(i);
        encode(items[i]!, out, o, path);
        path.pop();
      }
      out.push(']');
      return;
    }
    case 'map': {
      const entries = v.entries;
      if (entries === null) {
        out.push('null');
        return;
      }
      const keys = sortGoStrings(Array.from(entries.keys()));
      out.push('{');
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        if (i > 0) out.push(',');
        out.push(goQuote(k, o), ':');
        path.push(k);
        encode(entries.get(k)!, out, o, path);
        path.pop();
      }
      out.push('}');
      return;
    }
    case 'struct': {
      out.push('{');
      let first = true;
      for (const f of v.fields) {
        if (f.omitEmpty === true && isEmptyValue(f.value)) continue;
        if (!first) out.push(',');
        first = false;
        out.push(goQuote(f.name, o), ':');
        path.push(f.name);
        encode(f.value, out, o, path);
        path.pop();
      }
      out.push('}');
      return;
    }
  }
}

/** Go's `isEmptyValue` for `omitempty`: false, 0, "", nil, and zero-length maps and slices (never a struct). */
function isEmptyValue(v: GoValue): boolean {
  if (v === null || v === false || v === '' || v === 0 || v === 0n) return true;
  if (typeof v !== 'object') return false;
  switch (v.goKind) {
    case 'slice':
      return v.items === null || v.items.length === 0;
    case 'map':
      return v.entries === null || v.entries.size === 0;
    case 'float':
      return v.value === 0;
    default:
      return false;
  }
}

/** Go's float64 encoding: shortest round-trip digits, `%e` form outside [1e-6, 1e21) with a 2-digit exponent cleaned. */
function formatFloat(f: number, path: GoPath): string {
  if (!Number.isFinite(f)) throw new GoJsonError(`unsupported value: ${f}`, pathText(path));
  if (Object.is(f, -0)) return '-0';
  // JS Number#toString uses the same shortest digits and the same [1e-6, 1e21) cut-over; its exponent form has
  // no leading zero ("1e-7"), which is Go's output after it removes the zero of "e-07".
  return String(f);
}

const HEX = '0123456789abcdef';

/**
 * Characters where Go's string encoding differs from `JSON.stringify`'s (HTML escapes, U+2028/9, `\b`, `\f`,
 * surrogates); every other character, control characters, `"` and `\` included, both encode alike.
 */
const NOT_AS_JSON = /[<>&\u2028\u2029\b\f\ud800-\udfff]/;

/**
 * Go's string encoding (`encodeState.string` with HTML escaping): `"` and `\` backslash-escaped; `\n`, `\r`, `\t`
 * short forms; other bytes below 0x20 as `\u00XX`; `<`, `>`, `&` as `\u003c`… ; U+2028 and U+2029 as escapes;
 * everything else raw. A lone UTF-16 surrogate cannot be sent as UTF-8 at all: it becomes U+FFFD, the value a Go
 * reader decodes from it, so that Go's re-serialisation of what we wrote equals what we wrote.
 */
export function goQuote(s: string, o: GoJsonOptions = {}): string {
  // almost every string takes this native path (issue [O]: the character loop below was a sixth of the fault
  // center's first cycle at 10,000 nodes); the options only change characters that NOT_AS_JSON sends to the loop
  if (!NOT_AS_JSON.test(s)) return JSON.stringify(s);
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let rep: string | undefined;
    if (c < 0x20) {
      if (c === 0x0a) rep = '\\n';
      else if (c === 0x0d) rep = '\\r';
      else if (c === 0x09) rep = '\\t';
      else if (c === 0x08 && o.shortBackspaceFormFeed === true) rep = '\\b';
      else if (c === 0x0c && o.shortBackspaceFormFeed === true) rep = '\\f';
      else rep = '\\u00' + HEX[c >> 4]! + HEX[c & 0xf]!;
    } else if (c === 0x22) rep = '\\"';
    else if (c === 0x5c) rep = '\\\\';
    else if ((c === 0x3c || c === 0x3e || c === 0x26) && o.noHtmlEscape !== true) {
      rep = '\\u00' + HEX[c >> 4]! + HEX[c & 0xf]!;
    } else if (c === 0x2028) rep = '\\u2028';
    else if (c === 0x2029) rep = '\\u2029';
    else if (c >= 0xd800 && c <= 0xdfff) {
      const next = s.charCodeAt(i + 1);
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        i++; // a valid pair: emitted raw with the rest of the run
        continue;
      }
      rep = '\ufffd';
    }
    if (rep !== undefined) {
      out += s.slice(start, i) + rep;
      start = i + 1;
    }
  }
  return out + s.slice(start) + '"';
}
