/**
 * The manual-separation cache and the `clusterd-manual-info-cm` encoding (cluster-faults §1.6): per node the
 * separated devices (`Total`, insertion order in memory, sorted when written) and per device the codes with their
 * `LastSeparateTime` (`Detail`). Pure.
 */
import { goMap, goSlice, goStruct, marshalGo, type GoValue } from '../core/go-json.js';

/** ConfigMap of the cache (§1.6). */
export const MANUAL_INFO_CONFIGMAP = 'clusterd-manual-info-cm';
export const MANUAL_INFO_NAMESPACE = 'cluster-system';
/** Largest value of one node key accepted when reading the ConfigMap. */
export const MAX_MANUAL_INFO_VALUE_BYTES = 1024 * 1024;

/** One separated code of a device. */
export interface DevCmInfo {
  FaultCode: string;
  FaultLevel: string;
  /** ms: receive time of the fault that triggered the separation */
  LastSeparateTime: number;
}

/** One node's entry. */
export interface NodeManualInfo {
  Total: string[];
  Detail: Map<string, DevCmInfo[]>;
}

/** Deep copy of a node entry. */
function copyEntry(e: NodeManualInfo): NodeManualInfo {
  return { Total: [...e.Total], Detail: new Map([...e.Detail].map(([d, l]) => [d, l.map((x) => ({ ...x }))])) };
}

/** The Go JSON of a node entry: `{"Total":[sorted],"Detail":{sorted keys}}` (§1.6). */
export function encodeNodeEntry(e: NodeManualInfo): string {
  const detail = new Map<string, GoValue>();
  for (const [dev, list] of e.Detail) {
    detail.set(
      dev,
      goSlice(
        list.map((x) =>
          goStruct([
            ['FaultCode', x.FaultCode],
            ['FaultLevel', x.FaultLevel],
            ['LastSeparateTime', x.LastSeparateTime],
          ]),
        ),
      ),
    );
  }
  // §1.6: Total sorted by plain byte order in the written copy
  const total = [...e.Total].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return marshalGo(
    goStruct([
      ['Total', goSlice(total)],
      ['Detail', goMap(detail)],
    ]),
  );
}

/** A node value that cannot be read. */
export interface BadKey {
  readonly key: string;
  readonly reason: string;
}

/** Decodes one node value; throws with a reason. A missing `Detail` reads as `{}` (§1.6). */
export function decodeNodeEntry(text: string): NodeManualInfo {
  if (Buffer.byteLength(text) > MAX_MANUAL_INFO_VALUE_BYTES)
    throw new Error(`exceeds ${MAX_MANUAL_INFO_VALUE_BYTES} bytes`);
  const raw = JSON.parse(text) as unknown;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('not a JSON object');
  const { Total, Detail } = raw as { Total?: unknown; Detail?: unknown };
  if (Total !== undefined && Total !== null && !(Array.isArray(Total) && Total.every((t) => typeof t === 'string'))) {
    throw new Error('Total is not a list of strings');
  }
  const detail = new Map<string, DevCmInfo[]>();
  if (Detail !== undefined && Detail !== null) {
    if (typeof Detail !== 'object' || Array.isArray(Detail)) throw new Error('Detail is not an object');
    for (const [dev, list] of Object.entries(Detail as Record<string, unknown>)) {
      if (list === null) continue;
      if (!Array.isArray(list)) throw new Error(`Detail.${dev} is not a list`);
      detail.set(
        dev,
        list.map((x: unknown, i) => {
          const o = x as Partial<DevCmInfo> | null;
          if (
            o === null ||
            typeof o !== 'object' ||
            typeof o.FaultCode !== 'string' ||
            typeof o.FaultLevel !== 'string' ||
            !Number.isSafeInteger(o.LastSeparateTime)
          ) {
            throw new Error(`Detail.${dev}[${i}] is not {FaultCode, FaultLevel, LastSeparateTime}`);
          }
          return { FaultCode: o.FaultCode, FaultLevel: o.FaultLevel, LastSeparateTime: o.LastSeparateTime! };
        }),
      );
    }
  }
  return { Total: [...(Total ?? [])], Detail: detail };
}

/** Decodes the ConfigMap's data: the readable node entries and the keys that could not be read. */
export function decodeManualInfoData(data: Readonly<Record<string, string>> | null | undefined): {
  entries: Map<string, NodeManualInfo>;
  bad: BadKey[];
} {
  const entries = new Map<string, NodeManualInfo>();
  const bad: BadKey[] = [];
  for (const [key, text] of Object.entries(data ?? {})) {
    try {
      entries.set(key, decodeNodeEntry(text));
    } catch (e) {
      bad.push({ key, reason: (e as Error).message });
    }
  }
  return { entries, bad };
}

/** The cache (§1.6 `manualInfo`). `onTouch` is told the node of every change (persisted state, dirty nodes). */
export class ManualCache {
  #nodes = new Map<string, NodeManualInfo>();

  constructor(private readonly onTouch: (node: string) => void = () => undefined) {}

  /** One node's entry (a copy), undefined when the node has none. */
  entry(node: string): NodeManualInfo | undefined {
    const e = this.#nodes.get(node);
    return e === undefined ? undefined : copyEntry(e);
  }

  /** The separated devices of one node (live; do not mutate), undefined when none. */
  totalOf(node: string): readonly string[] | undefined {
    return this.#nodes.get(node)?.Total;
  }

  /** Sets (or with undefined removes) one node's entry. */
  setEntry(node: string, e: NodeManualInfo | undefined): void {
    this.onTouch(node);
    if (e === undefined) this.#nodes.delete(node);
    else this.#nodes.set(node, copyEntry(e));
  }

  /** Nodes with an entry. */
  nodes(): IterableIterator<string> {
    return this.#nodes.keys();
  }

  /** §1.6 `addSeparateDev`; returns whether the device is newly separated. */
  addSeparateDev(node: string, dev: string, code: string, timeMs: number): boolean {
    const info: DevCmInfo = { FaultCode: code, FaultLevel: 'ManuallySeparateNPU', LastSeparateTime: timeMs };
    this.onTouch(node);
    const e = this.#nodes.get(node);
    if (e === undefined) {
      this.#nodes.set(node, { Total: [dev], Detail: new Map([[dev, [info]]]) });
      return true;
    }
    if (!e.Total.includes(dev)) {
      e.Total.push(dev);
      e.Detail.set(dev, [info]);
      return true;
    }
    const list = e.Detail.get(dev);
    const same = list?.find((x) => x.FaultCode === code);
    if (same !== undefined) same.LastSeparateTime = timeMs;
    else if (list !== undefined) list.push(info);
    else e.Detail.set(dev, [info]);
    return false;
  }

  /** §1.6 `deleteSeparateDev` (operator release). */
  deleteSeparateDev(node: string, dev: string): void {
    const e = this.#nodes.get(node);
    if (e === undefined) return;
    this.onTouch(node);
    e.Total = e.Total.filter((d) => d !== dev);
    if (e.Total.length === 0) this.#nodes.delete(node);
    else e.Detail.delete(dev);
  }

  /** §1.6 `deleteDevCode` (auto-release). */
  deleteDevCode(node: string, dev: string, code: string): void {
    const e = this.#nodes.get(node);
    if (e === undefined) return;
    this.onTouch(node);
    const list = (e.Detail.get(dev) ?? []).filter((x) => x.FaultCode !== code);
    if (list.length > 0) {
      e.Detail.set(dev, list);
      return;
    }
    e.Detail.delete(dev);
    if (e.Detail.size === 0) this.#nodes.delete(node);
    else e.Total = e.Total.filter((d) => d !== dev);
  }

  /** Whether a device is separated (upstream `HasDevManualSep`). */
  has(node: string, dev: string): boolean {
    return this.#nodes.get(node)?.Total.includes(dev) ?? false;
  }

  /** Replaces the whole cache (upstream `SetNodeInfo`); `null` empties it. */
  set(entries: ReadonlyMap<string, NodeManualInfo> | null): void {
    for (const n of this.#nodes.keys()) this.onTouch(n);
    this.#nodes = new Map([...(entries ?? new Map<string, NodeManualInfo>())].map(([n, e]) => [n, copyEntry(e)]));
    for (const n of this.#nodes.keys()) this.onTouch(n);
  }

  /** Empties the cache. */
  clear(): void {
    for (const n of this.#nodes.keys()) this.onTouch(n);
    this.#nodes = new Map();
  }

  get isEmpty(): boolean {
    return this.#nodes.size === 0;
  }

  /** A deep copy of the entries. */
  snapshot(): Map<string, NodeManualInfo> {
    return new Map([...this.#nodes].map(([n, e]) => [n, copyEntry(e)]));
  }

  /** node → separated devices (live; do not mutate). */
  totals(): Map<string, readonly string[]> {
    return new Map([...this.#nodes].map(([n, e]) => [n, e.Total]));
  }

  /** The ConfigMap data of the cache: one Go-JSON value per node. */
  toConfigMapData(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [n, e] of [...this.#nodes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) out[n] = encodeNodeEntry(e);
    return out;
  }
}
