import { errorMessage, statusOf } from '../core/errors.js';
/**
 * One write queue per Kubernetes object (architecture §2): callers hand over the object's desired state and return
 * at once; the queue writes it through a supplied writer, keeping at most one pending state (the last one wins),
 * backing off exponentially with jitter while the API server fails, creating the object on 404 and re-reading it
 * through a reconcile callback on 409.
 *
 * Also the backoff shared by the kube layer's retriers ({@link ObjectWriteQueue}, `ListWatch`): {@link backoffDelay},
 * and {@link ApiRecovery}, the agent's one "API server reachable again" signal that ends every backoff at once when
 * an outage is over (issue [K] item 8: a retrier sleeping up to 30 s after the API came back kept the final state
 * out of the ConfigMap for that long).
 */

/** Timers and time, injectable for tests. */
export interface QueueClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The process clock; timers are `unref`'d so a pending retry never keeps the process alive. */
export const systemQueueClock: QueueClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

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

/** Options of a queue. */
export interface WriteQueueOptions<T> {
  readonly writer: ObjectWriter<T>;
  readonly clock?: QueueClock;
  /** Uniform [0, 1) source for jitter (default `Math.random`). */
  readonly random?: () => number;
  readonly backoff?: BackoffOptions;
  /** Conflicts in a row resolved by re-reading before a conflict counts as a failure (default 5). */
  readonly maxConflictRetries?: number;
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
  /** Failed attempts that are retried (5xx, network, 401/403/429, too many conflicts). */
  failures: number;
  conflicts: number;
  /** States the API server refused as invalid (400, 422, other 4xx): dropped, counted, reported. */
  rejected: number;
  /** Pending states replaced by a newer one before they were written. */
  superseded: number;
  /** Failed attempts since the last success. */
  consecutiveFailures: number;
  /** Since when the oldest unwritten state waits; undefined when nothing waits. */
  pendingSinceMs: number | undefined;
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
 */
export class ApiRecovery {
  readonly #clock: QueueClock;
  readonly #random: () => number;
  readonly #probe: (() => Promise<boolean>) | undefined;
  readonly #intervalMs: number;
  readonly #jitter: number;
  readonly #waiters = new Set<() => void>();
  #reachable = true;
  #probeTimer: unknown;
  #probing = false;
  #closed = false;
  readonly #stats: ApiRecoveryStats = { probes: 0, probeFailures: 0, recoveries: 0 };

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

  /** Retriers waiting for the next recovery. */
  get waiting(): number {
    return this.#waiters.size;
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
    const waiters = [...this.#waiters];
    this.#waiters.clear();
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

  /** Stops probing and forgets the waiters (their own timers still run). */
  close(): void {
    this.#closed = true;
    this.#waiters.clear();
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
 * The retry timer of one retrier: fires after its backoff delay, or earlier when the {@link ApiRecovery} sees the
 * API server back. Guard against wakes that do not hold (the server answers probes but fails the request): after
 * k early attempts in a row that failed again, a wake is honoured only 2^(k−1) s after the failure (1, 2, 4 … s),
 * so a retrier's early attempts become rarer until they meet its backoff; a success clears the count.
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

  constructor(clock: QueueClock, recovery?: ApiRecovery) {
    this.#clock = clock;
    this.#recovery = recovery;
  }

  /** True while armed. */
  get armed(): boolean {
    return this.#fire !== undefined;
  }

  /**
   * Arms after a failure (replacing any armed timer): `fire` runs after `delayMs`, or at the next recovery when
   * `wakeable` (default true).
   */
  arm(delayMs: number, fire: () => void, wakeable = true): void {
    this.cancel();
    if (this.#lastEarly) this.#earlyFailures++;
    this.#lastEarly = false;
    this.#fire = fire;
    this.#armedAt = this.#clock.now();
    this.#dueAt = this.#armedAt + delayMs;
    this.#timer = this.#clock.setTimeout(() => this.#go(false), delayMs);
    if (wakeable && this.#recovery) this.#unwake = this.#recovery.onRecovery(() => this.#woken());
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
    const now = this.#clock.now();
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
  /** Submission time of the oldest state in `#pending`, and of the state being written. */
  #pendingSince: number | undefined;
  #inFlightSince: number | undefined;
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
    this.#pendingSince ??= this.#clock.now();
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

  /** How long the oldest unwritten state has waited (0 when nothing waits). */
  pendingAgeMs(now = this.#clock.now()): number {
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
    let conflicts = 0;
    for (;;) {
      try {
        await (how === 'update' ? this.#o.writer.update(state) : this.#o.writer.create(state));
        this.#stats.writes++;
        if (how === 'create') this.#stats.creates++;
        this.#stats.consecutiveFailures = 0;
        this.#stats.lastWriteAtMs = this.#clock.now();
        this.#stats.nextRetryAtMs = undefined;
        this.#retry.succeeded();
        this.#o.backoff?.recovery?.reportSuccess();
        this.#o.onWritten?.(state, how);
        return;
      } catch (e) {
        const status = statusOf(e);
        this.#o.backoff?.recovery?.reportFailure(status);
        if (status === 404 && how === 'update') {
          how = 'create';
          continue;
        }
        if (status === 409 && conflicts < (this.#o.maxConflictRetries ?? 5)) {
          conflicts++;
          this.#stats.conflicts++;
          if (how === 'create') {
            how = 'update'; // someone created it meanwhile
            continue;
          }
          if (this.#o.writer.reconcile !== undefined) {
            const fresh = await this.#o.writer.reconcile(state);
            if (fresh === null) return;
            state = fresh;
          }
          continue;
        }
        this.#stats.lastError = describe(e);
        if (!retryable(status) && status !== 409) {
          this.#stats.rejected++;
          this.#o.onError?.(e, { status, retryInMs: undefined });
          return;
        }
        this.#stats.failures++;
        this.#stats.consecutiveFailures++;
        const delay = backoffDelay(this.#stats.consecutiveFailures, this.#o.backoff, this.#o.random);
        // Last state wins: the failed state is retried only if nothing newer arrived meanwhile.
        if (this.#pending === undefined) {
          const failed = state;
          this.#pending = () => failed;
        }
        this.#pendingSince = Math.min(this.#pendingSince ?? Infinity, this.#inFlightSince ?? Infinity);
        this.#stats.nextRetryAtMs = this.#clock.now() + delay;
        // woken early by the shared recovery signal when the API server is seen back (issue [K] item 8)
        this.#retry.arm(delay, () => this.#kick());
        this.#o.onError?.(e, { status, retryInMs: delay });
        return;
      }
    }
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
