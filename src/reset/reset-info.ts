/**
 * The `ResetInfo` node annotation (hot-reset.md §4.3, device-plugin.md §J.7): chips that need an external party
 * (`ThirdPartyResetDevs`) or manual action (`ManualResetDevs`), for the operators and other programs that read the
 * Node. Go-exact JSON text, parsed with Go's `encoding/json` rules, lists de-duplicated by `PhyID`.
 *
 * {@link ResetInfoManager} keeps the value in memory, loads it once from the Node, and writes through
 * {@link NodeAnnotationApi} — unlike upstream, which patches the Node every cycle even when nothing changed, only
 * when the value changed (a failed write is retried on the next {@link ResetInfoManager.flush}).
 */
import { errorMessage } from '../core/errors.js';
import { type Logger, NOOP_LOGGER } from '../core/logger.js';
import { goSlice, goStruct, marshalGo } from '../core/go-json.js';
import { sleep, type Clock } from '../core/clock.js';
import type { NodeAnnotationApi } from './types.js';

/** Annotation key on the Node (§4.3). */
export const RESET_INFO_ANNOTATION = 'ResetInfo';

/** One chip entry (upstream `ResetDevice`); field names are the JSON names. */
export interface ResetDev {
  readonly CardId: number;
  readonly DeviceId: number;
  /** 910A3: the brother card (`dcmi_get_netdev_brother_device`); otherwise −1 (§4.3). */
  readonly AssociatedCardId: number;
  readonly PhyID: number;
  readonly LogicID: number;
}

/** The annotation value; `null` is Go's nil slice (only ever seen in a value read from the Node). */
export interface ResetInfo {
  readonly ThirdPartyResetDevs: readonly ResetDev[] | null;
  readonly ManualResetDevs: readonly ResetDev[] | null;
}

/** The two lists. */
export type ResetInfoList = keyof ResetInfo;

/** The empty value. */
export const EMPTY_RESET_INFO: ResetInfo = Object.freeze({ ThirdPartyResetDevs: [], ManualResetDevs: [] });

const DEV_FIELDS = ['CardId', 'DeviceId', 'AssociatedCardId', 'PhyID', 'LogicID'] as const;
const LISTS: readonly ResetInfoList[] = ['ThirdPartyResetDevs', 'ManualResetDevs'];

/**
 * Go's `json.Marshal` of the value as we write it: both lists always arrays (`[]` when empty or nil, §4.3 "after any
 * write both lists serialise as arrays").
 */
export function encodeResetInfo(info: ResetInfo): string {
  const list = (devs: readonly ResetDev[] | null) =>
    goSlice((devs ?? []).map((d) => goStruct(DEV_FIELDS.map((f) => [f, d[f]] as const))));
  return marshalGo(
    goStruct([
      ['ThirdPartyResetDevs', list(info.ThirdPartyResetDevs)],
      ['ManualResetDevs', list(info.ManualResetDevs)],
    ]),
  );
}

/** Result of {@link parseResetInfo}. */
export interface ParsedResetInfo {
  readonly info: ResetInfo;
  /** Why the text was not used (the value is then empty); absent when it parsed. */
  readonly warning?: string;
}

/**
 * Reads the annotation with `json.Unmarshal` rules (keys matched case-insensitively, unknown keys ignored, `null`
 * leaves a zero value). Missing or unparsable text → the empty value and a warning (§4.3).
 */
export function parseResetInfo(text: string | undefined): ParsedResetInfo {
  if (text === undefined) return { info: EMPTY_RESET_INFO, warning: `annotation ${RESET_INFO_ANNOTATION} is absent` };
  try {
    return { info: decode(JSON.parse(text)) };
  } catch (e) {
    const why = errorMessage(e);
    return { info: EMPTY_RESET_INFO, warning: `annotation ${RESET_INFO_ANNOTATION} is not usable (${why})` };
  }
}

/** Go's case folding for field names (ASCII plus the two non-ASCII folds Go applies: ſ → s, K → k). */
function fold(key: string): string {
  return key.replace(/\u017f/g, 's').toLowerCase();
}

function decode(v: unknown): ResetInfo {
  if (v === null) return { ThirdPartyResetDevs: null, ManualResetDevs: null };
  if (typeof v !== 'object' || Array.isArray(v)) throw new Error('the value is not a JSON object');
  const out: { ThirdPartyResetDevs: ResetDev[] | null; ManualResetDevs: ResetDev[] | null } = {
    ThirdPartyResetDevs: null,
    ManualResetDevs: null,
  };
  for (const [key, value] of Object.entries(v as Record<string, unknown>)) {
    const list = LISTS.find((l) => fold(l) === fold(key));
    if (list === undefined) continue;
    if (value === null) {
      out[list] = null;
      continue;
    }
    if (!Array.isArray(value)) throw new Error(`${list} is not an array`);
    out[list] = value.map((d, i) => decodeDev(d, `${list}[${i}]`));
  }
  return out;
}

function decodeDev(v: unknown, where: string): ResetDev {
  const dev: Record<(typeof DEV_FIELDS)[number], number> = {
    CardId: 0,
    DeviceId: 0,
    AssociatedCardId: 0,
    PhyID: 0,
    LogicID: 0,
  };
  if (v === null) return dev;
  if (typeof v !== 'object' || Array.isArray(v)) throw new Error(`${where} is not an object`);
  for (const [key, value] of Object.entries(v as Record<string, unknown>)) {
    const field = DEV_FIELDS.find((f) => fold(f) === fold(key));
    if (field === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
      throw new Error(`${where}.${field} is not an integer`);
    }
    dev[field] = value;
  }
  return dev;
}

/** The list with later entries of an already-seen `PhyID` dropped (first kept, §4.3). */
export function dedupeByPhyId(devs: readonly ResetDev[]): ResetDev[] {
  const seen = new Set<number>();
  return devs.filter((d) => !seen.has(d.PhyID) && (seen.add(d.PhyID), true));
}

/** §4.3 append: current then new, de-duplicated. */
export function appendDevs(current: readonly ResetDev[] | null, add: readonly ResetDev[]): ResetDev[] {
  return dedupeByPhyId([...(current ?? []), ...add]);
}

/** §4.3 delete: current minus the entries whose `PhyID` is listed, de-duplicated. */
export function deleteDevs(current: readonly ResetDev[] | null, phyIds: Iterable<number>): ResetDev[] {
  const drop = new Set(phyIds);
  return dedupeByPhyId((current ?? []).filter((d) => !drop.has(d.PhyID)));
}

/** §4.3 overwrite: the new list, de-duplicated. */
export function overwriteDevs(next: readonly ResetDev[]): ResetDev[] {
  return dedupeByPhyId(next);
}

function sameList(a: readonly ResetDev[] | null, b: readonly ResetDev[] | null): boolean {
  const x = a ?? [];
  const y = b ?? [];
  return x.length === y.length && x.every((d, i) => DEV_FIELDS.every((f) => d[f] === y[i]![f]));
}

function sameInfo(a: ResetInfo, b: ResetInfo): boolean {
  return LISTS.every((l) => sameList(a[l], b[l]));
}

function checkDevs(what: string, devs: readonly ResetDev[]): void {
  if (!Array.isArray(devs)) throw new Error(`ResetInfo ${what}: the chips must be an array`);
  for (const d of devs) {
    for (const f of DEV_FIELDS) {
      const n = (d as unknown as Record<string, unknown> | null)?.[f];
      if (typeof n !== 'number' || !Number.isSafeInteger(n)) {
        throw new Error(`ResetInfo ${what}: ${f} of ${JSON.stringify(d)} is not an integer`);
      }
    }
  }
}

/** Options of {@link ResetInfoManager}. */
export interface ResetInfoManagerOptions {
  readonly api: NodeAnnotationApi;
  readonly clock: Clock;
  readonly logger?: Logger;
  /** Tries per Node read or write (§4.3: 3). */
  readonly tries?: number;
  /** Pause between tries in ms (§4.3: 1 s). */
  readonly retryDelayMs?: number;
}

type Op = (info: ResetInfo) => ResetInfo;

/**
 * The in-memory `ResetInfo` of this node and its writer. Mutations apply at once to the cached value (queued until
 * the first load has finished, which any mutation starts); the changes of one synchronous turn are written in one
 * Node update, and only when the value differs from what the Node holds.
 */
export class ResetInfoManager {
  private readonly api: NodeAnnotationApi;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly tries: number;
  private readonly retryDelayMs: number;
  private info: ResetInfo = EMPTY_RESET_INFO;
  /** Encoding of the value the Node holds, as far as we know. */
  private nodeText: string | undefined;
  private loading: Promise<void> | undefined;
  private isLoaded = false;
  private readonly pending: Op[] = [];
  private writing: Promise<void> | undefined;
  private again = false;
  private unsynced = false;

  constructor(o: ResetInfoManagerOptions) {
    this.api = o.api;
    this.clock = o.clock;
    this.log = o.logger ?? NOOP_LOGGER;
    this.tries = o.tries ?? 3;
    this.retryDelayMs = o.retryDelayMs ?? 1000;
    if (!Number.isSafeInteger(this.tries) || this.tries < 1) {
      throw new Error(`ResetInfo manager: tries must be a positive integer, got ${String(o.tries)}`);
    }
    if (!Number.isFinite(this.retryDelayMs) || this.retryDelayMs < 0) {
      throw new Error(`ResetInfo manager: retry delay must be a non-negative number, got ${String(o.retryDelayMs)}`);
    }
  }

  /**
   * Reads the annotation from the Node, once (later calls return the same promise): up to `tries` reads; a read that
   * keeps failing, a missing or an unparsable value all start from the empty value (§4.3), with a log line.
   */
  load(): Promise<void> {
    this.loading ??= this.doLoad();
    return this.loading;
  }

  /** Whether the first load has finished. */
  loaded(): boolean {
    return this.isLoaded;
  }

  /** The current value (mutations made before the load finished are not in it yet). */
  current(): ResetInfo {
    return this.info;
  }

  /** Whether a list holds a chip with this `PhyID`. */
  has(list: ResetInfoList, phyId: number): boolean {
    return (this.info[list] ?? []).some((d) => d.PhyID === phyId);
  }

  /** §4.3 append to one list. */
  append(list: ResetInfoList, devs: readonly ResetDev[]): void {
    checkDevs('append', devs);
    if (devs.length === 0) return;
    this.mutate((info) => ({ ...info, [list]: appendDevs(info[list], devs) }));
  }

  /** §4.3 delete from both lists (the clean-up of chips that became Healthy). */
  remove(phyIds: readonly number[]): void {
    if (phyIds.length === 0) return;
    this.mutate((info) => {
      const present = LISTS.some((l) => (info[l] ?? []).some((d) => phyIds.includes(d.PhyID)));
      if (!present) return info;
      return {
        ThirdPartyResetDevs: deleteDevs(info.ThirdPartyResetDevs, phyIds),
        ManualResetDevs: deleteDevs(info.ManualResetDevs, phyIds),
      };
    });
  }

  /** §4.3 clean-up: third-party entries of these chips move to the manual list. */
  moveToManual(phyIds: readonly number[]): void {
    if (phyIds.length === 0) return;
    this.mutate((info) => {
      const moved = (info.ThirdPartyResetDevs ?? []).filter((d) => phyIds.includes(d.PhyID));
      if (moved.length === 0) return info;
      return {
        ThirdPartyResetDevs: deleteDevs(info.ThirdPartyResetDevs, phyIds),
        ManualResetDevs: appendDevs(info.ManualResetDevs, moved),
      };
    });
  }

  /** §4.3 overwrite both lists. */
  overwrite(next: ResetInfo): void {
    checkDevs('overwrite', next.ThirdPartyResetDevs ?? []);
    checkDevs('overwrite', next.ManualResetDevs ?? []);
    this.mutate(() => ({
      ThirdPartyResetDevs: overwriteDevs(next.ThirdPartyResetDevs ?? []),
      ManualResetDevs: overwriteDevs(next.ManualResetDevs ?? []),
    }));
  }

  /** Starts a write again when the last one failed (cheap otherwise); call it once per cycle. */
  flush(): void {
    if (this.unsynced && this.writing === undefined) this.scheduleWrite();
  }

  /** Resolves once the load and every started write have finished (for tests and shutdown). */
  async whenIdle(): Promise<void> {
    for (;;) {
      const busy = this.writing ?? (this.isLoaded ? undefined : this.loading);
      if (!busy) return;
      await busy;
    }
  }

  private mutate(op: Op): void {
    if (!this.isLoaded) {
      this.pending.push(op);
      void this.load();
      return;
    }
    const next = op(this.info);
    if (next === this.info || sameInfo(next, this.info)) return;
    this.info = next;
    this.scheduleWrite();
  }

  private async doLoad(): Promise<void> {
    let text: string | undefined;
    let failed: unknown;
    for (let i = 0; i < this.tries; i++) {
      if (i > 0) await sleep(this.clock, this.retryDelayMs);
      try {
        text = await this.api.read(RESET_INFO_ANNOTATION);
        failed = undefined;
        break;
      } catch (e) {
        failed = e;
      }
    }
    if (failed !== undefined) {
      this.log.warn(
        { err: failed },
        `${RESET_INFO_ANNOTATION}: reading the Node failed ${this.tries} times, starting empty`,
      );
    }
    const parsed = parseResetInfo(text);
    if (parsed.warning !== undefined && failed === undefined) {
      if (text === undefined) this.log.info(`${parsed.warning}, starting empty`);
      else this.log.warn(`${parsed.warning}, starting empty`);
    }
    this.info = parsed.info;
    this.nodeText = encodeResetInfo(parsed.info);
    this.isLoaded = true;
    const ops = this.pending.splice(0);
    for (const op of ops) this.mutate(op);
  }

  private scheduleWrite(): void {
    if (this.writing) {
      this.again = true;
      return;
    }
    this.writing = this.writeLoop().finally(() => {
      this.writing = undefined;
    });
  }

  private async writeLoop(): Promise<void> {
    // Let the other mutations of this synchronous turn land first: one Node update carries them all.
    await Promise.resolve();
    do {
      this.again = false;
      const text = encodeResetInfo(this.info);
      if (text === this.nodeText) {
        this.unsynced = false;
        continue;
      }
      if (await this.writeWithRetries(text)) {
        this.nodeText = text;
        this.unsynced = false;
      } else {
        this.unsynced = true;
      }
    } while (this.again);
  }

  private async writeWithRetries(text: string): Promise<boolean> {
    for (let i = 0; i < this.tries; i++) {
      if (i > 0) await sleep(this.clock, this.retryDelayMs);
      try {
        await this.api.write(RESET_INFO_ANNOTATION, text);
        return true;
      } catch (e) {
        this.log.warn({ err: e, attempt: i + 1 }, `${RESET_INFO_ANNOTATION}: writing the Node annotation failed`);
      }
    }
    this.log.error(`${RESET_INFO_ANNOTATION}: the Node annotation was not written after ${this.tries} tries`);
    return false;
  }
}
