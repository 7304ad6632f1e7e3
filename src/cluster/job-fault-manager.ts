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

/** The detector state: jobId → pending faults in arrival order. */
export class JobFaultManager {
  #jobs = new Map<string, JobFault[]>();

  /** §1.4 "Adding a fault": empty job ids are ignored; no sorting, no de-duplication. */
  add(f: JobFault | null | undefined): void {
    if (f === null || f === undefined || f.jobId === '') return;
    const list = this.#jobs.get(f.jobId);
    if (list === undefined) this.#jobs.set(f.jobId, [f]);
    else list.push(f);
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
    this.#jobs = new Map();
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
        if (software) result.software.push(head);
        else {
          result.counted.push(head);
          count(head);
        }
        const rest: JobFault[] = [];
        for (const x of others) {
          if (x.code === head.code && x.receivedTime <= head.receivedTime + SLIDING_WINDOW_MS) {
            if (software) result.software.push(x);
            else if (x.node === head.node && x.dev === head.dev) {
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
    this.#jobs = new Map();
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
