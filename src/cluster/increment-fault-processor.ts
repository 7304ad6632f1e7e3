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

/** Compact copy of the views. */
export function snapshotOf(views: ReadonlyMap<string, NodeDeviceView>): IntakeSnapshot {
  const out: IntakeSnapshot = new Map();
  for (const [node, v] of views) {
    const devs = new Map<string, FaultStamp[]>();
    for (const [dev, list] of v.faults) {
      devs.set(
        dev,
        list.map((f) => ({ code: f.code, level: f.level, receivedTime: f.receivedTime })),
      );
    }
    out.set(node, devs);
  }
  return out;
}

/** §1.3 "contained": same code with equal receive time and equal level among the old faults of the device. */
export function isContained(f: FaultStamp, old: readonly FaultStamp[] | undefined): boolean {
  return (old ?? []).some((o) => o.code === f.code && o.receivedTime === f.receivedTime && o.level === f.level);
}

/** The processor. `jobOf(node, dev)` is the pod cache lookup (§1.3 "Job id"), "" when no job uses the NPU. */
export class IncrementFaultProcessor implements DeviceViewProcessor {
  readonly name = 'IncrementFaultProcessor';
  #snapshot: IntakeSnapshot = new Map();

  constructor(
    private readonly manual: ManualSeparation,
    private readonly jobOf: (node: string, dev: string) => string,
  ) {}

  process(views: Map<string, NodeDeviceView>, nowMs: number): void {
    if (!this.manual.enabled) return; // §1.11: the snapshot is not updated while disabled
    for (const [node, view] of views) {
      if (view.faults.size === 0) continue; // recoveries are never counted
      const old = this.#snapshot.get(node);
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
    this.#snapshot = snapshotOf(views);
  }

  /** The previous snapshot (for persistence). */
  get snapshot(): IntakeSnapshot {
    return this.#snapshot;
  }

  /** Restores a persisted snapshot. */
  restoreSnapshot(s: IntakeSnapshot): void {
    this.#snapshot = s;
  }
}
