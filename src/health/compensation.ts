/**
 * Lost-event compensation (spec D.5): the chip's DCMI code list (and link status, D.8) is diffed against the store
 * and the difference is sent as synthetic events (severity 0, time now, no recovery hold). A chip is read at the
 * first start, when marked for re-sync (reset finished, overflow, the engine's `resync`), every run in polling mode,
 * and when its chip or network health has been Unhealthy for more than 5 min. While subscribed, every run first asks
 * the card-drop tracker (src/health/card-drop.ts) about every chip — upstream's one `dcmi_get_device_health` per chip
 * per `listWatchPeriod` — and a chip it has just asked is then read with the code list alone (no second health read).
 *
 * Beyond upstream — the periodic reconcile: while subscribed, every `listWatchPeriod` a slice of the chips not read
 * for one of the reasons above is diffed the same way, in turn, so that every chip is diffed once every
 * `sweepPeriods` periods (issue [P]: the idle DCMI calls no more than upstream's, which only asks the health; 8
 * chips, 5 s: 8 health + 2 list reads a period, 120 a minute), and a lost event on a healthy chip shows within
 * `sweepPeriods` periods. Because an event may be between DCMI and us while we read, a difference found this way is
 * confirmed by a second read `confirmMs` later and only what both reads agree on is sent (no double-counted
 * occurrence for FaultFrequency). The confirmation lives here because it is the same diff read twice, and a
 * confirming read must not overlap a run.
 *
 * Every synthetic recovery carries the DCMI list it was derived from (`liveCodes`, spec D.6), as the intake's
 * released recoveries do: the engine never reads DCMI. Codes whose recovery the intake still holds, and the hang
 * detector's code (D.9, never listed by DCMI), are left out of every diff.
 */
import type { ChipAddress } from '../dcmi/dcmi.js';
import {
  HYPER_PLANE_CODES,
  LINK_DOWN_CODE,
  PARAMETER_PLANE_CODES,
  UBOE_DERIVED_CODES,
  UBOE_PORT_DOWN_CODE,
  UBOE_PRESEPARATE_CODE,
  UBOE_SUBHEALTH_CODE,
  UB_PORT_DOWN_CODE,
  parseHexCode,
  type FaultCode,
} from '../faults/codes.js';
import type { Assertion, FaultEvent } from '../faults/engine-types.js';
import { CARD_DROP_CODE, hasParameterPlane, type ChipKind } from '../core/chips.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import { CardDrop } from './card-drop.js';
import { HANG_FAULT_CODE } from './hang-detector.js';
import type { LinkLimiter } from './link-limiter.js';
import type { PortLimiter, PortPlanes } from './port-limiter.js';
import {
  codeText,
  reportDcmiError,
  type ChipStateReader,
  type CompensationReason,
  type HealthDcmi,
  type HealthMode,
  type HealthObserver,
} from './types.js';

export interface CompensationOptions {
  readonly dcmi: Pick<HealthDcmi, 'getDeviceAllErrorCodes' | 'getDeviceErrorCodes' | 'getDeviceHealth'>;
  readonly chips: readonly ChipAddress[];
  readonly chipKind: ChipKind;
  readonly state: ChipStateReader;
  readonly clock: Clock;
  /** The monitor's mode: polling reads every chip every run; card drop and the reconcile run while subscribed. */
  readonly mode: () => HealthMode;
  /** True while the intake holds a recovery of the code (it is on its way: left out of the diff). */
  readonly isHeld: (logicId: number, code: FaultCode) => boolean;
  /** Receives the synthetic events of a run (the monitor's emit). */
  readonly emit: (batch: readonly FaultEvent[]) => void;
  /** `-listWatchPeriod` × 1000: the period of the periodic run. */
  readonly listWatchPeriodMs: number;
  /** D.8; absent: no link checks. */
  readonly link?: LinkLimiter;
  /** D.5/D.8 A5 port snapshot (UB ports, UBoE bonding ports); absent: no port checks. Used on Ascend910A5 only. */
  readonly ports?: PortLimiter;
  /**
   * B.5/D.5: the A5 parameter plane is UBoE, on main boards 0x23/0x25/0x27 only (the wiring decides); without it an
   * A5 chip has no parameter-plane link check.
   */
  readonly uboePlane?: boolean;
  /** Confirmation delay of the periodic reconcile; default 2000 (must exceed the recovery delay). */
  readonly confirmMs?: number;
  /** D.5 "unhealthy for longer than 5 min"; default 300 000. */
  readonly longUnhealthyMs?: number;
  /**
   * The periodic reconcile diffs every chip once in this many periods (a slice of ⌈chips / n⌉ chips each period,
   * in turn); default {@link RECONCILE_SWEEP_PERIODS}. 1: every chip every period.
   */
  readonly sweepPeriods?: number;
  readonly observer?: HealthObserver;
  readonly logger?: Logger;
}

interface Diff {
  occur: FaultCode[];
  recover: FaultCode[];
}

/** A diff and the DCMI code list it was made from. */
interface ChipDiff extends Diff {
  readonly codes: readonly FaultCode[];
}

function parseCodes(texts: readonly string[]): FaultCode[] {
  const out: FaultCode[] = [];
  for (const t of texts) {
    const p = parseHexCode(t);
    if (p.ok) out.push(p.value);
  }
  return out;
}

function diffCodes(dcmi: ReadonlySet<FaultCode>, have: ReadonlySet<FaultCode>): Diff {
  return {
    occur: [...dcmi].filter((c) => !have.has(c)),
    recover: [...have].filter((c) => !dcmi.has(c)),
  };
}

/** Chips a run examines at once (each may wait for an `hccn_tool` answer). */
const CHIPS_AT_ONCE = 8;

/** What {@link Compensation} found on one chip: `diff` null = not read, undefined = DCMI could not answer. */
interface Examined {
  readonly cardDrop?: Assertion | undefined;
  readonly diff: ChipDiff | null | undefined;
  readonly reconcile: boolean;
  readonly reason?: CompensationReason | undefined;
}

/** Periods in which the periodic reconcile has diffed every chip once (default of `sweepPeriods`). */
export const RECONCILE_SWEEP_PERIODS = 4;

/** D.5 compensation runs, the card-drop check and the periodic reconcile with its confirming read. */
export class Compensation {
  readonly #o: CompensationOptions;
  readonly #chips: ReadonlyMap<number, ChipAddress>;
  readonly #log: Logger;
  readonly #confirmMs: number;
  readonly #longMs: number;
  readonly #cardDrop: CardDrop;
  /** Chips in DCMI's order, and where the next reconcile slice starts in it. */
  readonly #order: readonly ChipAddress[];
  readonly #slice: number;
  #cursor = 0;
  #stopped = false;
  /** D.5 `init`: chips to re-read at the next run. */
  #resync = new Set<number>();
  #firstStart = true;
  #synthesized = 0;
  /** Periodic-reconcile differences waiting for their confirming read. */
  #pendingConfirm = new Map<number, Diff & { netChecked: boolean }>();
  #confirmTimer: TimerHandle | undefined;
  #periodTimer: TimerHandle | undefined;
  #resyncTimer: TimerHandle | undefined;
  #running: Promise<void> | null = null;
  #confirming: Promise<void> | null = null;
  #again: { periodic: boolean } | null = null;

  constructor(options: CompensationOptions) {
    this.#o = options;
    this.#chips = new Map(options.chips.map((c) => [c.logicId, c]));
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#confirmMs = options.confirmMs ?? 2000;
    this.#longMs = options.longUnhealthyMs ?? 300_000;
    this.#order = [...options.chips];
    const sweep = Math.max(1, Math.floor(options.sweepPeriods ?? RECONCILE_SWEEP_PERIODS));
    this.#slice = Math.ceil(this.#order.length / sweep);
    this.#cardDrop = new CardDrop({
      getDeviceHealth: (card, device) => options.dcmi.getDeviceHealth(card, device),
      dcmiError: (err, fn) => this.#dcmiError(err, fn),
    });
  }

  /** Synthetic events sent so far. */
  get synthesized(): number {
    return this.#synthesized;
  }

  /** Starts the periodic run (every `listWatchPeriod`, each after the previous one ended). */
  startPeriod(): void {
    if (this.#stopped || this.#periodTimer !== undefined) return;
    this.#periodTimer = this.#o.clock.setTimeout(() => {
      this.#periodTimer = undefined;
      void this.run(true).finally(() => this.startPeriod());
    }, this.#o.listWatchPeriodMs);
  }

  stop(): void {
    this.#stopped = true;
    for (const t of [this.#periodTimer, this.#confirmTimer, this.#resyncTimer]) {
      if (t !== undefined) this.#o.clock.clearTimeout(t);
    }
  }

  /** Resolves when no run or confirming read is in progress. */
  async idle(): Promise<void> {
    while (this.#running || this.#confirming) await (this.#running ?? this.#confirming);
  }

  /** Marks chips for re-sync (D.4/D.5 `init`) and schedules a run now; unknown logic ids are ignored. */
  markResync(logicIds: Iterable<number>, why: string): void {
    let any = false;
    for (const id of logicIds) {
      if (!this.#chips.has(id)) continue;
      this.#resync.add(id);
      any = true;
    }
    if (!any || this.#stopped) return;
    this.#log.debug({ logicIds: [...this.#resync], why }, 'chips marked for re-sync');
    if (this.#resyncTimer === undefined) {
      this.#resyncTimer = this.#o.clock.setTimeout(() => {
        this.#resyncTimer = undefined;
        void this.run(false);
      }, 0);
    }
  }

  /**
   * One run; `periodic` adds the reconcile of every chip while subscribed. Runs never overlap: a request during a
   * run is merged into one more run after it.
   */
  run(periodic: boolean): Promise<void> {
    if (this.#running) {
      this.#again = { periodic: periodic || (this.#again?.periodic ?? false) };
      return this.#running;
    }
    const loop = async (): Promise<void> => {
      let next: { periodic: boolean } | null = { periodic };
      while (next && !this.#stopped) {
        this.#again = null;
        await this.#compensate(next.periodic);
        next = this.#again;
      }
    };
    this.#running = loop()
      .catch((err: unknown) => this.#log.error({ err }, 'compensation failed'))
      .finally(() => {
        this.#running = null;
      });
    return this.#running;
  }

  /** The chips the periodic reconcile diffs this period (the next slice in DCMI's order, wrapping around). */
  #nextSlice(): Set<number> {
    const n = this.#order.length;
    const ids = new Set<number>();
    for (let i = 0; i < Math.min(this.#slice, n); i++) ids.add(this.#order[(this.#cursor + i) % n]!.logicId);
    this.#cursor = n === 0 ? 0 : (this.#cursor + this.#slice) % n;
    return ids;
  }

  /** The D.5 reason to read the chip, or null. */
  #reason(
    chip: ChipAddress,
    view: NonNullable<ReturnType<ChipStateReader['chip']>>,
    first: boolean,
    init: ReadonlySet<number>,
    now: number,
  ): { chip: CompensationReason | null; net: CompensationReason | null } {
    const long = (since: number): boolean => since > 0 && now - since > this.#longMs;
    const chipReason: CompensationReason | null = first
      ? 'first-start'
      : init.has(chip.logicId)
        ? 're-sync'
        : this.#o.mode() === 'polling'
          ? 'polling'
          : view.health === 'Unhealthy' && long(view.alarmRaisedTime)
            ? 'long-unhealthy'
            : null;
    const netReason =
      chipReason ??
      (view.networkHealth === 'Unhealthy' && long(view.networkAlarmRaisedTime) ? 'network-long-unhealthy' : null);
    return { chip: chipReason, net: netReason };
  }

  async #compensate(periodic: boolean): Promise<void> {
    const now = this.#o.clock.now();
    const init = this.#resync;
    this.#resync = new Set();
    const first = this.#firstStart;
    this.#firstStart = false;
    const subscribed = this.#o.mode() === 'subscribed';
    const slice = periodic && subscribed ? this.#nextSlice() : undefined;
    // Chips are examined a few at a time, each waiting only for its own link query (the first run on 16 chips made
    // 16 hccn_tool calls one after the other before kubelet registration, issue [P] item 3), and applied in DCMI's
    // order, so the events are those of one chip after the other.
    const queue = [...this.#chips.values()];
    const examined = new Map<number, Examined>();
    const worker = async (): Promise<void> => {
      for (let chip = queue.shift(); chip && !this.#stopped; chip = queue.shift()) {
        examined.set(chip.logicId, await this.#examine(chip, { first, init, now, subscribed, slice }));
      }
    };
    const n = Math.max(1, Math.min(CHIPS_AT_ONCE, queue.length));
    await Promise.all(Array.from({ length: n }, worker));
    if (this.#stopped) return;
    const out: FaultEvent[] = [];
    for (const chip of this.#chips.values()) {
      const e = examined.get(chip.logicId);
      if (!e) continue;
      if (e.cardDrop) this.#synth(out, chip.logicId, CARD_DROP_CODE, e.cardDrop, 'card-drop', now);
      if (e.diff === null) continue; // nothing to read
      if (!e.diff) {
        this.#resync.add(chip.logicId); // DCMI could not answer: try again next time
        continue;
      }
      if (e.reconcile) {
        if (e.diff.occur.length + e.diff.recover.length > 0) {
          this.#pendingConfirm.set(chip.logicId, { occur: e.diff.occur, recover: e.diff.recover, netChecked: true });
        }
        continue;
      }
      this.#pushDiff(out, chip.logicId, e.diff, e.diff.codes, e.reason!, now);
    }
    if (this.#pendingConfirm.size > 0) this.#scheduleConfirm();
    if (out.length > 0) this.#o.emit(out);
  }

  /** One chip of a run: the card-drop check, then the diff when the chip has a D.5 reason or is in the slice. */
  async #examine(
    chip: ChipAddress,
    run: {
      first: boolean;
      init: ReadonlySet<number>;
      now: number;
      subscribed: boolean;
      slice: ReadonlySet<number> | undefined;
    },
  ): Promise<Examined> {
    const view = this.#o.state.chip(chip.logicId);
    if (!view) return { diff: null, reconcile: false };
    const skip = new Set<FaultCode>();
    let cardDrop: Assertion | undefined;
    // Card drop (subscribed only; in polling mode the code list carries 0x40F84E00 already).
    let healthAsked = false;
    if (run.subscribed) {
      const drop = this.#cardDrop.check(chip, parseCodes(view.faultCodes).includes(CARD_DROP_CODE));
      healthAsked = drop.answered;
      if (drop.answered) skip.add(CARD_DROP_CODE);
      if (drop.answered && drop.synthesize) cardDrop = drop.synthesize;
    }
    const why = this.#reason(chip, view, run.first, run.init, run.now);
    const reconcile = run.slice?.has(chip.logicId) === true && !why.chip && !why.net;
    if (!why.chip && !why.net && !reconcile) return { cardDrop, diff: null, reconcile };
    const diff = await this.#diffChip(chip, {
      chip: why.chip !== null || reconcile,
      net: why.net !== null || reconcile,
      skip,
      listOnly: healthAsked,
    });
    return { cardDrop, diff, reconcile, reason: why.chip ?? why.net ?? undefined };
  }

  /**
   * Reads the chip's DCMI codes (and link status) and diffs them against the store. Chip scope: DCMI codes minus
   * parameter- and hyper-plane codes. Network scope: DCMI's parameter-plane codes, or 0x81078603 when there are
   * none and the link is not UP (D.8). A5: the hyper plane (81B18603 from DCMI or a UB port not UP) with the chip
   * scope, the UBoE plane (81078607 and its derived code from the bonding-port down count) as the network scope.
   * Codes with a held recovery are left out (the recovery is on its way). `listOnly`: the card-drop check has just
   * asked the chip's health (0x40F84E00 is its to send), so the code list is read without the health read.
   */
  async #diffChip(
    chip: ChipAddress,
    scope: {
      chip: boolean;
      net: boolean;
      skip: ReadonlySet<FaultCode>;
      cachedLinkOnly?: boolean;
      listOnly?: boolean;
    },
  ): Promise<ChipDiff | undefined> {
    let codes: number[];
    try {
      const dcmi = this.#o.dcmi;
      codes =
        scope.listOnly && dcmi.getDeviceErrorCodes
          ? dcmi.getDeviceErrorCodes(chip.cardId, chip.deviceId)
          : dcmi.getDeviceAllErrorCodes(chip.cardId, chip.deviceId).codes;
    } catch (err) {
      this.#dcmiError(err, 'dcmi_get_device_errorcode_v2');
      return undefined;
    }
    // The hang detector's synthetic code (D.9) is never listed by DCMI: leave it to the detector.
    const skip = (c: FaultCode): boolean =>
      c === HANG_FAULT_CODE || scope.skip.has(c) || this.#o.isHeld(chip.logicId, c);
    const result: ChipDiff = { occur: [], recover: [], codes };
    const a5 = this.#o.chipKind === 'Ascend910A5';
    // D.8: one port snapshot per diff (rate-limited by the limiter), shared by both A5 planes
    let planes: Promise<PortPlanes | undefined> | undefined;
    const portPlanes = (): Promise<PortPlanes | undefined> =>
      (planes ??= this.#o.ports?.planes(chip.logicId, scope.cachedLinkOnly ?? false) ?? Promise.resolve(undefined));
    let view = this.#o.state.chip(chip.logicId);
    if (scope.chip && view) {
      const dcmiChip = new Set(
        codes.filter((c) => !PARAMETER_PLANE_CODES.has(c) && !HYPER_PLANE_CODES.has(c) && !skip(c)),
      );
      // hyper-plane codes live in the chip list on A5 but are diffed on their own below
      const have = new Set(parseCodes(view.faultCodes).filter((c) => !HYPER_PLANE_CODES.has(c) && !skip(c)));
      const d = diffCodes(dcmiChip, have);
      result.occur.push(...d.occur);
      result.recover.push(...d.recover);
    }
    if (scope.chip && a5) {
      // D.5 hyper plane (A5 only): DCMI's UB port-down code, or 81B18603 when DCMI has none and a UB port is not UP.
      // The node-wide derived codes (020001002 / 020000002) are the engine's: left out here.
      const dcmiHyper = new Set(codes.filter((c) => c === UB_PORT_DOWN_CODE));
      if (dcmiHyper.size === 0 && this.#o.ports) {
        const p = await portPlanes();
        if (p !== undefined && p.ub.status !== 'UP') dcmiHyper.add(UB_PORT_DOWN_CODE);
      }
      view = this.#o.state.chip(chip.logicId); // the port query awaited: read the store again
      if (view) {
        const have = new Set(parseCodes(view.faultCodes).filter((c) => c === UB_PORT_DOWN_CODE && !skip(c)));
        const d = diffCodes(new Set([...dcmiHyper].filter((c) => !skip(c))), have);
        result.occur.push(...d.occur);
        result.recover.push(...d.recover);
      }
    }
    if (scope.net) {
      const dcmiNet = new Set(codes.filter((c) => PARAMETER_PLANE_CODES.has(c) && !UBOE_DERIVED_CODES.has(c)));
      if (a5 && this.#o.uboePlane && this.#o.ports) {
        // D.5/D.8 A5 UBoE: 81078607 when DCMI lists no network code and a bonding port is down; then the derived
        // code of the down count (upstream's map: 1 → 110000002 SubHealth, 2 → 110001024 PreSeparate). An
        // unreadable snapshot counts as DOWN with one port down (which ports is unknown).
        const p = await portPlanes();
        if (dcmiNet.size === 0 && p !== undefined && p.uboe.status !== 'UP') dcmiNet.add(UBOE_PORT_DOWN_CODE);
        if (dcmiNet.has(UBOE_PORT_DOWN_CODE) && p !== undefined) {
          const down = p.uboe.status === 'Abnormal' ? 1 : p.uboe.down;
          if (down >= 2) dcmiNet.add(UBOE_PRESEPARATE_CODE);
          else if (down === 1) dcmiNet.add(UBOE_SUBHEALTH_CODE);
        }
      } else if (dcmiNet.size === 0 && hasParameterPlane(this.#o.chipKind) && this.#o.link) {
        const status = await this.#o.link.status(chip.phyId, scope.cachedLinkOnly ?? false);
        if (status !== undefined && status !== 'UP') dcmiNet.add(LINK_DOWN_CODE);
      }
      view = this.#o.state.chip(chip.logicId); // the link query awaited: read the store again
      if (view) {
        const have = new Set(parseCodes(view.networkFaultCodes).filter((c) => !skip(c)));
        const d = diffCodes(new Set([...dcmiNet].filter((c) => !skip(c))), have);
        result.occur.push(...d.occur);
        result.recover.push(...d.recover);
      }
    }
    return result;
  }

  #scheduleConfirm(): void {
    if (this.#confirmTimer !== undefined || this.#stopped) return;
    this.#confirmTimer = this.#o.clock.setTimeout(() => {
      this.#confirmTimer = undefined;
      this.#confirming = this.#confirm()
        .catch((err: unknown) => this.#log.error({ err }, 'reconcile confirmation failed'))
        .finally(() => {
          this.#confirming = null;
        });
    }, this.#confirmMs);
  }

  /** Second read of the periodic reconcile: sends only what both reads found. */
  async #confirm(): Promise<void> {
    const pending = this.#pendingConfirm;
    this.#pendingConfirm = new Map();
    const out: FaultEvent[] = [];
    const now = this.#o.clock.now();
    for (const [logicId, first] of pending) {
      const chip = this.#chips.get(logicId)!;
      // the reconcile runs while subscribed, where 0x40F84E00 is the card-drop check's: the list alone is read
      const again = await this.#diffChip(chip, {
        chip: true,
        net: first.netChecked,
        skip: new Set([CARD_DROP_CODE]),
        cachedLinkOnly: true,
        listOnly: true,
      });
      if (this.#stopped) return;
      if (!again) continue;
      const both: Diff = {
        occur: first.occur.filter((c) => again.occur.includes(c)),
        recover: first.recover.filter((c) => again.recover.includes(c)),
      };
      if (both.occur.length + both.recover.length > 0) {
        this.#log.warn(
          { logicId, occur: both.occur.map(codeText), recover: both.recover.map(codeText) },
          'periodic reconcile found a difference with DCMI (lost event)',
        );
      }
      this.#pushDiff(out, logicId, both, again.codes, 'periodic', now);
    }
    if (out.length > 0) this.#o.emit(out);
  }

  #pushDiff(
    out: FaultEvent[],
    logicId: number,
    diff: Diff,
    codes: readonly FaultCode[],
    reason: CompensationReason,
    now: number,
  ): void {
    for (const c of diff.occur) this.#synth(out, logicId, c, 'occur', reason, now);
    for (const c of diff.recover) this.#synth(out, logicId, c, 'recover', reason, now, codes);
  }

  #synth(
    out: FaultEvent[],
    logicId: number,
    code: FaultCode,
    assertion: Assertion,
    reason: CompensationReason,
    now: number,
    liveCodes?: readonly FaultCode[],
  ): void {
    this.#synthesized++;
    this.#o.observer?.synthesized?.(logicId, codeText(code), assertion, reason);
    this.#log.info({ logicId, code: codeText(code), assertion, reason }, 'synthetic fault event (compensation)');
    out.push({ logicId, code, assertion, severity: 0, timeMs: now, ...(liveCodes ? { liveCodes } : {}) });
  }

  #dcmiError(err: unknown, fn: string): void {
    reportDcmiError(err, fn, this.#o.observer, this.#log);
  }
}
