/**
 * An in-process {@link ResetDcmi} for the reset engine tests, driven by a {@link Clock}:
 *
 * - `set(logicId, { ... })` sets a chip's answers: error codes, process count, device health, network health,
 *   out-of-band channel state, the outcome of its next resets (`reset`: `ok` | `fail` | `hang`, per channel) and
 *   how long it boots after a reset (`bootSeconds`); any query can be made to fail with `errors: { fn: code }`.
 * - A successful (`ok`) reset of a chip makes every chip of `affects(chip)` (default: the chip alone; the option
 *   `affects` models ring resets) report boot status 3 for their `bootSeconds`, then 16. `hang`: the call succeeds
 *   but those chips never finish booting. `fail`: the call rejects with `resetFailCode`.
 * - `calls` logs every call (`fn`, `logicId`, `arg`, `at` = wall time, `mono` = monotonic time); `count(fn,
 *   logicId?)` counts them. Boots last `bootSeconds` of monotonic time, as hardware ignores the wall clock.
 *
 * Every rejection is a {@link FakeDcmiError} carrying the numeric `code`, like the real port.
 */
import type { Clock } from '../../src/core/clock.js';
import type { ResetDcmi } from '../../src/reset/types.js';

/** A DCMI failure: message plus numeric `code`. */
export class FakeDcmiError extends Error {
  constructor(
    readonly code: number,
    fn: string,
    logicId: number,
  ) {
    super(`fake dcmi ${fn}(${logicId}) failed with ${code}`);
    this.name = 'FakeDcmiError';
  }
}

export type ResetOutcome = 'ok' | 'fail' | 'hang';
export type DcmiFn = keyof ResetDcmi;

/** What one chip answers. */
export interface FakeChip {
  codes: number[];
  processes: number;
  health: number;
  networkHealth: number;
  outbandChannel: number;
  reset: { inband: ResetOutcome; outband: ResetOutcome };
  bootSeconds: number;
  /** A call of `fn` on this chip rejects with this code. */
  errors: Partial<Record<DcmiFn, number>>;
}

export interface FakeCall {
  readonly fn: DcmiFn;
  readonly logicId: number;
  readonly arg?: unknown;
  readonly at: number;
  readonly mono: number;
}

export interface FakeResetDcmiOptions {
  readonly clock: Clock;
  /** Logic ids of the node's chips. */
  readonly chips: readonly number[];
  /** Chips that reboot when this chip is reset (default: the chip alone). */
  readonly affects?: (logicId: number) => readonly number[];
  /** Code of a `fail` reset (default -8020). */
  readonly resetFailCode?: number;
}

const BOOTING = 3;
const BOOTED = 16;

export class FakeResetDcmi implements ResetDcmi {
  readonly calls: FakeCall[] = [];
  private readonly chips = new Map<number, FakeChip>();
  /** Chip → time its boot finishes (Infinity: hung). */
  private readonly bootUntil = new Map<number, number>();

  constructor(private readonly o: FakeResetDcmiOptions) {
    for (const id of o.chips) {
      this.chips.set(id, {
        codes: [],
        processes: 0,
        health: 0,
        networkHealth: 0,
        outbandChannel: 1,
        reset: { inband: 'ok', outband: 'ok' },
        bootSeconds: 0,
        errors: {},
      });
    }
  }

  /** Changes some of a chip's answers. */
  set(logicId: number, patch: Partial<FakeChip>): this {
    Object.assign(this.chip(logicId), patch);
    return this;
  }

  /** The same change on several chips. */
  setAll(logicIds: readonly number[], patch: Partial<FakeChip>): this {
    for (const id of logicIds) this.set(id, { ...patch });
    return this;
  }

  /** A chip's current answers. */
  chip(logicId: number): FakeChip {
    const c = this.chips.get(logicId);
    if (!c) throw new Error(`fake dcmi: no chip ${logicId}`);
    return c;
  }

  /** Number of logged calls of `fn` (on `logicId` when given). */
  count(fn: DcmiFn, logicId?: number): number {
    return this.calls.filter((c) => c.fn === fn && (logicId === undefined || c.logicId === logicId)).length;
  }

  /** Logged calls of `fn`. */
  callsOf(fn: DcmiFn): FakeCall[] {
    return this.calls.filter((c) => c.fn === fn);
  }

  private enter(fn: DcmiFn, logicId: number, arg?: unknown): FakeChip {
    this.calls.push({
      fn,
      logicId,
      at: this.o.clock.now(),
      mono: this.o.clock.monotonic(),
      ...(arg !== undefined && { arg }),
    });
    const c = this.chip(logicId);
    const code = c.errors[fn];
    if (code !== undefined) throw new FakeDcmiError(code, fn, logicId);
    return c;
  }

  setDeviceReset(logicId: number, channel: 'inband' | 'outband'): Promise<void> {
    return answer(() => {
      const c = this.enter('setDeviceReset', logicId, channel);
      const outcome = c.reset[channel];
      if (outcome === 'fail') throw new FakeDcmiError(this.o.resetFailCode ?? -8020, 'setDeviceReset', logicId);
      const now = this.o.clock.monotonic();
      for (const id of this.o.affects?.(logicId) ?? [logicId]) {
        this.bootUntil.set(id, outcome === 'hang' ? Infinity : now + this.chip(id).bootSeconds * 1000);
      }
    });
  }

  getBootStatus(logicId: number): Promise<number> {
    return answer(() => {
      this.enter('getBootStatus', logicId);
      const until = this.bootUntil.get(logicId);
      return until !== undefined && this.o.clock.monotonic() < until ? BOOTING : BOOTED;
    });
  }

  getProcessCount(logicId: number): Promise<number> {
    return answer(() => this.enter('getProcessCount', logicId).processes);
  }

  getNetworkHealth(logicId: number): Promise<number> {
    return answer(() => this.enter('getNetworkHealth', logicId).networkHealth);
  }

  getDeviceHealth(logicId: number): Promise<number> {
    return answer(() => this.enter('getDeviceHealth', logicId).health);
  }

  getErrorCodes(logicId: number): Promise<readonly number[]> {
    return answer(() => [...this.enter('getErrorCodes', logicId).codes]);
  }

  getOutbandChannelState(logicId: number): Promise<number> {
    return answer(() => this.enter('getOutbandChannelState', logicId).outbandChannel);
  }

  preResetSoc(logicId: number): Promise<void> {
    return answer(() => void this.enter('preResetSoc', logicId));
  }

  rescanSoc(logicId: number): Promise<void> {
    return answer(() => void this.enter('rescanSoc', logicId));
  }
}

/** Runs a fake call: its result resolves, its throw rejects (as the real port does). */
function answer<T>(f: () => T): Promise<T> {
  try {
    return Promise.resolve(f());
  } catch (e) {
    return Promise.reject(e instanceof Error ? e : new Error(String(e)));
  }
}
