/**
 * Export and import of the engine's durable state as plain JSON, so that an agent restart forgets nothing
 * (architecture §1): chip fault lists, frequency histories, duration machines, upgrade reasons, manual
 * separation, the autofill timer and the code spellings. Import validates everything and never throws.
 */
import { FormatTable, type FaultCode } from './codes.js';
import type { DurationData, DurationEvent } from './duration.js';
import type { FaultEngine, ChipRuntime, FrequencyHistory, ManualEntry } from './engine.js';
import { isFaultLevel, rankOf } from './levels.js';
import { reasonKey, type UpgradeReason, type UpgradeType } from './upgrade-reasons.js';

/** Version of the exported document. */
export const STATE_VERSION = 1;

/** Exported state of one chip. */
export interface ChipStateJson {
  logicId: number;
  phyId: number;
  faultCodes: FaultCode[];
  networkCodes: FaultCode[];
  faultTime: [FaultCode, number][];
  alarmRaisedTime: number;
  networkAlarmRaisedTime: number;
  podUsed: boolean;
  frequency: { code: FaultCode; times: number[] | null; lastOccur: number; lastRecover: number }[];
  duration: ({ code: FaultCode } & DurationData)[];
  reasons: UpgradeReason[];
  hbmLast: number;
  held: { code: FaultCode; assertion: DurationEvent['assertion']; time: number; severity: number }[];
  manual: ManualEntry | null;
}

/** The exported engine state (plain JSON). */
export interface EngineStateJson {
  version: number;
  severity: [FaultCode, number][];
  /**
   * Code spellings the configuration in use does not give (E.3: kept for codes chips carry or reasons reference);
   * with the configuration they rebuild the engine's table, so the state does not grow with the configuration.
   */
  formats: [FaultCode, string][];
  autofillReleaseSec: number;
  autofillReleaseAt: number | null;
  chips: ChipStateJson[];
}

/** Exports the engine's state (taken between cycles). */
export function exportEngineState(engine: FaultEngine): EngineStateJson {
  return {
    version: STATE_VERSION,
    severity: [...engine.severity],
    formats: engine.formats.extras(), // the configuration gives the rest again at import
    autofillReleaseSec: engine.autofillReleaseSec,
    autofillReleaseAt: engine.autofillReleaseAt,
    chips: engine.order.map((c) => ({
      logicId: c.logicId,
      phyId: c.phyId,
      faultCodes: [...c.faultCodes],
      networkCodes: [...c.networkCodes],
      faultTime: [...c.faultTime],
      alarmRaisedTime: c.alarmRaisedTime,
      networkAlarmRaisedTime: c.networkAlarmRaisedTime,
      podUsed: c.podUsed,
      frequency: [...c.freq].map(([code, h]) => ({
        code,
        times: h.times ? [...h.times] : null,
        lastOccur: h.lastOccur,
        lastRecover: h.lastRecover,
      })),
      duration: [...c.dur].map(([code, d]) => ({ code, ...d, queue: d.queue.map((e) => ({ ...e })) })),
      reasons: [...c.reasons.values()].map((r) => ({ ...r })),
      hbmLast: c.hbmLast,
      held: c.held.map((e) => ({ ...e })),
      manual: engine.manual.has(c.logicId) ? { ...engine.manual.get(c.logicId)! } : null,
    })),
  };
}

class Invalid extends Error {}

function need(cond: boolean, what: string): asserts cond {
  if (!cond) throw new Invalid(what);
}
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
function ints(v: unknown, what: string): number[] {
  need(Array.isArray(v) && v.every(isInt), `${what} must be an array of integers`);
  return v;
}
function pairs(v: unknown, what: string): [number, number][] {
  need(
    Array.isArray(v) && v.every((p) => Array.isArray(p) && p.length === 2 && isInt(p[0]) && isInt(p[1])),
    `${what} must be [int, int] pairs`,
  );
  return v as [number, number][];
}
const ASSERTIONS = new Set(['occur', 'recover', 'once']);
const TYPES = new Set<UpgradeType>(['FaultFrequency', 'FaultDuration', 'FaultAutofill']);

/**
 * Imports a state exported by {@link exportEngineState} into `engine` (built with the same chips). Chips are
 * matched by logic id and must have the same phy id; unknown chips are reported. On any error nothing is changed.
 */
export function importEngineState(
  engine: FaultEngine,
  doc: unknown,
): { ok: true; problems: string[] } | { ok: false; error: string } {
  try {
    need(isObj(doc), 'state must be an object');
    need(doc.version === STATE_VERSION, `unsupported state version ${JSON.stringify(doc.version)}`);
    const severity = pairs(doc.severity, 'severity');
    need(
      Array.isArray(doc.formats) &&
        doc.formats.every((p) => Array.isArray(p) && p.length === 2 && isInt(p[0]) && typeof p[1] === 'string'),
      'formats must be [int, string] pairs',
    );
    const formats = doc.formats as [number, string][];
    need(isInt(doc.autofillReleaseSec) && doc.autofillReleaseSec > 0, 'autofillReleaseSec must be a positive integer');
    need(
      doc.autofillReleaseAt === null || isInt(doc.autofillReleaseAt),
      'autofillReleaseAt must be null or an integer',
    );
    need(Array.isArray(doc.chips), 'chips must be an array');
    const problems: string[] = [];
    const staged: { chip: ChipRuntime; s: Parsed }[] = [];
    doc.chips.forEach((raw, i) => {
      const s = parseChip(raw, `chips[${i}]`);
      const chip = engine.chips.get(s.logicId);
      if (!chip) {
        problems.push(`chips[${i}]: logic id ${s.logicId} is not on this node; its state is dropped`);
        return;
      }
      need(
        chip.phyId === s.phyId,
        `chips[${i}]: logic id ${s.logicId} has phy id ${chip.phyId} here, ${s.phyId} in the state`,
      );
      staged.push({ chip, s });
    });
    // Validated: apply.
    engine.severity.clear();
    for (const [c, v] of severity) engine.severity.set(c, v);
    // The state's spellings for codes in use, the configuration's for the rest (pruneFormats below).
    engine.formats = FormatTable.fromEntries(formats.map(([c, t]) => [c, t.toLowerCase()]));
    engine.autofillReleaseSec = doc.autofillReleaseSec;
    engine.autofillReleaseAt = doc.autofillReleaseAt;
    engine.manual.clear();
    for (const { chip, s } of staged) {
      // Each code once (states written before the engine held codes once may repeat them).
      chip.faultCodes = [...new Set(s.faultCodes)];
      chip.networkCodes = [...new Set(s.networkCodes)];
      chip.faultTime = new Map(s.faultTime);
      chip.alarmRaisedTime = s.alarmRaisedTime;
      chip.networkAlarmRaisedTime = s.networkAlarmRaisedTime;
      chip.podUsed = s.podUsed;
      chip.freq = s.freq;
      chip.dur = s.dur;
      chip.reasons = s.reasons;
      chip.hbmLast = s.hbmLast;
      chip.held = s.held;
      chip.dirty = true;
      chip.view = null;
      if (s.manual) engine.manual.set(chip.logicId, s.manual);
    }
    engine.pruneFormats();
    engine.noteDurableChange();
    return { ok: true, problems };
  } catch (e) {
    if (e instanceof Invalid) return { ok: false, error: e.message };
    return { ok: false, error: `unexpected state content: ${String(e)}` };
  }
}

interface Parsed {
  logicId: number;
  phyId: number;
  faultCodes: number[];
  networkCodes: number[];
  faultTime: [number, number][];
  alarmRaisedTime: number;
  networkAlarmRaisedTime: number;
  podUsed: boolean;
  freq: Map<FaultCode, FrequencyHistory>;
  dur: Map<FaultCode, DurationData>;
  reasons: Map<string, UpgradeReason>;
  hbmLast: number;
  held: ChipRuntime['held'];
  manual: ManualEntry | null;
}

function parseChip(raw: unknown, at: string): Parsed {
  need(isObj(raw), `${at} must be an object`);
  for (const k of ['logicId', 'phyId', 'alarmRaisedTime', 'networkAlarmRaisedTime', 'hbmLast']) {
    need(isInt(raw[k]), `${at}.${k} must be an integer`);
  }
  need(typeof raw.podUsed === 'boolean', `${at}.podUsed must be a boolean`);
  const freq = new Map<FaultCode, FrequencyHistory>();
  need(Array.isArray(raw.frequency), `${at}.frequency must be an array`);
  for (const f of raw.frequency as unknown[]) {
    need(isObj(f) && isInt(f.code) && isInt(f.lastOccur) && isInt(f.lastRecover), `${at}.frequency entry malformed`);
    freq.set(f.code, {
      times: f.times === null ? null : ints(f.times, `${at}.frequency.times`),
      lastOccur: f.lastOccur,
      lastRecover: f.lastRecover,
    });
  }
  const dur = new Map<FaultCode, DurationData>();
  need(Array.isArray(raw.duration), `${at}.duration must be an array`);
  for (const d of raw.duration as unknown[]) {
    need(
      isObj(d) &&
        isInt(d.code) &&
        typeof d.timedOut === 'boolean' &&
        isInt(d.faultDuration) &&
        isInt(d.recoverDuration) &&
        isInt(d.alarmTime),
      `${at}.duration entry malformed`,
    );
    need(
      Array.isArray(d.queue) &&
        d.queue.every((e) => isObj(e) && ASSERTIONS.has(e.assertion as string) && isInt(e.time)),
      `${at}.duration queue malformed`,
    );
    dur.set(d.code, {
      timedOut: d.timedOut,
      queue: (d.queue as DurationEvent[]).map((e) => ({ assertion: e.assertion, time: e.time })),
      faultDuration: d.faultDuration,
      recoverDuration: d.recoverDuration,
      alarmTime: d.alarmTime,
    });
  }
  const reasons = new Map<string, UpgradeReason>();
  need(Array.isArray(raw.reasons), `${at}.reasons must be an array`);
  for (const r of raw.reasons as unknown[]) {
    need(
      isObj(r) &&
        isInt(r.upgrade_time) &&
        typeof r.fault_code === 'string' &&
        isFaultLevel(r.fault_level) &&
        TYPES.has(r.upgrade_type as UpgradeType),
      `${at}.reasons entry malformed`,
    );
    const reason: UpgradeReason = {
      upgrade_time: r.upgrade_time,
      fault_code: r.fault_code,
      fault_level: r.fault_level,
      upgrade_type: r.upgrade_type as UpgradeType,
    };
    rankOf(reason.fault_level);
    reasons.set(reasonKey(reason), reason);
  }
  need(Array.isArray(raw.held), `${at}.held must be an array`);
  const held = (raw.held as unknown[]).map((e) => {
    need(
      isObj(e) && isInt(e.code) && ASSERTIONS.has(e.assertion as string) && isInt(e.time) && isInt(e.severity),
      `${at}.held entry malformed`,
    );
    return { code: e.code, assertion: e.assertion as DurationEvent['assertion'], time: e.time, severity: e.severity };
  });
  let manual: ManualEntry | null = null;
  if (raw.manual !== null) {
    need(
      isObj(raw.manual) && isInt(raw.manual.recordTime) && typeof raw.manual.written === 'boolean',
      `${at}.manual malformed`,
    );
    manual = { recordTime: raw.manual.recordTime, written: raw.manual.written };
  }
  return {
    logicId: raw.logicId as number,
    phyId: raw.phyId as number,
    faultCodes: ints(raw.faultCodes, `${at}.faultCodes`),
    networkCodes: ints(raw.networkCodes, `${at}.networkCodes`),
    faultTime: pairs(raw.faultTime, `${at}.faultTime`),
    alarmRaisedTime: raw.alarmRaisedTime as number,
    networkAlarmRaisedTime: raw.networkAlarmRaisedTime as number,
    podUsed: raw.podUsed,
    freq,
    dur,
    reasons,
    hbmLast: raw.hbmLast as number,
    held,
    manual,
  };
}
