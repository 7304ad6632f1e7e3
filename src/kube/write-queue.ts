/**
 * One write queue per Kubernetes object (architecture §2): callers hand over the object's desired state and return
 * at once; the queue writes it through a supplied writer, keeping at most one pending state (the last one wins),
 * backing off exponentially with jitter while the API server fails, creating the object on 404 and re-reading it
 * through a reconcile callback on 409.
 *
 * Conflicts (issue [T] item 2) are not outages: a 409 says the writer's copy is stale, not that the server is down.
 * It is re-read and retried at once a bounded number of times ({@link WriteQueueOptions.maxConflictRetries}); after
 * that the queue waits on a short backoff of its own ({@link ConflictBackoffOptions}: 250 ms doubling to 1 s, never
 * the 30 s of outages), reads again when the wait ends, and is woken early by any sign that writes succeed again
 * (another object's successful write, {@link ApiRecovery.reportWriteSuccess}; the recovery after an outage).
 *
 * Also the backoff shared by the kube layer's retriers ({@link ObjectWriteQueue}, `ListWatch`): {@link backoffDelay},
 * and {@link ApiRecovery}, the agent's one "API server reachable again" signal that ends every backoff at once when
 * an outage is over (issue [K] item 8: a retrier sleeping up to 30 s after the API came back kept the final state
 * out of the ConfigMap for that long). Every delay, age and due time here is on the monotonic clock (issue [T] item
 * 1: a wall clock stepped back would hold a retry for as long as the step).
 */
import { SYSTEM_CLOCK } from '../core/clock.js';
import { errorMessage, statusOf } from '../core/errors.js';

/** Timers and time, injectable for tests (the shape of `Clock`, src/core/clock.ts). */
export interface QueueClock {
  /** Wall clock (ms since the epoch): timestamps that leave the process only (content, Events). */
  now(): number;
  /** Monotonic ms from an arbitrary origin: every delay, age, spacing and due time. */
  monotonic(): number;
  /** Due on the monotonic clock. */
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The process clock (`SYSTEM_CLOCK`); timers are `unref`'d so a pending retry never keeps the process alive. */
export const systemQueueClock: QueueClock = SYSTEM_CLOCK;

/** Writes one object. Errors carry the HTTP status as `code` or `statusCode` (client-node's `ApiException`). */
export interface ObjectWriter<T> {
  /** Replaces the live object (UPDATE). */
  update(desired: T): Promise<void>;
  /** Creates the object (after UPDATE answered 404). */
  create(desired: T): Promise<void>;
  /**
   * After a 409 Conflict: read the live object and return the state to write now (e.g. with its fresh
   * resourceVersion and an operator's release kept, spec G.2), or null when nothing needs writing.
   * Without it a conflict is retried with the same state.
   */
  reconcile?(desired: T): Promise<T | null>;
}

/** Backoff of failed writes. */
export interface BackoffOptions {
  /** First delay (default 500 ms). */
  readonly initialMs?: number;
  /** Largest delay before jitter (default 30 s). */
  readonly maxMs?: number;
  /** Relative jitter: a delay d becomes a uniform value in [d·(1−j), d·(1+j)] (default 0.2). */
  readonly jitter?: number;
  /**
   * The agent's shared recovery signal: a retrier waiting after a failure is woken as soon as the API server is seen
   * answering again, instead of sleeping out its delay. Without it the delay is always slept out.
   */
  readonly recovery?: ApiRecovery;
}

/**
 * The wait after conflicts (issue [T] item 2). Its cap bounds the catch-up after a conflict storm: the state is
 * written at most `maxMs·(1 + jitter)` (1.2 s by default) plus one read and one write after the conflicts stop,
 * however long they lasted, while a storm costs one read and one write per `maxMs` (≈ 1 of each a second).
 */
export interface ConflictBackoffOptions {
  /** First wait after the immediate retries (default 250 ms); doubles per further conflict. */
  readonly initialMs?: number;
  /** Largest wait before jitter (default 1000 ms). */
  readonly maxMs?: number;
  /** Relative jitter (default: the outage backoff's, 0.2). */
  readonly jitter?: number;
}

/** Default {@link WriteQueueOptions.maxConflictRetries}. */
export const DEFAULT_CONFLICT_RETRIES = 2;
/** Default {@link ConflictBackoffOptions}. */
export const DEFAULT_CONFLICT_BACKOFF = { initialMs: 250, maxMs: 1000 } as const;

/** Options of a queue. */
export interface WriteQueueOptions<T> {
  readonly writer: ObjectWriter<T>;
  readonly clock?: QueueClock;
  /** Uniform [0, 1) source for jitter (default `Math.random`). */
  readonly random?: () => number;
  readonly backoff?: BackoffOptions;
  /**
   * Immediate retries after a 409, each after a fresh read through `reconcile` (default 2): a real race (one other
   * writer in between) is resolved by the first. Counted from the last success; past them, a conflict waits.
   */
  readonly maxConflictRetries?: number;
  /** The wait after conflicts past the immediate retries (see {@link ConflictBackoffOptions}). */
  readonly conflictBackoff?: ConflictBackoffOptions;
  /** Called after every successful write. */
  readonly onWritten?: (state: T, how: 'update' | 'create') => void;
  /** Called on every failed attempt; `retryInMs` is undefined when the state was dropped as rejected. */
  readonly onError?: (error: unknown, info: { status: number | undefined; retryInMs: number | undefined }) => void;
}

/** Counters for metrics and tests. */
export interface WriteQueueStats {
  /** Successful writes (updates and creates). */
  writes: number;
  creates: number;
  /** Failed attempts that are retried (5xx, network, 401/403/429, conflicts past the immediate retries). */
  failures: number;
  /** Answers 409 (each one, the immediately retried ones included). */
  conflicts: number;
  /** States the API server refused as invalid (400, 422, other 4xx): dropped, counted, reported. */
  rejected: number;
  /** Pending states replaced by a newer one before they were written. */
  superseded: number;
  /** Failed attempts since the last success. */
  consecutiveFailures: number;
  /** Since when the oldest unwritten state waits (monotonic ms); undefined when nothing waits. */
  pendingSinceMs: number | undefined;
  /** Monotonic ms of the next retry, of the last successful write. */
  nextRetryAtMs: number | undefined;
  lastWriteAtMs: number | undefined;
  lastError: string | undefined;
}

/** Delay before retry number `attempt` (1-based): exponential, capped, with jitter (see {@link BackoffOptions}). */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions = {},
  random: () => number = Math.random,
): number {
  const initial = options.initialMs ?? 500;
  const max = options.maxMs ?? 30_000;
  const jitter = options.jitter ?? 0.2;
  const base = Math.min(max, initial * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (1 - jitter + 2 * jitter * random()));
}

/**
 * Whether a failure looks like the API server as a whole not answering (an outage): a network error (no HTTP
 * status: refused, reset, timed out) or a 5xx. A 4xx (429 throttling included) is an answer of a working server.
 */
export function isOutageStatus(status: number | undefined): boolean {
  return status === undefined || status >= 500;
}

/** Options of {@link ApiRecovery}. */
export interface ApiRecoveryOptions {
  /**
   * A cheap request telling whether the API server serves again (the agent's: `GET /readyz`, bounded): true = it
   * does. Undefined: only successes of real requests count.
   */
  readonly probe?: () => Promise<boolean>;
  readonly clock?: QueueClock;
  /** Uniform [0, 1) source for the probe jitter (default `Math.random`). */
  readonly random?: () => number;
  /** Mean time between two probes while the API server is seen down and a retrier waits (default 1000 ms). */
  readonly probeIntervalMs?: number;
  /** Relative jitter of the probe interval (default 0.2: 0.8–1.2 s apart). */
  readonly jitter?: number;
}

/** Counters of an {@link ApiRecovery}. */
export interface ApiRecoveryStats {
  /** Probes sent, and those that said "not yet" (failed, timed out or not 200). */
  probes: number;
  probeFailures: number;
  /** Times the API server was seen back after an outage (each woke every waiting retrier). */
  recoveries: number;
  /** Successful writes reported while a retrier waited after a conflict (each woke those retriers). */
  writeWakes: number;
}

/**
 * The "API server reachable again" signal shared by every retrier of one agent (issue [K] item 8).
 *
 * State: reachable until a request reports an outage failure ({@link isOutageStatus}), then down until any request
 * succeeds or a probe says the server is ready; that transition wakes every waiting retrier at once. While down and
 * while at least one retrier waits, one probe runs every `probeIntervalMs` (jittered, never two at a time): one
 * agent sends at most ≈ 1 probe/s during an outage and none otherwise (at 10,000 nodes: ≈ 10,000 `GET /readyz`/s
 * while the API server is down, which its health handler answers without an etcd read — the etcd check is rate
 * limited and cached, kubernetes/kubernetes#112046 — instead of each agent's retriers sleeping up to 30 s after it
 * came back). A retrier whose woken attempt fails again takes its next early wake only after a doubling guard (see
 * {@link RetryTimer}), so a server that answers probes but fails requests cannot turn wakes into a request storm.
 *
 * A second, narrower signal for retriers waiting after a conflict (issue [T] item 2): a successful write of any
 * object ({@link reportWriteSuccess}) says writes go through again, and wakes them too (a read succeeding says
 * nothing about writes: during a conflict storm reads and watches work). The same doubling guard applies.
 */
export class ApiRecovery {
  readonly #clock: QueueClock;
  readonly #random: () => number;
  readonly #probe: (() => Promise<boolean>) | undefined;
  readonly #intervalMs: number;
  readonly #jitter: number;
  readonly #waiters = new Set<() => void>();
  /** Retriers waiting after a conflict: woken by a successful write, and by a recovery like the others. */
  readonly #writeWaiters = new Set<() => void>();
  #reachable = true;
  #probeTimer: unknown;
  #probing = false;
  #closed = false;
  readonly #stats: ApiRecoveryStats = { probes: 0, probeFailures: 0, recoveries: 0, writeWakes: 0 };

  constructor(options: ApiRecoveryOptions = {}) {
    this.#clock = options.clock ?? systemQueueClock;
    this.#random = options.random ?? Math.random;
    this.#probe = options.probe;
    this.#intervalMs = options.probeIntervalMs ?? 1000;
    this.#jitter = options.jitter ?? 0.2;
  }

  /** False from an outage failure until the next success (of a request or a probe). */
  get reachable(): boolean {
    return this.#reachable;
  }

  /** Retriers waiting for the next recovery (those waiting after a conflict included). */
  get waiting(): number {
    return this.#waiters.size + this.#writeWaiters.size;
  }

  /** A copy of the counters. */
  get stats(): ApiRecoveryStats {
    return { ...this.#stats };
  }

  /** A request answered 2xx: the server serves; after an outage every waiting retrier is woken now. */
  reportSuccess(): void {
    if (this.#reachable) return;
    this.#reachable = true;
    this.#stats.recoveries++;
    this.#stopProbing();
    const waiters = [...this.#waiters, ...this.#writeWaiters];
    this.#waiters.clear();
    this.#writeWaiters.clear();
    for (const w of waiters) w();
  }

  /**
   * A write (create, update, patch, delete) answered 2xx: as {@link reportSuccess}, and every retrier waiting after
   * a conflict is woken now (issue [T] item 2: writes go through again).
   */
  reportWriteSuccess(): void {
    this.reportSuccess();
    if (this.#writeWaiters.size === 0) return;
    this.#stats.writeWakes++;
    const waiters = [...this.#writeWaiters];
    this.#writeWaiters.clear();
    for (const w of waiters) w();
  }

  /** A request failed with `status` (undefined: no HTTP answer); an outage status marks the server down. */
  reportFailure(status: number | undefined): void {
    if (this.#closed || !isOutageStatus(status)) return;
    this.#reachable = false;
    this.#armProbe();
  }

  /** Calls `wake` once, at the next recovery; returns the function that unregisters it. */
  onRecovery(wake: () => void): () => void {
    if (this.#closed) return () => undefined;
    const w = (): void => wake();
    this.#waiters.add(w);
    this.#armProbe();
    // a probe already scheduled stays: a retrier re-arming after its own attempt does not push the probe back
    return () => this.#waiters.delete(w);
  }

  /**
   * Calls `wake` once, at the next successful write of any object or the next recovery, whichever comes first (a
   * retrier waiting after a conflict); returns the function that unregisters it. Arms no probe: the server answers.
   */
  onWriteSuccess(wake: () => void): () => void {
    if (this.#closed) return () => undefined;
    const w = (): void => wake();
    this.#writeWaiters.add(w);
    return () => this.#writeWaiters.delete(w);
  }

  /** Stops probing and forgets the waiters (their own timers still run). */
  close(): void {
    this.#closed = true;
    this.#waiters.clear();
    this.#writeWaiters.clear();
    this.#stopProbing();
  }

  #armProbe(): void {
    const idle = this.#probeTimer === undefined && !this.#probing;
    if (this.#closed || this.#reachable || !this.#probe || this.#waiters.size === 0 || !idle) return;
    const ms = Math.round(this.#intervalMs * (1 - this.#jitter + 2 * this.#jitter * this.#random()));
    this.#probeTimer = this.#clock.setTimeout(() => {
      this.#probeTimer = undefined;
      void this.#runProbe();
    }, ms);
  }

  #stopProbing(): void {
    if (this.#probeTimer !== undefined) this.#clock.clearTimeout(this.#probeTimer);
    this.#probeTimer = undefined;
  }

  async #runProbe(): Promise<void> {
    if (this.#closed || this.#reachable || this.#waiters.size === 0 || !this.#probe) return;
    this.#probing = true;
    this.#stats.probes++;
    const probe = this.#probe;
    const ok = await Promise.resolve()
      .then(() => probe())
      .then(
        (v) => v,
        () => false,
      );
    this.#probing = false;
    if (ok) {
      this.reportSuccess();
      return;
    }
    this.#stats.probeFailures++;
    this.#armProbe();
  }
}

/**
 * What may end a {@link RetryTimer}'s wait early: the recovery after an outage (`recovery`), that or a successful
 * write of any object (`writes`, after a conflict), or nothing (`none`: the delay is slept out).
 */
export type WakeOn = 'recovery' | 'writes' | 'none';

/**
 * The retry timer of one retrier: fires after its backoff delay, or earlier when the {@link ApiRecovery} sees the
 * API server back (or, waiting after a conflict, sees a write succeed; or {@link wake} is called). Guard against
 * wakes that do not hold (the server answers probes but fails the request, writes of other objects succeed while
 * this one keeps conflicting): after k early attempts in a row that failed again, a wake is honoured only 2^(k−1) s
 * after the failure (1, 2, 4 … s), so a retrier's early attempts become rarer until they meet its backoff; a
 * success clears the count. Times are monotonic.
 */
export class RetryTimer {
  readonly #clock: QueueClock;
  readonly #recovery: ApiRecovery | undefined;
  #timer: unknown;
  #unwake: (() => void) | undefined;
  #fire: (() => void) | undefined;
  #armedAt = 0;
  #dueAt = 0;
  #lastEarly = false;
  #earlyFailures = 0;
  #wakeable = false;

  constructor(clock: QueueClock, recovery?: ApiRecovery) {
    this.#clock = clock;
    this.#recovery = recovery;
  }

  /** True while armed. */
  get armed(): boolean {
    return this.#fire !== undefined;
  }

  /**
   * Arms after a failure (replacing any armed timer): `fire` runs after `delayMs`, or earlier at what `wakeOn`
   * names (default `recovery`; a boolean is `recovery` / `none`).
   */
  arm(delayMs: number, fire: () => void, wakeOn: WakeOn | boolean = 'recovery'): void {
    this.cancel();
    if (this.#lastEarly) this.#earlyFailures++;
    this.#lastEarly = false;
    this.#fire = fire;
    this.#armedAt = this.#clock.monotonic();
    this.#dueAt = this.#armedAt + delayMs;
    this.#timer = this.#clock.setTimeout(() => this.#go(false), delayMs);
    const on = wakeOn === true ? 'recovery' : wakeOn === false ? 'none' : wakeOn;
    this.#wakeable = on !== 'none';
    if (on === 'recovery' && this.#recovery) this.#unwake = this.#recovery.onRecovery(() => this.#woken());
    if (on === 'writes' && this.#recovery) this.#unwake = this.#recovery.onWriteSuccess(() => this.#woken());
  }

  /**
   * A sign, seen by the owner, that its attempt may succeed now (e.g. a watch event showing another writer's
   * successful write of the object): an armed wakeable wait ends as a recovery would end it (same guard).
   */
  wake(): void {
    if (this.#fire === undefined || !this.#wakeable) return;
    this.#unwake?.();
    this.#woken();
  }

  /** The attempt succeeded: early wakes are honoured at once again. */
  succeeded(): void {
    this.#lastEarly = false;
    this.#earlyFailures = 0;
  }

  /** Disarms without firing. */
  cancel(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#unwake?.();
    this.#unwake = undefined;
    this.#fire = undefined;
  }

  #woken(): void {
    this.#unwake = undefined;
    if (this.#fire === undefined) return;
    const guard = this.#earlyFailures === 0 ? 0 : 1000 * 2 ** (this.#earlyFailures - 1);
    const at = this.#armedAt + guard;
    const now = this.#clock.monotonic();
    if (at <= now) {
      this.#go(true);
    } else if (at < this.#dueAt) {
      this.#clock.clearTimeout(this.#timer);
      this.#dueAt = at;
      this.#timer = this.#clock.setTimeout(() => this.#go(true), at - now);
    }
  }

  #go(early: boolean): void {
    const fire = this.#fire;
    this.cancel();
    this.#lastEarly = early;
    fire?.();
  }
}

/** Retryable: network errors, 5xx, 401/403 (RBAC may be fixed), 408 and 429. */
function retryable(status: number | undefined): boolean {
  return status === undefined || status >= 500 || status === 401 || status === 403 || status === 408 || status === 429;
}

type Producer<T> = () => T;

/** The queue of one object. */
export class ObjectWriteQueue<T> {
  readonly #o: WriteQueueOptions<T>;
  readonly #clock: QueueClock;
  #pending: Producer<T> | undefined;
  #inFlight = false;
  #scheduled = false;
  readonly #retry: RetryTimer;
  #closed = false;
  #idle: (() => void)[] = [];
  /** Submission time (monotonic) of the oldest state in `#pending`, and of the state being written. */
  #pendingSince: number | undefined;
  #inFlightSince: number | undefined;
  /** 409s since the last success (immediate retries are allowed while at most `maxConflictRetries`). */
  #conflictsInRow = 0;
  /** Failures other than conflicts since the last success: the outage backoff's attempt number. */
  #otherFailures = 0;
  /** The last attempt ended on a conflict: the next one reads first (through `reconcile`). */
  #reread = false;
  readonly #stats: WriteQueueStats = {
    writes: 0,
    creates: 0,
    failures: 0,
    conflicts: 0,
    rejected: 0,
    superseded: 0,
    consecutiveFailures: 0,
    pendingSinceMs: undefined,
    nextRetryAtMs: undefined,
    lastWriteAtMs: undefined,
    lastError: undefined,
  };

  constructor(options: WriteQueueOptions<T>) {
    this.#o = options;
    this.#clock = options.clock ?? systemQueueClock;
    this.#retry = new RetryTimer(this.#clock, options.backoff?.recovery);
  }

  /**
   * Hands over the desired state (or a function computing it when the write happens). Never waits and never
   * throws; a state not yet written is replaced.
   */
  submit(desired: T | Producer<T>): void {
    if (this.#closed) return;
    if (this.#pending !== undefined) this.#stats.superseded++;
    this.#pending = typeof desired === 'function' ? (desired as Producer<T>) : () => desired;
    this.#pendingSince ??= this.#clock.monotonic();
    this.#kick();
  }

  /** A copy of the counters. */
  get stats(): WriteQueueStats {
    return { ...this.#stats, pendingSinceMs: this.#oldest() };
  }

  #oldest(): number | undefined {
    const a = this.#pendingSince;
    const b = this.#inFlightSince;
    return a === undefined ? b : b === undefined ? a : Math.min(a, b);
  }

  /** How long the oldest unwritten state has waited (0 when nothing waits); `now` is monotonic. */
  pendingAgeMs(now = this.#clock.monotonic()): number {
    const since = this.#oldest();
    return since === undefined ? 0 : now - since;
  }

  /** True while a state waits or a write is in flight. */
  get busy(): boolean {
    return this.#pending !== undefined || this.#inFlight;
  }

  /** Resolves when nothing waits and nothing is in flight (a retry waiting for its timer counts as waiting). */
  whenIdle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /**
   * A sign that a write of this object may succeed now, seen by the owner (a watch event showing someone else's
   * successful write of it): a retry waiting after a conflict or an outage is tried now, under the early-wake guard
   * of {@link RetryTimer}. Nothing happens when no retry waits.
   */
  retrySoon(): void {
    this.#retry.wake();
  }

  /** Stops: cancels the retry timer and drops the pending state (a write in flight completes). */
  close(): void {
    this.#closed = true;
    this.#retry.cancel();
    this.#pending = undefined;
    this.#pendingSince = undefined;
    this.#settleIdle();
  }

  #kick(): void {
    if (this.#inFlight || this.#scheduled || this.#retry.armed || this.#pending === undefined) return;
    this.#scheduled = true;
    // A microtask: submissions of the same tick coalesce, and the caller's stack never runs the writer.
    queueMicrotask(() => {
      this.#scheduled = false;
      void this.#run();
    });
  }

  async #run(): Promise<void> {
    if (this.#closed || this.#inFlight || this.#pending === undefined) return;
    const producer = this.#pending;
    this.#pending = undefined;
    this.#inFlightSince = this.#pendingSince;
    this.#pendingSince = undefined;
    this.#inFlight = true;
    try {
      await this.#write(producer());
    } catch (e) {
      // A producer or callback threw: report it like a rejected state rather than losing it silently.
      this.#stats.rejected++;
      this.#stats.lastError = String(e);
      this.#o.onError?.(e, { status: undefined, retryInMs: undefined });
    } finally {
      this.#inFlight = false;
      this.#inFlightSince = undefined;
      this.#kick();
      this.#settleIdle();
    }
  }

  async #write(initial: T): Promise<void> {
    let state = initial;
    let how: 'update' | 'create' = 'update';
    const writer = this.#o.writer;
    const reconciles = writer.reconcile !== undefined;
    const immediate = this.#o.maxConflictRetries ?? DEFAULT_CONFLICT_RETRIES;
    // The retry after a conflict wait reads first: the copy read before the wait is as stale as the one that
    // conflicted. A failed read is a failed attempt like a failed write (retried, the read still owed).
    let read = this.#reread && reconciles;
    for (;;) {
      try {
        if (read) {
          const fresh = await writer.reconcile!(state);
          read = false;
          if (fresh === null) return this.#settled();
          state = fresh;
        }
        await (how === 'update' ? writer.update(state) : writer.create(state));
        this.#stats.writes++;
        if (how === 'create') this.#stats.creates++;
        this.#settled();
        this.#stats.lastWriteAtMs = this.#clock.monotonic();
        this.#retry.succeeded();
        // any retrier waiting after a conflict (another object's) is woken: writes go through (issue [T] item 2)
        this.#o.backoff?.recovery?.reportWriteSuccess();
        this.#o.onWritten?.(state, how);
        return;
      } catch (e) {
        const status = statusOf(e);
        this.#o.backoff?.recovery?.reportFailure(status);
        if (status === 404 && how === 'update') {
          how = 'create'; // missing (the write or the read said so): created from the state as it is
          read = false;
          continue;
        }
        if (status === 409 && !read) {
          this.#stats.conflicts++;
          this.#conflictsInRow++;
          if (how === 'create') how = 'update'; // someone created it meanwhile
          // the copy is stale: read the live object and retry at once, a bounded number of times
          read = reconciles;
          if (this.#conflictsInRow <= immediate) continue;
        }
        this.#fail(e, status, state, read);
        return;
      }
    }
  }

  /**
   * A failed attempt: dropped when the server refused the state as invalid, else retried after a wait — a short
   * one after a conflict (read again after it, woken by any successful write), the outage backoff otherwise.
   */
  #fail(e: unknown, status: number | undefined, state: T, readOwed: boolean): void {
    this.#stats.lastError = describe(e);
    this.#reread = readOwed;
    if (!retryable(status) && status !== 409) {
      this.#stats.rejected++;
      this.#o.onError?.(e, { status, retryInMs: undefined });
      return;
    }
    this.#stats.failures++;
    this.#stats.consecutiveFailures++;
    let delay: number;
    if (status === 409) {
      const c = this.#o.conflictBackoff ?? {};
      const jitter = c.jitter ?? this.#o.backoff?.jitter;
      const options: BackoffOptions = {
        initialMs: c.initialMs ?? DEFAULT_CONFLICT_BACKOFF.initialMs,
        maxMs: c.maxMs ?? DEFAULT_CONFLICT_BACKOFF.maxMs,
        ...(jitter !== undefined ? { jitter } : {}),
      };
      const immediate = this.#o.maxConflictRetries ?? DEFAULT_CONFLICT_RETRIES;
      delay = backoffDelay(this.#conflictsInRow - immediate, options, this.#o.random);
    } else {
      this.#otherFailures++;
      delay = backoffDelay(this.#otherFailures, this.#o.backoff, this.#o.random);
    }
    // Last state wins: the failed state is retried only if nothing newer arrived meanwhile.
    if (this.#pending === undefined) {
      const failed = state;
      this.#pending = () => failed;
    }
    this.#pendingSince = Math.min(this.#pendingSince ?? Infinity, this.#inFlightSince ?? Infinity);
    this.#stats.nextRetryAtMs = this.#clock.monotonic() + delay;
    // woken early by the shared recovery signal when the API server is seen back (issue [K] item 8), and after a
    // conflict also by a successful write of any object (issue [T] item 2)
    this.#retry.arm(delay, () => this.#kick(), status === 409 ? 'writes' : 'recovery');
    this.#o.onError?.(e, { status, retryInMs: delay });
  }

  /** The object holds what it should (written, or nothing to write): the failure and conflict counts start over. */
  #settled(): void {
    this.#stats.consecutiveFailures = 0;
    this.#stats.nextRetryAtMs = undefined;
    this.#conflictsInRow = 0;
    this.#otherFailures = 0;
  }

  #settleIdle(): void {
    if (this.busy) return;
    const waiters = this.#idle;
    this.#idle = [];
    for (const w of waiters) w();
  }
}

function describe(e: unknown): string {
  const status = statusOf(e);
  const msg = errorMessage(e);
  return status === undefined ? msg : `HTTP ${status}: ${msg}`;
}
