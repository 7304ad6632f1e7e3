/**
 * The agent's start-up and shutdown mechanics, shared by every `wire-*.ts` (issue [K] item 8): bounded waits, waits
 * that end at the stop signal, the named start-up steps and the clean-up stack that undoes what was started.
 */
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { StartAborted } from './errors.js';

/** `p`'s value, or `fallback` when it rejects, takes longer than `ms` or `signal` is aborted first. */
export function withTimeout<T>(p: Promise<T>, ms: number, fallback: T, signal?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve) => {
    const done = (v: T): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(v);
    };
    const onAbort = (): void => done(fallback);
    const timer = setTimeout(onAbort, ms);
    timer.unref();
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    p.then(done, onAbort);
  });
}

/**
 * `p`, or a {@link StartAborted} rejection as soon as `signal` is aborted. `p` keeps running: whoever started it
 * registered a clean-up that stops it.
 */
export function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new StartAborted('aborted'));
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

/**
 * Sleeps `ms` (a timer that keeps the process alive: nothing else may run during start-up); rejects with
 * {@link StartAborted} as soon as `signal` is aborted, and the timer is cleared then.
 */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const slept = new Promise<void>((r) => (timer = setTimeout(r, ms)));
  return untilAborted(slept, signal).finally(() => clearTimeout(timer));
}

/** The signal's reason as text (the CLI passes the signal's name), for {@link AgentStoppedError}. */
export function reasonOf(signal: AbortSignal): string | undefined {
  const r: unknown = signal.reason;
  return typeof r === 'string' ? r : r instanceof Error && r.name !== 'AbortError' ? r.message : undefined;
}

/** What was started, in start order, each with the step that undoes it. */
export class CleanupStack {
  readonly #steps: { what: string; run: () => unknown }[] = [];

  constructor(
    private readonly log: Logger,
    /** Aborted to stop without waiting any longer (a second signal). */
    private readonly hurry?: AbortSignal,
  ) {}

  /** Registers the undo of something just started. */
  push(what: string, run: () => unknown): void {
    this.#steps.push({ what, run });
  }

  /** Drops a step the caller has run itself (the ordered shutdown). */
  remove(what: string): void {
    const i = this.#steps.findIndex((c) => c.what === what);
    if (i >= 0) this.#steps.splice(i, 1);
  }

  /**
   * Runs the steps in reverse order. Each one's synchronous part always runs; waiting for its promise is bounded by
   * what is left of `budgetMs` (and ends at `hurry`), so a step that hangs cannot hold the exit.
   */
  async undo(budgetMs: number): Promise<void> {
    const until = performance.now() + budgetMs; // monotonic: a wall-clock step does not move the bound
    for (const c of this.#steps.reverse()) {
      const failed = (err: unknown): void =>
        this.log.warn({ what: c.what, error: errorMessage(err) }, 'clean-up step failed');
      try {
        const r = c.run();
        if (r instanceof Promise) {
          await withTimeout(
            r.then(() => undefined, failed),
            Math.max(0, until - performance.now()),
            undefined,
            this.hurry,
          );
        }
      } catch (err) {
        failed(err);
      }
    }
    this.#steps.length = 0;
  }
}

/** The start-up step running now (named in {@link AgentStoppedError}); a step begun after the signal aborts. */
export class StartSteps {
  #phase = 'DCMI initialisation';

  constructor(private readonly signal: AbortSignal | undefined) {}

  get phase(): string {
    return this.#phase;
  }

  /** Between two steps: stops here (throws {@link StartAborted}) when the signal came meanwhile. */
  step(next: string): void {
    if (this.signal?.aborted) throw new StartAborted('aborted');
    this.#phase = next;
  }
}
