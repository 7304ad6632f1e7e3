/**
 * Upgrade reasons (spec G.4, G.5): why a chip's level was raised above its codes' own level, and the device-name
 * lists of the device-info ConfigMap that carry them (G.2).
 */
import { parseHexCode, type FaultCode } from './codes.js';
import { GoDecoder, JsonSyntaxError, childPath, parseJsonText } from './json-text.js';
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

/** Run mode: the prefix of device names (spec G.2, H.5). */
export type RunMode = 'Ascend910' | 'Ascend310P' | 'Ascend310';

/** `Ascend910-3` for phy id 3 (spec H.5). */
export function deviceName(runMode: RunMode, phyId: number): string {
  return `${runMode}-${phyId}`;
}

/** Result of reading the `ManuallySeparateNPU` value (spec G.2). */
export interface ManualNames {
  phyIds: number[];
  problems: string[];
}

/**
 * Reads a comma-separated `ManuallySeparateNPU` value (spec G.2): entries must match `^<runMode>-\d+` (not end
 * anchored); others are skipped with a warning; an entry whose part after the first `-` is not an integer stops
 * the reading (it and every following entry are ignored).
 */
export function parseManualNames(value: string, runMode: RunMode): ManualNames {
  const phyIds: number[] = [];
  const problems: string[] = [];
  if (value === '') return { phyIds, problems };
  const pattern = new RegExp(`^${runMode}-\\d+`);
  const entries = value.split(',');
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (!pattern.test(e)) {
      problems.push(`ManuallySeparateNPU entry ${JSON.stringify(e)} does not match ^${runMode}-\\d+; skipped (G.2)`);
      continue;
    }
    const rest = e.slice(e.indexOf('-') + 1);
    if (!/^[+-]?[0-9]+$/.test(rest) || !Number.isSafeInteger(Number(rest))) {
      problems.push(
        `ManuallySeparateNPU entry ${JSON.stringify(e)}: ${JSON.stringify(rest)} is not an integer; ` +
          `it and the ${entries.length - i - 1} following entries are ignored (G.2)`,
      );
      break;
    }
    phyIds.push(Number(rest));
  }
  return { phyIds, problems };
}

/** Result of reading the `UpgradeFaultReason` value: reasons per phy id. */
export interface ReasonsByPhy {
  reasons: Map<number, UpgradeReason[]>;
  problems: string[];
}

/**
 * Reads the `UpgradeFaultReason` JSON (spec G.5). A key that does not split into exactly two `-` fields with an
 * integer phy id fails the whole value (as upstream); entries with an unknown level or type are dropped with a
 * problem; duplicates of one (code, level, type) keep the latest time.
 */
export function parseReasonsJson(text: string): ReasonsByPhy {
  const reasons = new Map<number, UpgradeReason[]>();
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
  const problems: string[] = [];
  const byPhy = new Map<number, Map<string, UpgradeReason>>();
  for (const [key, node] of root.entries) {
    const parts = key.split('-');
    if (parts.length !== 2 || !/^[+-]?[0-9]+$/.test(parts[1]!)) {
      return {
        reasons: new Map(),
        problems: [`UpgradeFaultReason key ${JSON.stringify(key)} is not <runMode>-<phy>; the value is ignored (G.5)`],
      };
    }
    const phy = Number(parts[1]);
    const path = childPath('$', key);
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
        problems.push(
          `${ip}: reason with level ${JSON.stringify(level)} and type ${JSON.stringify(type)} is not understood; dropped (G.5)`,
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
    return {
      reasons: new Map(),
      problems: dec.typeProblems.map(
        (p) => `UpgradeFaultReason ${p.path}: ${p.value} is not ${p.expected}; the value is ignored (G.5)`,
      ),
    };
  }
  for (const [phy, set] of byPhy) if (set.size > 0) reasons.set(phy, [...set.values()]);
  return { reasons, problems };
}
