/**
 * The published view `mindx-dl/cluster-info-device-<m>` (cluster-faults §0.3): per-type merge of each device's
 * faults, Go-exact JSON per node, and chunking into ConfigMaps of about 800 KiB whose indices, once used, stay in
 * use. Pure.
 */
import { goMap, goQuote as quote, goSlice, goStruct, marshalGo, sortGoStrings, type GoValue } from '../core/go-json.js';
import { DEVICE_INFO_NAME_PREFIX } from '../kube/device-info.js';
import {
  levelRank,
  mostSevere,
  type DeviceFault,
  type FaultObject,
  type NodeDeviceView,
  type TimeAndLevel,
} from './device-view.js';

export const CLUSTER_INFO_NAMESPACE = 'mindx-dl';
export const CLUSTER_INFO_PREFIX = 'cluster-info-device-';
export const CLUSTER_INFO_LABELS: Readonly<Record<string, string>> = Object.freeze({ 'mx-consumer-volcano': 'true' });
/** §0.3: each chunk about 800 KiB or less. */
export const CHUNK_LIMIT_BYTES = 800 * 1024;
/**
 * What the API server takes in one ConfigMap's values (1 MiB, `422 Too long` beyond). A chunk over
 * {@link CHUNK_LIMIT_BYTES} holds one node alone, and that node's published value can outgrow this: a device-info
 * ConfigMap may itself be 1 MiB, and its published form is longer (the node's name twice, and a time map entry for
 * every fault code).
 */
export const CONFIGMAP_VALUE_LIMIT_BYTES = 1024 * 1024;

/** §0.3 fault-list encoding: one object per (device, fault_type), devices and types sorted. */
export function mergeFaults(faults: ReadonlyMap<string, readonly DeviceFault[]>): FaultObject[] {
  const out: FaultObject[] = [];
  for (const dev of sortGoStrings([...faults.keys()])) {
    const byType = new Map<string, DeviceFault[]>();
    for (const f of faults.get(dev) ?? []) {
      const l = byType.get(f.object.fault_type) ?? [];
      l.push(f);
      byType.set(f.object.fault_type, l);
    }
    for (const type of sortGoStrings([...byType.keys()])) {
      const members = byType.get(type)!;
      const counted = members.filter((m) => m.level !== 'ManuallySeparateNPU');
      const codes: string[] = [];
      // no prototype: a code "__proto__" is a key like any other, as in Go's map
      const map = Object.create(null) as FaultObject['fault_time_and_level_map'];
      for (const m of counted) {
        // every member's code, repeats included: two public faults with one code give "A,A" (§2.9)
        codes.push(m.code);
        Object.assign(map, m.object.fault_time_and_level_map);
      }
      const level = mostSevere(members.map((m) => m.level));
      out.push({
        fault_type: type,
        npu_name: dev,
        large_model_fault_level: level,
        fault_level: level,
        fault_handling: level,
        fault_code: codes.join(','),
        fault_time_and_level_map: map,
      });
    }
  }
  return out;
}

function faultObjectGo(o: FaultObject): GoValue {
  const map = new Map<string, GoValue>();
  for (const [k, v] of Object.entries(o.fault_time_and_level_map)) {
    map.set(
      k,
      goStruct([
        ['fault_time', v.fault_time],
        ['fault_level', v.fault_level],
      ]),
    );
  }
  return goStruct([
    ['fault_type', o.fault_type],
    ['npu_name', o.npu_name],
    ['large_model_fault_level', o.large_model_fault_level],
    ['fault_level', o.fault_level],
    ['fault_handling', o.fault_handling],
    ['fault_code', o.fault_code],
    ['fault_time_and_level_map', goMap(map)],
  ]);
}

/**
 * The published `DeviceList` of a node: exactly the five keys ClusterD rebuilds for every node
 * (`AdvanceDevCmToOrigCm`), whatever the node's own ConfigMap had: `huawei.com/<T>` (available chips), `-Fault`
 * (the processed faults re-encoded, `[]` when there are none), `-NetworkUnhealthy`, `-Recovering` and
 * `-Unhealthy` (`""` when empty or absent). Readers such as Volcano expect all five on every node; other keys of
 * the device-info ConfigMap (virtual-device counts, `ManuallySeparateNPU`…) are not passed through.
 */
export function publishedDeviceList(view: NodeDeviceView): Record<string, string> {
  const base = `huawei.com/${view.deviceType}`;
  const list = view.deviceList;
  const merged = mergeFaults(view.faults);
  return {
    [base]: list[base] ?? '',
    [`${base}-Fault`]: marshalGo(goSlice(merged.map(faultObjectGo))),
    [`${base}-NetworkUnhealthy`]: list[`${base}-NetworkUnhealthy`] ?? '',
    [`${base}-Recovering`]: list[`${base}-Recovering`] ?? '',
    [`${base}-Unhealthy`]: list[`${base}-Unhealthy`] ?? '',
  };
}

/** The Go JSON of one node's published value (§0.3), through the generic Go encoder (the reference). */
export function publishedNodeJsonGeneric(view: NodeDeviceView): string {
  return marshalGo(
    goStruct([
      ['DeviceList', goMap(publishedDeviceList(view))],
      ['UpdateTime', view.updateTime],
      ['CmName', DEVICE_INFO_NAME_PREFIX + view.node],
      ['SuperPodID', view.superPodId],
      ['RackID', view.rackId],
      ['ServerIndex', view.serverIndex],
    ]),
  );
}

/** Thrown inside the direct encoder when a number is not a Go integer: the generic encoder then reports it. */
class NotAnInteger extends Error {}

/** A Go integer as `encoding/json` writes it. */
function goInt(v: number): string {
  if (!Number.isSafeInteger(v)) throw new NotAnInteger();
  return Object.is(v, -0) ? '0' : String(v);
}

/** Characters that either of the two quotings changes (Go's string encoding, then again for the outer string). */
// eslint-disable-next-line no-control-regex -- control characters are what Go's quoting escapes
const NOT_PLAIN = /["\\\u0000-\u001f<>&\u2028\u2029\ud800-\udfff]/;

/**
 * A string of the `-Fault` list as it stands in the published value: Go-quoted, and that quoted again as part of
 * the `DeviceList` value, without the outer quotes. Plain text (almost every name, level and code) is just `\"s\"`.
 */
function twiceQuoted(s: string): string {
  return NOT_PLAIN.test(s) ? quote(quote(s)).slice(1, -1) : `\\"${s}\\"`;
}

/**
 * The `-Fault` value: Go's `json.Marshal` of {@link mergeFaults}' objects (§0.3), merged and written in one pass
 * without building them (issue [O], start-up: the merged objects, their per-type maps and lists were a third of
 * the published value's cost at 10,000 nodes). Same rules: devices, then a device's fault types, in Go's order;
 * per (device, type) the most severe level of all members, the codes of the members other than the
 * `ManuallySeparateNPU` marker joined by `,` (repeats kept), their time maps merged (a later member's entry wins),
 * keys sorted.
 *
 * The list is written as it stands inside the published value, already quoted a second time (the content of the
 * `-Fault` string, without its quotes): Go-quoting the finished list scanned and copied every byte of the largest
 * part of each node's value once more (issue [P] item 6, a fifth of the first cycle with 50,000 public faults).
 * Quoting is character by character, so quoting each piece equals quoting the whole. The pieces are joined once at
 * the end: appending them one by one made a string of every intermediate (80 MB allocated for 20 MB of lists).
 */
const NO_TIMES: Readonly<Record<string, TimeAndLevel>> = Object.freeze({});

function faultListQuoted(faults: ReadonlyMap<string, readonly DeviceFault[]>): string {
  const out: string[] = ['['];
  let first = true;
  const devs = [...faults.keys()];
  if (devs.length > 1) sortGoStrings(devs);
  for (const dev of devs) {
    const list = faults.get(dev);
    if (list === undefined || list.length === 0) continue;
    const t0 = list[0]!.object.fault_type;
    let types: string[] | undefined;
    for (let i = 1; i < list.length; i++) {
      const t = list[i]!.object.fault_type;
      if (t === t0 || types?.includes(t) === true) continue;
      (types ??= [t0]).push(t);
    }
    if (types !== undefined) sortGoStrings(types);
    const npu = twiceQuoted(dev);
    for (const type of types ?? [t0]) {
      let level = 'NormalNPU';
      let codes = '';
      let map: Readonly<Record<string, TimeAndLevel>>;
      if (list.length === 1) {
        // one member (most devices): its own code and map, nothing merged (the same result, without the copies)
        const m = list[0]!;
        if (levelRank(m.level) < levelRank(level)) level = m.level;
        if (m.level === 'ManuallySeparateNPU') map = NO_TIMES;
        else {
          codes = m.code;
          map = m.object.fault_time_and_level_map;
        }
      } else {
        let rank = levelRank(level);
        let counted = 0;
        // no prototype: a code "__proto__" is a key like any other, as in Go's map
        const merged = Object.create(null) as Record<string, TimeAndLevel>;
        for (const m of list) {
          if (types !== undefined && m.object.fault_type !== type) continue;
          const r = levelRank(m.level);
          if (r < rank) {
            rank = r;
            level = m.level;
          }
          if (m.level === 'ManuallySeparateNPU') continue;
          codes += counted++ > 0 ? `,${m.code}` : m.code;
          Object.assign(merged, m.object.fault_time_and_level_map);
        }
        map = merged;
      }
      const lv = twiceQuoted(level);
      out.push(
        first ? '{\\"fault_type\\":' : ',{\\"fault_type\\":',
        twiceQuoted(type),
        ',\\"npu_name\\":',
        npu,
        ',\\"large_model_fault_level\\":',
        lv,
        ',\\"fault_level\\":',
        lv,
        ',\\"fault_handling\\":',
        lv,
        ',\\"fault_code\\":',
        twiceQuoted(codes),
        ',\\"fault_time_and_level_map\\":{',
      );
      first = false;
      const keys = Object.keys(map);
      if (keys.length > 1) sortGoStrings(keys);
      for (let k = 0; k < keys.length; k++) {
        const t = map[keys[k]!]!;
        if (k > 0) out.push(',');
        out.push(
          twiceQuoted(keys[k]!),
          ':{\\"fault_time\\":',
          goInt(t.fault_time),
          ',\\"fault_level\\":',
          twiceQuoted(t.fault_level),
          '}',
        );
      }
      out.push('}}');
    }
  }
  out.push(']');
  return out.join('');
}

/** The five `DeviceList` keys of one device type, as read from a view and as written (Go-quoted). */
interface ListKeys {
  readonly base: string;
  readonly network: string;
  readonly recovering: string;
  readonly unhealthy: string;
  readonly quoted: { base: string; fault: string; network: string; recovering: string; unhealthy: string };
}

/** {@link ListKeys} per device type (a cluster has a handful; a flood of odd ones only restarts the cache) */
const listKeysCache = new Map<string, ListKeys>();
const LIST_KEYS_CACHE_MAX = 64;

/**
 * `s` Go-quoted, stored one byte per character when it can be. The keys were quoted afresh for every node, and in
 * the optimised code one of them came back stored as UTF-16, which made every published value UTF-16 as well: twice
 * the memory, and a slower UTF-8 encoding for the write (issue [P] item 6, found with `%DebugPrint`). Decoding
 * Latin-1 bytes always gives a one-byte string.
 */
function quotedKey(s: string): string {
  const q = quote(s);
  // eslint-disable-next-line no-control-regex -- the whole Latin-1 range, control characters included
  return /^[\x00-\xff]*$/.test(q) ? Buffer.from(q, 'latin1').toString('latin1') : q;
}

function listKeysOf(deviceType: string): ListKeys {
  let k = listKeysCache.get(deviceType);
  if (k !== undefined) return k;
  const base = `huawei.com/${deviceType}`;
  k = {
    base,
    network: `${base}-NetworkUnhealthy`,
    recovering: `${base}-Recovering`,
    unhealthy: `${base}-Unhealthy`,
    quoted: {
      base: quotedKey(base),
      fault: quotedKey(`${base}-Fault`),
      network: quotedKey(`${base}-NetworkUnhealthy`),
      recovering: quotedKey(`${base}-Recovering`),
      unhealthy: quotedKey(`${base}-Unhealthy`),
    },
  };
  if (listKeysCache.size >= LIST_KEYS_CACHE_MAX) listKeysCache.clear();
  listKeysCache.set(deviceType, k);
  return k;
}

/**
 * The Go JSON of one node's published value (§0.3): the same bytes as {@link publishedNodeJsonGeneric}, written
 * directly for this one shape (issue [O]: the generic encoder's value tree, per-member paths and key buffers were
 * the larger part of the first cycle at 10,000 nodes). The five `DeviceList` keys share the prefix
 * `huawei.com/<T>`, so Go's sorted order is the base, then `-Fault`, `-NetworkUnhealthy`, `-Recovering`,
 * `-Unhealthy`; a number that is not an integer is left to the generic encoder (which refuses it).
 */
export function publishedNodeJson(view: NodeDeviceView): string {
  const k = listKeysOf(view.deviceType);
  const q = k.quoted;
  const list = view.deviceList;
  try {
    const fault = faultListQuoted(view.faults);
    return (
      `{"DeviceList":{${q.base}:${quote(list[k.base] ?? '')},${q.fault}:"${fault}",` +
      `${q.network}:${quote(list[k.network] ?? '')},${q.recovering}:${quote(list[k.recovering] ?? '')},` +
      `${q.unhealthy}:${quote(list[k.unhealthy] ?? '')}},` +
      `"UpdateTime":${goInt(view.updateTime)},"CmName":${quote(DEVICE_INFO_NAME_PREFIX + view.node)},` +
      `"SuperPodID":${goInt(view.superPodId)},"RackID":${goInt(view.rackId)},"ServerIndex":${goInt(view.serverIndex)}}`
    );
  } catch (e) {
    if (e instanceof NotAnInteger) return publishedNodeJsonGeneric(view);
    throw e;
  }
}

/** One ConfigMap's `data` value: `{"mindx-dl-deviceinfo-<node>": <value>, …}` with sorted keys. */
function chunkJson(entries: readonly [string, string][]): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
}

/**
 * Splits the views into chunk values (§0.3): nodes in name order, a new chunk when the next node would take the
 * chunk over {@link CHUNK_LIMIT_BYTES}; at least `minChunks` chunks (earlier indices stay in use, written `{}`).
 */
export function buildChunks(
  views: ReadonlyMap<string, NodeDeviceView>,
  minChunks = 0,
  limit = CHUNK_LIMIT_BYTES,
): string[] {
  const chunks: [string, string][][] = [];
  let current: [string, string][] = [];
  let size = 2;
  for (const node of sortGoStrings([...views.keys()])) {
    const key = DEVICE_INFO_NAME_PREFIX + node;
    const value = publishedNodeJson(views.get(node)!);
    const add = Buffer.byteLength(key) + 3 + Buffer.byteLength(value) + 1;
    if (current.length > 0 && size + add > limit) {
      chunks.push(current);
      current = [];
      size = 2;
    }
    current.push([key, value]);
    size += add;
  }
  if (current.length > 0) chunks.push(current);
  while (chunks.length < minChunks) chunks.push([]);
  return chunks.map(chunkJson);
}

/**
 * A node's value as UTF-8, with the bytes of its whole member. The bytes are written once, here: the count and the
 * protobuf body both take them (issue [P] item 6: counting with `Buffer.byteLength` and encoding again for the body
 * went over each value twice, and over the joined key and value a third time).
 */
function encodeMember(node: string, value: string): { raw: Buffer; bytes: number } {
  const raw = Buffer.from(value, 'utf8');
  return { raw, bytes: Buffer.byteLength(memberKey(node)) + raw.length };
}

/** The key part of a node's member of a chunk value: `"mindx-dl-deviceinfo-<node>":` (the value follows). */
function memberKey(node: string): string {
  return `${JSON.stringify(DEVICE_INFO_NAME_PREFIX + node)}:`;
}

interface Chunk {
  /** nodes in key order (Go writes a map's keys sorted; node names are ASCII, so string order is byte order) */
  nodes: string[];
  /** bytes of the value: braces, members and commas */
  bytes: number;
  dirty: boolean;
  /** the value as JSON string content (escaped, without quotes) in pieces, built when asked for, kept until it changes */
  escaped: Buffer[] | undefined;
  /** the value's UTF-8 bytes in pieces (for a protobuf body), built when asked for, kept until it changes */
  raw: Buffer[] | undefined;
}

/**
 * A member of a chunk: `"mindx-dl-deviceinfo-<node>":<value>`. The value is the core's published string itself (no
 * copy joined to the key: at 10,000 nodes that was 30 MB more to allocate and keep, issue [O] start-up).
 */
interface Member {
  value: string;
  /** UTF-8 bytes of the member (key part and value) */
  bytes: number;
  chunk: number;
  /** the member escaped as JSON string content, built when first needed */
  escaped: Buffer | undefined;
  /** the value's UTF-8 bytes */
  raw: Buffer;
  /** the key part's UTF-8 bytes, built when first needed */
  key: Buffer | undefined;
}

const BRACE_OPEN = Buffer.from('{');
const BRACE_CLOSE = Buffer.from('}');
const COMMA = Buffer.from(',');

/** `s` as the content of a JSON string literal (JSON.stringify without the quotes), UTF-8. */
export function escapeJsonContent(s: string): Buffer {
  const q = JSON.stringify(s);
  return Buffer.from(q.slice(1, -1));
}

/** Index of the first element of the sorted `list` not below `x`. */
function lowerBound(list: readonly string[], x: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The `cluster-info-device-<m>` chunks, kept up to date incrementally (issue [O] item 1): each node's member text
 * is stored once, a node stays in its chunk while the chunk stays under the limit (§0.3: about 800 KiB or less), and
 * only chunks whose members changed are marked for writing. New nodes go, in name order, to the lowest chunk with
 * room, so a first fill packs nodes in name order as {@link buildChunks} does; a node that outgrows its chunk
 * moves to the lowest other chunk with room (or a new one). Readers merge the chunks into one map (ClusterD itself
 * fills them in Go map order), so which chunk holds a node does not matter to them. Chunk indices, once used,
 * stay in use (written `{}` when empty, §0.3). Pure.
 */
export class ClusterInfoChunks {
  readonly #limit: number;
  readonly #members = new Map<string, Member>();
  readonly #chunks: Chunk[] = [];
  /** the chunk a sequential fill is adding to ({@link apply} with `sequential`) */
  #fill = 0;

  constructor(limit = CHUNK_LIMIT_BYTES) {
    this.#limit = limit;
  }

  /** Keeps at least `n` chunks (indices found in use at start). */
  ensureChunks(n: number): void {
    while (this.#chunks.length < n)
      this.#chunks.push({ nodes: [], bytes: 2, dirty: true, escaped: undefined, raw: undefined });
  }

  /** Chunks a sequential fill has gone past: no node of a later slice will be added to them. */
  get sealed(): number {
    return this.#fill;
  }

  /** Number of chunks. */
  get count(): number {
    return this.#chunks.length;
  }

  /** Nodes published. */
  get nodeCount(): number {
    return this.#members.size;
  }

  /** The chunk holding `node`, if any. */
  chunkOf(node: string): number | undefined {
    return this.#members.get(node)?.chunk;
  }

  #remove(node: string): void {
    const m = this.#members.get(node);
    if (m === undefined) return;
    const c = this.#chunks[m.chunk]!;
    c.nodes.splice(lowerBound(c.nodes, node), 1);
    c.bytes -= m.bytes + (c.nodes.length > 0 ? 1 : 0);
    c.dirty = true;
    c.escaped = c.raw = undefined;
    this.#members.delete(node);
  }

  #fits(c: Chunk, bytes: number): boolean {
    return c.nodes.length === 0 || c.bytes + 1 + bytes <= this.#limit;
  }

  #place(node: string, value: string, enc: { raw: Buffer; bytes: number }, preferred: number | undefined): void {
    const bytes = enc.bytes;
    let i = preferred !== undefined && this.#fits(this.#chunks[preferred]!, bytes) ? preferred : -1;
    if (i < 0) i = this.#chunks.findIndex((c) => this.#fits(c, bytes));
    if (i < 0) {
      this.#chunks.push({ nodes: [], bytes: 2, dirty: true, escaped: undefined, raw: undefined });
      i = this.#chunks.length - 1;
    }
    const c = this.#chunks[i]!;
    c.nodes.splice(lowerBound(c.nodes, node), 0, node);
    c.bytes += bytes + (c.nodes.length > 1 ? 1 : 0);
    c.dirty = true;
    c.escaped = c.raw = undefined;
    this.#members.set(node, { value, bytes, chunk: i, escaped: undefined, raw: enc.raw, key: undefined });
  }

  /**
   * Applies the changed nodes of a cycle (node → its published value, or null when it left the view). With
   * `sequential` (a first fill in slices of nodes in name order), new nodes are packed as {@link buildChunks} does:
   * into the chunk being filled while it has room, else into the next one, never back into an earlier chunk, so
   * the chunks below {@link sealed} are final and can be written while later slices are still being processed.
   */
  apply(changes: ReadonlyMap<string, string | null>, options: { sequential?: boolean } = {}): void {
    const added: [string, string][] = [];
    for (const [node, value] of changes) {
      const m = this.#members.get(node);
      if (value === null) {
        this.#remove(node);
        continue;
      }
      if (m === undefined) {
        added.push([node, value]);
        continue;
      }
      if (value === m.value) continue;
      const enc = encodeMember(node, value);
      const bytes = enc.bytes;
      const c = this.#chunks[m.chunk]!;
      if (c.bytes - m.bytes + bytes <= this.#limit || c.nodes.length === 1) {
        c.bytes += bytes - m.bytes;
        c.dirty = true;
        c.escaped = c.raw = undefined;
        this.#members.set(node, { value, bytes, chunk: m.chunk, escaped: undefined, raw: enc.raw, key: m.key });
      } else {
        // outgrew its chunk: the destination is written with it and the source without it
        this.#remove(node);
        this.#place(node, value, enc, undefined);
      }
    }
    added.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (options.sequential === true) {
      for (const [node, value] of added) {
        const enc = encodeMember(node, value);
        while (this.#fill < this.#chunks.length && !this.#fits(this.#chunks[this.#fill]!, enc.bytes)) this.#fill++;
        if (this.#fill === this.#chunks.length)
          this.#chunks.push({ nodes: [], bytes: 2, dirty: true, escaped: undefined, raw: undefined });
        this.#place(node, value, enc, this.#fill);
      }
      return;
    }
    let last: number | undefined;
    for (const [node, value] of added) {
      this.#place(node, value, encodeMember(node, value), last);
      last = this.#members.get(node)!.chunk;
    }
  }

  /** The value of chunk `i`. */
  text(i: number): string {
    return `{${this.#chunks[i]!.nodes.map((n) => memberKey(n) + this.#members.get(n)!.value).join(',')}}`;
  }

  /**
   * The value of chunk `i` as the content of a JSON string (escaped, without the quotes), UTF-8, in pieces: what a
   * ConfigMap body carries between the quotes of its data value. Each member's escaped bytes are kept until the
   * member changes, the list until the chunk changes (issue [O] item 1: a changed node costs its own escaping, not
   * the 800 KiB chunk's, and the pieces are sent as they are). JSON escaping works character by character and a
   * member is a whole string, so the pieces equal the escaped whole value; `{`, `}` and `,` need no escaping.
   */
  escapedParts(i: number): readonly Buffer[] {
    const c = this.#chunks[i]!;
    if (c.escaped !== undefined) return c.escaped;
    const parts: Buffer[] = [BRACE_OPEN];
    c.nodes.forEach((n, k) => {
      const m = this.#members.get(n)!;
      // the joined text is a temporary (it dies young); only the escaped bytes are kept
      m.escaped ??= escapeJsonContent(memberKey(n) + m.value);
      if (k > 0) parts.push(COMMA);
      parts.push(m.escaped);
    });
    parts.push(BRACE_CLOSE);
    c.escaped = parts;
    return parts;
  }

  /**
   * The value of chunk `i` as UTF-8 bytes in pieces (what a protobuf body carries, issue [P] item 6), kept per
   * member and per chunk as {@link escapedParts} is; their concatenation is the UTF-8 of {@link text}.
   */
  rawParts(i: number): readonly Buffer[] {
    const c = this.#chunks[i]!;
    if (c.raw !== undefined) return c.raw;
    const parts: Buffer[] = [BRACE_OPEN];
    c.nodes.forEach((n, k) => {
      const m = this.#members.get(n)!;
      m.key ??= Buffer.from(memberKey(n), 'utf8');
      if (k > 0) parts.push(COMMA);
      parts.push(m.key, m.raw);
    });
    parts.push(BRACE_CLOSE);
    c.raw = parts;
    return parts;
  }

  /** {@link escapedParts} in one buffer. */
  escapedValue(i: number): Buffer {
    return Buffer.concat(this.escapedParts(i));
  }

  /** Marks chunk `i` as changed again (its write was deferred). */
  markDirty(i: number): void {
    this.#chunks[i]!.dirty = true;
  }

  /** The nodes of chunk `i`, in name order. */
  nodesOf(i: number): readonly string[] {
    return this.#chunks[i]!.nodes;
  }

  /** Byte size of chunk `i`'s value. */
  bytes(i: number): number {
    return this.#chunks[i]!.bytes;
  }

  /** Indices of the chunks changed since they were last taken with {@link takeDirty} (only those below `below`). */
  takeDirty(below = Infinity): number[] {
    const out: number[] = [];
    this.#chunks.forEach((c, i) => {
      if (!c.dirty || i >= below) return;
      c.dirty = false;
      out.push(i);
    });
    return out;
  }
}

/** Name of chunk `i`. */
export function chunkName(i: number): string {
  return `${CLUSTER_INFO_PREFIX}${i}`;
}
