/**
 * The DCMI procedures the online flows share (hot-reset.md §3.4.2 – §3.4.6): process count to zero over the ring,
 * the in-band reset with its back-off, ring completion with the shared poll budget (and network health for
 * distributed jobs), and the 910A3 out-of-band fallback. They run inside one episode: every pause goes through the
 * episode's abortable sleep and every await is followed by its checkpoint, so an abandoned episode stops at its next
 * step.
 */
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { Clock } from '../core/clock.js';
import type { ChipState, TaskState } from './online-types.js';
import type { OnlineTimings, ResetDcmi, ResetEvent, RingFacts } from './types.js';
import { a3Group, arithmeticRing } from './rings.js';

/** §3.4.5: boot status "finished". */
export const BOOT_FINISHED = 16;
/** §3.4.5: network health values that count as ready (0 OK, 6 INIT). */
const NETWORK_READY: ReadonlySet<number> = new Set([0, 6]);
/** §5 out-of-band pauses: 3 s before the rescan, 2 s after a batch with a success. */
export const OUTBAND_RESCAN_PAUSE_MS = 3_000;
export const OUTBAND_SETTLE_MS = 2_000;
/** §4.3 `MaxResetTimes`: a chip whose counter is above this is not reset again. */
export const MAX_RESET_COUNT = 3;

/** A step of a procedure failed (the message names the chip and the rule). */
export class ResetStepError extends Error {
  override readonly name = 'ResetStepError';
}

/** What a procedure needs from the engine and its episode. */
export interface ProcedureContext {
  readonly clock: Clock;
  readonly timings: OnlineTimings;
  readonly dcmi: ResetDcmi;
  readonly facts: RingFacts;
  readonly ringSize: number;
  readonly logger: Logger;
  /** Throws when the episode must stop (its task left the node); called after every await. */
  checkpoint(): void;
  /** Abortable pause of the episode. */
  sleep(ms: number): Promise<void>;
  /** Task-state change (`resetting` / `waitingBoot`). */
  enter(state: TaskState): void;
  /** Per-chip marks for status (`undefined` clears them). */
  mark(logicIds: readonly number[], state: ChipState | undefined): void;
  event(event: Omit<ResetEvent, 'pod'>): void;
}

/** The per-chip reset counter of §4.3, kept on the faulty chip (D1). */
export interface ResetLimits {
  /** False when the chip's counter is above {@link MAX_RESET_COUNT}. */
  mayReset(logicId: number): boolean;
  /** +1 for one attempt sequence. */
  count(logicId: number): void;
}

const asError = (e: unknown): Error => (e instanceof Error ? e : new ResetStepError(String(e)));

/**
 * §3.4.2 chips whose process count must reach zero: 910A3 the union of the 4-chip groups of every task chip (a
 * failed association falls back to the rule of the other kinds); others every chip of every arithmetic ring that
 * holds a chip needing reset.
 */
export function processWaitChips(
  facts: RingFacts,
  ringSize: number,
  taskChips: readonly number[],
  faultyChips: readonly number[],
): number[] {
  const out = new Set<number>();
  if (facts.kind === 'Ascend910A3') {
    try {
      for (const id of taskChips) for (const g of a3Group(facts, id)) out.add(g);
      return [...out].sort((a, b) => a - b);
    } catch {
      out.clear();
    }
  }
  for (const id of faultyChips) for (const r of arithmeticRing(id, ringSize, facts)) out.add(r);
  return [...out].sort((a, b) => a - b);
}

/**
 * §3.4.2 `waitForAllFaultyDeviceProcessesToZero`: 1 s polls for `WaitProcessesToZeroTime`; each round queries the
 * chips whose last count was not zero and stops at the first non-zero one (a DCMI error counts as "not yet"). At the
 * deadline a final query decides: all zero, or a DCMI error, → true (proceed); otherwise false (the caller fails the
 * episode).
 */
export async function waitProcessesToZero(ctx: ProcedureContext, chips: readonly number[]): Promise<boolean> {
  const remaining = new Map<number, number>(chips.map((id) => [id, 1]));
  const deadline = ctx.clock.monotonic() + ctx.timings.waitProcessesToZero;
  for (;;) {
    if (ctx.clock.monotonic() >= deadline) return finalProcessQuery(ctx, remaining);
    let allZero = true;
    for (const [id, last] of remaining) {
      if (last === 0) continue;
      let count: number;
      try {
        count = await ctx.dcmi.getProcessCount(id);
      } catch {
        allZero = false;
        break;
      } finally {
        ctx.checkpoint();
      }
      remaining.set(id, count);
      if (count !== 0) {
        allZero = false;
        break;
      }
    }
    if (allZero) return true;
    await ctx.sleep(ctx.timings.pollInterval);
    ctx.checkpoint();
  }
}

async function finalProcessQuery(ctx: ProcedureContext, remaining: Map<number, number>): Promise<boolean> {
  for (const [id, last] of remaining) {
    if (last === 0) continue;
    let count: number;
    try {
      count = await ctx.dcmi.getProcessCount(id);
    } catch {
      return true; // §3.4.2: a DCMI error on the final query proceeds anyway
    } finally {
      ctx.checkpoint();
    }
    if (count !== 0) return false;
  }
  return true;
}

/**
 * §3.4.5 `isRingResetComplete`: every chip of the arithmetic ring of `chip` (910A3: the ring is the whole node),
 * ascending; each polled every 1 s (first at once) for at most WaitDeviceResetTime; one budget of
 * `maxResetWaitPolls` polls shared by the ring (§7.15, copied). Done per chip at boot status 16 and, when
 * `checkNet`, network health 0 or 6 (a failed network query counts as "not yet"). Throws {@link ResetStepError}.
 */
export async function isRingResetComplete(ctx: ProcedureContext, chip: number, checkNet: boolean): Promise<void> {
  const ring = arithmeticRing(chip, ctx.ringSize, ctx.facts);
  let budget = 0;
  for (const id of ring) {
    const deadline = ctx.clock.monotonic() + ctx.timings.waitDeviceReset;
    for (;;) {
      budget += 1;
      if (budget > ctx.timings.maxResetWaitPolls) {
        throw new ResetStepError(
          `ring of chip ${chip}: chip ${id} not ready after the ring's ${ctx.timings.maxResetWaitPolls} polls (§3.4.5)`,
        );
      }
      let boot: number;
      try {
        boot = await ctx.dcmi.getBootStatus(id);
      } catch (e) {
        throw new ResetStepError(`ring of chip ${chip}: boot status of chip ${id} failed: ${errorMessage(e)}`, {
          cause: e,
        });
      } finally {
        ctx.checkpoint();
      }
      if (boot === BOOT_FINISHED && (!checkNet || (await networkReady(ctx, id)))) break;
      if (ctx.clock.monotonic() >= deadline) {
        throw new ResetStepError(
          `ring of chip ${chip}: chip ${id} not ready within ${ctx.timings.waitDeviceReset} ms ` +
            `(boot status ${boot}${boot === BOOT_FINISHED ? ', network not ready' : ''}) (§3.4.5)`,
        );
      }
      await ctx.sleep(ctx.timings.pollInterval);
      ctx.checkpoint();
    }
  }
}

async function networkReady(ctx: ProcedureContext, id: number): Promise<boolean> {
  try {
    return NETWORK_READY.has(await ctx.dcmi.getNetworkHealth(id));
  } catch {
    return false;
  } finally {
    ctx.checkpoint();
  }
}

/**
 * §3.4.4 `tryResetDevice`: up to `resetBackoff.length + 1` (4) in-band attempts with the back-off pauses (5, 10,
 * 15 s) between failed ones. Throws {@link ResetStepError} with the last DCMI error as cause.
 */
export async function tryResetDevice(ctx: ProcedureContext, chip: number): Promise<void> {
  const attempts = ctx.timings.resetBackoff.length + 1;
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    let ok = false;
    try {
      await ctx.dcmi.setDeviceReset(chip, 'inband');
      ok = true;
    } catch (e) {
      last = e;
    }
    ctx.checkpoint();
    if (ok) return;
    ctx.logger.warn({ logicId: chip, attempt: i + 1, err: errorMessage(last) }, 'in-band reset failed');
    const pause = ctx.timings.resetBackoff[i];
    if (pause !== undefined) {
      await ctx.sleep(pause);
      ctx.checkpoint();
    }
  }
  throw new ResetStepError(`in-band reset of chip ${chip} failed ${attempts} times: ${errorMessage(last)}`, {
    cause: last,
  });
}

/**
 * §3.4.6 `resetDeviceOutBand` (910A3): the out-of-band channel must be usable (state 1), then `dcmi_pre_reset_soc`,
 * `dcmi_set_device_reset(out-of-band)`, 3 s, `dcmi_rescan_soc`. Throws {@link ResetStepError}.
 */
export async function resetDeviceOutBand(ctx: ProcedureContext, chip: number): Promise<void> {
  const step = async (what: string, f: () => Promise<unknown>): Promise<unknown> => {
    try {
      return await f();
    } catch (e) {
      throw new ResetStepError(`out-of-band reset of chip ${chip}: ${what} failed: ${errorMessage(e)}`, { cause: e });
    } finally {
      ctx.checkpoint();
    }
  };
  const state = await step('dcmi_get_device_outband_channel_state', () => ctx.dcmi.getOutbandChannelState(chip));
  if (state !== 1) throw new ResetStepError(`out-of-band reset of chip ${chip}: channel state ${String(state)}, not 1`);
  await step('dcmi_pre_reset_soc', () => ctx.dcmi.preResetSoc(chip));
  await step('dcmi_set_device_reset(out-of-band)', () => ctx.dcmi.setDeviceReset(chip, 'outband'));
  await ctx.sleep(OUTBAND_RESCAN_PAUSE_MS);
  ctx.checkpoint();
  await step('dcmi_rescan_soc', () => ctx.dcmi.rescanSoc(chip));
}

/**
 * §3.4.4 `execResetDevice` over the targets (D1: the faulty chips themselves), in ascending order. A chip whose
 * counter is above the limit is skipped (counts as success, the caller's level check then fails the episode). A chip
 * whose in-band reset or ring completion fails is a failure; on 910A3 the failures go through the out-of-band
 * fallback (§3.4.6). Throws the first (non-A3) or last (A3) error. Each failure also gets a Warning Event: the
 * ResetInfo `ManualResetDevs`/`ThirdPartyResetDevs` bookkeeping and the delayed third-party rescan of §3.4.6 are
 * reduced to that Event (the chip is isolated through the ConfigMap instead).
 */
export async function execResetDevice(
  ctx: ProcedureContext,
  targets: readonly number[],
  checkNet: boolean,
  limits: ResetLimits,
): Promise<void> {
  const failures: { chip: number; error: unknown }[] = [];
  for (const chip of [...targets].sort((a, b) => a - b)) {
    if (!limits.mayReset(chip)) {
      ctx.logger.warn({ logicId: chip }, `chip reset more than ${MAX_RESET_COUNT} times: not reset again (§4.3)`);
      continue;
    }
    limits.count(chip);
    ctx.enter('resetting');
    ctx.mark([chip], 'resetting');
    try {
      await tryResetDevice(ctx, chip);
    } catch (e) {
      if (!(e instanceof ResetStepError)) throw e;
      failures.push({ chip, error: e });
      continue;
    } finally {
      ctx.mark([chip], undefined);
    }
    const error = await completeRing(ctx, chip, checkNet);
    if (error !== undefined) failures.push({ chip, error });
  }
  if (failures.length === 0) return;
  if (ctx.facts.kind !== 'Ascend910A3') {
    for (const f of failures) {
      ctx.event({ type: 'Warning', reason: 'ResetChipFailed', message: `chip ${f.chip}: ${errorMessage(f.error)}` });
    }
    throw asError(failures[0]!.error);
  }
  await execOutBandReset(ctx, failures, checkNet);
}

/** §3.4.5 with the `waitingBoot` marks; returns the error instead of throwing (abandonment still throws). */
async function completeRing(ctx: ProcedureContext, chip: number, checkNet: boolean): Promise<unknown> {
  const ring = arithmeticRing(chip, ctx.ringSize, ctx.facts);
  ctx.enter('waitingBoot');
  ctx.mark(ring, 'booting');
  try {
    await isRingResetComplete(ctx, chip, checkNet);
    return undefined;
  } catch (e) {
    if (!(e instanceof ResetStepError)) throw e;
    return e;
  } finally {
    ctx.mark(ring, undefined);
  }
}

/**
 * §3.4.6 `execOutBandReset` (910A3): out-of-band reset of each in-band failure, then ring completion; a 2 s pause
 * when at least one out-of-band reset went through. Throws the last error; each out-of-band failure gets a Warning
 * Event (reduced ThirdParty bookkeeping, see {@link execResetDevice}).
 */
async function execOutBandReset(
  ctx: ProcedureContext,
  failures: readonly { chip: number; error: unknown }[],
  checkNet: boolean,
): Promise<void> {
  let last: unknown;
  let succeeded = 0;
  for (const { chip } of failures) {
    ctx.enter('resetting');
    ctx.mark([chip], 'resetting');
    try {
      await resetDeviceOutBand(ctx, chip);
    } catch (e) {
      if (!(e instanceof ResetStepError)) throw e;
      last = e;
      ctx.event({ type: 'Warning', reason: 'ResetChipFailed', message: `chip ${chip}: ${e.message}` });
      continue;
    } finally {
      ctx.mark([chip], undefined);
    }
    succeeded += 1;
    const error = await completeRing(ctx, chip, checkNet);
    if (error !== undefined) last = error;
  }
  if (succeeded > 0) {
    await ctx.sleep(OUTBAND_SETTLE_MS);
    ctx.checkpoint();
  }
  if (last !== undefined) throw asError(last);
}
