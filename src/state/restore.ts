/**
 * Start-up of the engine's Kubernetes-facing state: from the state file when there is a usable one (frequency
 * histories, duration timers, reasons and separations survive the restart), else upstream's G.3 load from the
 * live device-info ConfigMap. Either way a clean live `ManuallySeparateNPU` has the last word on separations: a
 * name deleted while the agent was down releases the chip, and a name added while it was down is adopted with an
 * autofill reason (G.3 step 2) — exactly what upstream does at start.
 *
 * A value that is not clean (an entry that is not `<runMode>-<phy id>` of a chip of this node, or over-long) is
 * rejected as a whole by the same rule as while the agent runs ({@link checkManualValue}, docs/device-info.md):
 * it releases nothing and adopts nothing, the separations of the state file (without one: of the live
 * `UpgradeFaultReason`) stay, and the publisher's first write reports the value and writes them over it. A ConfigMap
 * that is absent at start releases nothing either (deleting the object is not deleting a name).
 */
import {
  AUTOFILL_CODE,
  checkManualValue,
  importEngineState,
  MANUAL_LOGIC_ID_MAX,
  parseManualNames,
  parseReasonsJson,
  quoted,
  RELEASE_NEVER,
  type EngineStateJson,
  type FaultEngine,
  type Transition,
} from '../faults/index.js';
import type { RunMode } from '../core/chips.js';
import { chipName } from '../core/device-names.js';
import { boundedText } from '../core/text.js';

/** The two values G.3 reads at start from the device-info ConfigMap. */
export interface StartupValues {
  /** False: the ConfigMap does not exist (deleting it is not deleting a name: nothing is released). */
  readonly found: boolean;
  readonly manuallySeparateNPU: string;
  readonly upgradeFaultReason: string;
}

/** The durable state the previous run left in `-stateDir` (the state file's content, see `EngineStatePersistence`). */
export interface DurableState {
  /** `ManuallySeparateNPU` of the last successful device-info write; null when unknown. */
  readonly confirmedManual: string | null;
  readonly engine: EngineStateJson;
}

/** JSON bytes of the rejection problem (one log line of the agent each). */
const MAX_PROBLEM_BYTES = 1024;

/** What the start-up did. */
export interface RestoreResult {
  readonly source: 'state-file' | 'configmap';
  readonly transitions: Transition[];
  /** Bounded: each value's problems are cut to a few (see `MAX_KEPT_PROBLEMS`). */
  readonly problems: string[];
  /** Logic ids released because their name was deleted from the ConfigMap while the agent was down. */
  readonly releasedWhileDown: number[];
  /** Give this to the publisher as `confirmedManual`. */
  readonly confirmedManual: string;
  /** Chips to re-read from DCMI. */
  readonly resync: number[];
}

/**
 * Restores the engine (before serving kubelet, or late: at the publisher's first successful read). Never throws. The
 * store's `NodeStateStore.restore` is its one caller in the agent.
 */
export function restoreEngine(
  engine: FaultEngine,
  input: { persisted: DurableState | undefined; live: StartupValues; now: number; runMode: RunMode },
): RestoreResult {
  const { live, now, runMode } = input;
  const check = checkManualValue(live.manuallySeparateNPU, runMode, new Set(engine.snapshot().map((v) => v.phyId)));
  const rejected = check.ok
    ? []
    : [
        boundedText(
          `ManuallySeparateNPU ${quoted(live.manuallySeparateNPU)} of the live ConfigMap not used (nothing released, ` +
            `nothing adopted): ${check.problems.join('; ')}`,
          MAX_PROBLEM_BYTES,
          true,
        ),
      ];
  const fromConfigMap = (problems: string[]): RestoreResult => {
    // Rejected: the separations the live UpgradeFaultReason records (G.3 would drop their reasons as unlisted).
    const manual = check.ok ? live.manuallySeparateNPU : separatedByReasons(live.upgradeFaultReason, runMode);
    const r = engine.loadStartup({ manuallySeparateNPU: manual, upgradeFaultReason: live.upgradeFaultReason, now });
    return {
      source: 'configmap',
      transitions: r.transitions,
      problems: [...problems, ...rejected, ...r.problems],
      releasedWhileDown: [],
      confirmedManual: manual,
      resync: r.resync,
    };
  };
  if (input.persisted === undefined) return fromConfigMap([]);
  const persistedConfirmed = input.persisted.confirmedManual ?? '';
  const confirmed = new Set(parseManualNames(persistedConfirmed, runMode).phyIds);
  const doc: EngineStateJson = structuredClone(input.persisted.engine);
  // G.3 for names added while the agent was down: adopt with an autofill reason (and arm the autofill timer).
  const livePhys = new Set(check.ok ? check.phyIds : []);
  let autofilled = false;
  if (Array.isArray(doc.chips)) {
    for (const chip of doc.chips) {
      if (!livePhys.has(chip.phyId) || chip.manual !== null || chip.logicId < 0 || chip.logicId > MANUAL_LOGIC_ID_MAX)
        continue;
      chip.manual = { recordTime: now, written: true };
      if (!chip.reasons.some((r) => r.fault_level === 'ManuallySeparateNPU')) {
        chip.reasons.push({
          upgrade_time: now,
          fault_code: AUTOFILL_CODE,
          fault_level: 'ManuallySeparateNPU',
          upgrade_type: 'FaultAutofill',
        });
        autofilled = true;
      }
    }
    if (autofilled && doc.autofillReleaseSec !== RELEASE_NEVER)
      doc.autofillReleaseAt = Math.min(doc.autofillReleaseAt ?? Infinity, now + doc.autofillReleaseSec * 1000);
  }
  const imported = importEngineState(engine, doc);
  if (!imported.ok) return fromConfigMap([`engine state file not used: ${imported.error}`]);
  const problems = [...imported.problems, ...rejected];
  // A ConfigMap deleted while the agent was down says nothing about any chip: like a deletion while running (the
  // publisher writes it again), it releases nothing; the state file's separations are written into the new object.
  const absent = !live.found;
  if (absent && engine.manuallySeparated().length > 0)
    problems.push('device-info ConfigMap absent at start: nothing released; the separations are written again');
  const transitions: Transition[] = [];
  const releasedWhileDown: number[] = [];
  if (check.ok && !absent) {
    // G.2 while down: a name of our last write that the clean live value no longer lists.
    const views = new Map(engine.snapshot().map((v) => [v.logicId, v.phyId]));
    for (const logicId of engine.manuallySeparated()) {
      const phy = views.get(logicId);
      if (phy !== undefined && confirmed.has(phy) && !livePhys.has(phy)) {
        for (const t of engine.release(logicId)) transitions.push(t);
        releasedWhileDown.push(logicId);
      }
    }
  }
  const cycle = engine.cycle({ now });
  for (const t of cycle.transitions) transitions.push(t);
  return {
    source: 'state-file',
    transitions,
    problems,
    releasedWhileDown,
    // Rejected: the value of our last write stays the one a later clean edit is compared with.
    confirmedManual: check.ok && !absent ? live.manuallySeparateNPU : persistedConfirmed,
    resync: engine.snapshot().map((v) => v.logicId),
  };
}

/**
 * `ManuallySeparateNPU` as the `UpgradeFaultReason` value implies it: the chips with a reason of level
 * ManuallySeparateNPU (every chip the agent separated has one, G.4). "" when the value does not parse.
 */
function separatedByReasons(upgradeFaultReason: string, runMode: RunMode): string {
  const { reasons } = parseReasonsJson(upgradeFaultReason);
  const phys: number[] = [];
  for (const [phy, list] of reasons) if (list.some((r) => r.fault_level === 'ManuallySeparateNPU')) phys.push(phy);
  return phys
    .sort((a, b) => a - b)
    .map((p) => chipName(runMode, p))
    .join(',');
}
