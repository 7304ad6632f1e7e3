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
 * dropped once its last page has been served. Like the real server after an etcd compaction, the 410 `Status`
 * carries a `metadata.continue` token that resumes after the last item served, from the latest state (an
 * inconsistent list; its further pages are consistent at the new resourceVersion).
 *
 * The continue token is unpadded base64url of the JSON `{"v":"stand-in/v1","srv":<server id>,"list":<hash of path
 * and selectors>,"id":<snapshot number>,"rv":<resourceVersion>,"next":<index of the next item>,"after":<key of the
 * last item served>}`; the token of a 410 has `"id":0,"rv":-1` and no `next`. Clients must treat it as opaque.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ApiError, badRequest, type KubeObject } from './kube-api-types.js';

/** Lifetime of a list snapshot (etcd's default compaction interval). */
export const DEFAULT_LIST_SNAPSHOT_TTL_MS = 5 * 60_000;
/** Live list snapshots kept at most; the oldest expires first. */
export const DEFAULT_LIST_SNAPSHOT_LIMIT = 256;

const TOKEN_VERSION = 'stand-in/v1';
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/**
 * The real server's 410 message for a compacted continue token when it offers no new token; the start of
 * {@link CONTINUE_INCONSISTENT_MESSAGE}, which the stand-in sends.
 */
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

/**
 * The 410 message when the `Status` carries a token for an inconsistent continuation (the real server's says the
 * same at more length).
 */
export const CONTINUE_INCONSISTENT_MESSAGE =
  CONTINUE_EXPIRED_MESSAGE.slice(0, -1) +
  ', or use the continue token of this response for the rest of the list at the latest resourceVersion: objects ' +
  'created, changed or deleted since the first page then may show up.';

/** What a paged list is of: the same type, namespace and selectors must come with its continue token. */
export interface ListScope {
  /** Type and namespace of the request path. */
  readonly path: string;
  /** The type is namespaced (store keys are `<namespace>/<name>`, else `<name>`). */
  readonly namespaced: boolean;
  readonly labelSelector: string;
  readonly fieldSelector: string;
  /** True when a label or field selector narrows the list (then no `remainingItemCount`). */
  readonly selected: boolean;
}

interface Snapshot {
  readonly id: number;
  readonly rv: number;
  readonly list: string;
  readonly scope: ListScope;
  readonly items: readonly KubeObject[];
  readonly created: number;
}

interface Token {
  v: string;
  srv: string;
  list: string;
  /** 0: resume after `after` from the latest state (the token of a 410). */
  id: number;
  rv: number;
  next?: number;
  after: string;
}

/** The latest state of a list: the store's resourceVersion and the selected objects in key order. */
export type Fresh = () => { rv: number; items: readonly KubeObject[] };

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
    const snap: Snapshot = { id: ++this.#lastId, rv, list: listHash(scope), scope, items, created: this.#now() };
    this.#live.set(snap.id, snap);
    while (this.#live.size > this.#limit) this.#live.delete(this.#live.keys().next().value!);
    return this.#page(snap, 0, limit);
  }

  /**
   * The page after `token`. 400 for a token that is malformed, not issued by this server, for another list, or
   * combined with a `resourceVersion` other than `""`/`"0"` (as the real server); 410 `Expired` when its snapshot is.
   * The token of a 410 continues after its key in `fresh()`, the latest state.
   */
  next(token: string, scope: ListScope, limit: number, resourceVersion: string, fresh: Fresh): ListPage {
    const tok = this.#decode(token);
    if (tok.list !== listHash(scope)) {
      throw invalidToken('it was issued for another list (the path or a selector differs)');
    }
    if (resourceVersion !== '' && resourceVersion !== '0') {
      throw badRequest('specifying resource version is not allowed when using continue');
    }
    if (tok.id === 0) {
      const { rv, items } = fresh();
      const from = items.findIndex((o) => keyOf(scope, o) > tok.after);
      return this.first(scope, rv, from < 0 ? [] : items.slice(from), limit);
    }
    this.#prune();
    const snap = this.#live.get(tok.id);
    if (snap === undefined) throw this.#expired(tok);
    const next = tok.next!;
    if (snap.rv !== tok.rv || next >= snap.items.length || keyOf(scope, snap.items[next - 1]!) !== tok.after) {
      throw invalidToken('it does not match its list');
    }
    return this.#page(snap, next, limit === 0 ? snap.items.length : limit);
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
    const token: Token = {
      v: TOKEN_VERSION,
      srv: this.#server,
      list: snap.list,
      id: snap.id,
      rv: snap.rv,
      next: end,
      after: keyOf(snap.scope, snap.items[end - 1]!),
    };
    return {
      items,
      resourceVersion,
      continue: encode(token),
      ...(snap.scope.selected ? {} : { remainingItemCount: snap.items.length - end }),
    };
  }

  /** 410 `Expired` with a token that resumes after the token's last item at the latest state. */
  #expired(tok: Token): ApiError {
    return new ExpiredContinue(
      encode({ v: TOKEN_VERSION, srv: this.#server, list: tok.list, id: 0, rv: -1, after: tok.after }),
    );
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
    if (typeof t.list !== 'string' || typeof t.after !== 'string') throw invalidToken('list and after must be strings');
    const positive = (n: unknown): boolean => typeof n === 'number' && Number.isSafeInteger(n) && n >= 1;
    if (t.id === 0) {
      if (t.rv !== -1 || t.next !== undefined) throw invalidToken('a token with id 0 has rv -1 and no next');
    } else if (![t.id, t.rv, t.next].every(positive)) {
      throw invalidToken('id, rv and next must be positive integers');
    } else if (t.id! > this.#lastId) {
      throw invalidToken('it was not issued by this server');
    }
    return t as Token;
  }
}

/** A 410 `Expired` whose `Status` carries a continue token, as the real server's after a compaction. */
class ExpiredContinue extends ApiError {
  constructor(readonly token: string) {
    super(410, 'Expired', CONTINUE_INCONSISTENT_MESSAGE);
  }

  override toStatus(): Record<string, unknown> {
    return { ...super.toStatus(), metadata: { continue: this.token } };
  }
}

function encode(t: Token): string {
  return Buffer.from(JSON.stringify(t)).toString('base64url');
}

/** The store's key of an object: the list order. */
function keyOf(s: ListScope, o: KubeObject): string {
  return s.namespaced ? `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}` : (o.metadata?.name ?? '');
}

function listHash(s: ListScope): string {
  const text = JSON.stringify([s.path, s.labelSelector, s.fieldSelector]);
  return createHash('sha256').update(text).digest('base64url').slice(0, 16);
}

function invalidToken(why: string): ApiError {
  return badRequest(`invalid continue token: continue key is not valid: ${why}`);
}
