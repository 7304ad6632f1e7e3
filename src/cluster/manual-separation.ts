/**
 * Manual separation as one pure, clock-injected state machine (cluster-faults §1.2–§1.9): the active policy, the
 * job detector, the counter, the cache and the last written ConfigMap content, with the 15 s management step of
 * §1.6 as {@link ManualSeparation.releaseTick}. The I/O layer reads and writes the ConfigMaps around it.
 *
 * Deliberate differences from upstream (docs/fault-center.md): the policy is "not loaded" until a valid one is read,
 * and while not loaded nothing is auto-released (upstream's zero policy releases every restored separation);
 * `LastCmInfo` starts as the loaded ConfigMap, so an operator removal in the first 15 s is honoured; one unreadable
 * node key is reported and leaves that node unchanged instead of releasing every device; jobless faults may be
 * counted directly (`countJoblessFaults`).
 */
import { FaultCounter, type CountedFault, type CounterState } from './fault-counter.js';
import { JobFaultManager, type JobFault, type PassResult } from './job-fault-manager.js';
import { decodeManualInfoData, ManualCache, type BadKey, type DevCmInfo, type NodeManualInfo } from './manual-cache.js';
import { releaseMs, windowMs, type ManualSeparatePolicy } from './policy.js';

/** Why a separation ended. */
export type ReleaseReason = 'operator' | 'auto' | 'disabled';

/** Notifications for logs and metrics. */
export interface ManualSeparationListener {
  separated?(f: CountedFault, newlySeparated: boolean): void;
  released?(node: string, dev: string, code: string | undefined, reason: ReleaseReason): void;
}

/** What the 15 s step read from `clusterd-manual-info-cm`. */
export type ManualCmRead =
  | { kind: 'missing' }
  | { kind: 'error'; message: string }
  | { kind: 'data'; data: Readonly<Record<string, string>> | null | undefined };

/** What the 15 s step wants written. */
export type ManualCmAction = { kind: 'delete' } | { kind: 'write'; data: Record<string, string> };

/** Result of {@link ManualSeparation.releaseTick}. */
export interface ReleaseTickResult {
  readonly action: ManualCmAction;
  /** node keys of the read ConfigMap that could not be decoded (left unchanged) */
  readonly bad: BadKey[];
}

/** Persisted part of the state (counter survives a restart). */
export interface ManualSeparationState {
  counter: CounterState;
  jobs: JobFault[];
}

/**
 * The persisted manual-separation state of one node: counter lists (`c`), pending job faults (`j`, see
 * {@link JobFaultManager.nodePending}), the cache entry (`m`: `Total` in memory order, `Detail` as
 * `[code, level, lastSeparateTime]`) and the `Total` of the last successful write of `clusterd-manual-info-cm`
 * (`l`, §1.6 `LastCmInfo`). Absent members are empty.
 */
export interface NodeManualRecord {
  c?: Record<string, Record<string, number[]>>;
  j?: unknown[];
  m?: { t: string[]; d: Record<string, [string, string, number][]> };
  l?: string[];
}

/** Options. */
export interface ManualSeparationOptions {
  /** RFC behaviour: faults on NPUs without a job go straight to the counter (default false = upstream). */
  readonly countJoblessFaults?: boolean;
  readonly listener?: ManualSeparationListener;
}

/** The manual-separation state machine. */
export class ManualSeparation {
  readonly jobs: JobFaultManager;
  readonly cache: ManualCache;
  readonly counter: FaultCounter;
  #policy: ManualSeparatePolicy | undefined;
  /** node → Total of the last successful write (§1.6 `LastCmInfo`) */
  #lastCmInfo = new Map<string, string[]>();
  readonly #o: ManualSeparationOptions;
  /** nodes whose persisted record may have changed since the last {@link drainStateChanges} */
  #stateTouched = new Set<string>();
  /** nodes whose cache entry (so their surfaced markers, §1.8) may have changed since {@link drainCacheChanges} */
  #cacheTouched = new Set<string>();

  constructor(options: ManualSeparationOptions = {}) {
    this.#o = options;
    const touch = (node: string): void => void this.#stateTouched.add(node);
    this.jobs = new JobFaultManager(touch);
    this.cache = new ManualCache((node) => {
      this.#stateTouched.add(node);
      this.#cacheTouched.add(node);
    });
    this.counter = new FaultCounter((f) => {
      const fresh = this.cache.addSeparateDev(f.node, f.dev, f.code, f.receivedTime); // §1.5: receive time
      this.#o.listener?.separated?.(f, fresh);
    }, touch);
  }

  /** Nodes whose persisted record may have changed since the previous call. */
  drainStateChanges(): Set<string> {
    const out = this.#stateTouched;
    this.#stateTouched = new Set();
    return out;
  }

  /** Nodes whose cache entry may have changed since the previous call. */
  drainCacheChanges(): Set<string> {
    const out = this.#cacheTouched;
    this.#cacheTouched = new Set();
    return out;
  }

  /**
   * The node's current cache entry has been surfaced (§1.8, `ManualFaultProcessor` in this cycle): a change made
   * before it was read needs no re-processing of the node in the next cycle (issue [O]: at the first cycle at
   * 10,000 nodes, the devices separated by the cycle itself re-processed a third of the nodes once more).
   */
  cacheChangeSeen(node: string): void {
    this.#cacheTouched.delete(node);
  }

  #setLastCmInfo(next: Map<string, string[]>): void {
    for (const n of this.#lastCmInfo.keys()) this.#stateTouched.add(n);
    for (const n of next.keys()) this.#stateTouched.add(n);
    this.#lastCmInfo = next;
  }

  /** The persisted record of one node, undefined when it has no manual-separation state. */
  nodeRecord(node: string): NodeManualRecord | undefined {
    const r: NodeManualRecord = {};
    const c = this.counter.nodeState(node);
    if (c !== undefined) r.c = c;
    const j = this.jobs.nodePending(node);
    if (j.length > 0) r.j = j;
    const e = this.cache.entry(node);
    if (e !== undefined) {
      const d: Record<string, [string, string, number][]> = {};
      for (const [dev, list] of e.Detail) d[dev] = list.map((x) => [x.FaultCode, x.FaultLevel, x.LastSeparateTime]);
      r.m = { t: e.Total, d };
    }
    const l = this.#lastCmInfo.get(node);
    if (l !== undefined) r.l = [...l];
    return r.c === undefined && r.j === undefined && r.m === undefined && r.l === undefined ? undefined : r;
  }

  /**
   * Restores persisted per-node records (issue [O] item 2) together with what `clusterd-manual-info-cm` holds now
   * (`cm`, undefined when it could not be read). The cache and `LastCmInfo` come from the records; a device the
   * ConfigMap lists that this center never wrote there (not in the node's `LastCmInfo`) is adopted as upstream's
   * start-up load would (an operator's addition, or a write that landed after the last persisted state), so no
   * separation is lost; a device the records have but the ConfigMap lacks is released at the next 15 s step if it
   * was written (an operator removal made while the center was down), else kept (separated after the last write).
   * Returns the problems of invalid record members and the unreadable keys of the ConfigMap.
   */
  restoreNodes(
    records: ReadonlyMap<string, NodeManualRecord>,
    nextSeq: number,
    cm: Readonly<Record<string, string>> | null | undefined,
  ): { problems: string[]; bad: BadKey[] } {
    const problems: string[] = [];
    const entries = new Map<string, NodeManualInfo>();
    const last = new Map<string, string[]>();
    const pending = new Map<string, unknown[]>();
    this.counter.clear();
    for (const [node, r] of records) {
      if (r.c !== undefined) problems.push(...this.counter.restoreNode(node, r.c));
      if (r.j !== undefined) {
        if (Array.isArray(r.j)) pending.set(node, r.j);
        else problems.push(`jobs of ${node} is not a list`);
      }
      if (r.m !== undefined) {
        const e = decodeRecordEntry(r.m);
        if (e === undefined) problems.push(`manual entry of ${node} is not {t, d}`);
        else entries.set(node, e);
      }
      if (r.l !== undefined) {
        if (Array.isArray(r.l) && r.l.every((d) => typeof d === 'string')) last.set(node, [...r.l]);
        else problems.push(`LastCmInfo of ${node} is not a list of strings`);
      }
    }
    problems.push(...this.jobs.restoreNodes(pending, nextSeq));
    const { entries: cmEntries, bad } = decodeManualInfoData(cm);
    for (const [node, e] of cmEntries) {
      const written = last.get(node) ?? [];
      for (const dev of e.Total) {
        if (written.includes(dev)) continue;
        let mine = entries.get(node);
        if (mine === undefined) entries.set(node, (mine = { Total: [], Detail: new Map() }));
        if (mine.Total.includes(dev)) continue;
        mine.Total.push(dev);
        const detail = e.Detail.get(dev);
        if (detail !== undefined) mine.Detail.set(dev, detail);
      }
    }
    this.cache.set(entries);
    this.#setLastCmInfo(last);
    return { problems, bad };
  }

  /** The active policy, undefined until one was loaded. */
  get policy(): ManualSeparatePolicy | undefined {
    return this.#policy;
  }

  /** Intake and surfacing run only when a loaded policy says `enabled`. */
  get enabled(): boolean {
    return this.#policy?.enabled === true;
  }

  /** Whether jobless faults are counted directly. */
  get countJoblessFaults(): boolean {
    return this.#o.countJoblessFaults === true;
  }

  /** Last written Totals (§1.6 `LastCmInfo`). */
  get lastCmInfo(): ReadonlyMap<string, readonly string[]> {
    return this.#lastCmInfo;
  }

  /**
   * Swaps in a validated policy (§1.2). A policy with `enabled: false` clears every state (job faults, counter,
   * cache, `LastCmInfo`); the next 15 s step then deletes the ConfigMap. Returns whether state was wiped.
   */
  setPolicy(p: ManualSeparatePolicy): boolean {
    this.#policy = p;
    if (p.enabled) return false;
    for (const [node, devs] of this.cache.totals())
      for (const d of devs) this.#o.listener?.released?.(node, d, undefined, 'disabled');
    this.jobs.clear();
    this.counter.clear();
    this.cache.clear();
    this.#setLastCmInfo(new Map());
    return true;
  }

  /** §1.3 hand-over of one new fault: to the job detector, or (jobless) dropped or counted per the option. */
  intake(f: JobFault, nowMs: number): void {
    if (!this.enabled) return;
    if (f.jobId !== '') this.jobs.add(f);
    else if (this.countJoblessFaults) this.#count(f, nowMs);
  }

  #count(f: CountedFault, nowMs: number): void {
    const p = this.#policy;
    if (p === undefined) return;
    this.counter.add(f, { threshold: p.faultThreshold, windowMs: windowMs(p) }, nowMs);
  }

  /** One 1 s pass of the job workers (§1.4). */
  jobPass(nowMs: number, hasPodGroup: (jobId: string) => boolean): PassResult {
    return this.jobs.pass(nowMs, hasPodGroup, (f) => this.#count(f, nowMs));
  }

  /**
   * §1.9 start-up load of `clusterd-manual-info-cm`: readable node keys replace the cache; unreadable ones are
   * returned. `LastCmInfo` becomes the loaded Totals, so operator removals right after start are seen.
   */
  load(data: Readonly<Record<string, string>> | null | undefined): BadKey[] {
    const { entries, bad } = decodeManualInfoData(data);
    this.cache.set(entries);
    this.#setLastCmInfo(new Map([...entries].map(([n, e]) => [n, [...e.Total]])));
    return bad;
  }

  /** The 15 s management step (§1.6) at `nowMs`, given what the ConfigMap holds now. */
  releaseTick(nowMs: number, read: ManualCmRead): ReleaseTickResult {
    if (this.cache.isEmpty) return { action: { kind: 'delete' }, bad: [] };
    let bad: BadKey[] = [];
    // 1. operator removals: (node, dev) last written but absent now
    if (read.kind !== 'error') {
      const current = new Map<string, readonly string[]>();
      if (read.kind === 'data') {
        const decoded = decodeManualInfoData(read.data);
        bad = decoded.bad;
        for (const [n, e] of decoded.entries) current.set(n, e.Total);
        // deviation: an unreadable key leaves its node as last written instead of releasing everything
        for (const b of bad) current.set(b.key, this.#lastCmInfo.get(b.key) ?? []);
      }
      for (const [node, devs] of this.#lastCmInfo) {
        const now = current.get(node) ?? [];
        for (const dev of devs) {
          if (now.includes(dev)) continue;
          if (this.cache.has(node, dev)) this.#o.listener?.released?.(node, dev, undefined, 'operator');
          this.counter.clearDevFaults(node, dev);
          this.cache.deleteSeparateDev(node, dev);
        }
      }
    }
    // 2. auto-release (never while no policy was loaded: deviation from §1.9)
    const p = this.#policy;
    const free = p === undefined ? -1 : releaseMs(p);
    if (free !== -1) {
      for (const [node, e] of this.cache.snapshot()) {
        for (const [dev, list] of e.Detail) {
          for (const x of list) {
            if (nowMs - x.LastSeparateTime >= free) {
              // §1.6: inclusive
              this.counter.clearDevFault(node, dev, x.FaultCode);
              this.cache.deleteDevCode(node, dev, x.FaultCode);
              this.#o.listener?.released?.(node, dev, x.FaultCode, 'auto');
            }
          }
        }
      }
    }
    // 3. persist
    if (this.cache.isEmpty) return { action: { kind: 'delete' }, bad };
    return { action: { kind: 'write', data: this.cache.toConfigMapData() }, bad };
  }

  /** Records a successful write or delete of the ConfigMap (sets `LastCmInfo`). */
  written(action: ManualCmAction): void {
    if (action.kind === 'delete') {
      this.#setLastCmInfo(new Map());
      return;
    }
    const { entries } = decodeManualInfoData(action.data);
    this.#setLastCmInfo(new Map([...entries].map(([n, e]) => [n, [...e.Total]])));
  }

  /** The persisted state. */
  exportState(): ManualSeparationState {
    return { counter: this.counter.export(), jobs: this.jobs.export() };
  }

  /** Restores persisted state; returns problems (invalid parts are skipped). */
  restoreState(state: Partial<ManualSeparationState>): string[] {
    return [...this.counter.restore(state.counter ?? {}), ...this.jobs.restore(state.jobs ?? [])];
  }
}

/** A record's `m` member as a cache entry; undefined when it is not of that shape. */
function decodeRecordEntry(m: unknown): NodeManualInfo | undefined {
  if (typeof m !== 'object' || m === null) return undefined;
  const { t, d } = m as { t?: unknown; d?: unknown };
  if (!Array.isArray(t) || !t.every((x) => typeof x === 'string')) return undefined;
  if (typeof d !== 'object' || d === null || Array.isArray(d)) return undefined;
  const detail = new Map<string, DevCmInfo[]>();
  for (const [dev, list] of Object.entries(d as Record<string, unknown>)) {
    if (!Array.isArray(list)) return undefined;
    const items: DevCmInfo[] = [];
    for (const x of list) {
      if (!Array.isArray(x) || typeof x[0] !== 'string' || typeof x[1] !== 'string' || !Number.isSafeInteger(x[2])) {
        return undefined;
      }
      items.push({ FaultCode: x[0], FaultLevel: x[1], LastSeparateTime: x[2] as number });
    }
    detail.set(dev, items);
  }
  return { Total: [...t], Detail: detail };
}
