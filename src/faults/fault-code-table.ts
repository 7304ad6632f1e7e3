/**
 * `faultCode.json` (spec E.1): which level each fault code has, for chip codes and parameter-plane codes.
 */
import { FormatTable, isNetworkCode, parseHexCode, type FaultCode } from './codes.js';
import { childPath } from '../core/json-text.js';
import { readCodeLists } from './code-lists.js';
import { rankOf, type FaultLevel, type LevelRank } from './levels.js';
import type { ConfigProblem } from './problems.js';

/** The keys of faultCode.json in upstream's struct order, with the level each produces and its scope. */
const KEYS: readonly { key: string; level: FaultLevel; network: boolean }[] = [
  { key: 'NotHandleFaultCodes', level: 'NotHandleFault', network: false },
  { key: 'RestartRequestCodes', level: 'RestartRequest', network: false },
  { key: 'RestartBusinessCodes', level: 'RestartBusiness', network: false },
  { key: 'RestartNPUCodes', level: 'RestartNPU', network: false },
  { key: 'FreeRestartNPUCodes', level: 'FreeRestartNPU', network: false },
  { key: 'SeparateNPUCodes', level: 'SeparateNPU', network: false },
  { key: 'PreSeparateNPUCodes', level: 'PreSeparateNPU', network: false },
  { key: 'NotHandleFaultNetworkCodes', level: 'NotHandleFault', network: true },
  { key: 'PreSeparateNPUNetworkCodes', level: 'PreSeparateNPU', network: true },
  { key: 'SeparateNPUNetworkCodes', level: 'SeparateNPU', network: true },
  { key: 'SubHealthFaultCodes', level: 'SubHealthFault', network: false },
  { key: 'SubHealthFaultNetworkCodes', level: 'SubHealthFault', network: true },
];

/** Order in which the lists register their spellings in the format table (spec E.3). */
const FORMAT_ORDER = [
  'NotHandleFaultCodes',
  'RestartRequestCodes',
  'RestartBusinessCodes',
  'RestartNPUCodes',
  'FreeRestartNPUCodes',
  'PreSeparateNPUCodes',
  'SeparateNPUCodes',
  'NotHandleFaultNetworkCodes',
  'PreSeparateNPUNetworkCodes',
  'SeparateNPUNetworkCodes',
  'SubHealthFaultCodes',
  'SubHealthFaultNetworkCodes',
];

/** Chip levels that have no network meaning: such a parameter-plane code becomes network NotHandleFault (E.1). */
const NOT_SUPPORTED_FOR_NETWORK: ReadonlySet<FaultLevel> = new Set([
  'RestartRequest',
  'RestartBusiness',
  'RestartNPU',
  'FreeRestartNPU',
]);

/** The compiled fault-level table. Immutable. */
export interface FaultCodeTable {
  /** Chip code → rank of its most severe listing (E.1 "most severe applicable key"). */
  readonly chip: ReadonlyMap<FaultCode, LevelRank>;
  /** Parameter-plane code → rank, after the chip-to-network copy of E.1. */
  readonly network: ReadonlyMap<FaultCode, LevelRank>;
  /** Spellings in E.3 registration order. */
  readonly spellings: readonly string[];
}

/** Result of reading faultCode.json: a table, or `fatal` lines when the document cannot be used at all. */
export type FaultCodeParse =
  | { ok: true; table: FaultCodeTable; problems: ConfigProblem[] }
  | { ok: false; fatal: string[]; problems: ConfigProblem[] };

/** An empty table (no codes configured): every chip code falls back to its severity (E.4). */
export const EMPTY_FAULT_CODE_TABLE: FaultCodeTable = { chip: new Map(), network: new Map(), spellings: [] };

/** Parses and validates faultCode.json text. Never throws. */
export function parseFaultCodeJson(text: string): FaultCodeParse {
  const read = readCodeLists(
    text,
    KEYS.map((k) => k.key),
    'E.1',
  );
  if (!read.ok) return { ok: false, fatal: read.fatal, problems: [] };
  const lists = read.lists;
  const problems: ConfigProblem[] = [];
  for (const key of read.unknown) {
    problems.push({
      kind: 'ignored',
      path: childPath('$', key),
      reason: `unknown key "${key}": upstream ignores it, so its codes have no level (E.1)`,
      spec: 'E.1',
    });
  }
  const chip = new Map<FaultCode, LevelRank>();
  const network = new Map<FaultCode, LevelRank>();
  const firstSeen = new Map<FaultCode, { key: string; path: string }>();
  const put = (m: Map<FaultCode, LevelRank>, code: FaultCode, r: LevelRank): void => {
    if ((m.get(code) ?? -1) < r) m.set(code, r);
  };
  for (const { key, level, network: isNet } of KEYS) {
    const list = lists.get(key);
    if (!list) continue;
    const seenHere = new Set<FaultCode>();
    list.codes.forEach((text, i) => {
      const path = childPath(list.path, i);
      const p = parseHexCode(text);
      if (!p.ok) {
        problems.push({
          kind: 'ignored',
          path,
          value: JSON.stringify(text),
          reason: `${p.reason}; skipped`,
          spec: 'E.1',
        });
        return;
      }
      if (seenHere.has(p.value)) {
        problems.push({
          kind: 'warning',
          path,
          value: JSON.stringify(text),
          reason: `listed twice in ${key}`,
          spec: 'E.1',
        });
      } else {
        const prev = firstSeen.get(p.value);
        if (prev && prev.key !== key) {
          problems.push({
            kind: 'warning',
            path,
            value: JSON.stringify(text),
            reason: `also listed in ${prev.key} (${prev.path}); the most severe level applies (E.1, E.4)`,
            spec: 'E.1',
          });
        }
      }
      seenHere.add(p.value);
      if (!firstSeen.has(p.value)) firstSeen.set(p.value, { key, path });
      put(isNet ? network : chip, p.value, rankOf(level));
      if (!isNet && isNetworkCode(p.value)) {
        // E.1: parameter-plane codes in chip lists are copied into the network lists.
        if (NOT_SUPPORTED_FOR_NETWORK.has(level)) {
          problems.push({
            kind: 'warning',
            path,
            value: JSON.stringify(text),
            reason: `${text} is a network fault and cannot be ${level}; it is handled as network NotHandleFault`,
            spec: 'E.1',
          });
          put(network, p.value, rankOf('NotHandleFault'));
        } else put(network, p.value, rankOf(level));
      }
    });
  }
  const spellings = FORMAT_ORDER.flatMap((k) => lists.get(k)?.codes ?? []);
  return { ok: true, table: { chip, network, spellings }, problems };
}

/** Format table filled from a faultCode table's spellings (E.3 first stage). */
export function formatsOf(table: FaultCodeTable, base = FormatTable.empty()): FormatTable {
  return base.extend(table.spellings);
}
