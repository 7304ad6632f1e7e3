/**
 * Start-up of the engine's Kubernetes-facing state: from the state file when there is a usable one (frequency
 * histories, duration timers, reasons and separations survive the restart), else upstream's G.3 load from the
 * live device-info ConfigMap. Either way the live `ManuallySeparateNPU` has the last word on separations: a name
 * deleted while the agent was down releases the chip, and a name added while it was down is adopted with an
 * autofill reason (G.3 step 2) — exactly what upstream does at start.
 */
import {
  AUTOFILL_CODE,
  importEngineState,
  MANUAL_LOGIC_ID_MAX,
  parseManualNames,
  RELEASE_NEVER,
  type EngineStateJson,
  type FaultEngine,
  type RunMode,
  type Transition,
} from '../faults/index.js';
import type { StartupValues } from './device-info-publisher.js';
import type { PersistedState } from './engine-state-persistence.js';

/** What the start-up did. */
export interface RestoreResult {
  readonly source: 'state-file' | 'configmap';
  readonly transitions: Transition[];
  readonly problems: string[];
  /** Logic ids released because their name was deleted from the ConfigMap while the agent was down. */
  readonly releasedWhileDown: number[];
  /** Give this to the publisher as `confirmedManual`. */
  readonly confirmedManual: string;
  /** Chips to re-read from DCMI. */
  readonly resync: number[];
}

/** Restores the engine (before serving kubelet). Never throws. */
export function restoreEngine(
  engine: FaultEngine,
  input: { persisted: PersistedState | undefined; live: StartupValues; now: number; runMode: RunMode },
): RestoreResult {
  const { live, now, runMode } = input;
  const fromConfigMap = (problems: string[]): RestoreResult => {
    const r = engine.loadStartup({
      manuallySeparateNPU: live.manuallySeparateNPU,
      upgradeFaultReason: live.upgradeFaultReason,
      now,
    });
    return {
      source: 'configmap',
      transitions: r.transitions,
      problems: [...problems, ...r.problems],
      releasedWhileDown: [],
      confirmedManual: live.manuallySeparateNPU,
      resync: r.resync,
    };
  };
  if (input.persisted === undefined) return fromConfigMap([]);
  const liveNames = parseManualNames(live.manuallySeparateNPU, runMode);
  const livePhys = new Set(liveNames.phyIds);
  const confirmed = new Set(parseManualNames(input.persisted.confirmedManual ?? '', runMode).phyIds);
  const doc: EngineStateJson = structuredClone(input.persisted.engine);
  // G.3 for names added while the agent was down: adopt with an autofill reason (and arm the autofill timer).
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
  const problems = [...imported.problems, ...liveNames.problems];
  const transitions: Transition[] = [];
  const releasedWhileDown: number[] = [];
  const views = new Map(engine.snapshot().map((v) => [v.logicId, v.phyId]));
  for (const logicId of engine.manuallySeparated()) {
    const phy = views.get(logicId);
    if (phy !== undefined && confirmed.has(phy) && !livePhys.has(phy)) {
      transitions.push(...engine.release(logicId));
      releasedWhileDown.push(logicId);
    }
  }
  const cycle = engine.cycle({ now });
  transitions.push(...cycle.transitions);
  return {
    source: 'state-file',
    transitions,
    problems,
    releasedWhileDown,
    confirmedManual: live.manuallySeparateNPU,
    resync: engine.snapshot().map((v) => v.logicId),
  };
}
