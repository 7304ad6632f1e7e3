/**
 * The per-job software-fault detector (cluster-faults §1.4, upstream `JobFaultManager`): faults on NPUs of one job
 * wait 30 s; then the head is a software fault when the job's pending list holds the same code on another device
 * (no time condition, as the code does, §1.12 item 3), otherwise hardware and counted. Pure and clock-injected:
 * one {@link JobFaultManager.pass} is one 1 s pass of every job's worker.
 */
import type { CountedFault } from './fault-counter.js';

/** §1.4 `DefaultSlidingWindow`: 30 s, not configurable. */
export const SLIDING_WINDOW_MS = 30_000;

/** A pending fault of a job. */
export interface JobFault extends CountedFault {
  readonly jobId: string;
}

/** What one pass decided, for metrics and logs. */
export interface PassResult {
  /** faults counted (hardware), in decision order */
  readonly counted: JobFault[];
  /** faults dropped as software faults (heads and their companions) */
  readonly software: JobFault[];
  /** pending faults discarded because the job's PodGroup is gone */
  readonly orphaned: JobFault[];
}

/** One pending fault as persisted: arrival number, job, device, code, receive time (the node is the record's). */
export type PendingEntry = [seq: number, jobId: string, dev: string, code: string, receivedTime: number];

/**
 * The detector state: jobId → pending faults in arrival order. Each pending fault also has an arrival number and
 * is indexed by node, so the persisted state can be kept per node and the arrival order rebuilt from it; `onTouch`
 * is told the node of every change.
 */
export class JobFaultManager {
  #jobs = new Map<string, JobFault[]>();
  #seq = new Map<JobFault, number>();
  #byNode = new Map<string, Set<JobFault>>();
  #nextSeq = 1;

  constructor(private readonly onTouch: (node: string) => void = () => undefined) {}

  /** §1.4 "Adding a fault": empty job ids are ignored; no sorting, no de-duplication. */
  add(f: JobFault | null | undefined): void {
    if (f === null || f === undefined || f.jobId === '') return;
    // the same object added twice is two arrivals: each pending entry is its own object
    if (this.#seq.has(f)) f = { ...f };
    this.#track(f, this.#nextSeq++);
    const list = this.#jobs.get(f.jobId);
    if (list === undefined) this.#jobs.set(f.jobId, [f]);
    else list.push(f);
  }

  #track(f: JobFault, seq: number): void {
    this.#seq.set(f, seq);
    let set = this.#byNode.get(f.node);
    if (set === undefined) this.#byNode.set(f.node, (set = new Set()));
    set.add(f);
    this.onTouch(f.node);
  }

  #untrack(f: JobFault): void {
    this.#seq.delete(f);
    const set = this.#byNode.get(f.node);
    set?.delete(f);
    if (set?.size === 0) this.#byNode.delete(f.node);
    this.onTouch(f.node);
  }

  /** The pending faults on one node, in arrival order (persisted state). */
  nodePending(node: string): PendingEntry[] {
    const set = this.#byNode.get(node);
    if (set === undefined) return [];
    return [...set]
      .map((f): PendingEntry => [this.#seq.get(f) ?? 0, f.jobId, f.dev, f.code, f.receivedTime])
      .sort((a, b) => a[0] - b[0]);
  }

  /** The next arrival number (persisted so that restored and new faults keep their order). */
  get nextSeq(): number {
    return this.#nextSeq;
  }

  /**
   * Replaces the pending faults with persisted ones (`node` → entries of {@link nodePending}): added in arrival
   * order across nodes, numbers kept. Invalid entries are skipped and returned as messages.
   */
  restoreNodes(entries: ReadonlyMap<string, readonly unknown[]>, nextSeq: number): string[] {
    this.clear();
    const problems: string[] = [];
    const all: [string, PendingEntry][] = [];
    for (const [node, list] of entries) {
      list.forEach((e, i) => {
        const ok =
          Array.isArray(e) &&
          e.length === 5 &&
          Number.isSafeInteger(e[0]) &&
          typeof e[1] === 'string' &&
          e[1] !== '' &&
          typeof e[2] === 'string' &&
          typeof e[3] === 'string' &&
          Number.isSafeInteger(e[4]);
        if (ok) all.push([node, e as PendingEntry]);
        else problems.push(`jobs of ${node}[${i}] is not [seq, jobId, dev, code, receivedTime]`);
      });
    }
    all.sort((a, b) => a[1][0] - b[1][0]);
    let max = 0;
    for (const [node, [seq, jobId, dev, code, receivedTime]] of all) {
      const f: JobFault = { jobId, node, dev, code, receivedTime };
      this.#track(f, seq);
      const list = this.#jobs.get(jobId);
      if (list === undefined) this.#jobs.set(jobId, [f]);
      else list.push(f);
      max = Math.max(max, seq);
    }
    this.#nextSeq = Math.max(nextSeq, max + 1, 1);
    return problems;
  }

  /** Pending faults of a job (upstream `GetFaultsByJobId`). */
  faultsOf(jobId: string): readonly JobFault[] {
    return this.#jobs.get(jobId) ?? [];
  }

  /** Jobs with an entry (a running worker upstream). */
  get jobIds(): string[] {
    return [...this.#jobs.keys()];
  }

  /** Drops everything (feature disabled, §1.2). */
  clear(): void {
    for (const node of this.#byNode.keys()) this.onTouch(node);
    this.#jobs = new Map();
    this.#seq = new Map();
    this.#byNode = new Map();
  }

  /**
   * One worker pass of every job at `nowMs` (§1.4 worker loop). `hasPodGroup(jobId)` is the PodGroup cache lookup.
   * Faults added before the pass (in the same processing cycle) are all visible to it.
   */
  pass(nowMs: number, hasPodGroup: (jobId: string) => boolean, count: (f: JobFault) => void): PassResult {
    const result: PassResult = { counted: [], software: [], orphaned: [] };
    for (const [jobId, pending] of [...this.#jobs]) {
      if (!hasPodGroup(jobId)) {
        result.orphaned.push(...pending);
        for (const f of pending) this.#untrack(f);
        this.#jobs.delete(jobId);
        continue;
      }
      if (pending.length === 0) {
        this.#jobs.delete(jobId); // §1.4: the entry goes at the first pass that finds it empty
        continue;
      }
      let list = pending;
      while (list.length > 0 && list[0]!.receivedTime + SLIDING_WINDOW_MS <= nowMs) {
        const head = list[0]!;
        const others = list.slice(1);
        // §1.4 / §1.12 item 3: any same-code fault on another device, at any time, makes the head software
        const software = others.some((x) => x.code === head.code && (x.node !== head.node || x.dev !== head.dev));
        this.#untrack(head);
        if (software) result.software.push(head);
        else {
          result.counted.push(head);
          count(head);
        }
        const rest: JobFault[] = [];
        for (const x of others) {
          if (x.code === head.code && x.receivedTime <= head.receivedTime + SLIDING_WINDOW_MS) {
            if (software) {
              this.#untrack(x);
              result.software.push(x);
            } else if (x.node === head.node && x.dev === head.dev) {
              this.#untrack(x);
              result.counted.push(x);
              count(x);
            } else rest.push(x); // unreachable when software is false; kept as upstream does
          } else rest.push(x);
        }
        list = rest;
      }
      this.#jobs.set(jobId, list);
    }
    return result;
  }

  /** The pending faults as plain JSON (persisted with the counter). */
  export(): JobFault[] {
    return [...this.#jobs.values()].flat().map((f) => ({ ...f }));
  }

  /** Replaces the pending faults; invalid entries are skipped and returned as messages. */
  restore(state: unknown): string[] {
    this.clear();
    if (!Array.isArray(state)) return ['pending job faults are not a list'];
    const problems: string[] = [];
    state.forEach((raw: unknown, i) => {
      const f = raw as Partial<JobFault> | null;
      if (
        f === null ||
        typeof f !== 'object' ||
        typeof f.jobId !== 'string' ||
        typeof f.node !== 'string' ||
        typeof f.dev !== 'string' ||
        typeof f.code !== 'string' ||
        !Number.isSafeInteger(f.receivedTime)
      ) {
        problems.push(`jobs[${i}] is not a job fault`);
        return;
      }
      this.add({ jobId: f.jobId, node: f.node, dev: f.dev, code: f.code, receivedTime: f.receivedTime! });
    });
    return problems;
  }
}
