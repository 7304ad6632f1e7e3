/**
 * Paged lists of the Kubernetes API stand-in: `limit` and `continue` with the real server's semantics (Kubernetes
 * API concepts, "Retrieving large results sets in chunks").
 *
 * The first page of a paged list takes a snapshot: the filtered, key-ordered array of references to the stored
 * objects at the store's current resourceVersion. References are safe because the store never mutates an object
 * after storing it (see `KubeStore`). Later pages are cut from that snapshot, so every page carries the first page's
 * resourceVersion and shows nothing created, changed or deleted since. A snapshot expires (410 `Expired`) when the
 * store's watch history no longer reaches back to its resourceVersion (the stand-in's etcd compaction), when it is
 * older than a time-to-live (default 5 minutes, etcd's default compaction interval), on {@link
 * ListSnapshots.compact}, or when more than a bound of snapshots (default 256) are live (oldest first). A snapshot is
 * dropped once its last page has been served.
 *
 * The continue token is unpadded base64url of the JSON `{"v":"stand-in/v1","srv":<server id>,"id":<snapshot
 * number>,"rv":<resourceVersion>,"next":<index of the next item>}`; clients must treat it as opaque.
 */
import { randomBytes } from 'node:crypto';
import { ApiError, badRequest, type KubeObject } from './kube-api-types.js';

/** Lifetime of a list snapshot (etcd's default compaction interval). */
export const DEFAULT_LIST_SNAPSHOT_TTL_MS = 5 * 60_000;
/** Live list snapshots kept at most; the oldest expires first. */
export const DEFAULT_LIST_SNAPSHOT_LIMIT = 256;

const TOKEN_VERSION = 'stand-in/v1';
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/** The 410 message of the real server for a continue token whose resourceVersion has been compacted. */
export const CONTINUE_EXPIRED_MESSAGE =
  'The provided continue parameter is too old to display a consistent list result. ' +
  'You can start a new list without the continue parameter.';

/** One page of a list. */
export interface ListPage {
  readonly items: readonly KubeObject[];
  readonly resourceVersion: string;
  /** Absent on the last page. */
  readonly continue?: string;
  /** Items after this page; only for lists without label or field selector (as the real server does). */
  readonly remainingItemCount?: number;
}

/** Options of {@link ListSnapshots}. */
export interface ListSnapshotsOptions {
  /** Lifetime of a snapshot (default {@link DEFAULT_LIST_SNAPSHOT_TTL_MS}). */
  readonly ttlMs?: number;
  /** Live snapshots kept at most (default {@link DEFAULT_LIST_SNAPSHOT_LIMIT}). */
  readonly limit?: number;
  /** Clock (default `Date.now`). */
  readonly now?: () => number;
  /** False when the store's history no longer reaches back to `rv` (the snapshot is then expired). */
  readonly reaches: (rv: number) => boolean;
}

/** What a paged list is of: the same type, namespace and selectors must come with its continue token. */
export interface ListScope {
  /** Type and namespace of the request path. */
  readonly path: string;
  readonly labelSelector: string;
  readonly fieldSelector: string;
  /** True when a label or field selector narrows the list (then no `remainingItemCount`). */
  readonly selected: boolean;
}

interface Snapshot {
  readonly id: number;
  readonly rv: number;
  readonly scope: string;
  readonly selected: boolean;
  readonly items: readonly KubeObject[];
  readonly created: number;
}

interface Token {
  v: string;
  srv: string;
  id: number;
  rv: number;
  next: number;
}

/**
 * The `limit` query parameter: 0 for a whole list. Parsed as the real server does (a 64-bit decimal integer, else
 * 400); zero and negative values mean no limit there (its storage pages only when `limit > 0`), and here.
 */
export function parseLimit(text: string | null): number {
  if (text === null) return 0;
  if (!/^[+-]?\d+$/.test(text)) throw badRequest(`strconv.ParseInt: parsing ${JSON.stringify(text)}: invalid syntax`);
  const n = BigInt(text);
  if (n > INT64_MAX || n < INT64_MIN) {
    throw badRequest(`strconv.ParseInt: parsing ${JSON.stringify(text)}: value out of range`);
  }
  return n <= 0n ? 0 : n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n);
}

/** The live snapshots of paged lists of one stand-in. */
export class ListSnapshots {
  /** Distinguishes this server's tokens from any other's. */
  readonly #server = randomBytes(6).toString('base64url');
  /** Insertion order is age order. */
  readonly #live = new Map<number, Snapshot>();
  readonly #ttlMs: number;
  readonly #limit: number;
  readonly #now: () => number;
  readonly #reaches: (rv: number) => boolean;
  #lastId = 0;

  constructor(options: ListSnapshotsOptions) {
    this.#ttlMs = options.ttlMs ?? DEFAULT_LIST_SNAPSHOT_TTL_MS;
    this.#limit = options.limit ?? DEFAULT_LIST_SNAPSHOT_LIMIT;
    if (!(this.#limit >= 1)) throw new RangeError(`list snapshot limit must be at least 1, got ${this.#limit}`);
    this.#now = options.now ?? Date.now;
    this.#reaches = options.reaches;
  }

  /** Snapshots still live. */
  get size(): number {
    return this.#live.size;
  }

  /**
   * The first page of a list of `items` (key order, already filtered) at `rv`. `limit` 0 is the whole list. A
   * snapshot is kept only when more items remain.
   */
  first(scope: ListScope, rv: number, items: readonly KubeObject[], limit: number): ListPage {
    if (limit === 0 || items.length <= limit) return { items, resourceVersion: String(rv) };
    this.#prune();
    const snap: Snapshot = {
      id: ++this.#lastId,
      rv,
      scope: scopeKey(scope),
      selected: scope.selected,
      items,
      created: this.#now(),
    };
    this.#live.set(snap.id, snap);
    while (this.#live.size > this.#limit) this.#live.delete(this.#live.keys().next().value!);
    return this.#page(snap, 0, limit);
  }

  /**
   * The page after `token`. 400 for a token that is malformed, not issued by this server, for another list, or
   * combined with a `resourceVersion` other than `""`/`"0"` (as the real server); 410 `Expired` when its snapshot is.
   */
  next(token: string, scope: ListScope, limit: number, resourceVersion: string): ListPage {
    const tok = this.#decode(token);
    if (resourceVersion !== '' && resourceVersion !== '0') {
      throw badRequest('specifying resource version is not allowed when using continue');
    }
    this.#prune();
    const snap = this.#live.get(tok.id);
    if (snap === undefined) throw new ApiError(410, 'Expired', CONTINUE_EXPIRED_MESSAGE);
    if (snap.rv !== tok.rv || tok.next >= snap.items.length) throw invalidToken('it does not match its list');
    if (snap.scope !== scopeKey(scope)) {
      throw invalidToken('it was issued for another list (the path or a selector differs)');
    }
    if (!this.#reaches(snap.rv)) {
      this.#live.delete(snap.id);
      throw new ApiError(410, 'Expired', CONTINUE_EXPIRED_MESSAGE);
    }
    return this.#page(snap, tok.next, limit === 0 ? snap.items.length : limit);
  }

  /** Expires every live snapshot (test control: the equivalent of an etcd compaction); returns how many. */
  compact(): number {
    const n = this.#live.size;
    this.#live.clear();
    return n;
  }

  #page(snap: Snapshot, from: number, limit: number): ListPage {
    const end = Math.min(snap.items.length, from + limit);
    const items = snap.items.slice(from, end);
    const resourceVersion = String(snap.rv);
    if (end >= snap.items.length) {
      this.#live.delete(snap.id);
      return { items, resourceVersion };
    }
    const token: Token = { v: TOKEN_VERSION, srv: this.#server, id: snap.id, rv: snap.rv, next: end };
    return {
      items,
      resourceVersion,
      continue: Buffer.from(JSON.stringify(token)).toString('base64url'),
      ...(snap.selected ? {} : { remainingItemCount: snap.items.length - end }),
    };
  }

  /** Drops snapshots past their lifetime and those the store's history no longer reaches. */
  #prune(): void {
    const now = this.#now();
    for (const s of this.#live.values()) {
      if (now - s.created > this.#ttlMs || !this.#reaches(s.rv)) this.#live.delete(s.id);
    }
  }

  #decode(text: string): Token {
    if (!/^[A-Za-z0-9_-]+$/.test(text)) throw invalidToken('not unpadded base64url');
    let raw: unknown;
    try {
      raw = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    } catch (e) {
      throw invalidToken(`not an encoded JSON object (${(e as Error).message})`);
    }
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalidToken('not an encoded JSON object');
    const t = raw as Partial<Token>;
    if (t.v !== TOKEN_VERSION) throw invalidToken('server does not recognize this encoded version');
    if (t.srv !== this.#server) throw invalidToken('it was not issued by this server');
    const counts = [t.id, t.rv, t.next];
    if (!counts.every((n) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 1)) {
      throw invalidToken('id, rv and next must be positive integers');
    }
    if (t.id! > this.#lastId) throw invalidToken('it was not issued by this server');
    return t as Token;
  }
}

function scopeKey(s: ListScope): string {
  return JSON.stringify([s.path, s.labelSelector, s.fieldSelector]);
}

function invalidToken(why: string): ApiError {
  return badRequest(`invalid continue token: continue key is not valid: ${why}`);
}
