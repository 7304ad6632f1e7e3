/**
 * `IncrementFaultProcessor` (cluster-faults §1.3): each cycle, the faults that are new against the previous
 * snapshot go, with the job owning their NPU, to manual separation. A fault that stays present keeps its receive
 * time (§0.1) and is therefore counted once per appearance.
 */
import type { DeviceViewProcessor, NodeDeviceView } from './device-view.js';
import type { ManualSeparation } from './manual-separation.js';

/** The part of a fault the "contained" test compares. */
export interface FaultStamp {
  code: string;
  level: string;
  receivedTime: number;
}

/** Snapshot of the previous cycle: node → device → faults (persisted so a restart does not re-count). */
export type IntakeSnapshot = Map<string, Map<string, FaultStamp[]>>;

/** §1.3 levels never counted. */
const NOT_COUNTED = new Set(['NotHandleFault', 'SubHealthFault']);

/** Compact copy of one node's faults. */
export function nodeSnapshotOf(v: NodeDeviceView): Map<string, FaultStamp[]> {
  const devs = new Map<string, FaultStamp[]>();
  for (const [dev, list] of v.faults) {
    devs.set(
      dev,
      list.map((f) => ({ code: f.code, level: f.level, receivedTime: f.receivedTime })),
    );
  }
  return devs;
}

/** Compact copy of the views. */
export function snapshotOf(views: ReadonlyMap<string, NodeDeviceView>): IntakeSnapshot {
  const out: IntakeSnapshot = new Map();
  for (const [node, v] of views) out.set(node, nodeSnapshotOf(v));
  return out;
}

/** §1.3 "contained": same code with equal receive time and equal level among the old faults of the device. */
export function isContained(f: FaultStamp, old: readonly FaultStamp[] | undefined): boolean {
  return (old ?? []).some((o) => o.code === f.code && o.receivedTime === f.receivedTime && o.level === f.level);
}

/**
 * The processor. `jobOf(node, dev)` is the pod cache lookup (§1.3 "Job id"), "" when no job uses the NPU.
 *
 * It is given the views of the nodes whose inputs changed (the processing centre re-processes only those, issue
 * [O] item 1) and replaces their snapshot entries; the entry of a node that was not re-processed is the snapshot
 * of its unchanged view, so comparing it again would find nothing new: the result is upstream's, where the whole
 * view is compared and the whole snapshot replaced every cycle. Removed nodes leave the snapshot through
 * {@link forget}. `onTouch` is told each node whose entry changed (persisted state).
 */
export class IncrementFaultProcessor implements DeviceViewProcessor {
  readonly name = 'IncrementFaultProcessor';
  #snapshot: IntakeSnapshot = new Map();

  constructor(
    private readonly manual: ManualSeparation,
    private readonly jobOf: (node: string, dev: string) => string,
    private readonly onTouch: (node: string) => void = () => undefined,
  ) {}

  /** A node's device info is gone: its entry leaves the snapshot (not while disabled, §1.11). */
  forget(node: string): void {
    if (!this.manual.enabled || !this.#snapshot.has(node)) return;
    this.#snapshot.delete(node);
    this.onTouch(node);
  }

  process(views: Map<string, NodeDeviceView>, nowMs: number): void {
    if (!this.manual.enabled) return; // §1.11: the snapshot is not updated while disabled
    for (const [node, view] of views) {
      const next = nodeSnapshotOf(view);
      const old = this.#snapshot.get(node);
      this.#snapshot.set(node, next);
      this.onTouch(node);
      if (view.faults.size === 0) continue; // recoveries are never counted
      for (const [dev, list] of view.faults) {
        const oldDev = old?.get(dev);
        let job: string | undefined;
        for (const f of list) {
          if (old !== undefined && isContained(f, oldDev)) continue;
          if (NOT_COUNTED.has(f.level)) continue;
          if (f.level === 'ManuallySeparateNPU' && f.code === 'ManuallySeparateNPU') continue;
          job ??= this.jobOf(node, dev);
          this.manual.intake({ jobId: job, node, dev, code: f.code, receivedTime: f.receivedTime }, nowMs);
        }
      }
    }
  }

  /** The previous snapshot (for persistence). */
  get snapshot(): IntakeSnapshot {
    return this.#snapshot;
  }

  /** Restores a persisted snapshot. */
  restoreSnapshot(s: IntakeSnapshot): void {
    this.#snapshot = s;
  }

  /** The entry of one node (persisted state). */
  nodeSnapshot(node: string): ReadonlyMap<string, readonly FaultStamp[]> | undefined {
    return this.#snapshot.get(node);
  }
}
