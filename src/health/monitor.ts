/**
 * The health layer (spec device-plugin.md D.3–D.5, D.8; architecture §2): DCMI fault events and DCMI reads in,
 * batches of fault-engine events out.
 *
 * - Subscription (D.3): `dcmi_subscribe_fault_event` up to 3 attempts 1 s apart; 310/310B/310P always poll;
 *   all attempts failing → polling mode for the life of the process.
 * - Intake (D.4): event id 0 ignored; 0x8C2FA009 (reset finished) → the chip is re-synchronised; recoveries are
 *   held for 1 s (upstream), then queued; the queue is bounded and never drops silently: an event that does not
 *   fit marks its chip for re-sync (its final state is read back from DCMI) and is counted, as are the binding's
 *   overflow notices. Queued events leave as one batch per event-loop turn: the binding delivers each DCMI event
 *   as its own callback (Node runs microtasks after each), so the batch is flushed from `setImmediate`, which runs
 *   once after every callback of the loop's poll phase. An idle agent still sends a lone event on at once (the
 *   check phase follows the poll phase of the same turn); a busy one sends everything that arrived meanwhile as one
 *   batch, so a storm costs one engine cycle and one snapshot per loop turn instead of one per event. Besides,
 *   while events keep arriving faster than that (the previous batch held more than one event), a batch that would
 *   follow the previous one within `coalesceWindowMs` waits for the rest of that window, so a storm costs at most
 *   one cycle (and one kubelet send) per window; a lone fault, or faults arriving one at a time, never wait.
 * - Compensation (D.5): at the first start, for re-sync marks, in polling mode, for chips unhealthy (chip or
 *   network) for more than 5 min: the chip's DCMI code list (and link status, D.8) is diffed against the store
 *   and the difference is sent as synthetic events (severity 0, time now). Card drop (-8012 from
 *   `dcmi_get_device_health`) synthesises 0x40F84E00 and its recovery while subscribed.
 * - Beyond upstream: while subscribed, every `listWatchPeriod` every chip is reconciled the same way, so a lost
 *   event on a healthy chip shows within one period. Because an event may be in flight between DCMI and us while
 *   we read, a difference found this way is confirmed by a second read `reconcileConfirmMs` later and only what
 *   both reads agree on is sent (no double-counted occurrence for FaultFrequency).
 *
 * Hang detection (D.9) is src/health/hang-detector.ts; its synthetic code is left out of the DCMI diff here.
 */
import { HANG_FAULT_CODE } from './hang-detector.js';
import type { ChipAddress, FaultEvent as DcmiFaultEvent, FaultOverflow, FaultSubscription } from '../dcmi/dcmi.js';
import type { LinkStatus } from '../dcmi/hccn.js';
import {
  HYPER_PLANE_CODES,
  LINK_DOWN_CODE,
  PARAMETER_PLANE_CODES,
  RESET_FINISHED_CODE,
  goHex,
  parseHexCode,
  type FaultCode,
} from '../faults/codes.js';
import { CARD_DROP_CODE, type ChipKind, hasParameterPlane, subscribesToFaults } from '../core/chips.js';
import type { Assertion, ChipView, FaultEvent } from '../faults/engine-types.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { sleep, type Clock, type TimerHandle } from '../core/clock.js';

/** The DCMI calls the monitor makes (a subset of `Dcmi`, so tests may stub it). */
export interface HealthDcmi {
  subscribeFaultEvents(subscription: FaultSubscription, options?: { maxQueue?: number }): void;
  unsubscribeFaultEvents(): void;
  getDeviceAllErrorCodes(cardId: number, deviceId: number): { codes: number[]; cardDropped: boolean };
  getDeviceHealth(cardId: number, deviceId: number): number;
}

/** What the monitor reads from the store to diff against (the store's `chip(logicId)` fits). */
export interface ChipStateReader {
  chip(logicId: number):
    | (Pick<ChipView, 'health' | 'networkHealth' | 'alarmRaisedTime' | 'networkAlarmRaisedTime'> & {
        readonly faultCodes: readonly string[];
        readonly networkFaultCodes: readonly string[];
      })
    | undefined;
}

export type HealthMode = 'starting' | 'subscribed' | 'polling';

/** Why a chip's codes were read back from DCMI. */
export type CompensationReason =
  'first-start' | 're-sync' | 'polling' | 'long-unhealthy' | 'network-long-unhealthy' | 'periodic' | 'card-drop';

/** Hooks for metrics (every method optional). */
export interface HealthObserver {
  /** A DCMI fault event was received. */
  faultEvent?(code: string, assertion: Assertion): void;
  /** Events that could not be queued (`intake`) or that the binding could not deliver (`binding`). */
  droppedResynced?(logicIds: readonly number[], count: number, where: 'intake' | 'binding'): void;
  /** A DCMI call failed (not counting -8012 card-drop answers, which are information). */
  dcmiError?(fn: string, code: number): void;
  /** A synthetic event was sent (compensation). */
  synthesized?(logicId: number, code: string, assertion: Assertion, reason: CompensationReason): void;
  modeChanged?(mode: HealthMode, reason: string): void;
}

export interface HealthMonitorOptions {
  readonly dcmi: HealthDcmi;
  readonly chips: readonly ChipAddress[];
  readonly chipKind: ChipKind;
  readonly state: ChipStateReader;
  /** Receives every batch (the store's `applyEvents`). Called synchronously; must not throw. */
  readonly sink: (events: readonly FaultEvent[]) => void;
  readonly clock: Clock;
  /** `-listWatchPeriod` × 1000. */
  readonly listWatchPeriodMs: number;
  /** `hccn_tool -link -g` for a phy id (D.8); absent: no link checks. */
  readonly linkStatus?: (phyId: number) => Promise<LinkStatus>;
  /** `-linkQueryInterval` × 1000; default 300 000 (upstream's 5 min). */
  readonly linkQueryIntervalMs?: number;
  /** D.4 recovery delay; default 1000. */
  readonly recoveryDelayMs?: number;
  /** D.3: default 3 attempts, 1000 ms apart. */
  readonly subscribeAttempts?: number;
  readonly subscribeRetryMs?: number;
  /**
   * Shortest time between two batches handed to the sink while events arrive in bursts, ms; default 2. Only a batch
   * that would follow a previous batch of more than one event sooner waits (for the rest of the window); 0 turns the
   * window off.
   */
  readonly coalesceWindowMs?: number;
  /** Bounded intake queue; default 10 000 events. */
  readonly queueCapacity?: number;
  /** `maxQueue` of the binding's delivery queue; default the binding's. */
  readonly bindingQueue?: number;
  /** Confirmation delay of the periodic reconcile; default 2000 (must exceed the recovery delay). */
  readonly reconcileConfirmMs?: number;
  /** D.5 "unhealthy for longer than 5 min"; default 300 000. */
  readonly longUnhealthyMs?: number;
  readonly observer?: HealthObserver;
  readonly logger?: Logger;
}

interface Diff {
  occur: FaultCode[];
  recover: FaultCode[];
}

function dcmiErrorCode(err: unknown): number | undefined {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'number' ? c : undefined;
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

/** Counters of the monitor. */
export interface HealthStats {
  received: number;
  ignored: number;
  droppedResynced: number;
  synthesized: number;
  batches: number;
}

/** Upper-case hex text of a code, as the ConfigMap and logs write it. */
function codeText(code: FaultCode): string {
  return goHex(code).toUpperCase();
}

/** Most codes whose text {@link HealthMonitor} keeps (a storm repeats a few codes; any code is a valid event id). */
const CODE_TEXT_CACHE = 1024;

/** The health layer of one node. */
export class HealthMonitor {
  readonly #o: HealthMonitorOptions;
  readonly #chips: ReadonlyMap<number, ChipAddress>;
  readonly #log: Logger;
  readonly #recoveryDelay: number;
  readonly #capacity: number;
  readonly #confirmMs: number;
  readonly #longMs: number;
  readonly #linkIntervalMs: number;
  readonly #windowMs: number;
  /** Clock time at which the last intake batch was handed to the sink (-Infinity: none yet), and its size. */
  #lastFlush = -Infinity;
  #lastBatch = 0;
  #mode: HealthMode = 'starting';
  #stopped = false;
  #queue: FaultEvent[] = [];
  #flushScheduled = false;
  /** D.5 `init`: chips to re-read at the next compensation. */
  #resync = new Set<number>();
  #firstStart = true;
  /** Chips whose card-drop occurrence was synthesised. */
  readonly #cardDropped = new Set<number>();
  /** Delayed recoveries not yet queued: logic id → code → count. */
  readonly #heldRecoveries = new Map<number, Map<FaultCode, number>>();
  readonly #heldTimers = new Set<TimerHandle>();
  /** Periodic-reconcile differences waiting for their confirming read. */
  #pendingConfirm = new Map<number, Diff & { netChecked: boolean }>();
  #confirmTimer: TimerHandle | undefined;
  #periodTimer: TimerHandle | undefined;
  #resyncTimer: TimerHandle | undefined;
  /** D.8 per-chip limiter and cache. */
  readonly #link = new Map<number, { at: number; status: LinkStatus }>();
  #running: Promise<void> | null = null;
  #confirming: Promise<void> | null = null;
  #again: { periodic: boolean } | null = null;
  readonly #stats: HealthStats = { received: 0, ignored: 0, droppedResynced: 0, synthesized: 0, batches: 0 };
  /** {@link codeText} of recent codes: every received event needs it for the metric and the log. */
  readonly #codeTexts = new Map<FaultCode, string>();

  constructor(options: HealthMonitorOptions) {
    this.#o = options;
    this.#chips = new Map(options.chips.map((c) => [c.logicId, c]));
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#recoveryDelay = options.recoveryDelayMs ?? 1000;
    this.#capacity = options.queueCapacity ?? 10_000;
    this.#confirmMs = options.reconcileConfirmMs ?? 2000;
    this.#longMs = options.longUnhealthyMs ?? 300_000;
    this.#linkIntervalMs = options.linkQueryIntervalMs ?? 300_000;
    this.#windowMs = options.coalesceWindowMs ?? 2;
  }

  /** `subscribed` or `polling` once started. */
  mode(): HealthMode {
    return this.#mode;
  }

  /** Counters for metrics and tests. */
  stats(): HealthStats {
    return { ...this.#stats };
  }

  /**
   * Subscribes (D.3), runs the first-start compensation of every chip (D.5) and starts the periodic run. Resolves
   * once the first compensation has been handed to the sink.
   */
  async start(): Promise<void> {
    if (!subscribesToFaults(this.#o.chipKind)) {
      this.#setMode('polling', `${this.#o.chipKind} has no fault subscription (spec D.3)`);
    } else {
      await this.#subscribe();
    }
    if (this.#stopped) return;
    await this.runCompensation(false);
    this.#schedulePeriod();
  }

  /** Stops timers and the subscription; held and queued events are dropped (the process is ending). */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const t of [this.#periodTimer, this.#confirmTimer, this.#resyncTimer, ...this.#heldTimers]) {
      if (t !== undefined) this.#o.clock.clearTimeout(t);
    }
    this.#heldTimers.clear();
    if (this.#mode === 'subscribed') {
      try {
        this.#o.dcmi.unsubscribeFaultEvents();
      } catch (err) {
        this.#log.warn({ err }, 'unsubscribing from DCMI fault events failed');
      }
    }
  }

  /** Resolves when no compensation or confirmation read is in progress (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#running || this.#confirming) await (this.#running ?? this.#confirming);
  }

  /** Marks chips for re-sync (D.4/D.5 `init`) and schedules a compensation run now. */
  markResync(logicIds: Iterable<number>, why = 're-sync requested'): void {
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
        void this.runCompensation(false);
      }, 0);
    }
  }

  /**
   * The chip's current DCMI code list (for the engine's D.6 "recovery of a code DCMI still reports is ignored").
   * Undefined when DCMI cannot answer.
   */
  liveCodes(logicId: number): readonly FaultCode[] | undefined {
    const chip = this.#chips.get(logicId);
    if (!chip) return undefined;
    try {
      return this.#o.dcmi.getDeviceAllErrorCodes(chip.cardId, chip.deviceId).codes;
    } catch (err) {
      this.#dcmiError(err, 'dcmi_get_device_errorcode_v2');
      return undefined;
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // D.3 subscription

  async #subscribe(): Promise<void> {
    const attempts = this.#o.subscribeAttempts ?? 3;
    const subscription: FaultSubscription = {
      onEvent: (e) => this.#onEvent(e),
      onOverflow: (n) => this.#onOverflow(n),
      onListenerError: (err) => this.#log.error({ err }, 'fault event handler threw'),
    };
    for (let attempt = 1; attempt <= attempts && !this.#stopped; attempt++) {
      try {
        const bq = this.#o.bindingQueue;
        this.#o.dcmi.subscribeFaultEvents(subscription, bq !== undefined ? { maxQueue: bq } : undefined);
        this.#setMode('subscribed', `subscribed on attempt ${attempt}`);
        return;
      } catch (err) {
        this.#dcmiError(err, 'dcmi_subscribe_fault_event');
        this.#log.warn({ err, attempt }, 'fault event subscription failed');
        if (attempt < attempts) await sleep(this.#o.clock, this.#o.subscribeRetryMs ?? 1000);
      }
    }
    this.#setMode('polling', `subscription failed ${attempts} times (spec D.3)`);
  }

  #setMode(mode: HealthMode, reason: string): void {
    if (this.#mode === mode) return;
    this.#mode = mode;
    this.#log.info({ mode, reason }, 'fault get mode');
    this.#o.observer?.modeChanged?.(mode, reason);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // D.4 intake

  #onEvent(e: DcmiFaultEvent): void {
    if (this.#stopped) return;
    this.#stats.received++;
    const code = e.eventId;
    const text = this.#codeText(code);
    this.#o.observer?.faultEvent?.(text, e.assertion);
    this.#log.debug(
      { logicId: e.logicId, code: text, assertion: e.assertion, severity: e.severity },
      'receive devFaultInfo',
    );
    if (code === 0) {
      this.#stats.ignored++;
      return;
    }
    if (code === RESET_FINISHED_CODE) {
      this.markResync([e.logicId], 'chip reset finished (8C2FA009)');
      return;
    }
    const ev: FaultEvent = {
      logicId: e.logicId,
      code,
      assertion: e.assertion,
      severity: e.severity,
      timeMs: this.#o.clock.now(),
    };
    if (e.assertion === 'recover' && this.#recoveryDelay > 0) {
      const held = this.#heldRecoveries.get(e.logicId) ?? new Map<FaultCode, number>();
      this.#heldRecoveries.set(e.logicId, held);
      held.set(code, (held.get(code) ?? 0) + 1);
      const t = this.#o.clock.setTimeout(() => {
        this.#heldTimers.delete(t);
        const n = (held.get(code) ?? 1) - 1;
        if (n > 0) held.set(code, n);
        else held.delete(code);
        this.#enqueue(ev);
      }, this.#recoveryDelay);
      this.#heldTimers.add(t);
      return;
    }
    this.#enqueue(ev);
  }

  #codeText(code: FaultCode): string {
    let text = this.#codeTexts.get(code);
    if (text === undefined) {
      if (this.#codeTexts.size >= CODE_TEXT_CACHE) this.#codeTexts.clear();
      text = codeText(code);
      this.#codeTexts.set(code, text);
    }
    return text;
  }

  #onOverflow(n: FaultOverflow): void {
    this.#stats.droppedResynced += n.dropped;
    this.#log.warn({ logicIds: n.logicIds, dropped: n.dropped }, 'fault events dropped by the binding; re-sync');
    this.#o.observer?.droppedResynced?.(n.logicIds, n.dropped, 'binding');
    this.markResync(n.logicIds, 'binding overflow');
  }

  #enqueue(ev: FaultEvent): void {
    if (this.#stopped) return;
    if (this.#queue.length >= this.#capacity) {
      this.#stats.droppedResynced++;
      this.#o.observer?.droppedResynced?.([ev.logicId], 1, 'intake');
      this.markResync([ev.logicId], 'intake queue full');
      return;
    }
    this.#queue.push(ev);
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      // at most one window, even when the wall clock stepped back since the last batch
      const wait =
        this.#lastBatch > 1 ? Math.min(this.#windowMs, this.#lastFlush + this.#windowMs - this.#o.clock.now()) : 0;
      if (wait > 0) {
        const t = this.#o.clock.setTimeout(() => {
          this.#heldTimers.delete(t);
          this.#flush();
        }, wait);
        this.#heldTimers.add(t);
      } else setImmediate(() => this.#flush());
    }
  }

  #flush(): void {
    this.#flushScheduled = false;
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length > 0) this.#emit(batch);
    this.#lastFlush = this.#o.clock.now(); // after the cycle and its listeners: the window is a gap between cycles
    this.#lastBatch = batch.length;
  }

  #emit(batch: readonly FaultEvent[]): void {
    if (this.#stopped) return;
    this.#stats.batches++;
    try {
      this.#o.sink(batch);
    } catch (err) {
      this.#log.error({ err }, 'state sink threw');
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // D.5 compensation

  #schedulePeriod(): void {
    if (this.#stopped) return;
    this.#periodTimer = this.#o.clock.setTimeout(() => {
      this.#periodTimer = undefined;
      void this.runCompensation(true).finally(() => this.#schedulePeriod());
    }, this.#o.listWatchPeriodMs);
  }

  /**
   * One compensation run (D.5); `periodic` adds the beyond-upstream reconcile of every chip while subscribed.
   * Runs never overlap: a request during a run is merged into one more run after it.
   */
  runCompensation(periodic: boolean): Promise<void> {
    if (this.#running) {
      this.#again = { periodic: periodic || (this.#again?.periodic ?? false) };
      return this.#running;
    }
    const run = async (): Promise<void> => {
      let next: { periodic: boolean } | null = { periodic };
      while (next && !this.#stopped) {
        this.#again = null;
        await this.#compensate(next.periodic);
        next = this.#again;
      }
    };
    this.#running = run()
      .catch((err: unknown) => this.#log.error({ err }, 'compensation failed'))
      .finally(() => {
        this.#running = null;
      });
    return this.#running;
  }

  async #compensate(periodic: boolean): Promise<void> {
    const now = this.#o.clock.now();
    const init = this.#resync;
    this.#resync = new Set();
    const first = this.#firstStart;
    this.#firstStart = false;
    const polling = this.#mode === 'polling';
    const subscribed = this.#mode === 'subscribed';
    const out: FaultEvent[] = [];
    const reasons = new Map<number, CompensationReason>();
    for (const chip of this.#chips.values()) {
      const view = this.#o.state.chip(chip.logicId);
      if (!view) continue;
      const skipCodes = new Set<FaultCode>();
      // Card drop (subscribed only; in polling mode the code list carries 0x40F84E00 already).
      if (subscribed) this.#checkCardDrop(chip, view, out, skipCodes);
      const chipReason: CompensationReason | null = first
        ? 'first-start'
        : init.has(chip.logicId)
          ? 're-sync'
          : polling
            ? 'polling'
            : view.health === 'Unhealthy' && view.alarmRaisedTime > 0 && now - view.alarmRaisedTime > this.#longMs
              ? 'long-unhealthy'
              : null;
      const netReason: CompensationReason | null =
        chipReason ??
        (view.networkHealth === 'Unhealthy' &&
        view.networkAlarmRaisedTime > 0 &&
        now - view.networkAlarmRaisedTime > this.#longMs
          ? 'network-long-unhealthy'
          : null);
      const reconcile = periodic && subscribed && !chipReason && !netReason;
      if (!chipReason && !netReason && !reconcile) continue;
      const diff = await this.#diffChip(chip, {
        chip: chipReason !== null || reconcile,
        net: netReason !== null || reconcile,
        skip: skipCodes,
      });
      if (this.#stopped) return;
      if (!diff) {
        this.#resync.add(chip.logicId); // DCMI could not answer: try again next time
        continue;
      }
      if (reconcile) {
        if (diff.occur.length + diff.recover.length > 0) {
          this.#pendingConfirm.set(chip.logicId, { ...diff, netChecked: true });
        }
        continue;
      }
      const reason = (chipReason ?? netReason)!;
      reasons.set(chip.logicId, reason);
      this.#pushDiff(out, chip.logicId, diff, reason, now);
    }
    if (this.#pendingConfirm.size > 0) this.#scheduleConfirm();
    if (out.length > 0) this.#emit(out);
  }

  #checkCardDrop(
    chip: ChipAddress,
    view: NonNullable<ReturnType<ChipStateReader['chip']>>,
    out: FaultEvent[],
    skip: Set<FaultCode>,
  ): void {
    let dropped: boolean;
    try {
      this.#o.dcmi.getDeviceHealth(chip.cardId, chip.deviceId);
      dropped = false;
    } catch (err) {
      if (dcmiErrorCode(err) === -8012) dropped = true;
      else {
        this.#dcmiError(err, 'dcmi_get_device_health');
        return;
      }
    }
    const has = parseCodes(view.faultCodes).includes(CARD_DROP_CODE);
    const now = this.#o.clock.now();
    if (dropped && !this.#cardDropped.has(chip.logicId)) {
      this.#cardDropped.add(chip.logicId);
      if (!has) this.#synth(out, chip.logicId, CARD_DROP_CODE, 'occur', 'card-drop', now);
    } else if (!dropped && this.#cardDropped.has(chip.logicId)) {
      this.#cardDropped.delete(chip.logicId);
      if (has) this.#synth(out, chip.logicId, CARD_DROP_CODE, 'recover', 'card-drop', now);
    }
    skip.add(CARD_DROP_CODE);
  }

  /**
   * Reads the chip's DCMI codes (and link status) and diffs them against the store. Chip scope: DCMI codes minus
   * parameter- and hyper-plane codes. Network scope: DCMI's parameter-plane codes, or 0x81078603 when there are
   * none and the link is not UP (D.8). Codes with a held recovery are left out (the recovery is on its way).
   */
  async #diffChip(
    chip: ChipAddress,
    scope: { chip: boolean; net: boolean; skip: ReadonlySet<FaultCode>; cachedLinkOnly?: boolean },
  ): Promise<Diff | undefined> {
    let codes: number[];
    try {
      codes = this.#o.dcmi.getDeviceAllErrorCodes(chip.cardId, chip.deviceId).codes;
    } catch (err) {
      this.#dcmiError(err, 'dcmi_get_device_errorcode_v2');
      return undefined;
    }
    const held = this.#heldRecoveries.get(chip.logicId);
    // The hang detector's synthetic code (D.9) is never listed by DCMI: leave it to the detector.
    const skip = (c: FaultCode): boolean => c === HANG_FAULT_CODE || scope.skip.has(c) || (held?.has(c) ?? false);
    const result: Diff = { occur: [], recover: [] };
    let view = this.#o.state.chip(chip.logicId);
    if (scope.chip && view) {
      const dcmiChip = new Set(
        codes.filter((c) => !PARAMETER_PLANE_CODES.has(c) && !HYPER_PLANE_CODES.has(c) && !skip(c)),
      );
      const have = new Set(parseCodes(view.faultCodes).filter((c) => !skip(c)));
      const d = diffCodes(dcmiChip, have);
      result.occur.push(...d.occur);
      result.recover.push(...d.recover);
    }
    if (scope.net) {
      const dcmiNet = new Set(codes.filter((c) => PARAMETER_PLANE_CODES.has(c)));
      if (dcmiNet.size === 0 && hasParameterPlane(this.#o.chipKind) && this.#o.linkStatus) {
        const status = await this.#linkStatus(chip.phyId, scope.cachedLinkOnly ?? false);
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

  /** D.8: one real query per chip per `linkQueryInterval`, else the cached value. Failure counts as DOWN. */
  async #linkStatus(phyId: number, cachedOnly: boolean): Promise<LinkStatus | undefined> {
    const cached = this.#link.get(phyId);
    const now = this.#o.clock.now();
    if (cachedOnly || (cached && now - cached.at < this.#linkIntervalMs)) return cached?.status;
    let status: LinkStatus;
    try {
      status = await this.#o.linkStatus!(phyId);
    } catch (err) {
      this.#log.warn({ err, phyId }, 'link status query failed; counted as DOWN');
      status = 'Abnormal';
    }
    this.#link.set(phyId, { at: now, status });
    if (status !== 'UP') this.#log.info({ phyId, status }, 'link status is not UP');
    return status;
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
      const again = await this.#diffChip(chip, {
        chip: true,
        net: first.netChecked,
        skip: this.#cardDropped.has(logicId) ? new Set([CARD_DROP_CODE]) : new Set(),
        cachedLinkOnly: true,
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
      this.#pushDiff(out, logicId, both, 'periodic', now);
    }
    if (out.length > 0) this.#emit(out);
  }

  #pushDiff(out: FaultEvent[], logicId: number, diff: Diff, reason: CompensationReason, now: number): void {
    for (const c of diff.occur) this.#synth(out, logicId, c, 'occur', reason, now);
    for (const c of diff.recover) this.#synth(out, logicId, c, 'recover', reason, now);
  }

  #synth(
    out: FaultEvent[],
    logicId: number,
    code: FaultCode,
    assertion: Assertion,
    reason: CompensationReason,
    now: number,
  ): void {
    this.#stats.synthesized++;
    this.#o.observer?.synthesized?.(logicId, codeText(code), assertion, reason);
    this.#log.info({ logicId, code: codeText(code), assertion, reason }, 'synthetic fault event (compensation)');
    out.push({ logicId, code, assertion, severity: 0, timeMs: now });
  }

  #dcmiError(err: unknown, fn: string): void {
    const code = dcmiErrorCode(err) ?? -1;
    const name = (err as { fn?: unknown } | null)?.fn;
    this.#o.observer?.dcmiError?.(typeof name === 'string' ? name : fn, code);
    this.#log.warn({ err, fn }, 'DCMI call failed');
  }
}
