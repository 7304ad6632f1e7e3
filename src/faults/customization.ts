/**
 * `faultCustomization.json` (spec F): GraceTolerance, FaultFrequency and FaultDuration, with upstream's exact
 * acceptance rules (F.1–F.4) and a report row for every rule so nothing is dropped silently.
 */
import { parseHexCode, type FaultCode } from './codes.js';
import {
  GoDecoder,
  JsonSyntaxError,
  childPath,
  parseJsonText,
  type JsonNode,
  type ObjectFields,
} from '../core/json-text.js';
import { DURATION_HANDLING, FREQUENCY_HANDLING, type FaultLevel } from './levels.js';
import { MAX_CONFIG_BYTES, type ConfigProblem, type RuleStatus } from './problems.js';

/** "Never": the ReleaseTimeWindow of a rule without one, and the upper bound of the field (spec F.3). */
export const RELEASE_NEVER = 2 ** 32;

/** Ranges of spec F.2–F.4 (seconds, inclusive). */
export const LIMITS = {
  TimeWindow: [60, 864000],
  ReleaseTimeWindow: [60, RELEASE_NEVER],
  Times: [1, 100],
  FaultTimeout: [0, 600],
  RecoverTimeout: [0, 86400],
} as const;

/** GraceTolerance fields: range and default (spec F.2). */
export const GRACE_FIELDS = {
  WaitProcessReadCMTime: { min: 5, max: 90, def: 30 },
  WaitDeviceResetTime: { min: 60, max: 180, def: 150 },
  WaitFaultSelfHealingTime: { min: 1, max: 30, def: 15 },
} as const;

/** Name of a GraceTolerance field. */
export type GraceField = keyof typeof GRACE_FIELDS;

/** A FaultFrequency rule as it applies to one code (spec F.3). */
export interface FrequencyRule {
  readonly timeWindowSec: number;
  readonly times: number;
  readonly handling: FaultLevel;
  /** {@link RELEASE_NEVER} when absent. */
  readonly releaseTimeWindowSec: number;
  /** Index of the entry in the file. */
  readonly index: number;
}

/** A FaultDuration rule as it applies to one code (spec F.4). */
export interface DurationRule {
  readonly faultTimeoutSec: number;
  readonly recoverTimeoutSec: number;
  readonly handling: FaultLevel;
  readonly index: number;
}

/** One row of the per-rule report (architecture §7), extended with where and what. */
export interface RuleReport {
  section: 'GraceTolerance' | 'FaultFrequency' | 'FaultDuration';
  /** Entry index in its section; null for GraceTolerance fields. */
  index: number | null;
  /** GraceTolerance field name. */
  field?: string;
  eventIds: string[];
  status: RuleStatus;
  reason: string;
  spec: string;
  /** JSON path of the entry, field or EventId concerned. */
  path: string;
  /** The offending value as written, when one is to blame. */
  value?: string;
  /** Things that do not change the status (e.g. unknown fields). */
  warnings?: string[];
}

/** The usable content of a customization document. */
export interface Customization {
  readonly grace: Readonly<Record<GraceField, number>>;
  readonly frequency: ReadonlyMap<FaultCode, FrequencyRule>;
  readonly duration: ReadonlyMap<FaultCode, DurationRule>;
  /** FaultFrequency ids then FaultDuration ids, lower-cased, for the format table (spec E.3). */
  readonly spellings: readonly string[];
}

/** Result of reading the customization: usable content plus report, or `fatal` lines (malformed, spec F.1). */
export type CustomizationParse =
  | { ok: true; customization: Customization; rules: RuleReport[]; problems: ConfigProblem[] }
  | { ok: false; fatal: string[] };

/** What applies when no customization was ever loaded: built-in GraceTolerance defaults, no rules (F.1). */
export const DEFAULT_CUSTOMIZATION: Customization = {
  grace: { WaitProcessReadCMTime: 30, WaitDeviceResetTime: 150, WaitFaultSelfHealingTime: 15 },
  frequency: new Map(),
  duration: new Map(),
  spellings: [],
};

const FREQ_FIELDS = ['EventId', 'TimeWindow', 'Times', 'FaultHandling', 'ReleaseTimeWindow'] as const;
const DUR_FIELDS = ['EventId', 'FaultTimeout', 'RecoverTimeout', 'FaultHandling'] as const;

interface RawEntry {
  path: string;
  fields: ObjectFields;
  eventIds: string[];
  num: Map<string, number>;
  handling: string;
}

/** Parses and validates faultCustomization.json text. Never throws. */
export function parseCustomizationJson(text: string): CustomizationParse {
  if (text.length > MAX_CONFIG_BYTES)
    return { ok: false, fatal: [`document is larger than ${MAX_CONFIG_BYTES} bytes`] };
  let root: JsonNode;
  try {
    root = parseJsonText(text);
  } catch (e) {
    return { ok: false, fatal: [`not valid JSON: ${e instanceof JsonSyntaxError ? e.message : String(e)} (F.1)`] };
  }
  const dec = new GoDecoder();
  const top = dec.fields(root, '$', ['GraceTolerance', 'FaultFrequency', 'FaultDuration']);
  const graceVals = new Map<string, number>();
  let graceFields: ObjectFields | undefined;
  let gracePath = '$.GraceTolerance';
  const freq: RawEntry[] = [];
  const dur: RawEntry[] = [];
  if (top) {
    top.decode('GraceTolerance', '$', (n, p) => {
      gracePath = p;
      const f = dec.fields(n, p, Object.keys(GRACE_FIELDS));
      if (!f) return undefined;
      graceFields = f;
      for (const k of Object.keys(GRACE_FIELDS)) {
        const v = f.decode(k, p, (m, q) => dec.int64(m, q));
        if (v !== undefined) graceVals.set(k, v);
      }
      return f;
    });
    const readEntries = (section: string, names: readonly string[], out: RawEntry[]): void => {
      const items = top.decode(section, '$', (n, p) => {
        const arr = dec.array(n, p);
        return arr ? { arr, p } : undefined;
      });
      items?.arr.forEach((item, i) => {
        const path = childPath(items.p, i);
        const fields = dec.fields(item, path, names);
        if (!fields) return;
        const num = new Map<string, number>();
        for (const k of names) {
          if (k === 'EventId' || k === 'FaultHandling') continue;
          const v = fields.decode(k, path, (m, q) => dec.int64(m, q));
          if (v !== undefined) num.set(k, v);
        }
        out.push({
          path,
          fields,
          eventIds: fields.decode('EventId', path, (m, q) => dec.stringArray(m, q)) ?? [],
          num,
          handling: fields.decode('FaultHandling', path, (m, q) => dec.string(m, q)) ?? '',
        });
      });
    };
    readEntries('FaultFrequency', FREQ_FIELDS, freq);
    readEntries('FaultDuration', DUR_FIELDS, dur);
  }
  if (dec.typeProblems.length > 0) {
    // F.1: a wrong JSON type anywhere makes the whole document malformed.
    return {
      ok: false,
      fatal: dec.typeProblems.map(
        (p) =>
          `${p.path}: ${p.value} is not ${/^[aeiou]/.test(p.expected) ? 'an' : 'a'} ${p.expected} (F.1: wrong JSON type)`,
      ),
    };
  }
  const rules: RuleReport[] = [];
  const problems: ConfigProblem[] = [];
  for (const key of top?.unknown ?? []) {
    problems.push({ kind: 'warning', path: childPath('$', key), reason: `unknown key "${key}" is ignored`, spec: 'F' });
  }
  for (const key of graceFields?.unknown ?? []) {
    problems.push({
      kind: 'warning',
      path: childPath(gracePath, key),
      reason: `unknown GraceTolerance field "${key}" is ignored`,
      spec: 'F.2',
    });
  }
  const grace = {} as Record<GraceField, number>;
  for (const [name, lim] of Object.entries(GRACE_FIELDS) as [GraceField, (typeof GRACE_FIELDS)[GraceField]][]) {
    const v = graceVals.get(name) ?? 0;
    const path = childPath(gracePath, graceFields?.keyOf(name) ?? name);
    const absent = !graceVals.has(name);
    if (v < lim.min || v > lim.max) {
      grace[name] = lim.def;
      const reason =
        `${absent ? 'absent (reads as 0), ' : `${v} is `}outside [${lim.min}, ${lim.max}] s: ` +
        `the default ${lim.def} is used`;
      rules.push({
        section: 'GraceTolerance',
        index: null,
        field: name,
        eventIds: [],
        status: 'defaulted',
        reason,
        spec: 'F.2',
        path,
        ...(absent ? {} : { value: String(v) }),
      });
      problems.push({ kind: 'defaulted', path, ...(absent ? {} : { value: String(v) }), reason, spec: 'F.2' });
    } else {
      grace[name] = v;
      rules.push({
        section: 'GraceTolerance',
        index: null,
        field: name,
        eventIds: [],
        status: 'accepted',
        reason: `${v} s within [${lim.min}, ${lim.max}]`,
        spec: 'F.2',
        path,
        value: String(v),
      });
    }
  }
  const spellings: string[] = [];
  const frequency = new Map<FaultCode, FrequencyRule>();
  freq.forEach((e, index) => {
    const fails = validateFrequency(e);
    const accepted = acceptIds('FaultFrequency', e, index, fails, frequency, rules, problems, spellings);
    for (const code of accepted) {
      frequency.set(code, {
        timeWindowSec: e.num.get('TimeWindow') ?? 0,
        times: e.num.get('Times') ?? 0,
        handling: e.handling as FaultLevel,
        releaseTimeWindowSec: (e.num.get('ReleaseTimeWindow') ?? 0) || RELEASE_NEVER,
        index,
      });
    }
  });
  const duration = new Map<FaultCode, DurationRule>();
  dur.forEach((e, index) => {
    const fails = validateDuration(e);
    const accepted = acceptIds('FaultDuration', e, index, fails, duration, rules, problems, spellings);
    for (const code of accepted) {
      duration.set(code, {
        faultTimeoutSec: e.num.get('FaultTimeout') ?? 0,
        recoverTimeoutSec: e.num.get('RecoverTimeout') ?? 0,
        handling: e.handling as FaultLevel,
        index,
      });
    }
  });
  return { ok: true, customization: { grace, frequency, duration, spellings }, rules, problems };
}

interface Failure {
  field: string;
  value?: string;
  reason: string;
}

function rangeFail(e: RawEntry, field: string, v: number, lo: number, hi: number, what = ''): Failure | undefined {
  if (v >= lo && v <= hi) return undefined;
  const present = e.fields.has(field);
  return {
    field,
    ...(present ? { value: String(v) } : {}),
    reason: `${field} ${present ? v : 'absent (reads as 0)'}${what} is outside [${lo}, ${hi}]`,
  };
}

/** Every reason the FaultFrequency entry is invalid, in upstream's check order (spec F.3). */
function validateFrequency(e: RawEntry): Failure[] {
  const out: (Failure | undefined)[] = [];
  if (e.eventIds.length === 0) out.push({ field: 'EventId', reason: 'EventId is empty or absent' });
  out.push(rangeFail(e, 'TimeWindow', e.num.get('TimeWindow') ?? 0, ...LIMITS.TimeWindow));
  const rtwRaw = e.num.get('ReleaseTimeWindow') ?? 0;
  const rtw = rtwRaw === 0 ? RELEASE_NEVER : rtwRaw;
  out.push(rangeFail(e, 'ReleaseTimeWindow', rtw, ...LIMITS.ReleaseTimeWindow));
  out.push(rangeFail(e, 'Times', e.num.get('Times') ?? 0, ...LIMITS.Times));
  if (e.handling !== 'ManuallySeparateNPU' && rtw === RELEASE_NEVER) {
    out.push({
      field: 'ReleaseTimeWindow',
      ...(e.fields.has('ReleaseTimeWindow') ? { value: String(rtwRaw) } : {}),
      reason: `FaultHandling ${JSON.stringify(e.handling)} needs an explicit ReleaseTimeWindow below 2^32 (only ManuallySeparateNPU may omit it)`,
    });
  }
  if (!FREQUENCY_HANDLING.has(e.handling as FaultLevel)) {
    out.push({
      field: 'FaultHandling',
      value: JSON.stringify(e.handling),
      reason: `FaultHandling ${JSON.stringify(e.handling)} is not one of ${[...FREQUENCY_HANDLING].join(', ')}`,
    });
  }
  return out.filter((f): f is Failure => f !== undefined);
}

/** Every reason the FaultDuration entry is invalid (spec F.4). */
function validateDuration(e: RawEntry): Failure[] {
  const out: (Failure | undefined)[] = [];
  if (e.eventIds.length === 0) out.push({ field: 'EventId', reason: 'EventId is empty or absent' });
  const ft = e.num.get('FaultTimeout') ?? 0;
  const rt = e.num.get('RecoverTimeout') ?? 0;
  if (ft < 0 || ft > LIMITS.FaultTimeout[1]) out.push(rangeFail(e, 'FaultTimeout', ft, ...LIMITS.FaultTimeout));
  if (rt < 0 || rt > LIMITS.RecoverTimeout[1]) out.push(rangeFail(e, 'RecoverTimeout', rt, ...LIMITS.RecoverTimeout));
  if (!DURATION_HANDLING.has(e.handling as FaultLevel)) {
    out.push({
      field: 'FaultHandling',
      value: JSON.stringify(e.handling),
      reason: `FaultHandling ${JSON.stringify(e.handling)} is not one of ${[...DURATION_HANDLING].join(', ')}`,
    });
  }
  return out.filter((f): f is Failure => f !== undefined);
}

/**
 * Reports one entry and returns the codes it configures: none when invalid (F.1: the whole entry is ignored),
 * else its ids minus those an earlier valid entry already took (F.1: first valid entry wins) and minus ids that
 * are not hex (upstream keeps them but they can never match an event; we say so).
 */
function acceptIds(
  section: 'FaultFrequency' | 'FaultDuration',
  e: RawEntry,
  index: number,
  fails: Failure[],
  taken: ReadonlyMap<FaultCode, { index: number }>,
  rules: RuleReport[],
  problems: ConfigProblem[],
  spellings: string[],
): FaultCode[] {
  const spec = section === 'FaultFrequency' ? 'F.3' : 'F.4';
  const warnings = e.fields.unknown.map((k) => `unknown field "${k}" is ignored`);
  for (const w of warnings) problems.push({ kind: 'warning', path: e.path, reason: w, spec });
  if (fails.length > 0) {
    const first = fails[0]!;
    const reason = `invalid entry, all its EventIds are ignored: ${fails.map((f) => f.reason).join('; ')}`;
    const path = childPath(e.path, e.fields.keyOf(first.field) ?? first.field);
    rules.push({
      section,
      index,
      eventIds: e.eventIds,
      status: 'ignored',
      reason,
      spec,
      path,
      ...(first.value !== undefined ? { value: first.value } : {}),
      ...(warnings.length ? { warnings } : {}),
    });
    for (const f of fails) {
      problems.push({
        kind: 'ignored',
        path: childPath(e.path, e.fields.keyOf(f.field) ?? f.field),
        ...(f.value !== undefined ? { value: f.value } : {}),
        reason: `${section}[${index}] ignored: ${f.reason}`,
        spec,
      });
    }
    return [];
  }
  const idsPath = childPath(e.path, e.fields.keyOf('EventId') ?? 'EventId');
  const accepted: FaultCode[] = [];
  const acceptedText: string[] = [];
  const mine = new Set<FaultCode>();
  /** One EventId of an otherwise valid entry is dropped: reported as its own rule and as a problem (F.1). */
  const ignoreId = (id: string, path: string, reason: string): void => {
    const value = JSON.stringify(id);
    rules.push({ section, index, eventIds: [id], status: 'ignored', reason, spec: 'F.1', path, value });
    problems.push({ kind: 'ignored', path, value, reason, spec: 'F.1' });
  };
  e.eventIds.forEach((id, i) => {
    const path = childPath(idsPath, i);
    const p = parseHexCode(id);
    if (!p.ok) {
      ignoreId(id, path, `EventId ${JSON.stringify(id)} can never match a fault: ${p.reason}`);
      return;
    }
    const prev = taken.get(p.value);
    if (prev || mine.has(p.value)) {
      const where = prev ? `${section}[${prev.index}]` : `an earlier EventId of this entry`;
      ignoreId(id, path, `duplicate EventId: ${where} already configures it (first valid entry wins)`);
      return;
    }
    mine.add(p.value);
    accepted.push(p.value);
    acceptedText.push(id);
    spellings.push(id.toLowerCase());
  });
  if (accepted.length > 0) {
    const optional =
      section === 'FaultFrequency' && !e.fields.has('ReleaseTimeWindow')
        ? ' (no ReleaseTimeWindow: never released)'
        : '';
    rules.push({
      section,
      index,
      eventIds: acceptedText,
      status: 'accepted',
      reason: `valid${optional}`,
      spec,
      path: e.path,
      ...(warnings.length ? { warnings } : {}),
    });
  }
  return accepted;
}

/**
 * Autofill release time (spec G.3 step 4): the largest configured ReleaseTimeWindow below 2^32, else 2^32.
 */
export function autofillReleaseSeconds(c: Customization): number {
  let best = 0;
  for (const r of c.frequency.values()) {
    if (r.releaseTimeWindowSec !== RELEASE_NEVER && r.releaseTimeWindowSec > best) best = r.releaseTimeWindowSec;
  }
  return best === 0 ? RELEASE_NEVER : best;
}
