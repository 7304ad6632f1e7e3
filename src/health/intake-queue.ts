/**
 * The intake queue of the health layer (spec D.4, architecture §2 "nothing is dropped silently"): fault events in,
 * batches for the store out.
 *
 * - Recovery hold (D.4): a recovery waits `recoveryDelayMs` (1 s, upstream) before it is queued. Recoveries that
 *   arrive in the same monotonic millisecond share one timer, so a storm does not arm one timer per event.
 * - Live codes (D.6): when it releases held recoveries, the queue reads the chip's DCMI code list (`liveCodes`, once
 *   per chip per release) and attaches it to each chip-scope recovery. The engine ignores a recovery of a code DCMI
 *   still lists; this way it learns that from the event and never calls the hardware, and the store cycle that
 *   applies the batch never waits on DCMI: the read happens here, in the timer's own turn of the event loop.
 * - Bounded: an event that does not fit (`capacity`) goes to `onFull` (the monitor marks its chip for re-sync, so its
 *   final state is read back from DCMI, and counts it).
 * - Batching: queued events leave as one batch per event-loop turn. The binding delivers each DCMI event as its own
 *   callback (Node runs microtasks after each), so the batch is flushed from `setImmediate`, which runs once after
 *   every callback of the loop's poll phase. An idle agent still sends a lone event on at once (the check phase
 *   follows the poll phase of the same turn); a busy one sends everything that arrived meanwhile as one batch.
 *   Besides, while events keep arriving faster than that (the previous batch held more than one event and followed
 *   the one before it within the window), a batch that would follow the previous one within `coalesceWindowMs`
 *   waits for the rest of that window, so a storm costs at most one cycle (and one kubelet send) per window; a lone
 *   fault, faults arriving one at a time, or a fault right after one larger batch (held recoveries released
 *   together) never wait.
 */
import { HYPER_PLANE_CODES, isNetworkCode, type FaultCode } from '../faults/codes.js';
import type { FaultEvent } from '../faults/engine-types.js';
import type { Clock, TimerHandle } from '../core/clock.js';

export interface IntakeQueueOptions {
  readonly clock: Clock;
  /** Receives every batch, synchronously (the monitor's emit, then the store's `applyEvents`). */
  readonly sink: (batch: readonly FaultEvent[]) => void;
  /** The chip's DCMI code list now; undefined when DCMI cannot answer. Read when held recoveries are released. */
  readonly liveCodes: (logicId: number) => readonly FaultCode[] | undefined;
  /** An event that did not fit in the queue. */
  readonly onFull: (event: FaultEvent) => void;
  /** D.4 recovery delay, ms; default 1000. */
  readonly recoveryDelayMs?: number;
  /** Most events queued at once; default 10 000. */
  readonly capacity?: number;
  /**
   * Shortest time between two batches while events arrive in bursts, ms; default 2. Only a batch that would follow
   * a previous batch of more than one event sooner waits (for the rest of the window); 0 turns the window off.
   */
  readonly coalesceWindowMs?: number;
  /**
   * Called when a batch is due in this turn of the event loop (its flush is queued on `setImmediate`): the store then
   * lets its deferred projections wait one turn, so the batch's cycle and kubelet send go first (issue [P] item 5).
   */
  readonly onQueued?: () => void;
}

/** Recoveries held since one monotonic millisecond, released together. */
interface HoldGroup {
  readonly at: number;
  readonly events: FaultEvent[];
}

/** True for a code the engine's "DCMI still reports it" check applies to (chip scope, D.6). */
function chipScope(code: FaultCode): boolean {
  return !isNetworkCode(code) && !HYPER_PLANE_CODES.has(code);
}

/** D.4 intake: recovery hold, bounded queue, one batch per loop turn. */
export class IntakeQueue {
  readonly #o: IntakeQueueOptions;
  readonly #delayMs: number;
  readonly #capacity: number;
  readonly #windowMs: number;
  #stopped = false;
  /** Held recoveries: logic id → code → count (compensation leaves these codes alone: the recovery is coming). */
  readonly #held = new Map<number, Map<FaultCode, number>>();
  /** The newest hold group (a recovery of the same millisecond joins it). */
  #newest: HoldGroup | undefined;
  readonly #timers = new Set<TimerHandle>();
  #queue: FaultEvent[] = [];
  #flushScheduled = false;
  /** Monotonic time at which the last batch was handed to the sink (-Infinity: none yet), and its size. */
  #lastFlush = -Infinity;
  #lastBatch = 0;
  /** Time between the last batch and the one before it (Infinity: fewer than two batches); ≤ the window: a burst. */
  #lastGap = Infinity;

  constructor(options: IntakeQueueOptions) {
    this.#o = options;
    this.#delayMs = options.recoveryDelayMs ?? 1000;
    this.#capacity = options.capacity ?? 10_000;
    this.#windowMs = options.coalesceWindowMs ?? 2;
  }

  /** Takes one event (stamped by the caller): a recovery is held first, anything else is queued at once. */
  push(event: FaultEvent): void {
    if (this.#stopped) return;
    if (event.assertion !== 'recover') {
      this.#enqueue(event);
      return;
    }
    if (this.#delayMs <= 0) {
      this.#release([event]);
      return;
    }
    const held = this.#held.get(event.logicId) ?? new Map<FaultCode, number>();
    this.#held.set(event.logicId, held);
    held.set(event.code, (held.get(event.code) ?? 0) + 1);
    // a group is the recoveries of one millisecond, held together (monotonic: a frozen wall clock made every later
    // recovery join the first group and leave early with it)
    const now = Math.floor(this.#o.clock.monotonic());
    let group = this.#newest;
    if (group?.at !== now) {
      const g: HoldGroup = (group = { at: now, events: [] });
      this.#newest = g;
      this.#after(this.#delayMs, () => {
        if (this.#newest === g) this.#newest = undefined;
        for (const ev of g.events) this.#unhold(ev);
        this.#release(g.events);
      });
    }
    group.events.push(event);
  }

  /** True while a recovery of `code` on the chip is held. */
  isHeld(logicId: number, code: FaultCode): boolean {
    return this.#held.get(logicId)?.has(code) ?? false;
  }

  /** Drops held and queued events and clears the timers (the process is ending). */
  stop(): void {
    this.#stopped = true;
    for (const t of this.#timers) this.#o.clock.clearTimeout(t);
    this.#timers.clear();
    this.#held.clear();
    this.#newest = undefined;
    this.#queue = [];
  }

  #unhold(ev: FaultEvent): void {
    const held = this.#held.get(ev.logicId);
    const n = (held?.get(ev.code) ?? 1) - 1;
    if (n > 0) held!.set(ev.code, n);
    else held?.delete(ev.code);
    if (held?.size === 0) this.#held.delete(ev.logicId);
  }

  /** Queues released recoveries, each chip-scope one carrying the chip's DCMI list read now (one read per chip). */
  #release(events: readonly FaultEvent[]): void {
    const live = new Map<number, readonly FaultCode[] | undefined>();
    for (const ev of events) {
      if (this.#stopped) return;
      if (!chipScope(ev.code)) {
        this.#enqueue(ev);
        continue;
      }
      if (!live.has(ev.logicId)) live.set(ev.logicId, this.#o.liveCodes(ev.logicId));
      const codes = live.get(ev.logicId);
      this.#enqueue(codes !== undefined ? { ...ev, liveCodes: codes } : ev);
    }
  }

  #enqueue(ev: FaultEvent): void {
    if (this.#stopped) return;
    if (this.#queue.length >= this.#capacity) {
      this.#o.onFull(ev);
      return;
    }
    this.#queue.push(ev);
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    // the window is a gap on the monotonic clock (issue [T] item 1), bounded by one window all the same
    const burst = this.#lastBatch > 1 && this.#lastGap <= this.#windowMs;
    const wait = burst ? Math.min(this.#windowMs, this.#lastFlush + this.#windowMs - this.#o.clock.monotonic()) : 0;
    if (wait > 0) this.#after(wait, () => this.#flush());
    else {
      setImmediate(() => this.#flush());
      this.#o.onQueued?.();
    }
  }

  #flush(): void {
    this.#flushScheduled = false;
    if (this.#stopped) return;
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length > 0) this.#o.sink(batch);
    const now = this.#o.clock.monotonic(); // after the cycle and its listeners: a gap between cycles
    this.#lastGap = now - this.#lastFlush;
    this.#lastFlush = now;
    this.#lastBatch = batch.length;
  }

  #after(ms: number, fn: () => void): void {
    const t = this.#o.clock.setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, ms);
    this.#timers.add(t);
  }
}
