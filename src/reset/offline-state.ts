/**
 * What the offline reset engine (device-plugin.md §J.2) keeps across an agent restart (issue [T] item 4), in
 * `<stateDir>/offline-resets.json`: the resets in flight (a restarted agent must not offer a booting group to kubelet
 * nor reset it again) and the token buckets that are not full (§J.2 allows 3 resets per chip per 6 h, not 3 per agent
 * process). Upstream HEAD keeps both in memory only, so a restarted plugin forgets a reset in flight and starts with
 * full buckets.
 */
import path from 'node:path';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { JsonStateFile } from './state-file.js';
import type { SavedBucket } from './token-bucket.js';

/** The step a persisted reset had reached. */
export type OfflineResetPhase = 'resetting' | 'waitingBoot' | 'outOfBand';

/** One reset in flight. */
export interface OfflineResetRecord {
  /** The faulty chip the reset was for. */
  readonly logicId: number;
  /** Its reset group (§J.3), held while the reset runs. */
  readonly group: readonly number[];
  /** Wall-clock ms when the reset started (the token was consumed just before). */
  readonly startedAt: number;
  readonly phase: OfflineResetPhase;
}

/** The whole file. */
export interface OfflineState {
  readonly resets: readonly OfflineResetRecord[];
  readonly buckets: readonly SavedBucket[];
}

/** Persistence port of the offline engine: the agent's state directory, or a test double. */
export interface OfflineStateStore {
  /** What a previous run saved; undefined when nothing (or nothing usable) was saved. */
  load(): OfflineState | undefined;
  save(state: OfflineState): void;
}

const FILE = 'offline-resets.json';
const MAX_BYTES = 1024 * 1024;
const PHASES: readonly string[] = ['resetting', 'waitingBoot', 'outOfBand'];

const isId = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;

/** Validates the parsed file; throws an Error naming the entry and the field that is wrong. */
export function parseOfflineState(raw: unknown): OfflineState {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('not a JSON object');
  const r = raw as Record<string, unknown>;
  if (!Array.isArray(r.resets)) throw new Error('resets must be an array');
  if (!Array.isArray(r.buckets)) throw new Error('buckets must be an array');
  const resets = r.resets.map((x: unknown, i): OfflineResetRecord => {
    const o = (typeof x === 'object' && x !== null ? x : {}) as Record<string, unknown>;
    const where = `resets[${i}]`;
    if (!isId(o.logicId)) throw new Error(`${where}.logicId must be a logic id`);
    if (!Array.isArray(o.group) || o.group.length === 0 || !o.group.every(isId)) {
      throw new Error(`${where}.group must be a non-empty array of logic ids`);
    }
    if (typeof o.startedAt !== 'number' || !Number.isFinite(o.startedAt)) {
      throw new Error(`${where}.startedAt must be a number`);
    }
    if (typeof o.phase !== 'string' || !PHASES.includes(o.phase)) {
      throw new Error(`${where}.phase must be one of ${PHASES.join(', ')}`);
    }
    return { logicId: o.logicId, group: o.group, startedAt: o.startedAt, phase: o.phase as OfflineResetPhase };
  });
  const buckets = r.buckets.map((x: unknown, i): SavedBucket => {
    const o = (typeof x === 'object' && x !== null ? x : {}) as Record<string, unknown>;
    if (!isId(o.logicId) || !isId(o.tokens) || typeof o.lastRefillAt !== 'number') {
      throw new Error(`buckets[${i}] must be {logicId, tokens, lastRefillAt}`);
    }
    return { logicId: o.logicId, tokens: o.tokens, lastRefillAt: o.lastRefillAt };
  });
  return { resets, buckets };
}

/** {@link OfflineStateStore} in `<stateDir>/offline-resets.json` (atomic writes; a bad file is set aside). */
export class OfflineStateFile implements OfflineStateStore {
  readonly #file: JsonStateFile<OfflineState>;

  constructor(stateDir: string, logger: Logger = NOOP_LOGGER) {
    this.#file = new JsonStateFile({
      file: path.join(stateDir, FILE),
      maxBytes: MAX_BYTES,
      what: 'offline resets',
      logger,
      parse: parseOfflineState,
    });
  }

  load(): OfflineState | undefined {
    return this.#file.load();
  }

  save(state: OfflineState): void {
    this.#file.save(state);
  }
}
