/**
 * The "training side" of hot-reset.md §6.2 fixture F1 (and §1.1): a job's fault checker that only READS the host
 * file the agent lands from the reset ConfigMap (§2.8) and stops or restarts its processes, which the mock DCMI
 * library reports as the chips' process counts (architecture §5, op `processes`). It never writes the ConfigMap.
 *
 * Behaviour (F1): when any of its ranks (matched by `LogicId`) is `unrecovered`, the process count of all its chips
 * goes to 0 after `stopAfterMs` (default 3 s); when all of its ranks are `recovered`, they go back to 1 (a restart);
 * `failed` stops the processes for good (the job must be rescheduled). `ignoreResetFile` models HR-07: the
 * processes never stop. A stop already scheduled is carried out even if the ranks turn `recovered` meanwhile (the
 * job had been told to stop); the restart follows on the next poll. The file is parsed here on purpose, not with the
 * agent's reader, so the simulator checks what the agent lands. Used by the reset tests and the demo; every action
 * is recorded in {@link log}.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { SYSTEM_CLOCK, type Clock, type TimerHandle } from '../core/clock.js';
import { errorMessage } from '../core/errors.js';
import type { MockControlClient, MockReply } from './mock-control.js';

/** Where the simulator sends `{"op":"processes",...}`: a control client, or a function sending one request. */
export type TrainingSimControl =
  Pick<MockControlClient, 'request'> | ((request: Record<string, unknown>) => Promise<MockReply>);

/** running → stopping (unrecovered seen) → stopped → running (all recovered); failed is final. */
export type TrainingSimState = 'new' | 'running' | 'stopping' | 'stopped' | 'failed' | 'halted';

export type TrainingSimEvent =
  | 'started' // processes set to 1, polling begins
  | 'ignoring' // HR-07 mode: the reset file is never read
  | 'seen' // the reset file changed; detail: statuses of our ranks
  | 'retry-round' // RetryTime grew
  | 'stopping' // an unrecovered (or failed) rank was seen; processes stop after stopAfterMs
  | 'stopped' // process counts set to 0
  | 'restarted' // process counts set back to 1
  | 'failed' // a failed rank: stays stopped
  | 'unreadable' // the file is not valid reset.json
  | 'error' // a control request failed (retried on the next poll)
  | 'halted'; // stop() was called

export interface TrainingSimEntry {
  /** Clock time in ms. */
  readonly at: number;
  readonly event: TrainingSimEvent;
  readonly detail: string;
}

export interface TrainingSimulatorOptions {
  /** `-hostRoot` of the agent under test. */
  readonly hostRoot: string;
  readonly namespace: string;
  readonly job: string;
  /** The chips (logic ids) the job's pod holds on this node; its ranks are matched by `LogicId`. */
  readonly logicIds: readonly number[];
  /** Delay between seeing `unrecovered` and the process count reaching 0 (F1 `S`, default 3000 ms). */
  readonly stopAfterMs?: number;
  /** Poll period of the reset file (default 200 ms). */
  readonly pollMs?: number;
  readonly control: TrainingSimControl;
  readonly clock?: Clock;
  /** HR-07: the job ignores the reset file, its processes never stop. */
  readonly ignoreResetFile?: boolean;
}

interface OwnRank {
  readonly logicId: number;
  readonly status: string;
}

/** Go encoding/json matches object keys case-insensitively (hot-reset.md §2.2); so does the training side. */
function field(obj: unknown, name: string): unknown {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return undefined;
  const rec = obj as Record<string, unknown>;
  if (name in rec) return rec[name];
  const lower = name.toLowerCase();
  const key = Object.keys(rec).find((k) => k.toLowerCase() === lower);
  return key === undefined ? undefined : rec[key];
}

/** Parses `reset.json` into (UpdateTime, RetryTime, ranks); throws naming what is wrong. */
function parseResetFile(text: string): { updateTime: number; retryTime: number; ranks: OwnRank[] } {
  const doc: unknown = JSON.parse(text);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('reset.json is not an object');
  const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  const list = field(doc, 'RankList');
  if (list !== undefined && list !== null && !Array.isArray(list)) throw new Error('RankList is not an array');
  const ranks: OwnRank[] = [];
  for (const r of (list as unknown[] | null | undefined) ?? []) {
    const logicId = field(r, 'LogicId');
    const status = field(r, 'Status');
    if (typeof logicId !== 'number' || typeof status !== 'string')
      throw new Error('a rank lacks a numeric LogicId or a string Status');
    ranks.push({ logicId, status });
  }
  return { updateTime: num(field(doc, 'UpdateTime')), retryTime: num(field(doc, 'RetryTime')), ranks };
}

/** The F1 training simulator; see the module comment. */
export class TrainingSimulator {
  /** The file the simulator reads: `<hostRoot>/user/restore/reset/<ns>.reset-config-<job>/reset.json`. */
  readonly file: string;
  readonly #logicIds: readonly number[];
  readonly #stopAfterMs: number;
  readonly #pollMs: number;
  readonly #control: TrainingSimControl;
  readonly #clock: Clock;
  readonly #ignore: boolean;
  readonly #log: TrainingSimEntry[] = [];
  readonly #listeners = new Set<(e: TrainingSimEntry) => void>();
  readonly #inFlight = new Set<Promise<void>>();
  #state: TrainingSimState = 'new';
  #restarts = 0;
  #failAfterStop = false;
  #lastText: string | undefined;
  #lastRetryTime: number | undefined;
  #pollTimer: TimerHandle | undefined;
  #stopTimer: TimerHandle | undefined;

  constructor(o: TrainingSimulatorOptions) {
    if (!o.hostRoot) throw new Error('TrainingSimulator: hostRoot is empty');
    if (!o.namespace || o.namespace.includes('/') || o.namespace.includes('..'))
      throw new Error(`TrainingSimulator: bad namespace ${JSON.stringify(o.namespace)}`);
    if (!o.job || o.job.includes('/') || o.job.includes('..'))
      throw new Error(`TrainingSimulator: bad job ${JSON.stringify(o.job)}`);
    if (o.logicIds.length === 0 || o.logicIds.some((id) => !Number.isInteger(id) || id < 0))
      throw new Error('TrainingSimulator: logicIds must be a non-empty list of non-negative integers');
    const stopAfterMs = o.stopAfterMs ?? 3000;
    const pollMs = o.pollMs ?? 200;
    if (!Number.isFinite(stopAfterMs) || stopAfterMs < 0)
      throw new Error(`TrainingSimulator: stopAfterMs ${stopAfterMs} must be ≥ 0`);
    if (!Number.isFinite(pollMs) || pollMs <= 0) throw new Error(`TrainingSimulator: pollMs ${pollMs} must be > 0`);
    this.file = path.join(o.hostRoot, 'user/restore/reset', `${o.namespace}.reset-config-${o.job}`, 'reset.json');
    this.#logicIds = [...o.logicIds];
    this.#stopAfterMs = stopAfterMs;
    this.#pollMs = pollMs;
    this.#control = o.control;
    this.#clock = o.clock ?? SYSTEM_CLOCK;
    this.#ignore = o.ignoreResetFile ?? false;
  }

  /** Current state. */
  get state(): TrainingSimState {
    return this.#state;
  }

  /** Restarts done (stopped → all ranks recovered → running). */
  get restarts(): number {
    return this.#restarts;
  }

  /** Everything the simulator did, oldest first. */
  get log(): readonly TrainingSimEntry[] {
    return this.#log;
  }

  /** Calls `fn` for every new log entry; returns the unsubscribe function. */
  subscribe(fn: (e: TrainingSimEntry) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** Starts the job: process count 1 on each chip, then polls the reset file (unless `ignoreResetFile`). */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`TrainingSimulator: start() in state ${this.#state}`);
    await this.#setProcesses(1);
    if (this.#halted()) return; // stop() was called meanwhile
    this.#state = 'running';
    this.#record('started', `chips ${this.#logicIds.join(',')} running`);
    if (this.#ignore) {
      this.#record('ignoring', 'HR-07: the reset file is not read, processes never stop');
      return;
    }
    this.#track(this.#poll());
  }

  /** Stops polling and any pending stop; process counts stay as they are. */
  stop(): void {
    if (this.#pollTimer !== undefined) this.#clock.clearTimeout(this.#pollTimer);
    if (this.#stopTimer !== undefined) this.#clock.clearTimeout(this.#stopTimer);
    this.#pollTimer = this.#stopTimer = undefined;
    if (this.#state !== 'halted') {
      this.#state = 'halted';
      this.#record('halted', 'stop() called');
    }
  }

  /** Resolves once no poll or process change is in progress (timers are not waited for). */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }

  /** Read through a method so that TypeScript does not narrow the state across an `await`. */
  #halted(): boolean {
    return this.#state === 'halted';
  }

  #track(p: Promise<void>): void {
    const tracked = p.finally(() => this.#inFlight.delete(tracked));
    this.#inFlight.add(tracked);
  }

  #record(event: TrainingSimEvent, detail: string): void {
    const entry: TrainingSimEntry = Object.freeze({ at: this.#clock.now(), event, detail });
    this.#log.push(entry);
    for (const fn of this.#listeners) fn(entry);
  }

  async #poll(): Promise<void> {
    if (this.#state === 'halted') return;
    try {
      await this.#check();
    } finally {
      if (!this.#halted()) this.#pollTimer = this.#clock.setTimeout(() => this.#track(this.#poll()), this.#pollMs);
    }
  }

  async #check(): Promise<void> {
    let text: string;
    try {
      text = await fs.readFile(this.file, 'utf8');
    } catch {
      return; // no file yet (or it was removed): nothing to act on
    }
    let doc: ReturnType<typeof parseResetFile>;
    try {
      doc = parseResetFile(text);
    } catch (err) {
      if (text !== this.#lastText) this.#record('unreadable', errorMessage(err));
      this.#lastText = text;
      return;
    }
    // §2.2: UpdateTime 0 means "initialising" — readers treat the list as empty
    const own = doc.updateTime === 0 ? [] : doc.ranks.filter((r) => this.#logicIds.includes(r.logicId));
    if (text !== this.#lastText) {
      this.#lastText = text;
      this.#record('seen', own.map((r) => `${r.logicId}:${r.status}`).join(',') || 'no ranks of ours');
      if (this.#lastRetryTime !== undefined && doc.retryTime > this.#lastRetryTime)
        this.#record('retry-round', `RetryTime ${this.#lastRetryTime} → ${doc.retryTime}`);
      this.#lastRetryTime = doc.retryTime;
    }
    if (this.#state === 'failed' || this.#state === 'halted') return;
    if (own.some((r) => r.status === 'failed')) {
      if (this.#state === 'stopped') this.#fail();
      else {
        this.#failAfterStop = true;
        this.#scheduleStop('failed');
      }
    } else if (own.some((r) => r.status === 'unrecovered')) {
      this.#scheduleStop('unrecovered');
    } else if (own.length > 0 && own.every((r) => r.status === 'recovered') && this.#state === 'stopped') {
      await this.#restart();
    }
  }

  #scheduleStop(why: string): void {
    if (this.#state !== 'running') return; // already stopping or stopped
    this.#state = 'stopping';
    this.#record('stopping', `${why} rank seen; processes stop in ${this.#stopAfterMs} ms`);
    this.#stopTimer = this.#clock.setTimeout(() => {
      this.#stopTimer = undefined;
      this.#track(this.#doStop());
    }, this.#stopAfterMs);
  }

  async #doStop(): Promise<void> {
    if (this.#state !== 'stopping') return;
    try {
      await this.#setProcesses(0);
    } catch (err) {
      this.#state = 'running'; // the next poll sees the rank again and schedules another stop
      this.#record('error', `stopping processes: ${errorMessage(err)}`);
      return;
    }
    if (this.#halted()) return; // stop() was called meanwhile
    this.#state = 'stopped';
    this.#record('stopped', `chips ${this.#logicIds.join(',')} have 0 processes`);
    if (this.#failAfterStop) this.#fail();
  }

  #fail(): void {
    this.#state = 'failed';
    this.#record('failed', 'a rank is failed: processes stay stopped, the job must be rescheduled');
  }

  async #restart(): Promise<void> {
    try {
      await this.#setProcesses(1);
    } catch (err) {
      this.#record('error', `restarting processes: ${errorMessage(err)}`);
      return;
    }
    if (this.#state !== 'stopped') return;
    this.#state = 'running';
    this.#restarts += 1;
    this.#record('restarted', `all ranks recovered; restart ${this.#restarts}`);
  }

  async #setProcesses(count: number): Promise<void> {
    for (const logicId of this.#logicIds) {
      const req = { op: 'processes', logicId, count };
      const reply = typeof this.#control === 'function' ? await this.#control(req) : await this.#control.request(req);
      if (!reply.ok) throw new Error(`mock refused ${JSON.stringify(req)}: ${reply.error}`);
    }
  }
}
