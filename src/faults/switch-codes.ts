/**
 * `SwitchFaultCode.json` (spec L.9): the level of each 910A3 switch fault code. A code is the assembled text
 * `[0x<alarm id>,<fault id|na>,<cpu|npu|L2|na>,na]`; entries longer than 50 characters, not bracketed or without
 * exactly four comma-separated parts are ignored one by one (upstream logs and skips them). A document that is not
 * usable at all (not JSON, a list that is not an array of strings, too big) is rejected whole: the caller keeps the
 * table it had. Pure; the same judgement serves the agent and `npuctl config check`.
 */
import { childPath } from '../core/json-text.js';
import { readCodeLists } from './code-lists.js';
import type { ConfigProblem } from './problems.js';

/** Switch levels (spec L.9), ascending. Kept here so src/faults needs nothing outside src/core. */
export type SwitchCodeLevel = 'NotHandle' | 'SubHealthFault' | 'RestartRequest' | 'PreSeparate' | 'Separate';

const RANK: Readonly<Record<SwitchCodeLevel, number>> = {
  NotHandle: 0,
  SubHealthFault: 1,
  RestartRequest: 2,
  PreSeparate: 3,
  Separate: 4,
};

/** The keys of SwitchFaultCode.json and the level each gives (spec L.9: ResetFaultCodes merged into Separate). */
export const SWITCH_CODE_KEYS: readonly { readonly key: string; readonly level: SwitchCodeLevel }[] = [
  { key: 'NotHandleFaultCodes', level: 'NotHandle' },
  { key: 'SubHealthFaultCodes', level: 'SubHealthFault' },
  { key: 'RestartRequestFaultCodes', level: 'RestartRequest' },
  { key: 'PreSeparateFaultCodes', level: 'PreSeparate' },
  { key: 'ResetFaultCodes', level: 'Separate' },
  { key: 'SeparateFaultCodes', level: 'Separate' },
];

/** Longest entry accepted (spec L.9). */
export const MAX_SWITCH_CODE_LENGTH = 50;

/** The compiled table: assembled code → level (the most severe listing wins). Immutable. */
export interface SwitchCodeTable {
  readonly levels: ReadonlyMap<string, SwitchCodeLevel>;
}

/** An empty table: no switch code is reported. */
export const EMPTY_SWITCH_CODE_TABLE: SwitchCodeTable = { levels: new Map() };

/** Result of reading SwitchFaultCode.json. */
export type SwitchCodeParse =
  | { ok: true; table: SwitchCodeTable; problems: ConfigProblem[] }
  | { ok: false; fatal: string[]; problems: ConfigProblem[] };

/** Why an entry is not a switch fault code (spec L.9), or undefined when it is one. */
export function switchCodeProblem(entry: string): string | undefined {
  if (entry.length > MAX_SWITCH_CODE_LENGTH) {
    return `longer than ${MAX_SWITCH_CODE_LENGTH} characters (${entry.length})`;
  }
  if (!entry.startsWith('[') || !entry.endsWith(']')) return 'not enclosed in [ and ]';
  const parts = entry.slice(1, -1).split(',');
  if (parts.length !== 4) return `${parts.length} comma-separated parts, expected 4 (e.g. [0x00f1fef5,155913,cpu,na])`;
  return undefined;
}

/** Parses and validates SwitchFaultCode.json text. Never throws. */
export function parseSwitchFaultCodeJson(text: string): SwitchCodeParse {
  const read = readCodeLists(
    text,
    SWITCH_CODE_KEYS.map((k) => k.key),
    'L.9',
  );
  if (!read.ok) return { ok: false, fatal: read.fatal, problems: [] };
  const lists = read.lists;
  const problems: ConfigProblem[] = [];
  for (const key of read.unknown) {
    problems.push({
      kind: 'ignored',
      path: childPath('$', key),
      reason: `unknown key "${key}": its codes have no level (L.9)`,
      spec: 'L.9',
    });
  }
  const levels = new Map<string, SwitchCodeLevel>();
  const firstSeen = new Map<string, string>();
  for (const { key, level } of SWITCH_CODE_KEYS) {
    const list = lists.get(key);
    if (!list) continue;
    list.codes.forEach((entry, i) => {
      const path = childPath(list.path, i);
      const why = switchCodeProblem(entry);
      if (why !== undefined) {
        problems.push({
          kind: 'ignored',
          path,
          value: JSON.stringify(entry.length > 80 ? `${entry.slice(0, 80)}…` : entry),
          reason: `${why}; skipped`,
          spec: 'L.9',
        });
        return;
      }
      const prev = firstSeen.get(entry);
      if (prev !== undefined) {
        problems.push({
          kind: 'warning',
          path,
          value: JSON.stringify(entry),
          reason: `also listed at ${prev}; the most severe level applies`,
          spec: 'L.9',
        });
      } else firstSeen.set(entry, path);
      const had = levels.get(entry);
      if (had === undefined || RANK[level] > RANK[had]) levels.set(entry, level);
    });
  }
  return { ok: true, table: { levels }, problems };
}
