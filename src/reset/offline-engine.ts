/**
 * The offline reset engine: HEAD's "unified offline hot reset" (device-plugin.md §J.2–§J.7, hot-reset.md §4.4),
 * decision D7. It resets a faulty chip's reset group (§J.3) when no pod holds and no process runs on any chip of
 * the group, after the group has been seen free for 60 s, at most 3 times per 6 h per chip (token bucket), and
 * reports chips that need external action in the `ResetInfo` node annotation (§J.7).
 *
 * Used in `-hotReset` modes 0 and 2 for every chip, and in mode 1 for the chips no task uses (the online engine
 * owns the rings of its tasks: `isExcluded`, D4); mode -1 only removes Healthy chips from the annotation.
 *
 * Per chip it is an explicit state machine ({@link OfflineChipState}):
 * ```
 * idle ──ring free──► debouncing ──60 s, token, DCMI health ≠ 0──► resetting ──in-band issued──► waitingBoot
 *   ▲                    ▲  │ no token                                                 │ success → idle (re-sync)
 *   │                    │  ▼                                                          │ failure (910A3) → outOfBand
 *   └──── Healthy ───────┴─ exhausted (ManualResetDevs) ◄──── refill after 6 h        │ failure → debouncing
 * ```
 * A failed reset is retried "in a later cycle" (§J.2), i.e. no sooner than one `listWatchPeriod` (`retryAfter`)
 * after it ended: the end of a reset changes the resetting set, which publishes a snapshot and so runs a cycle at
 * once — without this wait that cycle found the idle time satisfied and a token left, and one failing chip used all
 * three tokens within milliseconds (issue 12 item 6).
 *
 * The "resetting" set is the shared {@link ResetCoordinator} (D4): every chip of the group is held for the whole
 * reset, so neither engine starts a second reset on the same group.
 *
 * Agent restart (issue [T] item 4; docs/hot-reset.md "Agent restart"): with a {@link OfflineStateStore} the resets in
 * flight and the token buckets are saved (the token and the reset before the DCMI call), and a new engine takes such a
 * group back at construction, reports it rebooting and waits for its boot instead of resetting it again.
 *
 * Differences from upstream (hot-reset.md §7): no isolation when a code survives the reset — the chip is only
 * re-synchronised and a later cycle decides again (item 6, HEAD behaviour); the out-of-band step runs only right
 * after this reset's in-band step failed, never from a remembered failure (items 7 and 8 cannot occur). The reset
 * hook plugins of §J.4 (`/usr/local/hotResetPluginConfiguration.json`) are not implemented: `outbandReset` is built
 * in (910A3 only) and `resetRecord`'s Events are the engine's own.
 */
import type { FaultLevel } from '../faults/levels.js';
import { type Logger, NOOP_LOGGER } from '../core/logger.js';
import { sleep, type Clock, type TimerHandle } from '../core/clock.js';
import type { ResetCoordinator } from './coordinator.js';
import type { OfflineResetPhase, OfflineResetRecord, OfflineStateStore } from './offline-state.js';
import type { ResetDev, ResetInfoManager } from './reset-info.js';
import { resetGroup } from './rings.js';
import { ChipTokenBuckets } from './token-bucket.js';
import type {
  ChipResetView,
  ChipStateHooks,
  HotResetMode,
  OfflineTimings,
  ResetChip,
  ResetDcmi,
  ResetEvent,
  RingFacts,
} from './types.js';

/** Per-chip state of the offline engine (metrics, `npuctl status`). */
export type OfflineChipState = 'idle' | 'debouncing' | 'resetting' | 'waitingBoot' | 'outOfBand' | 'exhausted';

/** One chip as {@link OfflineResetEngine.status} reports it. */
export interface OfflineChipStatus {
  readonly logicId: number;
  readonly state: OfflineChipState;
  /** When the chip's group was first seen free (ms since the epoch), while the debounce record exists. */
  readonly idleSince?: number;
  /** Tokens left in the chip's bucket (§J.2). */
  readonly tokens: number;
  /** The group being reset, while a reset of this chip runs. */
  readonly group?: readonly number[];
  /** Why the chip's last reset failed; cleared by a success. */
  readonly lastError?: string;
  /** After a failed reset: the earliest time (ms since the epoch) of the retry (§J.2 "a later cycle"). */
  readonly retryAt?: number;
}

/** Pauses of the built-in `outbandReset` step (§J.4), in ms. */
export interface OutbandTimings {
  /** Pause between `dcmi_set_device_reset(OUTBAND)` and `dcmi_rescan_soc`: 3 s. */
  readonly pause: number;
  /** Boot-status limit after the out-of-band reset: 150 s. */
  readonly bootLimit: number;
}

/** §J.2 / hot-reset.md §5 values. */
export const DEFAULT_OFFLINE_TIMINGS: OfflineTimings = Object.freeze({
  idle: 60_000,
  bootLimit: 180_000,
  pollInterval: 1_000,
  refill: 6 * 3_600_000,
  tokens: 3,
});

/** §J.4 values. */
export const DEFAULT_OUTBAND_TIMINGS: OutbandTimings = Object.freeze({ pause: 3_000, bootLimit: 150_000 });

/** Default {@link OfflineResetEngineOptions.retryAfter}: `-listWatchPeriod`'s default, 5 s. */
export const DEFAULT_RETRY_AFTER = 5_000;

/** Owner name of the offline engine in the {@link ResetCoordinator}. */
export const OFFLINE_OWNER = 'offline';

/** Constructor options of {@link OfflineResetEngine}. */
export interface OfflineResetEngineOptions {
  readonly clock: Clock;
  /** `-hotReset` (§1.2): -1 → annotation clean-up only; 0, 1, 2 → resets (mode 1: only rings not excluded). */
  readonly mode: HotResetMode;
  readonly timings: OfflineTimings;
  /** Defaults to {@link DEFAULT_OUTBAND_TIMINGS}. */
  readonly outbandTimings?: OutbandTimings;
  readonly dcmi: ResetDcmi;
  /** The node's chips and ring facts; physical chips only (virtual chips are never reset, §J.2). */
  readonly facts: RingFacts;
  /** Shared with the online engine (D4). */
  readonly coordinator: ResetCoordinator;
  readonly resetInfo: ResetInfoManager;
  /** `markNeedsResync` after a successful reset (D.5); `chips()` for the cycle a debounce wake-up runs. */
  readonly hooks: Pick<ChipStateHooks, 'markNeedsResync' | 'chips'>;
  /** Events to record on the Node. */
  readonly events: (e: ResetEvent) => void;
  /**
   * Minimum wait in ms between the end of a failed reset and its retry: `listWatchPeriod`, the upstream cycle
   * (§J.2 "retried in a later cycle"). Default {@link DEFAULT_RETRY_AFTER} (`-listWatchPeriod`'s default 5 s).
   */
  readonly retryAfter?: number;
  readonly logger?: Logger;
  /** True for a chip of a task the online engine handles (mode 1): its whole group is left alone (D4). */
  readonly isExcluded?: (logicId: number) => boolean;
  /**
   * Called with every chip of every group being reset whenever that set changes (ours, not upstream HEAD: the agent
   * reports these chips Unhealthy and `-Recovering` while they reboot, so nothing is scheduled onto a booting chip).
   */
  readonly onResettingChange?: (chips: ReadonlySet<number>) => void;
  /**
   * Keeps the resets in flight and the token buckets across an agent restart (issue [T] item 4); without it both
   * live in memory only, as upstream HEAD's.
   */
  readonly store?: OfflineStateStore;
}

/** Levels that make a chip a candidate (§J.2). */
const RESETTABLE: ReadonlySet<FaultLevel> = new Set<FaultLevel>([
  'RestartRequest',
  'RestartBusiness',
  'FreeRestartNPU',
  'RestartNPU',
]);
/** Levels that put a chip in `ManualResetDevs` ("needs external ops", §J.2). */
const MANUAL: ReadonlySet<FaultLevel> = new Set<FaultLevel>(['SeparateNPU', 'ManuallySeparateNPU']);

const BOOT_FINISHED = 16;
const OUTBAND_CHANNEL_OK = 1;
/** `dcmi_get_device_health` "device not ready": counts as not healthy at the confirmation (§J.2). */
const DEVICE_NOT_READY = -8012;

interface Running {
  readonly group: readonly number[];
}

function explain(e: unknown): string {
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    return typeof code === 'number' ? `${e.message} (code ${code})` : e.message;
  }
  return String(e);
}

function codeOf(e: unknown): unknown {
  return typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
}

function checkTiming(name: string, v: unknown, allowZero = false): void {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (!allowZero && v === 0)) {
    throw new Error(`offline reset engine: timing ${name} must be a positive number of ms, got ${String(v)}`);
  }
}

/** HEAD's offline reset engine; one per agent. */
export class OfflineResetEngine {
  private readonly o: OfflineResetEngineOptions;
  private readonly log: Logger;
  private readonly outband: OutbandTimings;
  private readonly tokens: ChipTokenBuckets;
  private readonly chipById: ReadonlyMap<number, ResetChip>;
  private readonly excluded: (logicId: number) => boolean;
  private readonly state = new Map<number, OfflineChipState>();
  /** Chip → monotonic ms its group was first seen free (the debounce record). */
  private readonly idleSince = new Map<number, number>();
  private readonly running = new Map<number, Running>();
  /** Chip → wall-clock ms its running reset started (persisted: the boot limit left after a restart). */
  private readonly startedAt = new Map<number, number>();
  private readonly resets = new Set<Promise<void>>();
  private readonly lastError = new Map<number, string>();
  /** Chip → earliest retry, monotonic ms, after a failed reset (§J.2 "a later cycle"). */
  private readonly retryAt = new Map<number, number>();
  private readonly retryAfter: number;
  private readonly groupErrorLogged = new Set<number>();
  private pass: Promise<void> | undefined;
  private latest: readonly ChipResetView[] = [];
  private rerun = false;
  private wake: { handle: TimerHandle; at: number } | undefined;
  private closed = false;

  constructor(o: OfflineResetEngineOptions) {
    if (![-1, 0, 1, 2].includes(o.mode))
      throw new Error(`offline reset engine: unknown -hotReset mode ${String(o.mode)}`);
    const t = o.timings;
    checkTiming('idle', t.idle, true);
    checkTiming('bootLimit', t.bootLimit);
    checkTiming('pollInterval', t.pollInterval);
    this.outband = o.outbandTimings ?? DEFAULT_OUTBAND_TIMINGS;
    checkTiming('outband pause', this.outband.pause, true);
    checkTiming('outband bootLimit', this.outband.bootLimit);
    this.retryAfter = o.retryAfter ?? DEFAULT_RETRY_AFTER;
    checkTiming('retryAfter', this.retryAfter);
    this.o = o;
    this.log = o.logger ?? NOOP_LOGGER;
    this.tokens = new ChipTokenBuckets({ clock: o.clock, capacity: t.tokens, refillMs: t.refill });
    this.chipById = new Map(o.facts.chips.map((c) => [c.logicId, c]));
    this.excluded = o.isExcluded ?? (() => false);
    this.restore();
  }

  /**
   * One pass of §J.2 over the latest snapshot; call it after every state snapshot and every `listWatchPeriod` tick.
   * Cheap when no chip is faulty. A call made while a pass runs is folded into one more pass with the latest
   * chips. Resets run in the background; the returned promise (which never rejects) settles when the pass is done.
   */
  cycle(chips: readonly ChipResetView[]): Promise<void> {
    if (!Array.isArray(chips)) throw new Error('offline reset engine: cycle() needs the array of chip views');
    if (this.closed) return Promise.resolve();
    this.latest = chips;
    if (this.pass) {
      this.rerun = true;
      return this.pass;
    }
    this.pass = this.passes().finally(() => {
      this.pass = undefined;
    });
    return this.pass;
  }

  /** Every chip of the node, logic-id order. */
  status(): readonly OfflineChipStatus[] {
    // internal times are monotonic (issue [T] item 1); the status shows them as wall times
    const wallOf = (mono: number): number => this.o.clock.now() + (mono - this.o.clock.monotonic());
    return this.o.facts.chips.map((c) => {
      const id = c.logicId;
      const idleSince = this.idleSince.get(id);
      const run = this.running.get(id);
      const err = this.lastError.get(id);
      const retryAt = this.retryAt.get(id);
      return {
        logicId: id,
        state: this.state.get(id) ?? 'idle',
        tokens: this.tokens.peek(id),
        ...(idleSince !== undefined && { idleSince: wallOf(idleSince) }),
        ...(run && { group: run.group }),
        ...(err !== undefined && { lastError: err }),
        ...(retryAt !== undefined && { retryAt: wallOf(retryAt) }),
      };
    });
  }

  /** Stops the debounce wake-up; later cycles do nothing. Running resets finish on their own. */
  close(): void {
    this.closed = true;
    this.setWake(undefined);
  }

  /** Resolves when no pass and no reset runs (tests, shutdown). */
  async whenIdle(): Promise<void> {
    for (;;) {
      const busy = [...this.resets, ...(this.pass ? [this.pass] : [])];
      if (busy.length === 0) return;
      await Promise.all(busy);
    }
  }

  private async passes(): Promise<void> {
    do {
      this.rerun = false;
      try {
        await this.passOnce(this.latest);
      } catch (e) {
        this.log.error({ err: e }, 'offline reset: pass failed');
      }
    } while (this.rerun && !this.closed);
  }

  private notifyResetting(): void {
    if (!this.o.onResettingChange) return;
    const chips = new Set<number>();
    for (const r of this.running.values()) for (const g of r.group) chips.add(g);
    try {
      this.o.onResettingChange(chips);
    } catch (e) {
      this.log.error({ err: e }, 'offline reset: resetting listener threw');
    }
  }

  private setState(logicId: number, s: OfflineChipState): void {
    const was = this.state.get(logicId) ?? 'idle';
    if (was === s) return;
    if (s === 'idle') this.state.delete(logicId);
    else this.state.set(logicId, s);
    this.log.debug({ logicId, from: was, to: s }, 'offline reset: chip state');
  }

  /** The state of a chip that is not being reset: debouncing while its idle record exists. */
  private rest(logicId: number): void {
    this.setState(logicId, this.idleSince.has(logicId) ? 'debouncing' : 'idle');
  }

  private devOf(logicId: number): ResetDev | undefined {
    const c = this.chipById.get(logicId);
    if (!c) return undefined;
    const brother = this.o.facts.kind === 'Ascend910A3' ? this.o.facts.brotherCardOf?.(c.cardId) : undefined;
    return {
      CardId: c.cardId,
      DeviceId: c.deviceId,
      AssociatedCardId: brother ?? -1,
      PhyID: c.phyId,
      LogicID: c.logicId,
    };
  }

  private async passOnce(chips: readonly ChipResetView[]): Promise<void> {
    // §J.2: Healthy chips forget their idle record and leave the ResetInfo lists — in every mode, -1 included.
    const healthyPhy: number[] = [];
    for (const c of chips) {
      if (!c.healthy) continue;
      this.idleSince.delete(c.logicId);
      this.retryAt.delete(c.logicId);
      if (!this.running.has(c.logicId)) this.setState(c.logicId, 'idle');
      const phy = this.chipById.get(c.logicId)?.phyId;
      if (phy !== undefined) healthyPhy.push(phy);
    }
    // Annotation work waits for the first load; it is recomputed every cycle, so nothing is lost meanwhile.
    const info = this.o.resetInfo;
    if (info.loaded()) {
      info.remove(healthyPhy);
      info.flush();
    } else {
      void info.load();
    }
    if (this.o.mode === -1) return;

    const manual: ResetDev[] = [];
    const candidates: ChipResetView[] = [];
    for (const c of chips) {
      if (c.healthy || this.o.coordinator.owner(c.logicId) !== undefined) continue;
      if (RESETTABLE.has(c.level)) {
        candidates.push(c);
        continue;
      }
      this.rest(c.logicId);
      if (MANUAL.has(c.level)) {
        const dev = this.devOf(c.logicId);
        if (dev) manual.push(dev);
      }
    }
    if (info.loaded()) info.append('ManualResetDevs', manual);
    if (candidates.length === 0) {
      this.setWake(undefined);
      return;
    }
    const byId = new Map(chips.map((c) => [c.logicId, c]));
    for (const c of candidates) {
      if (this.closed) return;
      await this.consider(c.logicId, byId);
    }
    this.armWake(candidates);
  }

  private groupOf(logicId: number): readonly number[] {
    try {
      const g = resetGroup(this.o.facts, logicId);
      this.groupErrorLogged.delete(logicId);
      return g;
    } catch (e) {
      if (!this.groupErrorLogged.has(logicId)) {
        this.groupErrorLogged.add(logicId);
        this.log.warn({ err: e, logicId }, 'offline reset: no reset group for the chip, not resetting it');
      }
      return [];
    }
  }

  /** §J.6: no chip of the group in a pod, no process on any (a query error counts as busy). */
  private async ringFree(group: readonly number[], byId: ReadonlyMap<number, ChipResetView>): Promise<boolean> {
    if (group.some((g) => byId.get(g)?.podUsed !== false)) return false;
    for (const g of group) {
      try {
        if ((await this.o.dcmi.getProcessCount(g)) !== 0) return false;
      } catch (e) {
        this.log.debug({ err: e, logicId: g }, 'offline reset: process count query failed, group counted busy');
        return false;
      }
    }
    return true;
  }

  /** §J.2, one candidate. */
  private async consider(id: number, byId: ReadonlyMap<number, ChipResetView>): Promise<void> {
    const coord = this.o.coordinator;
    if (coord.owner(id) !== undefined) return;
    const group = this.groupOf(id);
    if (group.length === 0 || group.some((g) => this.excluded(g))) {
      this.rest(id);
      return;
    }
    if (!(await this.ringFree(group, byId))) {
      this.rest(id);
      return;
    }
    const now = this.o.clock.monotonic();
    let since = this.idleSince.get(id);
    if (since === undefined) {
      since = now;
      this.idleSince.set(id, since);
    }
    if (now - since < this.o.timings.idle) {
      this.setState(id, 'debouncing');
      return;
    }
    if (this.tokens.available(id) === 0) {
      this.exhausted(id);
      return;
    }
    this.setState(id, 'debouncing');
    const retryAt = this.retryAt.get(id);
    if (retryAt !== undefined && now < retryAt) return; // §J.2: a failed reset waits for a later cycle
    if (!coord.tryAcquire(group, OFFLINE_OWNER)) return; // some group chip is in reset (either engine)
    let go: boolean;
    try {
      go = (await this.o.dcmi.getDeviceHealth(id)) !== 0;
    } catch (e) {
      go = codeOf(e) === DEVICE_NOT_READY;
      if (!go) this.log.debug({ err: e, logicId: id }, 'offline reset: health confirmation failed, not resetting');
    }
    if (!go || this.closed || !this.tokens.tryConsume(id)) {
      coord.release(group, OFFLINE_OWNER);
      return;
    }
    const p = this.executeReset(id, group).finally(() => this.resets.delete(p));
    this.resets.add(p);
  }

  private exhausted(id: number): void {
    if (this.state.get(id) !== 'exhausted') {
      const at = this.tokens.nextRefillAt(id);
      const until = at === undefined ? '' : ` until ${new Date(at).toISOString()}`;
      this.log.warn({ logicId: id }, `offline reset: chip ${id} used all its resets, needs manual action${until}`);
      this.o.events({
        type: 'Warning',
        reason: 'OfflineResetLimitReached',
        message: `chip logic ${id}: ${this.o.timings.tokens} resets within the limit period, listed in ManualResetDevs${until}`,
      });
    }
    this.setState(id, 'exhausted');
    const dev = this.devOf(id);
    if (dev && this.o.resetInfo.loaded()) this.o.resetInfo.append('ManualResetDevs', [dev]);
  }

  /** §J.2 executeReset; the group is held in the coordinator by the caller and released here. */
  private async executeReset(id: number, group: readonly number[]): Promise<void> {
    this.running.set(id, { group });
    this.startedAt.set(id, this.o.clock.now());
    this.notifyResetting();
    this.setState(id, 'resetting');
    this.persist(); // before the DCMI call: a restart must find the token used and the reset possibly under way
    this.log.info({ logicId: id, group }, 'offline reset: resetting chip');
    let err: Error | undefined;
    try {
      err = await this.inBand(id, group);
      if (err && this.o.facts.kind === 'Ascend910A3') {
        this.log.warn({ logicId: id, err: err.message }, 'offline reset: in-band reset failed, trying out-of-band');
        this.setState(id, 'outOfBand');
        this.persist();
        err = await this.outOfBand(group);
      }
    } catch (e) {
      err = e instanceof Error ? e : new Error(String(e));
    }
    this.finishReset(id, group, err, '');
  }

  /**
   * The end of a reset, run here or resumed after a restart (`how` is added to the Event): success → re-sync, idle;
   * failure → retried no sooner than `retryAfter`. The group leaves the coordinator and the persisted state.
   */
  private finishReset(id: number, group: readonly number[], err: Error | undefined, how: string): void {
    if (err === undefined) {
      this.idleSince.delete(id);
      this.lastError.delete(id);
      this.retryAt.delete(id);
      this.o.hooks.markNeedsResync([id]);
    } else {
      // set before the resetting set changes below: that change runs a cycle at once (see the file comment)
      this.retryAt.set(id, this.o.clock.monotonic() + this.retryAfter);
    }
    this.running.delete(id);
    this.startedAt.delete(id);
    this.notifyResetting();
    try {
      this.o.coordinator.release(group, OFFLINE_OWNER);
    } catch (e) {
      this.log.error({ err: e, logicId: id }, 'offline reset: releasing the group failed');
    }
    if (err === undefined) {
      this.setState(id, 'idle');
      this.persist();
      this.log.info({ logicId: id, group }, `offline reset: chip reset${how}, re-reading its faults`);
      this.o.events({
        type: 'Normal',
        reason: 'OfflineResetSucceeded',
        message: `chip logic ${id} reset${how} (group ${group.join(',')}), ${this.tokens.peek(id)} resets left in the period`,
      });
    } else {
      const why = explain(err);
      this.lastError.set(id, why);
      this.rest(id);
      this.persist();
      this.log.warn({ logicId: id, group, err: why }, `offline reset: reset failed${how}`);
      this.o.events({
        type: 'Warning',
        reason: 'OfflineResetFailed',
        message: `chip logic ${id} (group ${group.join(',')})${how}: ${why}; ${this.tokens.peek(id)} resets left in the period`,
      });
    }
  }

  /**
   * Agent restart (issue [T] item 4): the buckets and the resets in flight a previous run saved. Each such group is
   * held again at once and reported as rebooting (Unhealthy, `-Recovering`), then its boot is waited for with what is
   * left of the boot limit (the time since the reset started, by the wall clock, counted against it; at least one
   * poll). The reset itself is never issued again: it was, or the process died before the call, and then the boot
   * status is 16 at the first poll and the chip, still faulty, goes through a new idle period and needs a token.
   */
  private restore(): void {
    const store = this.o.store;
    let saved;
    try {
      saved = store?.load();
    } catch (e) {
      this.log.error({ err: e }, 'offline reset: saved state not readable, ignored');
    }
    if (saved === undefined) return;
    for (const problem of this.tokens.restore(saved.buckets)) this.log.error(`offline reset: ${problem}; ignored`);
    for (const r of saved.resets) {
      if (!this.chipById.has(r.logicId) || r.group.some((g) => !this.chipById.has(g))) {
        this.log.error({ record: r }, 'offline reset: a saved reset names chips this node does not have; ignored');
        continue;
      }
      if (this.running.has(r.logicId) || !this.o.coordinator.tryAcquire(r.group, OFFLINE_OWNER)) {
        this.log.error({ record: r }, 'offline reset: the group of a saved reset is already held; ignored');
        continue;
      }
      this.running.set(r.logicId, { group: r.group });
      this.startedAt.set(r.logicId, r.startedAt);
      this.setState(r.logicId, 'waitingBoot');
      const p = this.resumeReset(r).finally(() => this.resets.delete(p));
      this.resets.add(p);
    }
    if (this.running.size > 0) this.notifyResetting();
    this.persist();
  }

  private async resumeReset(r: OfflineResetRecord): Promise<void> {
    const limit = r.phase === 'outOfBand' ? this.outband.bootLimit : this.o.timings.bootLimit;
    const elapsed = Math.min(limit, Math.max(0, this.o.clock.now() - r.startedAt));
    const left = Math.max(this.o.timings.pollInterval, limit - elapsed);
    this.log.info(
      { logicId: r.logicId, group: r.group, phase: r.phase, leftMs: left },
      'offline reset: a reset was in flight when the agent stopped; waiting for its group to boot',
    );
    let err: Error | undefined;
    try {
      err = await this.waitBoot(r.group, left);
    } catch (e) {
      err = e instanceof Error ? e : new Error(String(e));
    }
    this.finishReset(r.logicId, r.group, err, ' (resumed after an agent restart)');
  }

  /** Saves the resets in flight and the buckets (no-op without a store). */
  private persist(): void {
    const store = this.o.store;
    if (store === undefined) return;
    const resets: OfflineResetRecord[] = [...this.running].map(([logicId, run]) => {
      const s = this.state.get(logicId);
      const phase: OfflineResetPhase = s === 'waitingBoot' || s === 'outOfBand' ? s : 'resetting';
      return { logicId, group: run.group, startedAt: this.startedAt.get(logicId) ?? this.o.clock.now(), phase };
    });
    try {
      store.save({ resets, buckets: this.tokens.exportState() });
    } catch (e) {
      this.log.error({ err: e }, 'offline reset: state not saved');
    }
  }

  /** §J.2 step 2: one in-band reset of the faulty chip, then every group chip must boot. */
  private async inBand(id: number, group: readonly number[]): Promise<Error | undefined> {
    try {
      await this.o.dcmi.setDeviceReset(id, 'inband');
    } catch (e) {
      return new Error(`in-band reset of chip ${id} failed: ${explain(e)}`, { cause: e });
    }
    this.setState(id, 'waitingBoot');
    this.persist();
    return this.waitBoot(group, this.o.timings.bootLimit);
  }

  /**
   * Polls boot status every `pollInterval` (first poll one interval after the reset) until every chip reports 16;
   * any DCMI error aborts; at most `limit` ms.
   */
  private async waitBoot(group: readonly number[], limit: number): Promise<Error | undefined> {
    const interval = this.o.timings.pollInterval;
    const deadline = this.o.clock.monotonic() + limit;
    const pending = new Set(group);
    for (;;) {
      await sleep(this.o.clock, interval);
      for (const g of [...pending]) {
        try {
          if ((await this.o.dcmi.getBootStatus(g)) === BOOT_FINISHED) pending.delete(g);
        } catch (e) {
          return new Error(`boot status of chip ${g} failed: ${explain(e)}`, { cause: e });
        }
      }
      if (pending.size === 0) return undefined;
      if (this.o.clock.monotonic() + interval > deadline) {
        return new Error(`chips ${[...pending].join(',')} did not finish booting within ${limit / 1000} s`);
      }
    }
  }

  /**
   * §J.4 `outbandReset` (910A3): for every group chip the out-of-band channel must be usable (state 1), then
   * pre-reset, out-of-band reset, 3 s, rescan; then every group chip must boot within 150 s. The last error wins.
   */
  private async outOfBand(group: readonly number[]): Promise<Error | undefined> {
    const d = this.o.dcmi;
    let last: Error | undefined;
    let issued = false;
    for (const g of group) {
      try {
        const channel = await d.getOutbandChannelState(g);
        if (channel !== OUTBAND_CHANNEL_OK)
          throw new Error(`out-of-band channel of chip ${g} is not usable (state ${channel})`);
        await d.preResetSoc(g);
        await d.setDeviceReset(g, 'outband');
        issued = true;
        await sleep(this.o.clock, this.outband.pause);
        await d.rescanSoc(g);
      } catch (e) {
        last = new Error(`out-of-band reset of chip ${g} failed: ${explain(e)}`, { cause: e });
      }
    }
    if (issued) last = (await this.waitBoot(group, this.outband.bootLimit)) ?? last;
    return last;
  }

  /**
   * Wakes the engine when the earliest running debounce or retry wait expires (so the reset does not wait for the
   * next tick).
   */
  private armWake(candidates: readonly ChipResetView[]): void {
    const now = this.o.clock.monotonic();
    let at: number | undefined;
    for (const c of candidates) {
      const since = this.idleSince.get(c.logicId);
      if (since === undefined || this.state.get(c.logicId) !== 'debouncing') continue;
      const due = Math.max(since + this.o.timings.idle, this.retryAt.get(c.logicId) ?? 0);
      if (due > now && (at === undefined || due < at)) at = due;
    }
    this.setWake(at);
  }

  private setWake(at: number | undefined): void {
    if (this.wake?.at === at) return;
    if (this.wake) this.o.clock.clearTimeout(this.wake.handle);
    this.wake = undefined;
    if (at === undefined || this.closed) return;
    const handle = this.o.clock.setTimeout(() => {
      this.wake = undefined;
      void this.cycle(this.o.hooks.chips());
    }, at - this.o.clock.monotonic());
    this.wake = { handle, at };
  }
}
