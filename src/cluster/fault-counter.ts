/**
 * The frequency counter of manual separation (cluster-faults §1.5): per (node, device, code) the receive times of
 * counted hardware occurrences, in arrival order; separation when the last `threshold` entries span strictly less
 * than the window. Pure and clock-injected; its state can be exported and restored (persisted across restarts).
 */

/** A counted occurrence (§1.4 `Fault` without the job). */
export interface CountedFault {
  readonly node: string;
  readonly dev: string;
  readonly code: string;
  /** ms */
  readonly receivedTime: number;
}

/** §1.5: entries older than this (relative to now) are pruned when a new entry of the same key is added. */
export const MAX_WINDOW_MS = 720 * 3_600_000;

/** Threshold and window in force at the time of an `add` (§1.5 "Config changes"). */
export interface CounterPolicy {
  readonly threshold: number;
  readonly windowMs: number;
}

/** §1.5 `reached(times)`: strict `<` on the span of the last N entries in list order; N = 1 needs no window. */
export function reachedFrequency(times: readonly number[], p: CounterPolicy): boolean {
  const n = p.threshold;
  if (n < 1 || times.length < n) return false;
  if (n === 1) return true;
  const recent = times.slice(times.length - n);
  return recent[n - 1]! - recent[0]! < p.windowMs; // spec §1.5: strict
}

/** Exported counter state: node → dev → code → receive times. */
export type CounterState = Record<string, Record<string, Record<string, number[]>>>;

/** Exported lists of one node: dev → code → receive times. */
export type NodeCounterState = Record<string, Record<string, number[]>>;

/**
 * The counter. `onSeparate` receives the fault that reached the threshold (§1.5 `separate`); `onTouch` is told
 * the node of every change (for the persisted state, which is kept per node).
 */
export class FaultCounter {
  #faults = new Map<string, Map<string, Map<string, number[]>>>();

  constructor(
    private readonly onSeparate: (f: CountedFault) => void,
    private readonly onTouch: (node: string) => void = () => undefined,
  ) {}

  /** §1.5 `add`: returns true when the fault separated its device. */
  add(f: CountedFault, policy: CounterPolicy, nowMs: number): boolean {
    const codes = this.#faults.get(f.node)?.get(f.dev);
    const existing = codes?.get(f.code);
    if (existing === undefined) {
      if (reachedFrequency([f.receivedTime], policy)) {
        this.#separate(f);
        return true;
      }
      this.#set(f, [f.receivedTime]);
      return false;
    }
    // §1.5: prune against the fixed 720 h, relative to now, only on append
    const times = [...existing, f.receivedTime].filter((t) => nowMs - t <= MAX_WINDOW_MS);
    if (reachedFrequency(times, policy)) {
      this.#separate(f);
      return true;
    }
    this.#set(f, times); // may store an empty list; the key remains
    return false;
  }

  #set(f: CountedFault, times: number[]): void {
    this.onTouch(f.node);
    let devs = this.#faults.get(f.node);
    if (devs === undefined) this.#faults.set(f.node, (devs = new Map<string, Map<string, number[]>>()));
    let codes = devs.get(f.dev);
    if (codes === undefined) devs.set(f.dev, (codes = new Map<string, number[]>()));
    codes.set(f.code, times);
  }

  #separate(f: CountedFault): void {
    this.clearDevFault(f.node, f.dev, f.code);
    this.onSeparate(f);
  }

  /** Deletes one code's list, pruning empty device and node maps. */
  clearDevFault(node: string, dev: string, code: string): void {
    const devs = this.#faults.get(node);
    const codes = devs?.get(dev);
    if (devs === undefined || codes === undefined) return;
    this.onTouch(node);
    codes.delete(code);
    if (codes.size === 0) devs.delete(dev);
    if (devs.size === 0) this.#faults.delete(node);
  }

  /** Deletes every code of a device (operator release), pruning an empty node. */
  clearDevFaults(node: string, dev: string): void {
    const devs = this.#faults.get(node);
    if (devs === undefined) return;
    this.onTouch(node);
    devs.delete(dev);
    if (devs.size === 0) this.#faults.delete(node);
  }

  /** Empties the counter (feature disabled). */
  clear(): void {
    for (const node of this.#faults.keys()) this.onTouch(node);
    this.#faults = new Map();
  }

  /** The lists of one node (a copy), undefined when it has none. */
  nodeState(node: string): NodeCounterState | undefined {
    const devs = this.#faults.get(node);
    if (devs === undefined) return undefined;
    const out: NodeCounterState = {};
    for (const [dev, codes] of devs) out[dev] = Object.fromEntries([...codes].map(([c, t]) => [c, [...t]]));
    return out;
  }

  /** Replaces the lists of one node (persisted state); invalid entries are skipped and returned as messages. */
  restoreNode(node: string, state: unknown): string[] {
    this.#faults.delete(node);
    return this.#restoreInto(node, state);
  }

  #restoreInto(node: string, devs: unknown): string[] {
    const problems: string[] = [];
    if (typeof devs !== 'object' || devs === null) return [`counter.${node} is not an object`];
    for (const [dev, codes] of Object.entries(devs as Record<string, unknown>)) {
      if (typeof codes !== 'object' || codes === null) {
        problems.push(`counter.${node}.${dev} is not an object`);
        continue;
      }
      for (const [code, times] of Object.entries(codes as Record<string, unknown>)) {
        if (!Array.isArray(times) || !times.every((t) => Number.isSafeInteger(t))) {
          problems.push(`counter.${node}.${dev}.${code} is not a list of integers`);
          continue;
        }
        this.#set({ node, dev, code, receivedTime: 0 }, times as number[]);
      }
    }
    return problems;
  }

  /** The list of one key, if any. */
  times(node: string, dev: string, code: string): readonly number[] | undefined {
    return this.#faults.get(node)?.get(dev)?.get(code);
  }

  /** Number of stored keys. */
  get size(): number {
    let n = 0;
    for (const devs of this.#faults.values()) for (const codes of devs.values()) n += codes.size;
    return n;
  }

  /** The state as plain JSON. */
  export(): CounterState {
    const out: CounterState = {};
    for (const [node, devs] of this.#faults) {
      out[node] = {};
      for (const [dev, codes] of devs) out[node][dev] = Object.fromEntries([...codes].map(([c, t]) => [c, [...t]]));
    }
    return out;
  }

  /** Replaces the state with an exported one; invalid entries are skipped and returned as messages. */
  restore(state: unknown): string[] {
    this.clear();
    if (typeof state !== 'object' || state === null) return ['counter state is not an object'];
    const problems: string[] = [];
    for (const [node, devs] of Object.entries(state as Record<string, unknown>)) {
      problems.push(...this.#restoreInto(node, devs));
    }
    return problems;
  }
}
