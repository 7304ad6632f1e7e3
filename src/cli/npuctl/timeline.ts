/**
 * Timelines (architecture §7): JSON lines, each a mock-control request plus `t` (ms from the start). Replay
 * accepts `fault`, `release`, `podUses` and `query`; anything else is refused with the line number.
 */
import { parseHexCode, type Assertion, type FaultCode } from '../../faults/index.js';
import { UsageError } from './io.js';

/** Largest timeline file. */
export const MAX_TIMELINE_BYTES = 100 * 1024 * 1024;
/** Longest timeline line. */
export const MAX_TIMELINE_LINE = 64 * 1024;

/** One replayable line. */
export type TimelineStep =
  | { line: number; t: number; op: 'fault'; logicId: number; code: FaultCode; assertion: Assertion; severity: number }
  | { line: number; t: number; op: 'release'; logicId: number }
  | { line: number; t: number; op: 'podUses'; logicId: number; used: boolean }
  | { line: number; t: number; op: 'query' };

const ASSERTIONS = new Set(['occur', 'recover', 'once']);

/**
 * Parses timeline text. `knownLogicIds` are the chips of the scenario; a line naming another chip is refused.
 * Throws {@link UsageError} naming the line and the problem.
 */
export function parseTimeline(text: string, knownLogicIds: ReadonlySet<number>, name = 'timeline'): TimelineStep[] {
  const steps: TimelineStep[] = [];
  const lines = text.split('\n');
  let lastT = 0;
  lines.forEach((raw, i) => {
    const n = i + 1;
    const where = `${name} line ${n}`;
    const line = raw.trim();
    if (line === '') return;
    if (raw.length > MAX_TIMELINE_LINE) throw new UsageError(`${where}: longer than ${MAX_TIMELINE_LINE} characters`);
    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch (e) {
      throw new UsageError(`${where}: not valid JSON (${(e as Error).message})`);
    }
    if (typeof obj !== 'object' || obj === null || Array.isArray(obj))
      throw new UsageError(`${where}: not a JSON object`);
    const o = obj as Record<string, unknown>;
    if (!Number.isSafeInteger(o.t) || (o.t as number) < 0)
      throw new UsageError(`${where}: "t" must be a non-negative integer (ms)`);
    const t = o.t as number;
    if (t < lastT) throw new UsageError(`${where}: t=${t} goes back in time (previous line has t=${lastT})`);
    lastT = t;
    const logicId = (): number => {
      if (!Number.isSafeInteger(o.logicId)) throw new UsageError(`${where}: "logicId" must be an integer`);
      const id = o.logicId as number;
      if (!knownLogicIds.has(id)) throw new UsageError(`${where}: logic id ${id} is not a chip of the scenario`);
      return id;
    };
    switch (o.op) {
      case 'fault': {
        if (typeof o.eventId !== 'string' || !/^[0-9a-fA-F]{1,16}$/.test(o.eventId)) {
          throw new UsageError(`${where}: "eventId" must be hex text such as "80E01801"`);
        }
        const p = parseHexCode(o.eventId);
        if (!p.ok) throw new UsageError(`${where}: ${p.reason}`);
        if (typeof o.assertion !== 'string' || !ASSERTIONS.has(o.assertion)) {
          throw new UsageError(`${where}: "assertion" must be "occur", "recover" or "once"`);
        }
        if (
          o.severity !== undefined &&
          (!Number.isInteger(o.severity) || (o.severity as number) < 0 || (o.severity as number) > 127)
        ) {
          throw new UsageError(`${where}: "severity" must be an integer 0..127`);
        }
        steps.push({
          line: n,
          t,
          op: 'fault',
          logicId: logicId(),
          code: p.value,
          assertion: o.assertion as Assertion,
          severity: (o.severity as number | undefined) ?? 2,
        });
        return;
      }
      case 'release':
        steps.push({ line: n, t, op: 'release', logicId: logicId() });
        return;
      case 'podUses':
        if (typeof o.used !== 'boolean') throw new UsageError(`${where}: "used" must be true or false`);
        steps.push({ line: n, t, op: 'podUses', logicId: logicId(), used: o.used });
        return;
      case 'query':
        steps.push({ line: n, t, op: 'query' });
        return;
      default:
        throw new UsageError(
          `${where}: op ${JSON.stringify(o.op)} is not valid in a replay timeline (only fault, release, podUses, query)`,
        );
    }
  });
  return steps;
}

/** Chips of a scenario file: `cards[].chips[].{logicId, phyId}`; other fields are ignored. */
export function parseScenarioChips(text: string, name = 'scenario'): { logicId: number; phyId: number }[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${name}: not valid JSON (${(e as Error).message})`);
  }
  const cards = (doc as { cards?: unknown })?.cards;
  if (!Array.isArray(cards)) throw new UsageError(`${name}: no "cards" array`);
  const chips: { logicId: number; phyId: number }[] = [];
  cards.forEach((card: unknown, ci) => {
    const list = (card as { chips?: unknown })?.chips;
    if (!Array.isArray(list)) throw new UsageError(`${name}: cards[${ci}] has no "chips" array`);
    list.forEach((chip: unknown, i) => {
      const c = chip as { logicId?: unknown; phyId?: unknown };
      if (!Number.isSafeInteger(c?.logicId) || !Number.isSafeInteger(c?.phyId)) {
        throw new UsageError(`${name}: cards[${ci}].chips[${i}] needs integer logicId and phyId`);
      }
      chips.push({ logicId: c.logicId as number, phyId: c.phyId as number });
    });
  });
  if (new Set(chips.map((c) => c.logicId)).size !== chips.length) throw new UsageError(`${name}: duplicate logic id`);
  if (chips.length === 0) throw new UsageError(`${name}: no chips`);
  return chips;
}
