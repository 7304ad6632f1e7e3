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
import { IncrementFaultProcessor, type FaultStamp, type IntakeSnapshot } from './increment-fault-processor.js';
import { JobIndex } from './job-index.js';
import type { PassResult } from './job-fault-manager.js';
import { ManualFaultProcessor } from './manual-fault-processor.js';
import { ManualSeparation, type ManualSeparationListener, type ManualSeparationState } from './manual-separation.js';
import { publishedNodeJson } from './cluster-info.js';

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
  readonly pass: PassResult;
}

/** Persisted state of the core (version 1). */
export interface CoreState extends ManualSeparationState {
  version: 1;
  /** node → device → [code, level, receivedTime][] of the previous intake snapshot */
  intake: Record<string, Record<string, [string, string, number][]>>;
}

/** The pure core. */
export class FaultCenterCore {
  readonly intake = new DeviceInfoIntake();
  readonly jobIndex = new JobIndex();
  readonly manual: ManualSeparation;
  readonly increment: IncrementFaultProcessor;
  readonly chain: readonly DeviceViewProcessor[];
  #processed = new Map<string, NodeDeviceView>();
  #published = new Map<string, string>();

  constructor(options: FaultCenterCoreOptions = {}) {
    this.manual = new ManualSeparation({ countJoblessFaults: options.countJoblessFaults, listener: options.listener });
    this.increment = new IncrementFaultProcessor(this.manual, (n, d) => this.jobIndex.jobOf(n, d));
    this.chain = [...(options.extraProcessors ?? []), this.increment, new ManualFaultProcessor(this.manual)];
  }

  /** §0.2: one processing cycle and one job-worker pass at `nowMs`. */
  cycle(nowMs: number): CycleResult {
    this.intake.applyQueued(nowMs);
    const views = new Map<string, NodeDeviceView>();
    for (const [node, v] of this.intake.views) views.set(node, cloneView(v));
    for (const p of this.chain) p.process(views, nowMs);
    this.#processed = views;
    const pass = this.manual.jobPass(nowMs, (j) => this.jobIndex.hasPodGroup(j));
    const published = new Map<string, string>();
    let changed = false;
    for (const [node, v] of views) {
      const json = publishedNodeJson(v);
      published.set(node, json);
      if (this.#published.get(node) !== json) changed = true;
    }
    if (published.size !== this.#published.size) changed = true;
    this.#published = published;
    return { changed, pass };
  }

  /** The processed view of the last cycle. */
  get processed(): ReadonlyMap<string, NodeDeviceView> {
    return this.#processed;
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
    return problems;
  }
}
