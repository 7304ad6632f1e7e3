/**
 * Upgrade reasons (spec G.4, G.5): why a chip's level was raised above its codes' own level, and the device-name
 * lists of the device-info ConfigMap that carry them (G.2).
 */
import type { RunMode } from '../core/chips.js';
import { parseHexCode, type FaultCode } from './codes.js';
import { GoDecoder, JsonSyntaxError, childPath, parseJsonText } from '../core/json-text.js';
import { isFaultLevel, type FaultLevel } from './levels.js';

/** The three upgrade types (spec G.4). */
export type UpgradeType = 'FaultFrequency' | 'FaultDuration' | 'FaultAutofill';

/** Placeholder code of an autofill reason (spec G.3); it is not hex and never contributes a level (E.4 note 4). */
export const AUTOFILL_CODE = 'AutofillFaultCode';

/** One upgrade reason, in the ConfigMap's field names (spec G.5). */
export interface UpgradeReason {
  upgrade_time: number;
  /** Configured lower-case hex text, or {@link AUTOFILL_CODE}. */
  fault_code: string;
  fault_level: FaultLevel;
  upgrade_type: UpgradeType;
}

const TYPES: ReadonlySet<string> = new Set(['FaultFrequency', 'FaultDuration', 'FaultAutofill']);

/** Identity of a reason in a chip's set: (code, level, type) (spec G.4). */
export function reasonKey(r: Pick<UpgradeReason, 'fault_code' | 'fault_level' | 'upgrade_type'>): string {
  return `${r.fault_code}|${r.fault_level}|${r.upgrade_type}`;
}

/** The numeric code of a reason, or null when its text is not hex (autofill). */
export function reasonCode(r: Pick<UpgradeReason, 'fault_code'>): FaultCode | null {
  const p = parseHexCode(r.fault_code);
  return p.ok ? p.value : null;
}

/**
 * Longest operator value read (`ManuallySeparateNPU`, `UpgradeFaultReason`): the API server's limit for the whole
 * ConfigMap is 1 MiB, so a longer value can only come from elsewhere and is refused before it is parsed.
 */
export const MAX_OPERATOR_VALUE_CHARS = 1024 * 1024;

/**
 * Problems kept by the readers of operator values; the rest are counted in one last entry ("… and N more"), so a
 * value of a million bad entries costs one pass and a few lines of text, not a million.
 */
export const MAX_KEPT_PROBLEMS = 20;

/** Characters of an operator's text quoted in a problem (longer text is cut and its length given). */
const QUOTED_CHARS = 64;

/** `text` as a JSON string for a message, cut to {@link QUOTED_CHARS} characters. */
export function quoted(text: string, max = QUOTED_CHARS): string {
  return text.length > max ? `${JSON.stringify(text.slice(0, max))}…(${text.length} chars)` : JSON.stringify(text);
}

/** Collects at most {@link MAX_KEPT_PROBLEMS} problems and counts the others. */
export class ProblemList {
  readonly #kept: string[] = [];
  #more = 0;

  /** Adds one; `text` is called only when the problem is kept. */
  add(text: string | (() => string)): void {
    if (this.#kept.length < MAX_KEPT_PROBLEMS) this.#kept.push(typeof text === 'string' ? text : text());
    else this.#more++;
  }

  /** Problems seen, kept or not. */
  get count(): number {
    return this.#kept.length + this.#more;
  }

  /** The kept problems, plus one entry counting the others. */
  list(): string[] {
    return this.#more === 0 ? [...this.#kept] : [...this.#kept, `… and ${this.#more} more problems`];
  }
}

/** Result of reading the `ManuallySeparateNPU` value (spec G.2). */
export interface ManualNames {
  phyIds: number[];
  /** At most {@link MAX_KEPT_PROBLEMS}, then one entry counting the rest. */
  problems: string[];
}

/**
 * Reads a comma-separated `ManuallySeparateNPU` value (spec G.2): entries must match `^<runMode>-\d+` (not end
 * anchored); others are skipped with a warning; an entry whose part after the first `-` is not an integer stops
 * the reading (it and every following entry are ignored). One pass over the value; problems are bounded.
 */
export function parseManualNames(value: string, runMode: RunMode): ManualNames {
  const phyIds: number[] = [];
  const problems = new ProblemList();
  if (value === '') return { phyIds, problems: [] };
  const pattern = new RegExp(`^${runMode}-\\d+`);
  const entries = value.split(',');
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (!pattern.test(e)) {
      problems.add(() => `ManuallySeparateNPU entry ${quoted(e)} does not match ^${runMode}-\\d+; skipped (G.2)`);
      continue;
    }
    const rest = e.slice(e.indexOf('-') + 1);
    if (!/^[+-]?[0-9]+$/.test(rest) || !Number.isSafeInteger(Number(rest))) {
      problems.add(
        `ManuallySeparateNPU entry ${quoted(e)}: ${quoted(rest)} is not an integer; ` +
          `it and the ${entries.length - i - 1} following entries are ignored (G.2)`,
      );
      break;
    }
    phyIds.push(Number(rest));
  }
  return { phyIds, problems: problems.list() };
}

/**
 * An operator's `ManuallySeparateNPU` value under the one rule of the agent (docs/device-info.md), whether it is
 * read while the agent runs (G.2) or at start (G.3): `ok` only when every entry is `<runMode>-<phy id>` of a chip of
 * this node (or the value is empty). Anything else is rejected as a whole — it releases nothing and adds nothing.
 */
export type ManualValueCheck =
  { readonly ok: true; readonly phyIds: number[] } | { readonly ok: false; readonly problems: string[] };

/** Checks a `ManuallySeparateNPU` value against {@link ManualValueCheck}'s rule; one pass, bounded problems. */
export function checkManualValue(value: string, runMode: RunMode, onNode: ReadonlySet<number>): ManualValueCheck {
  if (value.length > MAX_OPERATOR_VALUE_CHARS) {
    return { ok: false, problems: [`ManuallySeparateNPU is longer than ${MAX_OPERATOR_VALUE_CHARS} characters`] };
  }
  const parsed = parseManualNames(value, runMode);
  const problems = new ProblemList();
  for (const p of parsed.problems) problems.add(p);
  for (const phy of parsed.phyIds) {
    if (!onNode.has(phy)) problems.add(() => `ManuallySeparateNPU names phy id ${phy}, which is not on this node`);
  }
  return problems.count === 0 ? { ok: true, phyIds: parsed.phyIds } : { ok: false, problems: problems.list() };
}

/** Result of reading the `UpgradeFaultReason` value: reasons per phy id. */
export interface ReasonsByPhy {
  reasons: Map<number, UpgradeReason[]>;
  /** At most {@link MAX_KEPT_PROBLEMS}, then one entry counting the rest. */
  problems: string[];
}

/**
 * Reads the `UpgradeFaultReason` JSON (spec G.5). A key that does not split into exactly two `-` fields with an
 * integer phy id fails the whole value (as upstream); entries with an unknown level or type are dropped with a
 * problem; duplicates of one (code, level, type) keep the latest time.
 */
export function parseReasonsJson(text: string): ReasonsByPhy {
  const reasons = new Map<number, UpgradeReason[]>();
  if (text.length > MAX_OPERATOR_VALUE_CHARS) {
    return {
      reasons,
      problems: [
        `UpgradeFaultReason is longer than ${MAX_OPERATOR_VALUE_CHARS} characters; the value is ignored (G.5)`,
      ],
    };
  }
  if (text.trim() === '') return { reasons, problems: [] };
  let root;
  try {
    root = parseJsonText(text);
  } catch (e) {
    return {
      reasons,
      problems: [`UpgradeFaultReason is not valid JSON: ${e instanceof JsonSyntaxError ? e.message : String(e)} (G.5)`],
    };
  }
  if (root.t === 'null') return { reasons, problems: [] };
  if (root.t !== 'obj') return { reasons, problems: ['UpgradeFaultReason is not a JSON object (G.5)'] };
  const dec = new GoDecoder();
  const problems = new ProblemList();
  const byPhy = new Map<number, Map<string, UpgradeReason>>();
  for (const [key, node] of root.entries) {
    const parts = key.split('-', 3);
    if (parts.length !== 2 || !/^[+-]?[0-9]+$/.test(parts[1]!)) {
      return {
        reasons: new Map(),
        problems: [`UpgradeFaultReason key ${quoted(key)} is not <runMode>-<phy>; the value is ignored (G.5)`],
      };
    }
    const phy = Number(parts[1]);
    // Paths name the key cut short: a problem's text stays bounded whatever the operator typed.
    const path = childPath('$', key.length > QUOTED_CHARS ? `${key.slice(0, QUOTED_CHARS)}…` : key);
    const items = dec.array(node, path) ?? [];
    const set = byPhy.get(phy) ?? new Map<string, UpgradeReason>();
    items.forEach((item, i) => {
      const ip = childPath(path, i);
      const f = dec.fields(item, ip, ['upgrade_time', 'fault_code', 'fault_level', 'upgrade_type']);
      if (!f) return;
      const time = f.decode('upgrade_time', ip, (n, p) => dec.int64(n, p)) ?? 0;
      const code = f.decode('fault_code', ip, (n, p) => dec.string(n, p)) ?? '';
      const level = f.decode('fault_level', ip, (n, p) => dec.string(n, p)) ?? '';
      const type = f.decode('upgrade_type', ip, (n, p) => dec.string(n, p)) ?? '';
      if (!isFaultLevel(level) || !TYPES.has(type)) {
        problems.add(
          () => `${ip}: reason with level ${quoted(level)} and type ${quoted(type)} is not understood; dropped (G.5)`,
        );
        return;
      }
      const r: UpgradeReason = {
        upgrade_time: time,
        fault_code: code,
        fault_level: level,
        upgrade_type: type as UpgradeType,
      };
      const k = reasonKey(r);
      const prev = set.get(k);
      if (!prev || prev.upgrade_time < time) set.set(k, r);
    });
    byPhy.set(phy, set);
  }
  if (dec.typeProblems.length > 0) {
    const typeProblems = new ProblemList();
    for (const p of dec.typeProblems) {
      typeProblems.add(
        () => `UpgradeFaultReason ${p.path}: ${p.value} is not ${p.expected}; the value is ignored (G.5)`,
      );
    }
    return { reasons: new Map(), problems: typeProblems.list() };
  }
  for (const [phy, set] of byPhy) if (set.size > 0) reasons.set(phy, [...set.values()]);
  return { reasons, problems: problems.list() };
}
