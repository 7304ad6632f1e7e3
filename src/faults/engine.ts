/**
 * The fault engine: chip fault lists, levels, health, frequency/duration escalation, upgrade reasons and manual
 * separation (spec D.6, D.7, E.4, F.3–F.6, G). Pure and clock-injected: every method that depends on time takes
 * `now`; nothing here reads a clock, starts a timer or does I/O (architecture §2).
 *
 * A cycle ({@link FaultEngine.cycle}) is upstream's D.2 steps 6 and 10 in one call: take the events, apply them
 * (D.6), feed the duration machines (F.4), evaluate levels and health (E.4, D.7), publish the views, then run the
 * end-of-cycle clean-up (notices and recovered-in-advance codes leave the lists, escalated frequency counters
 * restart). See docs/fault-engine.md for how the agent and `npuctl policy replay` drive cycles.
 */
import {
  AIC_BUS_CODE,
  AIV_BUS_CODE,
  FormatTable,
  HBM_DOUBLE_BIT_CODE,
  HYPER_PLANE_CODES,
  RESET_FINISHED_CODE,
  UB_DERIVED_CODES,
  UB_PORT_DOWN_CODE,
  UB_SEPARATE_CODE,
  UB_SUBHEALTH_CODE,
  isNetworkCode,
  type FaultCode,
} from './codes.js';
import { RELEASE_NEVER, autofillReleaseSeconds, type FrequencyRule } from './customization.js';
import { newDurationData, runDuration, type Assertion, type DurationData } from './duration.js';
import type {
  ChipIdentity,
  ChipView,
  CycleInput,
  CycleResult,
  EngineOptions,
  FaultEvent,
  Health,
  ReleaseCause,
  Transition,
} from './engine-types.js';
import { levelOf, rankOf, type FaultLevel, type LevelRank } from './levels.js';
import type { FaultPolicy } from './policy.js';
import {
  AUTOFILL_CODE,
  parseManualNames,
  parseReasonsJson,
  reasonCode,
  reasonKey,
  type UpgradeReason,
  type UpgradeType,
} from './upgrade-reasons.js';
import type { RunMode } from '../core/chips.js';
import { chipName } from '../core/device-names.js';

const R = {
  Normal: rankOf('NormalNPU'),
  NotHandle: rankOf('NotHandleFault'),
  SubHealth: rankOf('SubHealthFault'),
  FreeRestart: rankOf('FreeRestartNPU'),
  PreSeparate: rankOf('PreSeparateNPU'),
  Separate: rankOf('SeparateNPU'),
  Manual: rankOf('ManuallySeparateNPU'),
};

/** AIC/AIV bus faults within this many ms of an HBM fault are dropped; older ones are released (spec D.6). */
export const HBM_CORRELATION_MS = 5000;
/** Logic ids the manual-separation cache accepts (spec G.1, M.10). */
export const MANUAL_LOGIC_ID_MAX = 15;
/** Most distinct codes whose last severity is remembered (upstream keeps all; we bound it). */
export const MAX_SEVERITY_ENTRIES = 4096;

/** Occurrence history of one (code, chip) pair (spec F.3). */
export interface FrequencyHistory {
  /** Occurrence times in arrival order; null until the first occurrence is recorded. */
  times: number[] | null;
  lastOccur: number;
  lastRecover: number;
}

/** A held AIC/AIV event (spec D.6 correlation filter). */
interface HeldEvent {
  code: FaultCode;
  assertion: Assertion;
  time: number;
  severity: number;
}

/** Mutable per-chip state. Exported for state export/import only. */
export interface ChipRuntime {
  logicId: number;
  phyId: number;
  faultCodes: FaultCode[];
  networkCodes: FaultCode[];
  faultTime: Map<FaultCode, number>;
  alarmRaisedTime: number;
  networkAlarmRaisedTime: number;
  podUsed: boolean;
  health: Health;
  networkHealth: Health;
  level: LevelRank;
  networkLevel: LevelRank;
  raisedChip: LevelRank;
  raisedNetwork: LevelRank;
  freq: Map<FaultCode, FrequencyHistory>;
  dur: Map<FaultCode, DurationData>;
  reasons: Map<string, UpgradeReason>;
  hbmLast: number;
  held: HeldEvent[];
  recoveredInAdvance: FaultCode[];
  recoveredInAdvanceNetwork: FaultCode[];
  freqClear: Set<FaultCode>;
  /** A5: 81B18603 was already in the chip list at the previous cycle (the one-cycle delay of 020001002). */
  ubConfirmed: boolean;
  /** Needs evaluation in the next cycle even without events. */
  dirty: boolean;
  /** Earliest time (ms) at which time alone can change the chip's result; Infinity when none. */
  deadline: number;
  view: ChipView | null;
}

/** Manual-separation cache entry (spec G.1/G.2). */
export interface ManualEntry {
  recordTime: number;
  /** Upstream's `!firstHandle`: the entry has been written to the ConfigMap at least once. */
  written: boolean;
}

function newChip(id: ChipIdentity): ChipRuntime {
  return {
    logicId: id.logicId,
    phyId: id.phyId,
    faultCodes: [],
    networkCodes: [],
    faultTime: new Map(),
    alarmRaisedTime: 0,
    networkAlarmRaisedTime: 0,
    podUsed: false,
    health: 'Healthy',
    networkHealth: 'Healthy',
    level: R.Normal,
    networkLevel: R.Normal,
    raisedChip: R.Normal,
    raisedNetwork: R.Normal,
    freq: new Map(),
    dur: new Map(),
    reasons: new Map(),
    hbmLast: 0,
    held: [],
    recoveredInAdvance: [],
    recoveredInAdvanceNetwork: [],
    freqClear: new Set(),
    ubConfirmed: false,
    dirty: true,
    deadline: Infinity,
    view: null,
  };
}

/**
 * Spec D.6 "append code to FaultCodes", holding each code once. Upstream appends duplicates, but every reader of the
 * list only asks membership (recoveries remove every occurrence, levels take the maximum, the view lists each code
 * once in first-arrival order), so a set-like list gives the same results; with duplicates a code repeating without
 * recovery (an event storm) made the list, and every evaluation of the chip, grow with the number of events.
 */
function appendOnce(list: FaultCode[], code: FaultCode): void {
  if (!list.includes(code)) list.push(code);
}

function* concat<T>(a: Iterable<T>, b: Iterable<T>): Iterable<T> {
  yield* a;
  yield* b;
}

function removeAll(list: FaultCode[], code: FaultCode): FaultCode[] {
  return list.includes(code) ? list.filter((c) => c !== code) : list;
}

/** Result of the start-up load (spec G.3). */
export interface StartupResult extends CycleResult {
  /** Things in the inherited ConfigMap values that were skipped. */
  problems: string[];
}

/** The fault engine of one node. */
export class FaultEngine {
  /** @internal */ readonly chips: Map<number, ChipRuntime>;
  /** @internal */ readonly order: ChipRuntime[];
  /** @internal */ policy: FaultPolicy;
  /** @internal */ formats: FormatTable;
  /** @internal */ readonly severity = new Map<FaultCode, number>();
  /** @internal */ readonly manual = new Map<number, ManualEntry>();
  /** @internal */ autofillReleaseSec: number;
  /** @internal */ autofillReleaseAt: number | null = null;
  readonly runMode: RunMode;
  readonly graceTolerance: boolean;
  /** See {@link EngineOptions.hyperPlane}. */
  readonly hyperPlane: boolean;
  private readonly healthGroups: readonly (readonly number[])[];
  private readonly evaluateAll: boolean;
  /** Events of the current cycle by chip (reused between cycles). */
  private readonly byChip = new Map<number, FaultEvent[]>();
  /**
   * DCMI's code list carried by a recovery ({@link FaultEvent.liveCodes}), kept beside the event while the AIC/AIV
   * hold (D.6) keeps it; not part of the exported state (a restart forgets it: nothing counts as still reported).
   */
  private readonly liveOf = new WeakMap<HeldEvent, readonly FaultCode[]>();
  /** Parsed reason codes by text (reason texts are configured codes or the autofill placeholder). */
  private readonly reasonCodes = new Map<string, FaultCode | null>();
  /** See {@link FaultEngine.durableRevision}. */
  private durableRev = 0;

  constructor(policy: FaultPolicy, options: EngineOptions) {
    this.policy = policy;
    this.runMode = options.runMode ?? 'Ascend910';
    this.graceTolerance = options.graceTolerance ?? false;
    this.hyperPlane = options.hyperPlane ?? false;
    this.healthGroups = options.healthGroups ?? [];
    this.evaluateAll = options.evaluateAllChips ?? false;
    this.order = [...options.chips].sort((a, b) => a.logicId - b.logicId).map(newChip);
    this.chips = new Map(this.order.map((c) => [c.logicId, c]));
    if (this.chips.size !== this.order.length) throw new RangeError('duplicate logic id in chips');
    this.formats = FormatTable.empty().reconfigure(
      concat(policy.codes.spellings, policy.customization.spellings),
      new Set(),
    );
    // Spec G.3 step 4: fixed at the first configuration load.
    this.autofillReleaseSec = autofillReleaseSeconds(policy.customization);
  }

  /**
   * A counter that grows whenever state that decides an escalation changed: a frequency occurrence or recovery was
   * recorded or a counter restarted (F.3), a duration machine got an event or flipped (F.4), an upgrade reason was
   * added, re-timed or removed (G.4), the manual-separation cache or its written marks changed (G.1, G.2), the
   * autofill timer was armed or fired (G.3), a policy or a state was loaded. The state file is saved promptly when
   * it moved (docs/fault-engine.md "Limits and durability"); fault lists and severities do not move it (they are
   * re-read from DCMI at start).
   */
  get durableRevision(): number {
    return this.durableRev;
  }

  /** @internal Marks a durable change (state import). */
  noteDurableChange(): void {
    this.durableRev++;
  }

  /** Number of code spellings held (E.3 format table), for the state bounds of docs/fault-engine.md. */
  get formatCount(): number {
    return this.formats.size;
  }

  /** Upper-case canonical text of a code (spec E.3). */
  formatCode(code: FaultCode): string {
    return this.formats.upper(code);
  }

  /** The current policy. */
  currentPolicy(): FaultPolicy {
    return this.policy;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Cycle

  /** Runs one cycle (see the module comment). */
  cycle(input: CycleInput): CycleResult {
    const { now } = input;
    const transitions: Transition[] = [];
    const resync: number[] = [];
    const byChip = this.byChip;
    byChip.clear();
    for (const ev of input.events ?? []) this.intake(ev, byChip, resync, transitions);
    if (this.autofillReleaseAt !== null && now >= this.autofillReleaseAt) this.releaseAutofill(transitions);
    const changed: number[] = [];
    for (const chip of this.order) {
      const evs = byChip.get(chip.logicId);
      if (!evs && !chip.dirty && now < chip.deadline && !this.evaluateAll) continue;
      chip.dirty = false;
      this.applyEvents(chip, evs ?? [], now, transitions);
      const flippedOn = this.feedDuration(chip, evs ?? [], now);
      this.evaluate(chip, now, transitions);
      chip.deadline = flippedOn ? now : this.nextDeadline(chip); // a flip is re-evaluated next cycle, even at the same time
      chip.view = null;
      changed.push(chip.logicId);
    }
    if (this.hyperPlane) this.deriveHyperPlane(now, transitions, changed);
    if (this.healthGroups.length > 0 && changed.length > 0) this.applyHealthGroups(transitions, changed);
    this.endOfCycle();
    return { transitions, resync, changed };
  }

  /** Spec D.4 (after the intake limiter, which the health layer replaces by a bounded queue). */
  private intake(ev: FaultEvent, byChip: Map<number, FaultEvent[]>, resync: number[], out: Transition[]): void {
    const chip = this.chips.get(ev.logicId);
    if (!chip) {
      out.push({
        kind: 'event-ignored',
        logicId: ev.logicId,
        code: this.formatCode(ev.code),
        assertion: ev.assertion,
        reason: 'unknown logic id',
      });
      return;
    }
    if (ev.code === 0) {
      out.push({
        kind: 'event-ignored',
        logicId: ev.logicId,
        code: '0',
        assertion: ev.assertion,
        reason: 'event id 0 (D.4)',
      });
      return;
    }
    if (ev.code === RESET_FINISHED_CODE) {
      resync.push(ev.logicId);
      out.push({ kind: 'resync', logicId: ev.logicId, reason: 'chip reset finished (8C2FA009, D.4)' });
      return;
    }
    // D.4: last writer wins, synthetic events write 0.
    const severity = ev.severity ?? 0;
    const prev = this.severity.get(ev.code);
    if (prev !== severity) {
      // Another chip's level may depend on it (E.4 fallback): upstream re-evaluates every chip each cycle.
      if (prev !== undefined) for (const c of this.order) if (c.faultCodes.includes(ev.code)) c.dirty = true;
      this.severity.delete(ev.code);
      this.severity.set(ev.code, severity);
    }
    if (this.severity.size > MAX_SEVERITY_ENTRIES) this.pruneSeverity();
    let list = byChip.get(ev.logicId);
    if (!list) byChip.set(ev.logicId, (list = []));
    list.push(ev);
  }

  private pruneSeverity(): void {
    const present = new Set<FaultCode>();
    for (const c of this.order) for (const code of c.faultCodes) present.add(code);
    for (const code of this.severity.keys()) {
      if (this.severity.size <= MAX_SEVERITY_ENTRIES) break;
      if (!present.has(code)) this.severity.delete(code);
    }
  }

  /**
   * Earliest time at which time alone can change the chip's result, so that a cycle can skip chips nothing
   * happened to and still give upstream's result (upstream re-evaluates every chip every cycle): a held AIC/AIV
   * event coming of age (D.6), an unpaired duration event passing its threshold (F.4), a frequency escalation
   * reaching its release window (F.3). Every comparison is strict, hence the +1.
   */
  private nextDeadline(chip: ChipRuntime): number {
    let t = Infinity;
    for (const e of chip.held) t = Math.min(t, e.time + HBM_CORRELATION_MS + 1);
    const { duration, frequency } = this.policy.customization;
    for (const [code, d] of chip.dur) {
      const rule = duration.get(code);
      const last = d.queue[d.queue.length - 1];
      if (!rule || !last) continue;
      t = Math.min(t, last.time + (d.timedOut ? rule.recoverTimeoutSec : rule.faultTimeoutSec) * 1000 + 1);
    }
    if (chip.reasons.size > 0) {
      for (const [code, h] of chip.freq) {
        const rule = frequency.get(code);
        if (!rule || h.times === null || h.lastRecover < h.lastOccur || rule.releaseTimeWindowSec === RELEASE_NEVER)
          continue;
        t = Math.min(t, h.lastRecover + rule.releaseTimeWindowSec * 1000 + 1);
      }
    }
    return t;
  }

  /** Numeric code of a reason, cached (hex parsing is not free and runs in every evaluation). */
  private codeOf(r: UpgradeReason): FaultCode | null {
    let c = this.reasonCodes.get(r.fault_code);
    if (c === undefined) {
      c = reasonCode(r);
      if (this.reasonCodes.size > 4096) this.reasonCodes.clear();
      this.reasonCodes.set(r.fault_code, c);
    }
    return c;
  }

  /** Spec D.6 for one chip. */
  private applyEvents(chip: ChipRuntime, events: readonly FaultEvent[], now: number, out: Transition[]): void {
    let chipEvents: HeldEvent[] = [];
    const netEvents: HeldEvent[] = [];
    const hyperEvents: HeldEvent[] = [];
    for (const ev of events) {
      const e: HeldEvent = {
        code: ev.code,
        assertion: ev.assertion,
        time: ev.timeMs || now,
        severity: ev.severity ?? 0,
      };
      if (ev.liveCodes !== undefined && ev.assertion === 'recover') this.liveOf.set(e, ev.liveCodes);
      if (isNetworkCode(ev.code)) netEvents.push(e);
      else if (HYPER_PLANE_CODES.has(ev.code) && this.hyperPlane) {
        if (UB_DERIVED_CODES.has(ev.code)) {
          out.push({
            kind: 'event-ignored',
            logicId: chip.logicId,
            code: this.formatCode(ev.code),
            assertion: ev.assertion,
            reason: 'derived UB code: the engine derives it from 81B18603 across the node (D.6)',
          });
        } else hyperEvents.push(e);
      } else if (HYPER_PLANE_CODES.has(ev.code)) {
        out.push({
          kind: 'event-ignored',
          logicId: chip.logicId,
          code: this.formatCode(ev.code),
          assertion: ev.assertion,
          reason: 'hyper-plane code: handled on Ascend910A5 only (D.6)',
        });
      } else chipEvents.push(e);
    }
    chipEvents = this.correlationHold(chip, chipEvents, now, out);
    const freqRules = this.policy.customization.frequency;
    const durRules = this.policy.customization.duration;

    // Chip codes: recoveries first, then occurrences (D.6). `current` is the code list the health layer read from
    // DCMI when it released the recovery, carried on the event: the engine never calls the hardware.
    if (chipEvents.length > 0) {
      for (const e of chipEvents) {
        if (e.assertion === 'recover') {
          if (this.liveOf.get(e)?.includes(e.code)) {
            out.push({
              kind: 'event-ignored',
              logicId: chip.logicId,
              code: this.formatCode(e.code),
              assertion: e.assertion,
              reason: 'DCMI still reports the code (D.6)',
            });
          } else if (!chip.faultCodes.includes(e.code)) chip.recoveredInAdvance.push(e.code);
          else {
            chip.faultCodes = removeAll(chip.faultCodes, e.code);
            chip.faultTime.delete(e.code);
            if (!durRules.has(e.code)) this.recordRecover(chip, e.code, e.time, freqRules.get(e.code));
          }
        } else if (e.assertion === 'once') chip.recoveredInAdvance.push(e.code);
      }
      for (const e of chipEvents) {
        if (e.assertion === 'recover') continue;
        appendOnce(chip.faultCodes, e.code);
        const t = chip.faultTime.get(e.code);
        if (t === undefined || t > e.time) chip.faultTime.set(e.code, e.time);
        if (!durRules.has(e.code)) this.recordOccur(chip, e.code, e.time, freqRules.get(e.code));
      }
    }
    // A5 hyper-plane codes (D.5 "analogous"): into the chip list, without the "DCMI still reports it" check (the
    // health layer reads the UB ports, not only DCMI's list).
    for (const e of hyperEvents) {
      if (e.assertion === 'recover') {
        if (!chip.faultCodes.includes(e.code)) chip.recoveredInAdvance.push(e.code);
        else {
          chip.faultCodes = removeAll(chip.faultCodes, e.code);
          chip.faultTime.delete(e.code);
          if (!durRules.has(e.code)) this.recordRecover(chip, e.code, e.time, freqRules.get(e.code));
        }
      } else if (e.assertion === 'once') chip.recoveredInAdvance.push(e.code);
    }
    for (const e of hyperEvents) {
      if (e.assertion === 'recover') continue;
      appendOnce(chip.faultCodes, e.code);
      const t = chip.faultTime.get(e.code);
      if (t === undefined || t > e.time) chip.faultTime.set(e.code, e.time);
      if (!durRules.has(e.code)) this.recordOccur(chip, e.code, e.time, freqRules.get(e.code));
    }
    // Network codes: same, without the "DCMI still reports it" check.
    if (netEvents.length > 0) {
      for (const e of netEvents) {
        if (e.assertion === 'recover') {
          if (!chip.networkCodes.includes(e.code)) chip.recoveredInAdvanceNetwork.push(e.code);
          else {
            chip.networkCodes = removeAll(chip.networkCodes, e.code);
            chip.faultTime.delete(e.code);
            if (!durRules.has(e.code)) this.recordRecover(chip, e.code, e.time, freqRules.get(e.code));
          }
        } else if (e.assertion === 'once') chip.recoveredInAdvanceNetwork.push(e.code);
      }
      for (const e of netEvents) {
        if (e.assertion === 'recover') continue;
        appendOnce(chip.networkCodes, e.code);
        const t = chip.faultTime.get(e.code);
        if (t === undefined || t > e.time) chip.faultTime.set(e.code, e.time);
        if (!durRules.has(e.code)) this.recordOccur(chip, e.code, e.time, freqRules.get(e.code));
      }
    }
    this.setAlarmTimes(chip, now);
  }

  /**
   * A5 UB derived codes across the node (upstream's overall hyper-plane fault): every chip with 81B18603 in its list
   * gets 020000002 (SubHealth) when all chips of the node have it (a fabric-wide fault isolates no chip), else
   * 020001002 (Separate) — but only from the second cycle that sees the chip's 81B18603, so that faults of several
   * chips arriving in different cycles do not separate the first ones (upstream's one-cycle confirmation). A chip
   * whose 81B18603 is gone loses both. A chip whose derived code changed is evaluated again in this cycle.
   */
  private deriveHyperPlane(now: number, out: Transition[], changed: number[]): void {
    let downCount = 0;
    for (const c of this.order) if (c.faultCodes.includes(UB_PORT_DOWN_CODE)) downCount++;
    const all = downCount > 0 && downCount === this.order.length;
    for (const chip of this.order) {
      let want: FaultCode | null = null;
      if (!chip.faultCodes.includes(UB_PORT_DOWN_CODE)) chip.ubConfirmed = false;
      else if (all) want = UB_SUBHEALTH_CODE;
      else if (chip.ubConfirmed) want = UB_SEPARATE_CODE;
      else {
        chip.ubConfirmed = true;
        chip.dirty = true; // decided at the next cycle (the store's period tick runs one)
      }
      const stale = chip.faultCodes.filter((c) => UB_DERIVED_CODES.has(c) && c !== want);
      const missing = want !== null && !chip.faultCodes.includes(want);
      if (stale.length === 0 && !missing) continue;
      for (const c of stale) {
        chip.faultCodes = removeAll(chip.faultCodes, c);
        chip.faultTime.delete(c);
      }
      if (want !== null && missing) {
        chip.faultCodes.push(want);
        chip.faultTime.set(want, now);
      }
      this.setAlarmTimes(chip, now);
      this.evaluate(chip, now, out);
      chip.view = null;
      if (!changed.includes(chip.logicId)) changed.push(chip.logicId);
    }
  }

  private setAlarmTimes(chip: ChipRuntime, now: number): void {
    if (chip.faultCodes.length === 0) chip.alarmRaisedTime = 0;
    else if (chip.alarmRaisedTime === 0) chip.alarmRaisedTime = now;
    if (chip.networkCodes.length === 0) chip.networkAlarmRaisedTime = 0;
    else if (chip.networkAlarmRaisedTime === 0) chip.networkAlarmRaisedTime = now;
  }

  /**
   * Spec D.6 HBM/AIC correlation: only when 80E01801 has a FaultDuration rule. AIC/AIV bus faults are held; one
   * within 5 s (strict) of the latest HBM occurrence is dropped, one older than 5 s (strict) is released.
   */
  private correlationHold(chip: ChipRuntime, events: HeldEvent[], now: number, out: Transition[]): HeldEvent[] {
    if (!this.policy.customization.duration.has(HBM_DOUBLE_BIT_CODE)) {
      if (chip.held.length === 0) return events;
      // The rule went away while events were held: let them through rather than lose them.
      const released = chip.held;
      chip.held = [];
      return [...released, ...events];
    }
    const passed: HeldEvent[] = [];
    for (const e of events) {
      if (e.code === HBM_DOUBLE_BIT_CODE && e.assertion !== 'recover') chip.hbmLast = e.time;
      if (e.code === AIC_BUS_CODE || e.code === AIV_BUS_CODE) chip.held.push(e);
      else passed.push(e);
    }
    if (chip.held.length === 0) return passed;
    chip.held.sort((a, b) => a.time - b.time);
    const keep: HeldEvent[] = [];
    for (const e of chip.held) {
      if (Math.abs(chip.hbmLast - e.time) < HBM_CORRELATION_MS) {
        out.push({
          kind: 'event-ignored',
          logicId: chip.logicId,
          code: this.formatCode(e.code),
          assertion: e.assertion,
          reason: 'accompanies an HBM fault (80E01801) within 5 s (D.6)',
        });
      } else if (now - e.time > HBM_CORRELATION_MS) passed.push(e);
      else keep.push(e);
    }
    chip.held = keep;
    return passed;
  }

  private recordOccur(chip: ChipRuntime, code: FaultCode, time: number, rule: FrequencyRule | undefined): void {
    if (!rule) return;
    let h = chip.freq.get(code);
    if (!h) chip.freq.set(code, (h = { times: null, lastOccur: 0, lastRecover: 0 }));
    (h.times ??= []).push(time);
    h.lastOccur = time;
    this.durableRev++;
  }

  private recordRecover(chip: ChipRuntime, code: FaultCode, time: number, rule: FrequencyRule | undefined): void {
    if (!rule) return;
    let h = chip.freq.get(code);
    if (!h) chip.freq.set(code, (h = { times: null, lastOccur: 0, lastRecover: 0 }));
    h.lastRecover = time;
    this.durableRev++;
  }

  /**
   * Spec F.4: every raw event of the chip enters the machines of configured codes; every machine runs. Returns
   * true when a machine flipped to timed-out (its queue is cleaned at the next cycle, which must then run).
   */
  private feedDuration(chip: ChipRuntime, events: readonly FaultEvent[], now: number): boolean {
    const rules = this.policy.customization.duration;
    if (rules.size === 0 || (chip.dur.size === 0 && events.length === 0)) return false;
    for (const ev of events) {
      if (!rules.has(ev.code)) continue;
      let d = chip.dur.get(ev.code);
      if (!d) chip.dur.set(ev.code, (d = newDurationData()));
      d.queue.push({ assertion: ev.assertion, time: ev.timeMs || now });
      this.durableRev++;
    }
    const freqRules = this.policy.customization.frequency;
    let flippedOn = false;
    for (const [code, d] of chip.dur) {
      const rule = rules.get(code);
      if (!rule) continue;
      const flip = runDuration(d, rule, now);
      if (flip !== 'none') this.durableRev++;
      if (flip === 'on') {
        this.recordOccur(chip, code, d.alarmTime, freqRules.get(code));
        flippedOn = true;
      } else if (flip === 'off') this.recordRecover(chip, code, d.alarmTime, freqRules.get(code));
    }
    return flippedOn;
  }

  /** Spec E.4 GetFaultTypeByCode over chip codes (parameter-plane codes excluded). */
  private chipCodeRank(codes: readonly FaultCode[]): LevelRank {
    let best = -1;
    let any = false;
    const table = this.policy.codes.chip;
    for (const c of codes) {
      if (isNetworkCode(c)) continue;
      any = true;
      const r = table.get(c);
      if (r !== undefined && r > best) best = r;
    }
    if (!any) return R.Normal;
    if (best >= 0) return best;
    // None of the codes is configured: fall back to the severity last seen for each (E.4).
    for (const c of codes) {
      if (isNetworkCode(c)) continue;
      const s = this.severity.get(c);
      if (s === undefined || s > 1) return R.Separate;
    }
    return R.NotHandle;
  }

  /** Spec E.4 GetNetworkFaultTypeByCode. */
  private networkCodeRank(codes: readonly FaultCode[]): LevelRank {
    let best = -1;
    let any = false;
    const table = this.policy.codes.network;
    for (const c of codes) {
      if (!isNetworkCode(c)) continue;
      any = true;
      const r = table.get(c);
      if (r !== undefined && r > best) best = r;
    }
    if (!any) return R.Normal;
    return best >= 0 ? best : R.PreSeparate;
  }

  /** Level of the given chip codes alone (GetFaultTypeByCode), e.g. for K.1 event actions. */
  codeLevel(codes: readonly FaultCode[]): FaultLevel {
    return levelOf(this.chipCodeRank(codes));
  }

  /** Level of the given network codes alone (GetNetworkFaultTypeByCode). */
  networkCodeLevel(codes: readonly FaultCode[]): FaultLevel {
    return levelOf(this.networkCodeRank(codes));
  }

  /** Spec E.4 GetFaultType / GetNetworkFaultType with their side effects (F.3, F.4), then D.7. */
  private evaluate(chip: ChipRuntime, now: number, out: Transition[]): void {
    let raisedChip = R.Normal;
    let raisedNet = R.Normal;
    const c = this.policy.customization;
    for (const [code, h] of chip.freq) {
      const rule = c.frequency.get(code);
      if (!rule || h.times === null) continue;
      const r = this.evaluateFrequency(chip, code, h, rule, now, out);
      if (isNetworkCode(code)) raisedNet = Math.max(raisedNet, r);
      else raisedChip = Math.max(raisedChip, r);
    }
    for (const [code, d] of chip.dur) {
      const rule = c.duration.get(code);
      if (!rule) continue;
      if (d.timedOut) {
        const r = rankOf(rule.handling);
        if (isNetworkCode(code)) raisedNet = Math.max(raisedNet, r);
        else raisedChip = Math.max(raisedChip, r);
        this.upsertReason(chip, code, rule.handling, 'FaultDuration', d.alarmTime, out);
      } else if (
        d.recoverDuration > rule.recoverTimeoutSec * 1000 &&
        this.findReason(chip, code, null, 'FaultDuration')
      ) {
        this.removeReasons(
          chip,
          (r) => r.upgrade_type === 'FaultDuration' && this.codeOf(r) === code,
          'RecoverTimeout',
          true,
          out,
        );
      }
    }
    for (const r of chip.reasons.values()) {
      const code = this.codeOf(r);
      if (code === null) continue; // E.4 note 4: autofill reasons never contribute
      if (isNetworkCode(code)) raisedNet = Math.max(raisedNet, rankOf(r.fault_level));
      else raisedChip = Math.max(raisedChip, rankOf(r.fault_level));
    }
    const level = Math.max(this.chipCodeRank(chip.faultCodes), raisedChip);
    const networkLevel = Math.max(this.networkCodeRank(chip.networkCodes), raisedNet);
    chip.raisedChip = raisedChip;
    chip.raisedNetwork = raisedNet;
    this.setLevel(chip, 'chip', level, out);
    this.setLevel(chip, 'network', networkLevel, out);
    this.setHealth(chip, 'chip', this.chipHealth(chip), out);
    if (this.runMode === 'Ascend910') {
      // D.7: network health is Healthy only for NormalNPU / NotHandleFault.
      this.setHealth(chip, 'network', networkLevel <= R.NotHandle ? 'Healthy' : 'Unhealthy', out);
    }
  }

  /** Spec D.7 chip health. */
  private chipHealth(chip: ChipRuntime): Health {
    if (chip.level <= R.SubHealth) return 'Healthy';
    if (chip.level === R.PreSeparate && chip.podUsed) return 'Healthy';
    // FreeRestartNPU "in use" is Healthy only with grace tolerance (never on in upstream HEAD; -hotReset=1 here).
    if (chip.level === R.FreeRestart && chip.podUsed && this.graceTolerance) return 'Healthy';
    return 'Unhealthy';
  }

  private setLevel(chip: ChipRuntime, scope: 'chip' | 'network', rank: LevelRank, out: Transition[]): void {
    const prev = scope === 'chip' ? chip.level : chip.networkLevel;
    if (prev === rank) return;
    if (scope === 'chip') chip.level = rank;
    else chip.networkLevel = rank;
    out.push({ kind: 'level', logicId: chip.logicId, scope, from: levelOf(prev), to: levelOf(rank) });
  }

  private setHealth(chip: ChipRuntime, scope: 'chip' | 'network', h: Health, out: Transition[]): void {
    const prev = scope === 'chip' ? chip.health : chip.networkHealth;
    if (prev === h) return;
    if (scope === 'chip') chip.health = h;
    else chip.networkHealth = h;
    out.push({ kind: 'health', logicId: chip.logicId, scope, from: prev, to: h });
  }

  private applyHealthGroups(out: Transition[], changed: number[]): void {
    for (const group of this.healthGroups) {
      const members = group.map((id) => this.chips.get(id)).filter((c): c is ChipRuntime => c !== undefined);
      if (!members.some((c) => c.health === 'Unhealthy')) continue;
      for (const c of members) {
        if (c.health === 'Unhealthy') continue;
        this.setHealth(c, 'chip', 'Unhealthy', out);
        c.view = null;
        c.dirty = true; // re-evaluate next cycle so the group rule is reconsidered
        if (!changed.includes(c.logicId)) changed.push(c.logicId);
      }
    }
  }

  /** Spec F.3 evaluation of one (code, chip) pair; returns the level it contributes. */
  private evaluateFrequency(
    chip: ChipRuntime,
    code: FaultCode,
    h: FrequencyHistory,
    rule: FrequencyRule,
    now: number,
    out: Transition[],
  ): LevelRank {
    const times = h.times!;
    // F.3: drop occurrences older than (now_s - TimeWindow) * 1000, now_s truncated to seconds; strict <.
    const start = (Math.floor(now / 1000) - rule.timeWindowSec) * 1000;
    let drop = 0;
    while (drop < times.length && times[drop]! < start) drop++;
    if (drop > 0) times.splice(0, drop);
    if (times.length >= rule.times) {
      if (rule.handling === 'ManuallySeparateNPU') this.addManual(chip, now, code, out);
      chip.freqClear.add(code);
      this.upsertReason(chip, code, rule.handling, 'FaultFrequency', h.lastOccur, out);
      return rankOf(rule.handling);
    }
    if (h.lastRecover >= h.lastOccur && now - h.lastRecover > rule.releaseTimeWindowSec * 1000) {
      // F.3 release: strictly more than ReleaseTimeWindow since the last recovery, no occurrence since.
      this.removeReasons(
        chip,
        (r) => r.upgrade_type === 'FaultFrequency' && this.codeOf(r) === code,
        'ReleaseTimeWindow',
        true,
        out,
      );
    } else {
      if (this.findReason(chip, code, rule.handling, 'FaultFrequency')) {
        // Escalation active: refresh its time; occurrences are not counted meanwhile.
        this.upsertReason(chip, code, rule.handling, 'FaultFrequency', h.lastOccur, out);
        chip.freqClear.add(code);
      }
    }
    return R.Normal;
  }

  private upsertReason(
    chip: ChipRuntime,
    code: FaultCode,
    level: FaultLevel,
    type: UpgradeType,
    time: number,
    out: Transition[],
  ): void {
    const prev = this.findReason(chip, code, level, type);
    if (prev) {
      if (prev.upgrade_time !== time) this.durableRev++;
      prev.upgrade_time = time;
      return;
    }
    this.durableRev++;
    const r: UpgradeReason = {
      upgrade_time: time,
      fault_code: this.formats.lower(code),
      fault_level: level,
      upgrade_type: type,
    };
    chip.reasons.set(reasonKey(r), r);
    out.push({
      kind: 'escalated',
      logicId: chip.logicId,
      code: this.formats.upper(code),
      level,
      upgradeType: type,
      time,
    });
  }

  /** The chip's reason for (code, level, type); `level` null matches any level. */
  private findReason(
    chip: ChipRuntime,
    code: FaultCode,
    level: FaultLevel | null,
    type: UpgradeType,
  ): UpgradeReason | undefined {
    for (const r of chip.reasons.values()) {
      if (r.upgrade_type === type && (level === null || r.fault_level === level) && this.codeOf(r) === code) return r;
    }
    return undefined;
  }

  /** Removes matching reasons (spec G.4) and, when the chip is left without a ManuallySeparateNPU reason, releases it. */
  private removeReasons(
    chip: ChipRuntime,
    match: (r: UpgradeReason) => boolean,
    by: ReleaseCause,
    k8sEvent: boolean,
    out: Transition[],
  ): UpgradeReason[] {
    const removed: UpgradeReason[] = [];
    for (const [k, r] of chip.reasons) {
      if (match(r)) {
        chip.reasons.delete(k);
        removed.push(r);
      }
    }
    if (removed.length === 0) return removed;
    this.durableRev++;
    chip.dirty = true;
    out.push({ kind: 'reasons-removed', logicId: chip.logicId, reasons: removed, by, k8sEvent });
    if (
      by !== 'config-change' &&
      removed.some((r) => r.fault_level === 'ManuallySeparateNPU') &&
      ![...chip.reasons.values()].some((r) => r.fault_level === 'ManuallySeparateNPU') &&
      this.manual.delete(chip.logicId)
    ) {
      out.push({ kind: 'released', logicId: chip.logicId, by });
    }
    return removed;
  }

  /** Spec G.1: adds (or refreshes) a chip in the manual-separation cache. */
  private addManual(chip: ChipRuntime, now: number, code: FaultCode, out: Transition[]): void {
    if (chip.logicId < 0 || chip.logicId > MANUAL_LOGIC_ID_MAX) {
      const key = reasonKey({
        fault_code: this.formats.lower(code),
        fault_level: 'ManuallySeparateNPU',
        upgrade_type: 'FaultFrequency',
      });
      if (!chip.reasons.has(key)) {
        out.push({ kind: 'separation-refused', logicId: chip.logicId, reason: 'logic id outside 0..15 (G.1, M.10)' });
      }
      return;
    }
    const isNew = !this.manual.has(chip.logicId);
    this.manual.set(chip.logicId, { recordTime: now, written: false });
    this.durableRev++;
    if (isNew)
      out.push({ kind: 'separated', logicId: chip.logicId, by: 'FaultFrequency', code: this.formats.upper(code) });
  }

  private releaseAutofill(out: Transition[]): void {
    this.autofillReleaseAt = null;
    this.durableRev++;
    for (const chip of this.order) {
      this.removeReasons(chip, (r) => r.upgrade_type === 'FaultAutofill', 'autofill-timer', true, out);
    }
  }

  /** D.2 step 10: notices and recovered-in-advance codes leave the lists; escalated counters restart (F.3). */
  private endOfCycle(): void {
    for (const chip of this.order) {
      if (chip.recoveredInAdvance.length > 0 || chip.recoveredInAdvanceNetwork.length > 0) {
        // Keep the published view as it was before the clean-up.
        chip.view ??= this.buildView(chip);
        for (const code of chip.recoveredInAdvance) {
          chip.faultCodes = removeAll(chip.faultCodes, code);
          chip.faultTime.delete(code);
        }
        for (const code of chip.recoveredInAdvanceNetwork) {
          chip.networkCodes = removeAll(chip.networkCodes, code);
          chip.faultTime.delete(code);
        }
        chip.recoveredInAdvance = [];
        chip.recoveredInAdvanceNetwork = [];
        if (chip.faultCodes.length === 0) chip.alarmRaisedTime = 0;
        if (chip.networkCodes.length === 0) chip.networkAlarmRaisedTime = 0;
        chip.dirty = true;
      }
      if (chip.freqClear.size > 0) {
        // Upstream clears one escalated counter per chip per cycle (M.8); we clear every escalated one.
        for (const code of chip.freqClear) {
          const h = chip.freq.get(code);
          if (h?.times && h.times.length > 0) {
            h.times = [];
            this.durableRev++;
          }
        }
        chip.freqClear.clear();
      }
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Other inputs

  /** Whether an active pod's annotation lists the chip (spec D.7 PreSeparateNPU rule). Effective at the next cycle. */
  setPodUsed(logicId: number, used: boolean): void {
    const chip = this.chips.get(logicId);
    if (!chip || chip.podUsed === used) return;
    chip.podUsed = used;
    chip.dirty = true;
  }

  /**
   * An operator deleted the chip's name from `ManuallySeparateNPU` (spec G.2): the chip leaves the cache and its
   * ManuallySeparateNPU reasons are removed (a release Event, K.2). Levels follow at the next cycle.
   */
  release(logicId: number): Transition[] {
    const out: Transition[] = [];
    const chip = this.chips.get(logicId);
    if (!chip || !this.manual.delete(logicId)) return out;
    this.durableRev++;
    this.removeReasons(chip, (r) => r.fault_level === 'ManuallySeparateNPU', 'operator', true, out);
    out.push({ kind: 'released', logicId, by: 'operator' });
    chip.dirty = true;
    return out;
  }

  /**
   * Spec G.2 reconciliation against the live ConfigMap value, all in one: releases what
   * {@link compareManualSeparation} finds, then marks every entry as written (upstream's behaviour: "written" on the
   * write *attempt*). Prefer `compareManualSeparation` + `release` + {@link markManualWritten} after a successful
   * write; this stays for callers that reconcile and write in one step.
   */
  reconcileManualSeparation(liveValue: string): { transitions: Transition[]; problems: string[] } {
    const cmp = this.compareManualSeparation(liveValue);
    const transitions: Transition[] = [];
    for (const logicId of cmp.released) transitions.push(...this.release(logicId));
    this.markManualWritten(this.manual.keys());
    return { transitions, problems: cmp.problems };
  }

  /**
   * Spec G.2 comparison of the cache with the live `ManuallySeparateNPU` value; changes nothing. `released`: logic
   * ids of entries already written once whose phy id the live value no longer lists (the operator released them;
   * give each to {@link release}). `notAdopted`: phy ids listed live but not in the cache (G.2: not adopted, they
   * disappear at the next write), including phy ids not on this node. `problems`: unreadable entries (G.2 rules).
   */
  compareManualSeparation(liveValue: string): { released: number[]; notAdopted: number[]; problems: string[] } {
    const { phyIds, problems } = parseManualNames(liveValue, this.runMode);
    const live = new Set(phyIds);
    const released: number[] = [];
    for (const chip of this.order) {
      const entry = this.manual.get(chip.logicId);
      if (entry?.written && !live.has(chip.phyId)) released.push(chip.logicId);
    }
    const cachedPhys = new Set(this.order.filter((c) => this.manual.has(c.logicId)).map((c) => c.phyId));
    const notAdopted = [...live].filter((p) => !cachedPhys.has(p));
    return { released, notAdopted, problems };
  }

  /**
   * Marks cache entries as written to the ConfigMap (upstream's `firstHandle = false`). Call it after a
   * *successful* write with the logic ids whose names that write contained; ids not in the cache are ignored.
   * Returns how many entries changed from unwritten to written.
   */
  markManualWritten(logicIds: Iterable<number>): number {
    let n = 0;
    for (const id of [...logicIds]) {
      const e = this.manual.get(id);
      if (e && !e.written) {
        e.written = true;
        n++;
      }
    }
    if (n > 0) this.durableRev++;
    return n;
  }

  /** Logic ids in the manual-separation cache whose entry has been written at least once, ascending. */
  manualWritten(): number[] {
    return this.order.filter((c) => this.manual.get(c.logicId)?.written === true).map((c) => c.logicId);
  }

  /** The `ManuallySeparateNPU` value to write: names ordered by logic id (spec G.2). */
  manualSeparationValue(): string {
    return this.order
      .filter((c) => this.manual.has(c.logicId))
      .map((c) => chipName(this.runMode, c.phyId))
      .join(',');
  }

  /** Logic ids in the manual-separation cache, ascending. */
  manuallySeparated(): number[] {
    return this.order.filter((c) => this.manual.has(c.logicId)).map((c) => c.logicId);
  }

  /**
   * Applies a new policy (spec F.3 reload, G.6): histories of codes still configured are kept, others deleted;
   * FaultFrequency/FaultDuration reasons of codes no longer configured in their section are dropped (no Event,
   * manual-separation cache untouched), re-levelled when the level changed; autofill reasons stay.
   * `resetHistory` clears every frequency/duration history first (F.1: malformed ConfigMap document).
   * Afterwards the engine holds nothing for codes the new policy does not name beyond what its chips and reasons
   * still carry: the code spellings are pruned too ({@link FormatTable.reconfigure}), so loading a huge table and
   * reverting gives the memory back.
   */
  setPolicy(policy: FaultPolicy, options: { resetHistory?: boolean } = {}): Transition[] {
    const out: Transition[] = [];
    this.policy = policy;
    this.durableRev++;
    this.reasonCodes.clear();
    const { frequency, duration } = policy.customization;
    for (const chip of this.order) {
      if (options.resetHistory) {
        chip.freq.clear();
        chip.dur.clear();
      }
      for (const code of [...chip.freq.keys()]) if (!frequency.has(code)) chip.freq.delete(code);
      for (const code of [...chip.dur.keys()]) if (!duration.has(code)) chip.dur.delete(code);
      const dropped: UpgradeReason[] = [];
      for (const [key, r] of [...chip.reasons]) {
        if (r.upgrade_type === 'FaultAutofill') continue;
        const code = reasonCode(r);
        const rule =
          code === null ? undefined : r.upgrade_type === 'FaultFrequency' ? frequency.get(code) : duration.get(code);
        if (!rule) {
          chip.reasons.delete(key);
          dropped.push(r);
        } else if (rule.handling !== r.fault_level) {
          chip.reasons.delete(key);
          const moved: UpgradeReason = { ...r, fault_level: rule.handling };
          const k = reasonKey(moved);
          const prev = chip.reasons.get(k);
          if (!prev || prev.upgrade_time < moved.upgrade_time) chip.reasons.set(k, moved);
        }
      }
      if (dropped.length > 0)
        out.push({
          kind: 'reasons-removed',
          logicId: chip.logicId,
          reasons: dropped,
          by: 'config-change',
          k8sEvent: false,
        });
      chip.dirty = true;
    }
    this.pruneFormats();
    return out;
  }

  /**
   * @internal Rebuilds the format table for the current policy, keeping the spellings of codes still in use
   * (after {@link setPolicy} and after a state import).
   */
  pruneFormats(): void {
    const inUse = new Set<FaultCode>();
    for (const chip of this.order) {
      for (const c of chip.faultCodes) inUse.add(c);
      for (const c of chip.networkCodes) inUse.add(c);
      for (const c of chip.faultTime.keys()) inUse.add(c);
      for (const c of chip.freq.keys()) inUse.add(c);
      for (const c of chip.dur.keys()) inUse.add(c);
      for (const e of chip.held) inUse.add(e.code);
      for (const c of chip.recoveredInAdvance) inUse.add(c);
      for (const c of chip.recoveredInAdvanceNetwork) inUse.add(c);
      for (const r of chip.reasons.values()) {
        const c = this.codeOf(r);
        if (c !== null) inUse.add(c);
      }
    }
    const { codes, customization } = this.policy;
    this.formats = this.formats.reconfigure(concat(codes.spellings, customization.spellings), inUse);
  }

  /**
   * Spec G.3 start-up load from the inherited device-info ConfigMap values, then one cycle with the re-injected
   * reasons. Every chip is returned for re-sync against DCMI.
   */
  loadStartup(input: { manuallySeparateNPU: string; upgradeFaultReason: string; now: number }): StartupResult {
    const { now } = input;
    const transitions: Transition[] = [];
    const names = parseManualNames(input.manuallySeparateNPU, this.runMode);
    const parsed = parseReasonsJson(input.upgradeFaultReason);
    const problems = [...names.problems, ...parsed.problems];
    const byPhy = new Map(this.order.map((c) => [c.phyId, c]));
    const listed = new Set(names.phyIds);
    const reasons = parsed.reasons;
    let autofilled = false;
    for (const phy of listed) {
      const list = reasons.get(phy) ?? [];
      if (!list.some((r) => r.fault_level === 'ManuallySeparateNPU')) {
        list.push({
          upgrade_time: now,
          fault_code: AUTOFILL_CODE,
          fault_level: 'ManuallySeparateNPU',
          upgrade_type: 'FaultAutofill',
        });
        reasons.set(phy, list);
        autofilled = true;
      }
    }
    for (const [phy, list] of reasons) {
      if (!listed.has(phy))
        reasons.set(
          phy,
          list.filter((r) => r.fault_level !== 'ManuallySeparateNPU'),
        );
    }
    for (const [phy, list] of reasons) {
      const chip = byPhy.get(phy);
      if (!chip) {
        if (list.length > 0)
          problems.push(`UpgradeFaultReason names phy id ${phy}, which is not on this node; dropped (G.3)`);
        continue;
      }
      chip.reasons.clear();
      for (const r of list) chip.reasons.set(reasonKey(r), { ...r });
      chip.dirty = true;
    }
    for (const phy of listed) {
      const chip = byPhy.get(phy);
      if (!chip) {
        problems.push(`ManuallySeparateNPU names phy id ${phy}, which is not on this node; skipped (G.3)`);
        continue;
      }
      if (chip.logicId < 0 || chip.logicId > MANUAL_LOGIC_ID_MAX) {
        transitions.push({
          kind: 'separation-refused',
          logicId: chip.logicId,
          reason: 'logic id outside 0..15 (G.1, M.10)',
        });
        continue;
      }
      this.manual.set(chip.logicId, { recordTime: now, written: false });
      transitions.push({ kind: 'separated', logicId: chip.logicId, by: 'startup' });
    }
    if (autofilled && this.autofillReleaseSec !== RELEASE_NEVER)
      this.autofillReleaseAt = now + this.autofillReleaseSec * 1000;
    this.durableRev++;
    const events: FaultEvent[] = [];
    for (const chip of this.order) {
      for (const r of chip.reasons.values()) {
        const code = reasonCode(r);
        if (code !== null)
          events.push({ logicId: chip.logicId, code, assertion: 'occur', severity: 0, timeMs: r.upgrade_time });
      }
    }
    const res = this.cycle({ now, events });
    return {
      transitions: [...transitions, ...res.transitions],
      resync: this.order.map((c) => c.logicId),
      changed: res.changed,
      problems,
    };
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Views

  private buildView(chip: ChipRuntime): ChipView {
    const upper = (c: FaultCode): string => this.formats.upper(c);
    const faultTimes: Record<string, number> = {};
    for (const [code, t] of chip.faultTime) faultTimes[upper(code)] = t;
    return {
      logicId: chip.logicId,
      phyId: chip.phyId,
      name: chipName(this.runMode, chip.phyId),
      level: levelOf(chip.level),
      networkLevel: levelOf(chip.networkLevel),
      chipRaisedLevel: levelOf(chip.raisedChip),
      networkRaisedLevel: levelOf(chip.raisedNetwork),
      health: chip.health,
      networkHealth: chip.networkHealth,
      faultCodes: [...new Set(chip.faultCodes)].map(upper),
      networkFaultCodes: [...new Set(chip.networkCodes)].map(upper),
      faultTimes,
      alarmRaisedTime: chip.alarmRaisedTime,
      networkAlarmRaisedTime: chip.networkAlarmRaisedTime,
      reasons: [...chip.reasons.values()].map((r) => ({ ...r })),
      manuallySeparated: this.manual.has(chip.logicId),
      podUsed: chip.podUsed,
    };
  }

  /** The published view of one chip (as of the last cycle). */
  chipView(logicId: number): ChipView | undefined {
    const chip = this.chips.get(logicId);
    if (!chip) return undefined;
    chip.view ??= this.buildView(chip);
    return chip.view;
  }

  /**
   * Published views of all chips, by logic id: the result of the last cycle. Inputs given between cycles
   * (`setPodUsed`, `release`, `setPolicy`) show at the next cycle.
   */
  snapshot(): ChipView[] {
    return this.order.map((c) => (c.view ??= this.buildView(c)));
  }
}
