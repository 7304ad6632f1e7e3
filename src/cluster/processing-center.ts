/**
 * The processing centre (cluster-faults §0.2) and the pure core of the fault center: device-info intake → clone →
 * processor chain (extra processors such as public faults first, then `IncrementFaultProcessor` §1.3 and
 * `ManualFaultProcessor` §1.8) → processed view, plus the 1 s pass of the job detector. Everything takes `nowMs`.
 *
 * Upstream's other chain members (`CustomProcessor`, `UceAccompanyProcessor`, `RetryProcessor`,
 * `RecoverInplaceProcessor`, `StressTestProcessor`, `PreSeparateFaultProcessor`) are out of scope.
 */
import { DeviceInfoIntake } from './device-info-intake.js';
import { cloneView, type DeviceViewProcessor, type NodeDeviceView } from './device-view.js';

const isStamp = (x: unknown): x is [string, string, number] =>
  Array.isArray(x) && typeof x[0] === 'string' && typeof x[1] === 'string' && Number.isSafeInteger(x[2]);
import { IncrementFaultProcessor, type FaultStamp, type IntakeSnapshot } from './increment-fault-processor.js';
import type { BadKey } from './manual-cache.js';
import { JobIndex } from './job-index.js';
import type { PassResult } from './job-fault-manager.js';
import { ManualFaultProcessor } from './manual-fault-processor.js';
import {
  ManualSeparation,
  type ManualSeparationListener,
  type ManualSeparationState,
  type NodeManualRecord,
} from './manual-separation.js';
import { publishedNodeJson } from './cluster-info.js';
import { sortGoStrings } from '../core/go-json.js';

/** Options of the core. */
export interface FaultCenterCoreOptions {
  /** processors run before the manual-separation ones (public faults, §2.9) */
  readonly extraProcessors?: readonly DeviceViewProcessor[];
  readonly countJoblessFaults?: boolean;
  readonly listener?: ManualSeparationListener;
}

/** Result of one cycle. */
export interface CycleResult {
  /** whether the published content of any node changed */
  readonly changed: boolean;
  /** the nodes whose published value changed: the new Go JSON, or null for a node that left the view */
  readonly published: ReadonlyMap<string, string | null>;
  /** nodes re-processed in this cycle */
  readonly processedNodes: number;
  readonly pass: PassResult;
}

/** Options of one {@link FaultCenterCore.cycle}. */
export interface CycleOptions {
  /** run the 1 s pass of the job detector after the cycle (default true; on-demand cycles skip it) */
  readonly jobPass?: boolean;
  /**
   * Re-process at most this many of the nodes due, the first ones in name order; the others stay due for the next
   * cycle ({@link FaultCenterCore.pendingNodes}). The fault center's first cycle runs in such slices so that the
   * chunks already filled are written while the next slice is processed (issue [O] start-up).
   */
  readonly maxNodes?: number;
}

/** Persisted state of the core (version 1, one object; read for compatibility, see {@link FaultCenterCore.records}). */
export interface CoreState extends ManualSeparationState {
  version: 1;
  /** node → device → [code, level, receivedTime][] of the previous intake snapshot */
  intake: Record<string, Record<string, [string, string, number][]>>;
}

/** The persisted record of one node (JSON of this shape, see {@link FaultCenterCore.records}). */
export interface NodeRecord extends NodeManualRecord {
  /** intake snapshot (§1.3): device → [code, level, receivedTime][] */
  s?: Record<string, [string, string, number][]>;
}

const EMPTY_PASS: PassResult = { counted: [], software: [], orphaned: [] };

/**
 * The pure core.
 *
 * Work follows change (issue [O] item 1): a cycle re-processes only the nodes whose inputs changed since the
 * previous one — their device info (the intake's queue), what a processor reports (public faults of the node,
 * changed separations) — and every node when the policy switches between enabled and disabled or at the first
 * cycle. A node's processed view is a function of those inputs alone, so the others keep last cycle's view, and
 * its published JSON is rebuilt only when it is re-processed. The same holds for the persisted state: one record
 * per node, rebuilt only for the nodes whose state was touched ({@link stateChanges}).
 */
export class FaultCenterCore {
  readonly intake = new DeviceInfoIntake();
  readonly jobIndex = new JobIndex();
  readonly manual: ManualSeparation;
  readonly increment: IncrementFaultProcessor;
  readonly chain: readonly DeviceViewProcessor[];
  readonly #processed = new Map<string, NodeDeviceView>();
  readonly #published = new Map<string, string>();
  #everything = true;
  #lastEnabled: boolean | undefined;
  /** nodes whose snapshot entry changed (persisted state) */
  #snapshotTouched = new Set<string>();
  /** the last record text of each node (persisted state) */
  readonly #records = new Map<string, string>();
  /** nodes due but left for the next cycle by {@link CycleOptions.maxNodes} */
  #carry = new Set<string>();

  constructor(options: FaultCenterCoreOptions = {}) {
    this.manual = new ManualSeparation({ countJoblessFaults: options.countJoblessFaults, listener: options.listener });
    this.increment = new IncrementFaultProcessor(
      this.manual,
      (n, d) => this.jobIndex.jobOf(n, d),
      (n) => void this.#snapshotTouched.add(n),
    );
    this.chain = [...(options.extraProcessors ?? []), this.increment, new ManualFaultProcessor(this.manual)];
  }

  /** Makes the next cycle re-process every node (e.g. after a restore). */
  invalidateAll(): void {
    this.#everything = true;
  }

  /** §0.2: one processing cycle (only the nodes whose inputs changed) and, by default, one job-worker pass at `nowMs`. */
  cycle(nowMs: number, options: CycleOptions = {}): CycleResult {
    let dirty = new Set(this.intake.applyQueued(nowMs));
    for (const n of this.#carry) dirty.add(n);
    this.#carry = new Set();
    for (const p of this.chain) if (p.changedNodes !== undefined) for (const n of p.changedNodes()) dirty.add(n);
    const enabled = this.manual.enabled;
    if (this.#everything || enabled !== this.#lastEnabled) {
      for (const n of this.intake.views.keys()) dirty.add(n);
      for (const n of this.#processed.keys()) dirty.add(n);
    }
    this.#everything = false;
    this.#lastEnabled = enabled;
    const max = options.maxNodes;
    if (max !== undefined && dirty.size > max) {
      const order = sortGoStrings([...dirty]);
      dirty = new Set(order.slice(0, max));
      this.#carry = new Set(order.slice(max));
    }
    const views = new Map<string, NodeDeviceView>();
    const published = new Map<string, string | null>();
    for (const node of dirty) {
      const v = this.intake.views.get(node);
      if (v !== undefined) {
        views.set(node, cloneView(v));
        continue;
      }
      // a node that vanished (its device-info ConfigMap was deleted), or one a processor named without a view
      this.increment.forget(node);
      if (this.#processed.delete(node)) {
        this.#published.delete(node);
        published.set(node, null);
      }
    }
    for (const p of this.chain) p.process(views, nowMs);
    for (const [node, v] of views) {
      this.#processed.set(node, v);
      const json = publishedNodeJson(v);
      if (this.#published.get(node) !== json) {
        this.#published.set(node, json);
        published.set(node, json);
      }
    }
    const pass =
      options.jobPass === false ? EMPTY_PASS : this.manual.jobPass(nowMs, (j) => this.jobIndex.hasPodGroup(j));
    return { changed: published.size > 0, published, processedNodes: views.size, pass };
  }

  /** Nodes due that a cycle with {@link CycleOptions.maxNodes} left for the next one. */
  get pendingNodes(): number {
    return this.#carry.size;
  }

  /** The processed view: every node's view as of the cycle that last re-processed it. */
  get processed(): ReadonlyMap<string, NodeDeviceView> {
    return this.#processed;
  }

  /** The published Go JSON of every node (as of its last re-processing). */
  get publishedJson(): ReadonlyMap<string, string> {
    return this.#published;
  }

  /** The persisted record of one node: snapshot and manual-separation state; undefined when it has none. */
  #recordOf(node: string): string | undefined {
    const r: NodeRecord = {};
    const snap = this.increment.nodeSnapshot(node);
    if (snap !== undefined && snap.size > 0) {
      const s: NonNullable<NodeRecord['s']> = {};
      for (const [dev, list] of snap) s[dev] = list.map((f) => [f.code, f.level, f.receivedTime]);
      r.s = s;
    }
    Object.assign(r, this.manual.nodeRecord(node));
    return Object.keys(r).length === 0 ? undefined : JSON.stringify(r);
  }

  /**
   * The records that changed since the previous call: node → record JSON, or null when the node has no state any
   * more. Only nodes whose state was touched are rebuilt.
   */
  stateChanges(): Map<string, string | null> {
    const touched = this.manual.drainStateChanges();
    for (const n of this.#snapshotTouched) touched.add(n);
    this.#snapshotTouched = new Set();
    const out = new Map<string, string | null>();
    for (const node of touched) {
      const text = this.#recordOf(node);
      const before = this.#records.get(node);
      if (text === before) continue;
      if (text === undefined) this.#records.delete(node);
      else this.#records.set(node, text);
      out.set(node, text ?? null);
    }
    return out;
  }

  /** Every current record (node → JSON), as last returned by {@link stateChanges} or restored. */
  get records(): ReadonlyMap<string, string> {
    return this.#records;
  }

  /** The arrival number of the next pending job fault (persisted with the records). */
  get nextJobSeq(): number {
    return this.manual.jobs.nextSeq;
  }

  /**
   * Restores persisted records (issue [O] item 2) with what `clusterd-manual-info-cm` holds now (see
   * {@link ManualSeparation.restoreNodes}): snapshot, counter, pending job faults, cache and `LastCmInfo`; the
   * receive times of the snapshot are reused when each node's device info is first read again, so faults still
   * present are not counted again. Invalid members are skipped and returned as problems.
   */
  restoreRecords(
    records: ReadonlyMap<string, string>,
    nextJobSeq: number,
    cm: Readonly<Record<string, string>> | null | undefined,
  ): { problems: string[]; bad: BadKey[] } {
    const problems: string[] = [];
    const manual = new Map<string, NodeManualRecord>();
    const snapshot: IntakeSnapshot = new Map();
    const stamps = new Map<string, Map<string, Map<string, number>>>();
    const kept = new Map<string, string>();
    for (const [node, text] of records) {
      let r: unknown;
      try {
        r = JSON.parse(text);
      } catch (e) {
        problems.push(`record of ${node} is not JSON: ${(e as Error).message}`);
        continue;
      }
      if (typeof r !== 'object' || r === null || Array.isArray(r)) {
        problems.push(`record of ${node} is not an object`);
        continue;
      }
      kept.set(node, text);
      const rec = r as NodeRecord;
      manual.set(node, rec);
      if (rec.s !== undefined) {
        const sd = new Map<string, FaultStamp[]>();
        const st = new Map<string, Map<string, number>>();
        for (const [dev, list] of Object.entries(typeof rec.s === 'object' && rec.s !== null ? rec.s : {})) {
          const ok = Array.isArray(list) ? list.filter(isStamp) : [];
          if (!Array.isArray(list) || ok.length !== list.length)
            problems.push(`snapshot of ${node}.${dev} has invalid entries`);
          sd.set(
            dev,
            ok.map(([code, level, receivedTime]) => ({ code, level, receivedTime })),
          );
          st.set(dev, new Map(ok.map(([code, , t]) => [code, t])));
        }
        snapshot.set(node, sd);
        stamps.set(node, st);
      }
    }
    this.increment.restoreSnapshot(snapshot);
    this.intake.restoreStamps(stamps);
    const r = this.manual.restoreNodes(manual, nextJobSeq, cm);
    // what was read is what is stored: an unchanged node is not written again
    this.manual.drainStateChanges();
    this.#snapshotTouched = new Set();
    this.#records.clear();
    for (const [n, t] of kept) this.#records.set(n, t);
    this.#everything = true;
    return { problems: [...problems, ...r.problems], bad: r.bad };
  }

  /** The persisted state. */
  exportState(): CoreState {
    const intake: CoreState['intake'] = {};
    for (const [node, devs] of this.increment.snapshot) {
      intake[node] = {};
      for (const [dev, list] of devs) intake[node][dev] = list.map((f) => [f.code, f.level, f.receivedTime]);
    }
    return { version: 1, ...this.manual.exportState(), intake };
  }

  /**
   * Restores a persisted state: counter, pending job faults, and the intake snapshot, whose receive times are also
   * reused when each node's device info is first read again, so present faults are not counted twice.
   */
  restoreState(state: unknown): string[] {
    if (typeof state !== 'object' || state === null) return ['state is not an object'];
    const s = state as Partial<CoreState>;
    if (s.version !== 1) return [`unknown state version ${String(s.version)}`];
    const problems = this.manual.restoreState(s);
    const snapshot: IntakeSnapshot = new Map();
    const stamps = new Map<string, Map<string, Map<string, number>>>();
    for (const [node, devs] of Object.entries(s.intake ?? {})) {
      const sd = new Map<string, FaultStamp[]>();
      const st = new Map<string, Map<string, number>>();
      for (const [dev, list] of Object.entries(devs ?? {})) {
        if (!Array.isArray(list)) {
          problems.push(`intake.${node}.${dev} is not a list`);
          continue;
        }
        const ok = list.filter(
          (x): x is [string, string, number] =>
            Array.isArray(x) && typeof x[0] === 'string' && typeof x[1] === 'string' && Number.isSafeInteger(x[2]),
        );
        sd.set(
          dev,
          ok.map(([code, level, receivedTime]) => ({ code, level, receivedTime })),
        );
        st.set(dev, new Map(ok.map(([code, , t]) => [code, t])));
      }
      snapshot.set(node, sd);
      stamps.set(node, st);
    }
    this.increment.restoreSnapshot(snapshot);
    this.intake.restoreStamps(stamps);
    // the records of the new format are written for every node of the old state
    for (const n of snapshot.keys()) this.#snapshotTouched.add(n);
    this.#everything = true;
    return problems;
  }
}
