/**
 * A strict JSON reader that keeps what `JSON.parse` loses and Go's `encoding/json` looks at: the literal text of
 * numbers (`2` and `2.0` differ for an int64 field), duplicate keys in order, and where each value sits.
 *
 * Upstream decodes the fault files with Go's `encoding/json` into structs; {@link GoDecoder} reproduces that
 * decoding (case-insensitive field names, `null` leaves the zero value, a wrong type anywhere fails the document)
 * while recording every problem with its JSON path instead of only the first one.
 */

/** A parsed JSON value. `at` is the offset of the value's first character in the source text. */
export type JsonNode =
  | { t: 'null'; at: number }
  | { t: 'bool'; v: boolean; at: number }
  | { t: 'num'; raw: string; at: number }
  | { t: 'str'; v: string; at: number }
  | { t: 'arr'; items: JsonNode[]; at: number }
  | { t: 'obj'; entries: [string, JsonNode][]; at: number };

/** A syntax error with its position. */
export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(`${message} at line ${line}, column ${column}`);
    this.name = 'JsonSyntaxError';
  }
}

/** Deepest nesting accepted; deeper documents are refused rather than risking the stack. */
export const MAX_JSON_DEPTH = 512;

/** Parses `text` (RFC 8259, as strict as Go: no BOM, no trailing commas, no comments). Throws {@link JsonSyntaxError}. */
export function parseJsonText(text: string): JsonNode {
  const p = new Parser(text);
  p.ws();
  const v = p.value(0);
  p.ws();
  if (p.i < text.length) p.fail(`unexpected ${p.show()} after the top-level value`);
  return v;
}

class Parser {
  i = 0;
  constructor(readonly s: string) {}

  fail(msg: string, at = this.i): never {
    let line = 1;
    let col = 1;
    for (let k = 0; k < at && k < this.s.length; k++) {
      if (this.s.charCodeAt(k) === 10) {
        line++;
        col = 1;
      } else col++;
    }
    throw new JsonSyntaxError(msg, line, col);
  }

  show(): string {
    return this.i >= this.s.length ? 'end of input' : `character ${JSON.stringify(this.s[this.i])}`;
  }

  ws(): void {
    for (;;) {
      const c = this.s.charCodeAt(this.i);
      if (c === 32 || c === 9 || c === 10 || c === 13) this.i++;
      else return;
    }
  }

  value(depth: number): JsonNode {
    if (depth > MAX_JSON_DEPTH) this.fail(`nesting deeper than ${MAX_JSON_DEPTH}`);
    const at = this.i;
    const c = this.s[this.i];
    switch (c) {
      case '{':
        return this.object(depth, at);
      case '[':
        return this.array(depth, at);
      case '"':
        return { t: 'str', v: this.string(), at };
      case 't':
        return this.literal('true', { t: 'bool', v: true, at });
      case 'f':
        return this.literal('false', { t: 'bool', v: false, at });
      case 'n':
        return this.literal('null', { t: 'null', at });
      default:
        if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number(at);
        return this.fail(`unexpected ${this.show()} looking for a value`);
    }
  }

  literal(word: string, node: JsonNode): JsonNode {
    if (this.s.startsWith(word, this.i)) {
      this.i += word.length;
      return node;
    }
    return this.fail(`invalid literal (expected ${word})`);
  }

  number(at: number): JsonNode {
    const m = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    m.lastIndex = this.i;
    const r = m.exec(this.s);
    if (!r || r[0] === '-') this.fail('invalid number');
    this.i += r[0].length;
    const next = this.s[this.i];
    if (next !== undefined && /[0-9.eE+-]/.test(next)) this.fail('invalid number');
    return { t: 'num', raw: r[0], at };
  }

  string(): string {
    this.i++; // opening quote
    let out = '';
    let start = this.i;
    for (;;) {
      if (this.i >= this.s.length) this.fail('unterminated string');
      const c = this.s.charCodeAt(this.i);
      if (c === 34) {
        out += this.s.slice(start, this.i);
        this.i++;
        return out;
      }
      if (c < 0x20) this.fail('control character in string');
      if (c === 92) {
        out += this.s.slice(start, this.i);
        const e = this.s[this.i + 1];
        const simple: Record<string, string> = {
          '"': '"',
          '\\': '\\',
          '/': '/',
          b: '\b',
          f: '\f',
          n: '\n',
          r: '\r',
          t: '\t',
        };
        if (e !== undefined && e in simple) {
          out += simple[e];
          this.i += 2;
        } else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(this.s.slice(this.i + 2, this.i + 6))) {
          out += String.fromCharCode(parseInt(this.s.slice(this.i + 2, this.i + 6), 16));
          this.i += 6;
        } else this.fail('invalid escape in string');
        start = this.i;
        continue;
      }
      this.i++;
    }
  }

  array(depth: number, at: number): JsonNode {
    this.i++;
    const items: JsonNode[] = [];
    this.ws();
    if (this.s[this.i] === ']') {
      this.i++;
      return { t: 'arr', items, at };
    }
    for (;;) {
      this.ws();
      items.push(this.value(depth + 1));
      this.ws();
      const c = this.s[this.i];
      if (c === ',') this.i++;
      else if (c === ']') {
        this.i++;
        return { t: 'arr', items, at };
      } else this.fail(`unexpected ${this.show()} in array (expected , or ])`);
    }
  }

  object(depth: number, at: number): JsonNode {
    this.i++;
    const entries: [string, JsonNode][] = [];
    this.ws();
    if (this.s[this.i] === '}') {
      this.i++;
      return { t: 'obj', entries, at };
    }
    for (;;) {
      this.ws();
      if (this.s[this.i] !== '"') this.fail(`unexpected ${this.show()} looking for an object key`);
      const key = this.string();
      this.ws();
      if (this.s[this.i] !== ':') this.fail(`unexpected ${this.show()} after an object key (expected :)`);
      this.i++;
      this.ws();
      entries.push([key, this.value(depth + 1)]);
      this.ws();
      const c = this.s[this.i];
      if (c === ',') this.i++;
      else if (c === '}') {
        this.i++;
        return { t: 'obj', entries, at };
      } else this.fail(`unexpected ${this.show()} in object (expected , or })`);
    }
  }
}

/** Go's name for the JSON kind of a node, as in its decode errors. */
export function kindName(n: JsonNode): string {
  return { null: 'null', bool: 'bool', num: 'number', str: 'string', arr: 'array', obj: 'object' }[n.t];
}

/** A short rendering of a node for messages (value of a problem). */
export function preview(n: JsonNode): string {
  switch (n.t) {
    case 'null':
      return 'null';
    case 'bool':
      return String(n.v);
    case 'num':
      return n.raw;
    case 'str':
      return JSON.stringify(n.v.length > 60 ? `${n.v.slice(0, 60)}…` : n.v);
    case 'arr':
      return `[…${n.items.length} items]`;
    case 'obj':
      return `{…${n.entries.length} keys}`;
  }
}

/** A wrong JSON type found while decoding (Go: `UnmarshalTypeError`). */
export interface TypeProblem {
  path: string;
  value: string;
  expected: string;
}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/**
 * Decodes JSON nodes into plain values the way Go's `encoding/json` fills a struct, collecting every wrong type
 * (Go stops at the first and fails the whole document; so do callers, but they can name all of them).
 */
export class GoDecoder {
  readonly typeProblems: TypeProblem[] = [];

  private bad(path: string, n: JsonNode, expected: string): undefined {
    this.typeProblems.push({ path, value: preview(n), expected });
    return undefined;
  }

  /**
   * Splits an object's members over the known field names: exact name first, else case-insensitively (Go rule);
   * a later duplicate replaces an earlier one. Returns the node per field and the keys that match no field.
   */
  fields(n: JsonNode, path: string, names: readonly string[]): ObjectFields | undefined {
    if (n.t === 'null') return new ObjectFields(new Map(), []);
    if (n.t !== 'obj') return this.bad(path, n, 'object');
    const byField = new Map<string, { key: string; node: JsonNode }[]>();
    const unknown: string[] = [];
    for (const [key, node] of n.entries) {
      const name = names.find((f) => f === key) ?? names.find((f) => f.toLowerCase() === key.toLowerCase());
      if (name === undefined) unknown.push(key);
      else {
        // appended in place: copying the list per duplicate would be quadratic in a hostile document
        const list = byField.get(name);
        if (list === undefined) byField.set(name, [{ key, node }]);
        else list.push({ key, node });
      }
    }
    return new ObjectFields(byField, unknown);
  }

  /** An int64 field: `undefined` for null/absent (zero value stays), a number, or a type problem. */
  int64(n: JsonNode, path: string): number | undefined {
    if (n.t === 'null') return undefined;
    if (n.t !== 'num' || !/^-?[0-9]+$/.test(n.raw)) return this.bad(path, n, 'int64');
    const big = BigInt(n.raw);
    if (big > INT64_MAX || big < INT64_MIN) return this.bad(path, n, 'int64');
    return Number(big);
  }

  /** A string field. */
  string(n: JsonNode, path: string): string | undefined {
    if (n.t === 'null') return undefined;
    if (n.t !== 'str') return this.bad(path, n, 'string');
    return n.v;
  }

  /** A `[]string` field; a `null` element decodes to "" as in Go. */
  stringArray(n: JsonNode, path: string): string[] | undefined {
    if (n.t === 'null') return undefined;
    if (n.t !== 'arr') return this.bad(path, n, 'array of strings');
    const out: string[] = [];
    n.items.forEach((item, i) => {
      if (item.t === 'null') out.push('');
      else if (item.t === 'str') out.push(item.v);
      else this.bad(`${path}[${i}]`, item, 'string');
    });
    return out;
  }

  /** An array of structs: the nodes of its elements (null elements decode to zero structs). */
  array(n: JsonNode, path: string): JsonNode[] | undefined {
    if (n.t === 'null') return undefined;
    if (n.t !== 'arr') return this.bad(path, n, 'array');
    return n.items;
  }
}

/** The members of a decoded object, by struct field. */
export class ObjectFields {
  constructor(
    private readonly byField: ReadonlyMap<string, readonly { key: string; node: JsonNode }[]>,
    /** Keys that match no field (Go ignores them; we report them). */
    readonly unknown: readonly string[],
  ) {}

  /** True when the document has a member for `name` (any spelling). */
  has(name: string): boolean {
    return this.byField.has(name);
  }

  /** The key as written in the document for `name` (the last one). */
  keyOf(name: string): string | undefined {
    return this.byField.get(name)?.at(-1)?.key;
  }

  /**
   * Decodes every member for `name` in order (so a wrong type in an overridden duplicate is still found) and
   * returns the last value that decoded to something: Go assigns each in turn, and `null` or a bad type leaves
   * the field as it was.
   */
  decode<T>(name: string, parent: string, fn: (node: JsonNode, path: string) => T | undefined): T | undefined {
    let out: T | undefined;
    for (const { key, node } of this.byField.get(name) ?? []) {
      const v = fn(node, childPath(parent, key));
      if (v !== undefined) out = v;
    }
    return out;
  }
}

/** `$.a.b` / `$.a[0]` path helper: keys that are not identifiers are quoted. */
export function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${parent}.${key}` : `${parent}[${JSON.stringify(key)}]`;
}
