/**
 * THE REFERENCE for the decoder tests: the ConfigMap decoder as it was before issue [K] item 2 (a full JSON tree,
 * then a mapping), kept verbatim apart from this comment and the import. It builds everything it is given, so it is
 * only fed small inputs; the new decoder must give the same message for any input without repeated member names
 * and within the §2.5 limits.
 *
 * Original comment: decoding of a ConfigMap's `PublicFault` value with Go `encoding/json` semantics (spec cluster-faults.md §2.1
 * "JSON decoding"): field names match case-insensitively, unknown fields are ignored, `null` is the zero value, and
 * a wrong JSON type anywhere — a number given as a string, a fraction or exponent for an integer, an integer out of
 * int64/int32 range — makes the whole message unparsable. `JSON.parse` loses number literals, so this module has
 * its own small parser that keeps them.
 */
import type { PublicFault, PublicFaultInfluence, PublicFaultMessage } from '../../../src/cluster/public-fault/types.js';

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

type JsonValue =
  | { t: 'null' }
  | { t: 'bool'; v: boolean }
  | { t: 'num'; raw: string }
  | { t: 'str'; v: string }
  | { t: 'arr'; v: JsonValue[] }
  | { t: 'obj'; v: [string, JsonValue][] };

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
// eslint-disable-next-line no-control-regex -- RFC 8259: raw control characters are not allowed in strings
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const MAX_DEPTH = 64;

/** A strict RFC 8259 parser keeping number literals as text. */
function parseJson(text: string): JsonValue {
  let i = 0;
  const ws = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const bad = (what: string): never => {
    throw new MessageDecodeError(`invalid JSON: ${what} at offset ${i}`, '$');
  };
  const value = (depth: number): JsonValue => {
    if (depth > MAX_DEPTH) bad('nesting too deep');
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const members: [string, JsonValue][] = [];
      ws();
      if (text[i] === '}') {
        i++;
        return { t: 'obj', v: members };
      }
      for (;;) {
        ws();
        if (text[i] !== '"') bad('expected a member name');
        const k = value(depth + 1) as { t: 'str'; v: string };
        ws();
        if (text[i++] !== ':') bad('expected ":"');
        members.push([k.v, value(depth + 1)]);
        ws();
        const sep = text[i++];
        if (sep === '}') return { t: 'obj', v: members };
        if (sep !== ',') bad('expected "," or "}"');
      }
    }
    if (c === '[') {
      i++;
      const items: JsonValue[] = [];
      ws();
      if (text[i] === ']') {
        i++;
        return { t: 'arr', v: items };
      }
      for (;;) {
        items.push(value(depth + 1));
        ws();
        const sep = text[i++];
        if (sep === ']') return { t: 'arr', v: items };
        if (sep !== ',') bad('expected "," or "]"');
      }
    }
    if (c === '"') {
      STRING.lastIndex = i;
      const m = STRING.exec(text);
      if (m === null) return bad('bad string');
      i += m[0].length;
      return { t: 'str', v: JSON.parse(m[0]) as string };
    }
    for (const [word, v] of [
      ['true', { t: 'bool', v: true }],
      ['false', { t: 'bool', v: false }],
      ['null', { t: 'null' }],
    ] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m === null) return bad('unexpected character');
    i += m[0].length;
    return { t: 'num', raw: m[0] };
  };
  const v = value(0);
  ws();
  if (i !== text.length) bad('trailing data');
  return v;
}

/** Go: the last member whose name equals `name` case-insensitively. */
function field(obj: [string, JsonValue][], name: string): JsonValue | undefined {
  const lower = name.toLowerCase();
  let found: JsonValue | undefined;
  for (const [k, v] of obj) if (k.toLowerCase() === lower) found = v;
  return found;
}

function str(v: JsonValue | undefined, path: string): string {
  if (v === undefined || v.t === 'null') return '';
  if (v.t !== 'str') throw new MessageDecodeError(`cannot decode ${v.t} into a string`, path);
  return v.v;
}

function int(v: JsonValue | undefined, path: string, bits: 32 | 64): number {
  if (v === undefined || v.t === 'null') return 0;
  if (v.t !== 'num') throw new MessageDecodeError(`cannot decode ${v.t} into int${bits}`, path);
  if (!/^-?\d+$/.test(v.raw)) throw new MessageDecodeError(`${v.raw} is not an integer`, path);
  const n = BigInt(v.raw);
  const limit = 1n << BigInt(bits - 1);
  if (n < -limit || n >= limit) throw new MessageDecodeError(`${v.raw} overflows int${bits}`, path);
  // int64 beyond 2^53 loses precision here; such values fail the 13-digit rules of §2.5 anyway
  return Number(n);
}

function arr(v: JsonValue | undefined, path: string): JsonValue[] {
  if (v === undefined || v.t === 'null') return [];
  if (v.t !== 'arr') throw new MessageDecodeError(`cannot decode ${v.t} into an array`, path);
  return v.v;
}

function obj(v: JsonValue, path: string): [string, JsonValue][] {
  if (v.t === 'null') return [];
  if (v.t !== 'obj') throw new MessageDecodeError(`cannot decode ${v.t} into an object`, path);
  return v.v;
}

function influence(v: JsonValue, path: string): PublicFaultInfluence {
  const o = obj(v, path);
  return {
    nodeName: str(field(o, 'nodeName'), `${path}.nodeName`),
    nodeSN: str(field(o, 'nodeSN'), `${path}.nodeSN`),
    deviceIds: arr(field(o, 'deviceIds'), `${path}.deviceIds`).map((d, i) => int(d, `${path}.deviceIds[${i}]`, 32)),
  };
}

function location(v: JsonValue | undefined, path: string): Record<string, string> | null {
  if (v === undefined || v.t === 'null') return null;
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, val] of obj(v, path)) out[k] = str(val, `${path}.${k}`);
  return out;
}

function fault(v: JsonValue, path: string): PublicFault {
  const o = obj(v, path);
  return {
    faultId: str(field(o, 'faultId'), `${path}.faultId`),
    faultType: str(field(o, 'faultType'), `${path}.faultType`),
    faultCode: str(field(o, 'faultCode'), `${path}.faultCode`),
    faultTime: int(field(o, 'faultTime'), `${path}.faultTime`, 64),
    assertion: str(field(o, 'assertion'), `${path}.assertion`),
    faultLocation: location(field(o, 'faultLocation'), `${path}.faultLocation`),
    influence: arr(field(o, 'influence'), `${path}.influence`).map((x, i) => influence(x, `${path}.influence[${i}]`)),
    description: str(field(o, 'description'), `${path}.description`),
  };
}

/** Decodes one `PublicFault` value; throws {@link MessageDecodeError}. */
export function decodePublicFaultMessage(text: string): PublicFaultMessage {
  const root = obj(parseJson(text), '$');
  return {
    id: str(field(root, 'id'), '$.id'),
    timestamp: int(field(root, 'timestamp'), '$.timestamp', 64),
    version: str(field(root, 'version'), '$.version'),
    resource: str(field(root, 'resource'), '$.resource'),
    faults: arr(field(root, 'faults'), '$.faults').map((f, i) => fault(f, `$.faults[${i}]`)),
  };
}
