/**
 * The health layer (spec device-plugin.md D.3–D.5, D.8; architecture §2): DCMI fault events and DCMI reads in,
 * batches of fault-engine events out. `HealthMonitor` holds the subscription (D.3) and the D.4 triage of each DCMI
 * event, and composes the pieces that do the rest:
 *
 * - src/health/intake-queue.ts — D.4 recovery hold, bounded queue, one batch per loop turn; it attaches DCMI's
 *   current code list to the recoveries it releases (D.6), so the engine and the store never call the hardware;
 * - src/health/compensation.ts — D.5 lost-event compensation, the beyond-upstream periodic reconcile and its
 *   confirming read, with the card-drop tracker (src/health/card-drop.ts);
 * - src/health/link-limiter.ts — D.8 one real link query per chip per `-linkQueryInterval`;
 * - src/health/port-limiter.ts — the A5 port snapshot (UB and UBoE ports, D.5/D.8), limited the same way.
 *
 * D.3: `dcmi_subscribe_fault_event` up to 3 attempts 1 s apart; 310/310B/310P always poll; all attempts failing →
 * polling mode for the life of the process. D.4: event id 0 is ignored, 0x8C2FA009 (reset finished) re-synchronises
 * the chip, everything else is stamped with the injected clock and queued; nothing is dropped silently (a full
 * queue and the binding's overflow notices re-synchronise the chip and are counted).
 *
 * Hang detection (D.9) is src/health/hang-detector.ts; its synthetic code is left out of the DCMI diff.
 */
import type { ChipAddress, FaultEvent as DcmiFaultEvent, FaultOverflow, FaultSubscription } from '../dcmi/dcmi.js';
import type { LinkStatus, PortTable } from '../dcmi/hccn.js';
import { RESET_FINISHED_CODE, type FaultCode } from '../faults/codes.js';
import type { FaultEvent } from '../faults/engine-types.js';
import { subscribesToFaults, type ChipKind } from '../core/chips.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { sleep, type Clock } from '../core/clock.js';
import { Compensation } from './compensation.js';
import { IntakeQueue } from './intake-queue.js';
import { LinkLimiter } from './link-limiter.js';
import { PortLimiter } from './port-limiter.js';
import {
  codeText,
  reportDcmiError,
  type ChipStateReader,
  type HealthDcmi,
  type HealthMode,
  type HealthObserver,
} from './types.js';

export type {
  ChipStateReader,
  ChipStateView,
  CompensationReason,
  HealthDcmi,
  HealthMode,
  HealthObserver,
} from './types.js';

export interface HealthMonitorOptions {
  readonly dcmi: HealthDcmi;
  readonly chips: readonly ChipAddress[];
  readonly chipKind: ChipKind;
  readonly state: ChipStateReader;
  /** Receives every batch (the store's `applyEvents`). Called synchronously; must not throw. */
  readonly sink: (events: readonly FaultEvent[]) => void;
  /** A batch is due in this turn of the event loop (the intake's `onQueued`: the store's `inputComing`). */
  readonly onQueued?: () => void;
  readonly clock: Clock;
  /** `-listWatchPeriod` × 1000. */
  readonly listWatchPeriodMs: number;
  /** `hccn_tool -link -g` for a phy id (D.8); absent: no link checks. */
  readonly linkStatus?: (phyId: number) => Promise<LinkStatus>;
  /**
   * A5 only: `hccn_tool -g -dev_info -i <logicId>` parsed (D.5 hyper plane, D.8 UBoE bonding ports); absent: no port
   * checks. Limited like the link query (one per chip per `linkQueryIntervalMs`).
   */
  readonly portTable?: (logicId: number) => Promise<PortTable>;
  /** B.5/D.5: A5 on a UBoE main board (0x23/0x25/0x27): the parameter plane is the UBoE bonding ports. */
  readonly uboePlane?: boolean;
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
  /** The periodic reconcile diffs every chip once in this many periods (compensation.ts); default 4. */
  readonly reconcileSweepPeriods?: number;
  readonly observer?: HealthObserver;
  readonly logger?: Logger;
}

/** Counters of the monitor. */
export interface HealthStats {
  received: number;
  ignored: number;
  droppedResynced: number;
  synthesized: number;
  batches: number;
}

/** Most codes whose text {@link HealthMonitor} keeps (a storm repeats a few codes; any code is a valid event id). */
const CODE_TEXT_CACHE = 1024;

/** The health layer of one node. */
export class HealthMonitor {
  readonly #o: HealthMonitorOptions;
  readonly #chips: ReadonlyMap<number, ChipAddress>;
  readonly #log: Logger;
  readonly #intake: IntakeQueue;
  readonly #compensation: Compensation;
  #mode: HealthMode = 'starting';
  #stopped = false;
  readonly #stats = { received: 0, ignored: 0, droppedResynced: 0, batches: 0 };
  /** {@link codeText} of recent codes: every received event needs it for the metric and the log. */
  readonly #codeTexts = new Map<FaultCode, string>();

  constructor(options: HealthMonitorOptions) {
    this.#o = options;
    this.#chips = new Map(options.chips.map((c) => [c.logicId, c]));
    this.#log = options.logger ?? NOOP_LOGGER;
    const emit = (batch: readonly FaultEvent[]): void => this.#emit(batch);
    this.#intake = new IntakeQueue({
      clock: options.clock,
      sink: emit,
      liveCodes: (id) => this.#liveCodes(id),
      onFull: (ev) => {
        this.#stats.droppedResynced++;
        this.#o.observer?.droppedResynced?.([ev.logicId], 1, 'intake');
        this.markResync([ev.logicId], 'intake queue full');
      },
      ...(options.recoveryDelayMs !== undefined ? { recoveryDelayMs: options.recoveryDelayMs } : {}),
      ...(options.queueCapacity !== undefined ? { capacity: options.queueCapacity } : {}),
      ...(options.coalesceWindowMs !== undefined ? { coalesceWindowMs: options.coalesceWindowMs } : {}),
      ...(options.onQueued ? { onQueued: options.onQueued } : {}),
    });
    const link = options.linkStatus
      ? new LinkLimiter({
          query: options.linkStatus,
          clock: options.clock,
          logger: this.#log,
          ...(options.linkQueryIntervalMs !== undefined ? { intervalMs: options.linkQueryIntervalMs } : {}),
        })
      : undefined;
    const ports =
      options.portTable && options.chipKind === 'Ascend910A5'
        ? new PortLimiter({
            query: options.portTable,
            clock: options.clock,
            logger: this.#log,
            ...(options.linkQueryIntervalMs !== undefined ? { intervalMs: options.linkQueryIntervalMs } : {}),
          })
        : undefined;
    this.#compensation = new Compensation({
      dcmi: options.dcmi,
      chips: options.chips,
      chipKind: options.chipKind,
      state: options.state,
      clock: options.clock,
      mode: () => this.#mode,
      isHeld: (id, code) => this.#intake.isHeld(id, code),
      emit,
      listWatchPeriodMs: options.listWatchPeriodMs,
      logger: this.#log,
      ...(link ? { link } : {}),
      ...(ports ? { ports } : {}),
      ...(options.uboePlane ? { uboePlane: true } : {}),
      ...(options.reconcileConfirmMs !== undefined ? { confirmMs: options.reconcileConfirmMs } : {}),
      ...(options.longUnhealthyMs !== undefined ? { longUnhealthyMs: options.longUnhealthyMs } : {}),
      ...(options.reconcileSweepPeriods !== undefined ? { sweepPeriods: options.reconcileSweepPeriods } : {}),
      ...(options.observer ? { observer: options.observer } : {}),
    });
  }

  /** `subscribed` or `polling` once started. */
  mode(): HealthMode {
    return this.#mode;
  }

  /** Counters for metrics and tests. */
  stats(): HealthStats {
    return { ...this.#stats, synthesized: this.#compensation.synthesized };
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
    await this.#compensation.run(false);
    this.#compensation.startPeriod();
  }

  /** Stops timers and the subscription; held and queued events are dropped (the process is ending). */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#intake.stop();
    this.#compensation.stop();
    if (this.#mode === 'subscribed') {
      try {
        this.#o.dcmi.unsubscribeFaultEvents();
      } catch (err) {
        this.#log.warn({ err }, 'unsubscribing from DCMI fault events failed');
      }
    }
  }

  /** Resolves when no compensation or confirmation read is in progress (tests, shutdown). */
  idle(): Promise<void> {
    return this.#compensation.idle();
  }

  /** Marks chips for re-sync (D.4/D.5 `init`) and schedules a compensation run now. */
  markResync(logicIds: Iterable<number>, why = 're-sync requested'): void {
    this.#compensation.markResync(logicIds, why);
  }

  /** One compensation run (D.5); `periodic` adds the beyond-upstream reconcile of every chip while subscribed. */
  runCompensation(periodic: boolean): Promise<void> {
    return this.#compensation.run(periodic);
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
        reportDcmiError(err, 'dcmi_subscribe_fault_event', this.#o.observer, this.#log);
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
  // D.4 triage of one DCMI event

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
    this.#intake.push({
      logicId: e.logicId,
      code,
      assertion: e.assertion,
      severity: e.severity,
      timeMs: this.#o.clock.now(),
    });
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

  /**
   * The chip's current DCMI code list, read by the intake queue when it releases a held recovery (spec D.6: a
   * recovery of a code DCMI still reports is ignored). Undefined when DCMI cannot answer.
   */
  #liveCodes(logicId: number): readonly FaultCode[] | undefined {
    const chip = this.#chips.get(logicId);
    if (!chip) return undefined;
    try {
      return this.#o.dcmi.getDeviceAllErrorCodes(chip.cardId, chip.deviceId).codes;
    } catch (err) {
      reportDcmiError(err, 'dcmi_get_device_errorcode_v2', this.#o.observer, this.#log);
      return undefined;
    }
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
}
