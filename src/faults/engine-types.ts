/**
 * Public input and output types of the fault engine.
 */
import type { FaultCode } from './codes.js';
import type { Assertion } from './duration.js';
import type { FaultLevel } from './levels.js';
import type { UpgradeReason, UpgradeType } from './upgrade-reasons.js';
import type { RunMode } from '../core/chips.js';

export type { Assertion } from './duration.js';

/** A fault event as the health layer hands it over (spec D.3/D.4). */
export interface FaultEvent {
  logicId: number;
  code: FaultCode;
  assertion: Assertion;
  /** DCMI severity (0 minor … 3 critical); synthetic events (polling, compensation) carry 0. Default 0. */
  severity?: number;
  /** Host time of the event in ms; 0 or absent means "now" (spec D.6). */
  timeMs?: number;
  /**
   * Recoveries only: the chip's code list as DCMI reported it when the health layer released the recovery (spec D.6
   * `current`). A recovery of a chip code in this list is ignored ("DCMI still reports it"). Absent: DCMI was not
   * asked or could not answer, and nothing counts as still reported. The engine never reads DCMI itself.
   */
  liveCodes?: readonly FaultCode[];
}

/** One chip known to the engine. */
export interface ChipIdentity {
  logicId: number;
  phyId: number;
}

/** Construction options. */
export interface EngineOptions {
  chips: readonly ChipIdentity[];
  /** Default `Ascend910`. Network health is evaluated only in this run mode (spec D.7). */
  runMode?: RunMode;
  /**
   * Groups of logic ids that share chip health (spec D.7 post-rule: Atlas 300I Duo with `-hotReset=0`): all chips
   * of a group are Unhealthy when one is.
   */
  healthGroups?: readonly (readonly number[])[];
  /**
   * Evaluate every chip in every cycle, as upstream does, instead of only chips with events, inputs or a due
   * timer. Same results, slower; the reference the optimised path is tested against.
   */
  evaluateAllChips?: boolean;
  /**
   * Spec D.7 `graceToleranceOn` (hot-reset.md §1.2; never true in upstream HEAD): a FreeRestartNPU chip used by a
   * pod is Healthy, so it is reset once the task has left. The agent sets it with `-hotReset=1` where the task-aware
   * engine runs.
   */
  graceTolerance?: boolean;
  /**
   * Ascend910A5 (spec D.6 "A5 is the same plus derived codes"): hyper-plane codes (UB) are applied to the chip's
   * fault list instead of being ignored, and the node-wide UB codes 020001002 / 020000002 are derived from the
   * chips with 81B18603 (docs/fault-engine.md "A5 hyper plane"). Default false.
   */
  hyperPlane?: boolean;
}

/** Input of one cycle. */
export interface CycleInput {
  /** Current time, ms. */
  now: number;
  /** Events taken in this cycle, in arrival order (recoveries carry DCMI's code list, {@link FaultEvent.liveCodes}). */
  events?: readonly FaultEvent[];
}

/** Chip or network scope. */
export type Scope = 'chip' | 'network';

/** Health value as kubelet / the ConfigMap see it. */
export type Health = 'Healthy' | 'Unhealthy';

/** Who or what removed an upgrade reason or released a chip. */
export type ReleaseCause =
  'operator' | 'ReleaseTimeWindow' | 'RecoverTimeout' | 'autofill-timer' | 'config-change' | 'startup-reconcile';

/** Something that changed in a cycle (or in a call), for logs, metrics and Kubernetes Events (spec K). */
export type Transition =
  | { kind: 'level'; logicId: number; scope: Scope; from: FaultLevel; to: FaultLevel }
  | { kind: 'health'; logicId: number; scope: Scope; from: Health; to: Health }
  | { kind: 'escalated'; logicId: number; code: string; level: FaultLevel; upgradeType: UpgradeType; time: number }
  | { kind: 'separated'; logicId: number; by: 'FaultFrequency' | 'startup'; code?: string }
  | { kind: 'separation-refused'; logicId: number; reason: string }
  | {
      kind: 'reasons-removed';
      logicId: number;
      reasons: UpgradeReason[];
      by: ReleaseCause;
      /** Spec K.2 / G.4: every removal except a configuration change is reported by a release Event. */
      k8sEvent: boolean;
    }
  | { kind: 'released'; logicId: number; by: ReleaseCause }
  | { kind: 'event-ignored'; logicId: number; code: string; assertion: Assertion; reason: string }
  | { kind: 'resync'; logicId: number; reason: string };

/** What one cycle did. The new state is read with `snapshot()`. */
export interface CycleResult {
  transitions: Transition[];
  /** Chips to re-read from DCMI in the next cycle (spec D.4 reset-finished event, G.3 step 5). */
  resync: number[];
  /** Chips whose published view may have changed. */
  changed: number[];
}

/** The published view of one chip. */
export interface ChipView {
  logicId: number;
  phyId: number;
  /** `Ascend910-<phy>` (spec H.5). */
  name: string;
  /** Effective chip level: codes + frequency + duration + upgrade reasons (spec E.4). */
  level: FaultLevel;
  /** Effective network level (spec E.4 GetNetworkFaultType). */
  networkLevel: FaultLevel;
  /** Chip-scope level from frequency/duration/reasons only (for per-code levels of the fault map, spec H.3). */
  chipRaisedLevel: FaultLevel;
  /** Network-scope counterpart of {@link chipRaisedLevel}. */
  networkRaisedLevel: FaultLevel;
  health: Health;
  networkHealth: Health;
  /** Current chip codes, upper-case canonical text, each once, in arrival order. */
  faultCodes: string[];
  /** Current parameter-plane codes, same form. */
  networkFaultCodes: string[];
  /** Earliest occurrence per current code (spec D.1 FaultTimeMap), keyed by upper-case text. */
  faultTimes: Record<string, number>;
  alarmRaisedTime: number;
  networkAlarmRaisedTime: number;
  reasons: UpgradeReason[];
  manuallySeparated: boolean;
  podUsed: boolean;
}
