/**
 * Decoding of a ConfigMap's `PublicFault` value with Go `encoding/json` semantics (spec cluster-faults.md §2.1
 * "JSON decoding"): field names match case-insensitively, unknown fields are ignored, `null` leaves a field at its
 * zero value, and a wrong JSON type anywhere — a number given as a string, a fraction or exponent for an integer, an
 * integer out of int64/int32 range — makes the whole message unparsable. Repeated member names are decoded in order
 * as Go does: the last scalar wins, a later array replaces an earlier one, a later `faultLocation` object adds its
 * entries to the earlier ones.
 *
 * The text is read once, straight into the message, within the limits of §2.5 (issue [K] item 2: a 1 MiB value of
 * `{}` faults built 350,000 of them, ~70 MiB, before the 100-fault rule was checked): at most 100 faults are built
 * (beyond that none, and the message carries {@link PublicFaultMessage.faultsSent}), per fault at most 1,000 + 1
 * influences and 10 + 1 `faultLocation` keys, per influence 32 + 1 device ids, as the gRPC decoder does
 * (`request-decode.ts`). What is not built is still checked (syntax and types). Unknown members are skipped
 * without building anything, nesting at most 64 deep. `JSON.parse` would lose number literals and build
 * everything, so this module has its own small reader.
 */
import type { PublicFault, PublicFaultInfluence, PublicFaultMessage } from './types.js';
import { MAX_DEVICE_IDS, MAX_FAULTS, MAX_INFLUENCES, MAX_LOCATION_ENTRIES } from './validator.js';

/** The value could not be decoded; `path` is the JSON path of the problem. */
export class MessageDecodeError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(`${path}: ${message}`);
    this.name = 'MessageDecodeError';
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
// eslint-disable-next-line no-control-regex -- RFC 8259: raw control characters are not allowed in strings
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const INTEGER = /^-?\d+$/;
const MAX_DEPTH = 64;
/** longest number literal or member name quoted in an error */
const QUOTE = 32;

type Kind = 'null' | 'bool' | 'number' | 'string' | 'array' | 'object';

const clip = (s: string): string => (s.length > QUOTE ? `${s.slice(0, QUOTE)}…` : s);

/** A strict RFC 8259 reader that decodes into the message schema as it goes. */
class Decoder {
  readonly #text: string;
  #i = 0;
  /** path of the value being read (schema names for known members), as segments; a string only for an error */
  readonly #path: (string | number)[] = ['$'];

  constructor(text: string) {
    this.#text = text;
  }

  // ---- errors ----

  #pathText(): string {
    let s = '';
    for (const p of this.#path) s += typeof p === 'number' ? `[${p}]` : s === '' ? p : `.${clip(p)}`;
    return s;
  }

  #syntax(what: string): never {
    throw new MessageDecodeError(`invalid JSON: ${what} at offset ${this.#i}`, '$');
  }

  #type(message: string): never {
    throw new MessageDecodeError(message, this.#pathText());
  }

  // ---- lexical ----

  #ws(): void {
    const t = this.#text;
    let i = this.#i;
    for (;;) {
      const c = t.charCodeAt(i);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      i++;
    }
    this.#i = i;
  }

  /** The kind of the next value (after whitespace); a syntax error when there is none. */
  #peek(): Kind {
    this.#ws();
    const c = this.#text[this.#i];
    switch (c) {
      case '{':
        return 'object';
      case '[':
        return 'array';
      case '"':
        return 'string';
      case 't':
      case 'f':
        return 'bool';
      case 'n':
        return 'null';
      default:
        if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return 'number';
        return this.#syntax(c === undefined ? 'unexpected end' : 'unexpected character');
    }
  }

  #word(word: string): void {
    if (!this.#text.startsWith(word, this.#i)) this.#syntax('unexpected character');
    this.#i += word.length;
  }

  /** A string literal; its value only when `build`. */
  #string(build: boolean): string {
    // a string without escapes (nearly all) ends at the first quote: read without the regex and its match array;
    // a backslash or a control character sends it to the full grammar (which refuses the latter)
    const t = this.#text;
    const start = this.#i;
    for (let j = start + 1; j < t.length; j++) {
      const c = t.charCodeAt(j);
      if (c === 0x22) {
        this.#i = j + 1;
        return build ? t.slice(start + 1, j) : '';
      }
      if (c === 0x5c || c < 0x20) break;
    }
    STRING.lastIndex = start;
    const m = STRING.exec(this.#text);
    if (m === null) return this.#syntax('bad string');
    this.#i += m[0].length;
    if (!build) return '';
    return m[0].includes('\\') ? (JSON.parse(m[0]) as string) : m[0].slice(1, -1);
  }

  #number(): string {
    NUMBER.lastIndex = this.#i;
    const m = NUMBER.exec(this.#text);
    if (m === null) return this.#syntax('unexpected character');
    this.#i += m[0].length;
    return m[0];
  }

  /**
   * Opens an object or array: true after its `{` or `[`; false for `null` (consumed); a type error for anything
   * else. Then {@link #member} or {@link #element} walk it.
   */
  #open(kind: 'object' | 'array', depth: number): boolean {
    const k = this.#peek();
    if (k === 'null') {
      this.#word('null');
      return false;
    }
    if (k !== kind) this.#type(`cannot decode ${k} into an ${kind}`);
    if (depth > MAX_DEPTH) this.#syntax('nesting too deep');
    this.#i++;
    return true;
  }

  /** The next member name of the open object (its value follows), or undefined after the closing `}`. */
  #member(first: boolean): string | undefined {
    this.#ws();
    const c = this.#text[this.#i];
    if (c === '}') {
      this.#i++;
      return undefined;
    }
    if (!first) {
      if (c !== ',') this.#syntax('expected "," or "}"');
      this.#i++;
      this.#ws();
    }
    if (this.#text[this.#i] !== '"') this.#syntax('expected a member name');
    const name = this.#string(true);
    this.#ws();
    if (this.#text[this.#i++] !== ':') this.#syntax('expected ":"');
    return name;
  }

  /** Whether the open array has a next element (which follows), false after the closing `]`. */
  #element(first: boolean): boolean {
    this.#ws();
    const c = this.#text[this.#i];
    if (c === ']') {
      this.#i++;
      return false;
    }
    if (!first) {
      if (c !== ',') this.#syntax('expected "," or "]"');
      this.#i++;
    }
    return true;
  }

  /** Any value, checked and dropped (unknown members). */
  #skip(depth: number): void {
    switch (this.#peek()) {
      case 'object':
        this.#open('object', depth);
        for (let m = this.#member(true); m !== undefined; m = this.#member(false)) this.#skip(depth + 1);
        return;
      case 'array':
        this.#open('array', depth);
        for (let more = this.#element(true); more; more = this.#element(false)) this.#skip(depth + 1);
        return;
      case 'string':
        this.#string(false);
        return;
      case 'number':
        this.#number();
        return;
      case 'bool':
        this.#word(this.#text[this.#i] === 't' ? 'true' : 'false');
        return;
      case 'null':
        this.#word('null');
    }
  }

  // ---- typed values (Go) ----

  /** A string field: its value, or undefined for `null` (Go leaves the field as it was). */
  #str(build: boolean): string | undefined {
    const k = this.#peek();
    if (k === 'null') {
      this.#word('null');
      return undefined;
    }
    if (k !== 'string') this.#type(`cannot decode ${k} into a string`);
    return this.#string(build);
  }

  /** An int32/int64 field: its value, or undefined for `null`. */
  #int(bits: 32 | 64): number | undefined {
    const k = this.#peek();
    if (k === 'null') {
      this.#word('null');
      return undefined;
    }
    if (k !== 'number') this.#type(`cannot decode ${k} into int${bits}`);
    const raw = this.#number();
    if (!INTEGER.test(raw)) this.#type(`${clip(raw)} is not an integer`);
    const digits = raw.length - (raw[0] === '-' ? 1 : 0);
    // up to 15 digits a double is exact and within int64; int32 needs a range check from 10 digits
    if (digits <= 9 || (bits === 64 && digits <= 15)) return Number(raw);
    const n = BigInt(raw);
    const limit = 1n << BigInt(bits - 1);
    if (n < -limit || n >= limit) this.#type(`${clip(raw)} overflows int${bits}`);
    // int64 beyond 2^53 loses precision here; such values fail the 13-digit rules of §2.5 anyway
    return Number(n);
  }

  // ---- the schema ----

  /** Go: the struct field a member name selects (case-insensitive), or undefined for an unknown member. */
  static #field<T extends string>(fields: readonly T[], name: string): T | undefined {
    for (const f of fields) if (f === name) return f;
    const lower = name.toLowerCase();
    for (const f of fields) if (f.toLowerCase() === lower) return f;
    return undefined;
  }

  static readonly #MESSAGE = ['id', 'timestamp', 'version', 'resource', 'faults'] as const;
  static readonly #FAULT = [
    'faultId',
    'faultType',
    'faultCode',
    'faultTime',
    'assertion',
    'faultLocation',
    'influence',
    'description',
  ] as const;
  static readonly #INFLUENCE = ['nodeName', 'nodeSN', 'deviceIds'] as const;

  message(): PublicFaultMessage {
    const msg: PublicFaultMessage = { id: '', timestamp: 0, version: '', resource: '', faults: [] };
    if (this.#open('object', 1)) {
      for (let name = this.#member(true); name !== undefined; name = this.#member(false)) {
        const f = Decoder.#field(Decoder.#MESSAGE, name);
        this.#path.push(f ?? name);
        if (f === undefined) this.#skip(2);
        else if (f === 'timestamp') msg.timestamp = this.#int(64) ?? msg.timestamp;
        else if (f === 'faults') this.#faults(msg);
        else msg[f] = this.#str(true) ?? msg[f];
        this.#path.pop();
      }
    }
    this.#ws();
    if (this.#i !== this.#text.length) this.#syntax('trailing data');
    return msg;
  }

  /** `faults`: at most MAX_FAULTS built; beyond, none kept and the count recorded. */
  #faults(msg: PublicFaultMessage): void {
    const faults: PublicFault[] = [];
    let count = 0;
    if (this.#open('array', 2)) {
      for (let more = this.#element(true); more; more = this.#element(false)) {
        this.#path.push(count);
        count++;
        if (count === MAX_FAULTS + 1) faults.length = 0;
        const f = this.#fault(count <= MAX_FAULTS);
        if (f !== undefined) faults.push(f);
        this.#path.pop();
      }
    }
    msg.faults = faults;
    if (count > MAX_FAULTS) msg.faultsSent = count;
    else delete msg.faultsSent;
  }

  /** One fault (or `null`: a zero fault); only checked when not `build`. */
  #fault(build: boolean): PublicFault | undefined {
    const f: PublicFault | undefined = build
      ? {
          faultId: '',
          faultType: '',
          faultCode: '',
          faultTime: 0,
          assertion: '',
          faultLocation: null,
          influence: [],
          description: '',
        }
      : undefined;
    if (!this.#open('object', 3)) return f;
    for (let name = this.#member(true); name !== undefined; name = this.#member(false)) {
      const k = Decoder.#field(Decoder.#FAULT, name);
      this.#path.push(k ?? name);
      if (k === undefined) {
        this.#skip(4);
      } else if (k === 'faultTime') {
        const t = this.#int(64);
        if (f && t !== undefined) f.faultTime = t;
      } else if (k === 'faultLocation') {
        const loc = this.#location(f?.faultLocation ?? null, build);
        if (f) f.faultLocation = loc;
      } else if (k === 'influence') {
        const list = this.#influences(build);
        if (f) f.influence = list;
      } else {
        const v = this.#str(build);
        if (f && v !== undefined) f[k] = v;
      }
      this.#path.pop();
    }
    return f;
  }

  /**
   * Go map semantics: `null` makes it nil, an object adds its entries to the existing map (a `null` value is "");
   * at most MAX_LOCATION_ENTRIES + 1 keys are kept, enough for the rule to fail.
   */
  #location(current: Record<string, string> | null, build: boolean): Record<string, string> | null {
    if (!this.#open('object', 4)) return null;
    const loc = build ? (current ?? (Object.create(null) as Record<string, string>)) : null;
    let keys = loc === null ? 0 : Object.keys(loc).length;
    for (let key = this.#member(true); key !== undefined; key = this.#member(false)) {
      this.#path.push(key);
      const value = this.#str(build) ?? '';
      if (loc !== null && (keys <= MAX_LOCATION_ENTRIES || Object.hasOwn(loc, key))) {
        if (!Object.hasOwn(loc, key)) keys++;
        loc[key] = value;
      }
      this.#path.pop();
    }
    return loc;
  }

  /** `influence`: at most MAX_INFLUENCES + 1 built, the rest checked. */
  #influences(build: boolean): PublicFaultInfluence[] {
    const out: PublicFaultInfluence[] = [];
    if (!this.#open('array', 4)) return out;
    let count = 0;
    for (let more = this.#element(true); more; more = this.#element(false)) {
      this.#path.push(count);
      count++;
      const inf = this.#influence(build && count <= MAX_INFLUENCES + 1);
      if (inf !== undefined) out.push(inf);
      this.#path.pop();
    }
    return out;
  }

  #influence(build: boolean): PublicFaultInfluence | undefined {
    const inf: PublicFaultInfluence | undefined = build ? { nodeName: '', nodeSN: '', deviceIds: [] } : undefined;
    if (!this.#open('object', 5)) return inf;
    for (let name = this.#member(true); name !== undefined; name = this.#member(false)) {
      const k = Decoder.#field(Decoder.#INFLUENCE, name);
      this.#path.push(k ?? name);
      if (k === undefined) {
        this.#skip(6);
      } else if (k === 'deviceIds') {
        const ids = this.#deviceIds(build);
        if (inf) inf.deviceIds = ids;
      } else {
        const v = this.#str(build);
        if (inf && v !== undefined) inf[k] = v;
      }
      this.#path.pop();
    }
    return inf;
  }

  /** `deviceIds`: every element checked, at most MAX_DEVICE_IDS + 1 kept. */
  #deviceIds(build: boolean): number[] {
    const ids: number[] = [];
    if (!this.#open('array', 6)) return ids;
    for (let i = 0, more = this.#element(true); more; i++, more = this.#element(false)) {
      this.#path.push(i);
      const id = this.#int(32) ?? 0;
      if (build && ids.length <= MAX_DEVICE_IDS) ids.push(id);
      this.#path.pop();
    }
    return ids;
  }
}

/** Decodes one `PublicFault` value; throws {@link MessageDecodeError}. */
export function decodePublicFaultMessage(text: string): PublicFaultMessage {
  return new Decoder(text).message();
}
