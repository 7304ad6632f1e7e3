/**
 * The content of `statistic-fault-info` (spec cluster-faults.md §2.10), pure: what a write puts in the ConfigMap and
 * what a restart loads back from it.
 */
import { goMap, goSlice, goStruct, marshalGo, type GoValue } from '../../core/go-json.js';
import { faultKey, type PublicFaultCache } from './cache.js';
import type { PublicFaultLevel } from './types.js';

export const STATISTICS_NAME = 'statistic-fault-info';
export const STATISTICS_LABEL = 'mc-statistic-fault';
export const KEY_PUBLIC_FAULTS = 'PublicFaults';
export const KEY_FAULT_NUM = 'FaultNum';
export const KEY_DESCRIPTION = 'Description';
/** Above this many entries only the count is written (§2.10). */
export const DETAIL_LIMIT = 4500;
/**
 * A full write larger than this (long fault ids and device lists can take 4,500 entries over the 1 MiB ConfigMap
 * limit) is replaced by the count-only form too, instead of being refused by the API server (upstream: 422).
 */
export const STATISTICS_MAX_BYTES = 900 * 1024;
export const TOO_MANY_DESCRIPTION =
  'The current total number of faults is too large, and only a portion of the detailed fault data is displayed';

const LEVELS: ReadonlySet<string> = new Set(['SeparateNPU', 'PreSeparateNPU', 'SubHealthFault', 'NotHandleFault']);

/** A write: the whole data (normal) or a merge patch of the count (more than {@link DETAIL_LIMIT} entries). */
export type StatisticsContent =
  { kind: 'replace'; data: Record<string, string> } | { kind: 'patch'; data: Record<string, string> };

function faultNum(n: number): string {
  return marshalGo(goStruct([['publicFaultNum', n]]));
}

/** §2.10 "Content of a normal write", or the patch above 4500 entries (or above {@link STATISTICS_MAX_BYTES}). */
export function statisticsContent(cache: PublicFaultCache, maxBytes = STATISTICS_MAX_BYTES): StatisticsContent {
  const countOnly: StatisticsContent = {
    kind: 'patch',
    data: { [KEY_FAULT_NUM]: faultNum(cache.size), [KEY_DESCRIPTION]: TOO_MANY_DESCRIPTION },
  };
  if (cache.size > DETAIL_LIMIT) return countOnly;
  const nodes = new Map<string, GoValue[]>();
  for (const [node, , r] of cache.entries()) {
    const list = nodes.get(node) ?? [];
    list.push(
      goStruct([
        { name: 'resource', value: r.resource, omitEmpty: true },
        { name: 'devIds', value: goSlice(r.devIds), omitEmpty: true },
        { name: 'faultId', value: r.faultId, omitEmpty: true },
        { name: 'type', value: r.faultType, omitEmpty: true },
        { name: 'faultCode', value: r.faultCode, omitEmpty: true },
        { name: 'level', value: r.level, omitEmpty: true },
        { name: 'faultTime', value: r.faultTime, omitEmpty: true },
      ]),
    );
    nodes.set(node, list);
  }
  const byNode = new Map<string, GoValue>([...nodes].map(([n, l]) => [n, goSlice(l)]));
  const publicFaults = marshalGo(goMap(byNode));
  if (Buffer.byteLength(publicFaults) > maxBytes) return countOnly;
  return {
    kind: 'replace',
    data: { [KEY_PUBLIC_FAULTS]: publicFaults, [KEY_FAULT_NUM]: faultNum(cache.size) },
  };
}

/**
 * The ConfigMap created when the count-only patch finds none (issue [O] item 3; upstream's patch then fails with
 * 404 and nothing is saved): the count, the description, and `PublicFaults` as `{}` — the patch form keeps
 * `PublicFaults` as it was, and there was none.
 */
export function countOnlyCreateData(patch: Readonly<Record<string, string>>): Record<string, string> {
  return { [KEY_PUBLIC_FAULTS]: '{}', ...patch };
}

/** The stored `PublicFaults` value cannot be used at all. */
export class StatisticsCorruptError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StatisticsCorruptError';
  }
}

/** Outcome of a restore. */
export interface RestoreResult {
  loaded: number;
  /** entries present but unusable (bad level or device ids): skipped, each named in `problems` */
  skipped: number;
  /** entries refused by the cap */
  capped: number;
  problems: string[];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function optString(o: Record<string, unknown>, k: string, path: string): string {
  const v = o[k];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new StatisticsCorruptError(`${path}.${k}: not a string`);
  return v;
}

/**
 * §2.10 "Restart load": every stored entry is inserted as `occur` with `addTime = nowS`, subject to the cap.
 * Throws {@link StatisticsCorruptError} when the value is not JSON of the stored shape (nothing is loaded then).
 */
export function restoreStatistics(value: string, cache: PublicFaultCache, nowS: number): RestoreResult {
  let doc: unknown;
  try {
    doc = JSON.parse(value);
  } catch (e) {
    throw new StatisticsCorruptError(`${KEY_PUBLIC_FAULTS} is not valid JSON: ${(e as Error).message}`, { cause: e });
  }
  if (doc === null) doc = {};
  if (!isObject(doc)) throw new StatisticsCorruptError(`${KEY_PUBLIC_FAULTS} is not a JSON object`);
  const entries: { node: string; path: string; o: Record<string, unknown> }[] = [];
  for (const [node, list] of Object.entries(doc)) {
    if (list === null) continue;
    if (!Array.isArray(list)) throw new StatisticsCorruptError(`${KEY_PUBLIC_FAULTS}.${node}: not an array`);
    list.forEach((o, i) => {
      if (!isObject(o)) throw new StatisticsCorruptError(`${KEY_PUBLIC_FAULTS}.${node}[${i}]: not an object`);
      entries.push({ node, path: `${KEY_PUBLIC_FAULTS}.${node}[${i}]`, o });
    });
  }
  // check every entry's JSON types first, so a corrupt value loads nothing (upstream: "bad JSON: nothing loaded")
  const parsed = entries.map(({ node, path, o }) => {
    const devIds = o.devIds ?? [];
    if (!Array.isArray(devIds)) throw new StatisticsCorruptError(`${path}.devIds: not an array`);
    const faultTime = o.faultTime ?? 0;
    if (typeof faultTime !== 'number' || !Number.isInteger(faultTime)) {
      throw new StatisticsCorruptError(`${path}.faultTime: not an integer`);
    }
    return {
      node,
      path,
      resource: optString(o, 'resource', path),
      faultId: optString(o, 'faultId', path),
      faultType: optString(o, 'type', path),
      faultCode: optString(o, 'faultCode', path),
      level: optString(o, 'level', path),
      devIds: devIds as unknown[],
      faultTime,
    };
  });
  const result: RestoreResult = { loaded: 0, skipped: 0, capped: 0, problems: [] };
  for (const e of parsed) {
    const idsOk =
      e.devIds.length > 0 && e.devIds.every((d) => typeof d === 'number' && Number.isInteger(d) && d >= 0 && d <= 31);
    if (!LEVELS.has(e.level) || !idsOk || e.faultId === '' || e.resource === '') {
      result.skipped++;
      result.problems.push(`${e.path}: unusable entry (level, device ids, faultId or resource)`);
      continue;
    }
    const outcome = cache.insert(
      e.node,
      faultKey(e.resource, e.faultId),
      {
        resource: e.resource,
        faultId: e.faultId,
        faultType: e.faultType,
        faultCode: e.faultCode,
        level: e.level as PublicFaultLevel,
        devIds: e.devIds as number[],
        faultTime: e.faultTime,
      },
      nowS,
    );
    if (outcome === 'added') result.loaded++;
    else if (outcome === 'capped') result.capped++;
  }
  return result;
}
