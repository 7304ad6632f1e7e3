/**
 * The stand-in's conflict storm (issue [T] item 2): for a period, every write of an object that exists is answered
 * `409 Conflict` — PUT and PATCH (subresources included) with the API server's own message, and POST of a name that
 * exists with its `AlreadyExists` as always — as a real API server answers while other writers keep changing the
 * objects (the resourceVersion of each write is stale by the time it arrives). Reads, lists and watches are served
 * as usual, and so are writes that create an object (POST of a new name, an apply patch of a missing one) and
 * deletes. Optionally narrowed to one resource, namespace or object. Timed on the monotonic clock.
 */
import { performance } from 'node:perf_hooks';
import { conflict, type ApiError, type ResourceType } from './kube-api-types.js';

/** Which writes a storm answers with 409 (every field optional; all given must match). */
export interface ConflictScope {
  /** Plural resource name, e.g. `configmaps`. */
  readonly resource?: string;
  readonly namespace?: string;
  readonly name?: string;
}

/** The message of the API server's optimistic-concurrency conflict. */
export const CONFLICT_REASON =
  'the object has been modified; please apply your changes to the latest version and try again';

/** The storm switch of one stand-in. */
export class ConflictStorm {
  readonly #now: () => number;
  #until = 0;
  #scope: ConflictScope = {};
  #answered = 0;

  /** `now`: monotonic milliseconds (default `performance.now`). */
  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /**
   * Answers the writes in `scope` (default: all) with 409 for `ms` milliseconds from now (`Infinity`: until ended);
   * `ms` ≤ 0 ends the storm at once. A call replaces the previous period and scope.
   */
  set(ms: number, scope: ConflictScope = {}): void {
    if (Number.isNaN(ms)) throw new RangeError('conflict storm length is NaN');
    this.#until = ms > 0 ? this.#now() + ms : 0;
    this.#scope = { ...scope };
  }

  /** True while writes in the scope get 409. */
  get active(): boolean {
    return this.#until > this.#now();
  }

  /** Writes answered 409 by storms so far. */
  get answered(): number {
    return this.#answered;
  }

  /**
   * The 409 to answer for a PUT or PATCH of the object `(t, namespace, name)`, or undefined when it is served.
   * `exists` is asked only while a storm covers the object (a write creating an object is never refused).
   */
  check(t: ResourceType, namespace: string | undefined, name: string, exists: () => boolean): ApiError | undefined {
    if (!this.active) return undefined;
    const s = this.#scope;
    if (s.resource !== undefined && s.resource !== t.plural) return undefined;
    if (s.namespace !== undefined && s.namespace !== namespace) return undefined;
    if (s.name !== undefined && s.name !== name) return undefined;
    if (!exists()) return undefined;
    this.#answered++;
    return conflict(t, name, CONFLICT_REASON);
  }
}
