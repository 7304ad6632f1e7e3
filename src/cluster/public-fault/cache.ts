/**
 * The public-fault store (spec cluster-faults.md §2.7, §2.8), pure and clock-free: every call gets "now" in seconds
 * of the monotonic clock (its times only measure intervals: the 5 s a fault stays visible, the delete queue; none is
 * published, so a step of the wall clock cannot shorten or stretch them, issue [T] item 1). Entries are keyed by node and `resource + faultId`; `occur` inserts (never updates), `recover` and
 * `once` schedule deletes on a FIFO queue that {@link PublicFaultCache.expire} works off, and no insert happens at
 * or above the cap.
 */
import type { Assertion, PublicFaultRecord } from './types.js';

/** §2.8: no insert when the store holds this many entries. */
export const PUBLIC_FAULT_CAP = 50_000;
/** §2.7: a fault stays visible at least this long; a `once` fault lives this long; a recover waits this long. */
export const VISIBLE_SECONDS = 5;

/** §2.8: the storage key — plain concatenation, as upstream. */
export function faultKey(resource: string, faultId: string): string {
  return resource + faultId;
}

/** What {@link PublicFaultCache.apply} did. */
export type ApplyOutcome =
  | 'added'
  /** occur/once on an existing entry: ignored (§2.7 "existing entry is NOT updated") */
  | 'exists'
  /** an insert refused by the cap (§2.8) */
  | 'capped'
  /** recover on an entry at least 5 s old */
  | 'deleted'
  /** recover (or once): a delete is queued */
  | 'delete-queued';

/** The record fields a message supplies; `assertion` and `addTime` are the cache's. */
export type NewRecord = Omit<PublicFaultRecord, 'assertion' | 'addTime'>;

interface PendingDelete {
  node: string;
  key: string;
  /** s */
  at: number;
}

/** Options of a cache. */
export interface PublicFaultCacheOptions {
  /** default {@link PUBLIC_FAULT_CAP} */
  cap?: number;
}

/** The store. Not thread-safe by design: one event loop owns it. */
export class PublicFaultCache {
  readonly cap: number;
  readonly #nodes = new Map<string, Map<string, PublicFaultRecord>>();
  #size = 0;
  /** FIFO of delayed deletes; `#head` avoids O(n) shifts */
  #queue: PendingDelete[] = [];
  #head = 0;
  #version = 0;
  /** per node: {@link PublicFaultCache.version} at its last change */
  readonly #nodeVersions = new Map<string, number>();
  /** nodes changed since the last {@link drainChangedNodes} */
  #changed = new Set<string>();

  constructor(options: PublicFaultCacheOptions = {}) {
    this.cap = options.cap ?? PUBLIC_FAULT_CAP;
  }

  /** Entries across all nodes. */
  get size(): number {
    return this.#size;
  }

  /** Increases on every change of the entries (for cheap change detection). */
  get version(): number {
    return this.#version;
  }

  /**
   * The store's {@link version} at the node's last insert or delete, undefined when the node has no entries. Never
   * repeats for a node (versions only grow), so an unchanged value means the node's entries are the same objects
   * in the same order; entries are frozen, so their content is unchanged too.
   */
  nodeVersion(node: string): number | undefined {
    return this.#nodeVersions.get(node);
  }

  /**
   * The nodes whose entries changed since the previous call (the processing centre re-processes only those,
   * issue [O] item 1).
   */
  drainChangedNodes(): Set<string> {
    const out = this.#changed;
    this.#changed = new Set();
    return out;
  }

  /** Deletes waiting in the queue. */
  get pendingDeletes(): number {
    return this.#queue.length - this.#head;
  }

  /** True when (node, key) holds an entry (§2.7 "exists": stored entries are always `occur`). */
  has(node: string, key: string): boolean {
    return this.#nodes.get(node)?.has(key) ?? false;
  }

  get(node: string, key: string): PublicFaultRecord | undefined {
    return this.#nodes.get(node)?.get(key);
  }

  /** The entries of one node, in insertion order (empty when none). */
  byNode(node: string): ReadonlyMap<string, PublicFaultRecord> {
    return this.#nodes.get(node) ?? new Map();
  }

  /** Number of nodes with at least one entry. */
  get nodeCount(): number {
    return this.#nodes.size;
  }

  /** Nodes with at least one entry. */
  nodes(): IterableIterator<string> {
    return this.#nodes.keys();
  }

  /** Every entry, node by node. */
  *entries(): IterableIterator<[node: string, key: string, record: PublicFaultRecord]> {
    for (const [node, m] of this.#nodes) for (const [key, r] of m) yield [node, key, r];
  }

  /**
   * Inserts unless (node, key) exists or the cap is reached (§2.8; also the restart-load path of §2.10, which
   * inserts with `addTime = now`).
   */
  insert(node: string, key: string, record: NewRecord, nowS: number): 'added' | 'exists' | 'capped' {
    return this.#insert(this.#nodes.get(node), node, key, record, nowS);
  }

  /** {@link insert} with the node's map already looked up (`m`, undefined when the node has none). */
  #insert(
    m: Map<string, PublicFaultRecord> | undefined,
    node: string,
    key: string,
    record: NewRecord,
    nowS: number,
  ): 'added' | 'exists' | 'capped' {
    if (m?.has(key)) return 'exists';
    if (this.#size >= this.cap) return 'capped';
    if (m === undefined) {
      m = new Map();
      this.#nodes.set(node, m);
    }
    // frozen: the processor's per-node cache (processor.ts) relies on entries never changing in place; the members
    // are written out (not spread) so that every entry has one shape, in the order of PublicFaultRecord
    const entry: PublicFaultRecord = {
      resource: record.resource,
      faultId: record.faultId,
      faultType: record.faultType,
      faultCode: record.faultCode,
      level: record.level,
      devIds: Object.freeze(record.devIds.slice()),
      faultTime: record.faultTime,
      assertion: 'occur',
      addTime: nowS,
    };
    m.set(key, Object.freeze(entry));
    this.#size++;
    this.#nodeVersions.set(node, ++this.#version);
    this.#changed.add(node);
    return 'added';
  }

  /** Removes (node, key) now; false when absent. */
  delete(node: string, key: string): boolean {
    const m = this.#nodes.get(node);
    if (m === undefined || !m.delete(key)) return false;
    this.#size--;
    this.#version++;
    this.#changed.add(node);
    if (m.size === 0) {
      this.#nodes.delete(node);
      this.#nodeVersions.delete(node);
    } else {
      this.#nodeVersions.set(node, this.#version);
    }
    return true;
  }

  #enqueue(node: string, key: string, at: number): void {
    this.#queue.push({ node, key, at });
  }

  /** §2.7: one (fault × influence) with its assertion, at `nowS`. */
  apply(assertion: Assertion, node: string, key: string, record: NewRecord, nowS: number): ApplyOutcome {
    const m = this.#nodes.get(node);
    if (assertion === 'occur') return this.#insert(m, node, key, record, nowS);
    const existing = m?.get(key);
    switch (assertion) {
      case 'once': {
        if (existing !== undefined) return 'exists';
        const r = this.#insert(m, node, key, record, nowS);
        // upstream queues the delete even when the cap refused the insert; harmless either way
        this.#enqueue(node, key, nowS + VISIBLE_SECONDS);
        return r === 'added' ? 'added' : r;
      }
      case 'recover':
        if (existing === undefined) {
          // a recover before its occur cancels an occur arriving within the next 5 s (§2.12 item 7)
          this.#enqueue(node, key, nowS + VISIBLE_SECONDS);
          return 'delete-queued';
        }
        if (nowS - existing.addTime >= VISIBLE_SECONDS) {
          this.delete(node, key);
          return 'deleted';
        }
        this.#enqueue(node, key, existing.addTime + VISIBLE_SECONDS);
        return 'delete-queued';
    }
  }

  /**
   * Works off the delete queue at `nowS`: pops due heads in FIFO order (a head not yet due blocks the ones behind
   * it, as upstream's single worker does) and deletes whatever entry is present. Returns the entries removed.
   */
  expire(nowS: number): number {
    let removed = 0;
    while (this.#head < this.#queue.length) {
      const d = this.#queue[this.#head]!;
      if (d.at > nowS) break;
      this.#head++;
      if (this.delete(d.node, d.key)) removed++;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    }
    return removed;
  }

  /** When (s) the head of the delete queue falls due; undefined when the queue is empty. */
  nextDeleteAt(): number | undefined {
    return this.#queue[this.#head]?.at;
  }
}
