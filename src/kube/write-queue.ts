/**
 * One write queue per Kubernetes object (architecture §2): callers hand over the object's desired state and return
 * at once; the queue writes it through a supplied writer, keeping at most one pending state (the last one wins),
 * backing off exponentially with jitter while the API server fails, creating the object on 404 and re-reading it
 * through a reconcile callback on 409.
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

/** HTTP status of a writer error, or undefined for a network error. */
export function statusOf(error: unknown): number | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const e = error as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === 'number') return e.code;
  if (typeof e.statusCode === 'number') return e.statusCode;
  return undefined;
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
  #timer: unknown;
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
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pending = undefined;
    this.#pendingSince = undefined;
    this.#settleIdle();
  }

  #kick(): void {
    if (this.#inFlight || this.#scheduled || this.#timer !== undefined || this.#pending === undefined) return;
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
        this.#o.onWritten?.(state, how);
        return;
      } catch (e) {
        const status = statusOf(e);
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
        this.#timer = this.#clock.setTimeout(() => {
          this.#timer = undefined;
          this.#kick();
        }, delay);
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
  const msg = e instanceof Error ? e.message : String(e);
  return status === undefined ? msg : `HTTP ${status}: ${msg}`;
}
