/**
 * `npuctl policy replay` (architecture §7): the agent's fault engine on a simulated clock over a timeline.
 *
 * Each distinct `t` is one cycle: its lines are applied in file order (operator releases and pod-use changes at
 * once, fault events into the cycle), then the cycle runs (health, then end-of-cycle clean-up). Between lines an
 * idle cycle runs at every multiple of `listWatchPeriod` (5 s) from the start, so that time-based rules fire as in
 * the agent. The clock stops at the last line.
 */
import { FaultEngine, type FaultEvent, type FaultPolicy, type Transition } from '../../faults/index.js';
import type { TimelineStep } from './timeline.js';

/** Default start of the simulated clock (2026-01-01T00:00:00Z). */
export const DEFAULT_REPLAY_START = 1767225600000;
/** Period of idle cycles (upstream `listWatchPeriod` default, spec D.2). */
export const IDLE_PERIOD_MS = 5000;

/** One chip in a replay output line (architecture §7; `networkLevel` is an extension). */
export interface ReplayChip {
  logicId: number;
  name: string;
  level: string;
  health: string;
  networkHealth: string;
  faultCodes: string[];
  manuallySeparated: boolean;
  networkLevel: string;
}

/** One output line. */
export interface ReplayLine {
  t: number;
  chips: ReplayChip[];
}

/** Runs a replay; `onLine` gets each output line, `onTransition` every transition with its `t`. */
export function replay(
  policy: FaultPolicy,
  chips: readonly { logicId: number; phyId: number }[],
  steps: readonly TimelineStep[],
  opts: { start?: number; onLine: (l: ReplayLine) => void; onTransition?: (t: number, tr: Transition) => void },
): void {
  const start = opts.start ?? DEFAULT_REPLAY_START;
  const engine = new FaultEngine(policy, { chips });
  // What DCMI would report for each chip (mock semantics: occur adds once, recover removes, once leaves it).
  const dcmi = new Map<number, number[]>(chips.map((c) => [c.logicId, []]));
  const note = (t: number, trs: Transition[]): void => {
    if (opts.onTransition) for (const tr of trs) opts.onTransition(t, tr);
  };
  const run = (t: number, events: FaultEvent[]): void => {
    // A recovery carries the chip's DCMI list as of its cycle (spec D.6), as the agent's health layer attaches it.
    const withLive = events.map((e) =>
      e.assertion === 'recover' ? { ...e, liveCodes: [...(dcmi.get(e.logicId) ?? [])] } : e,
    );
    const r = engine.cycle({ now: start + t, events: withLive });
    note(t, r.transitions);
  };
  const view = (t: number): ReplayLine => ({
    t,
    chips: engine.snapshot().map((c) => ({
      logicId: c.logicId,
      name: c.name,
      level: c.level,
      health: c.health,
      networkHealth: c.networkHealth,
      faultCodes: [...new Set([...c.faultCodes, ...c.networkFaultCodes])],
      manuallySeparated: c.manuallySeparated,
      networkLevel: c.networkLevel,
    })),
  });
  let last = -1;
  let i = 0;
  while (i < steps.length) {
    const t = steps[i]!.t;
    for (let g = (Math.floor(last / IDLE_PERIOD_MS) + 1) * IDLE_PERIOD_MS; g < t; g += IDLE_PERIOD_MS) {
      if (g > last) run(g, []);
    }
    const events: FaultEvent[] = [];
    let queries = 0;
    for (; i < steps.length && steps[i]!.t === t; i++) {
      const s = steps[i]!;
      if (s.op === 'fault') {
        const list = dcmi.get(s.logicId)!;
        if (s.assertion === 'occur' && !list.includes(s.code)) list.push(s.code);
        if (s.assertion === 'recover')
          dcmi.set(
            s.logicId,
            list.filter((c) => c !== s.code),
          );
        events.push({
          logicId: s.logicId,
          code: s.code,
          assertion: s.assertion,
          severity: s.severity,
          timeMs: start + t,
        });
      } else if (s.op === 'release') note(t, engine.release(s.logicId));
      else if (s.op === 'podUses') engine.setPodUsed(s.logicId, s.used);
      else queries++;
    }
    run(t, events);
    last = t;
    for (let q = 0; q < queries; q++) opts.onLine(view(t));
  }
  if (last < 0) {
    run(0, []);
    last = 0;
  }
  opts.onLine(view(last));
}

/** One human-readable line for a transition. */
export function describeTransition(t: number, tr: Transition): string {
  const who = `t=${t} chip ${tr.logicId}`;
  switch (tr.kind) {
    case 'level':
      return `${who}: ${tr.scope} level ${tr.from} -> ${tr.to}`;
    case 'health':
      return `${who}: ${tr.scope === 'chip' ? 'health' : 'network health'} ${tr.from} -> ${tr.to}`;
    case 'escalated':
      return `${who}: ${tr.upgradeType} raised ${tr.code} to ${tr.level}`;
    case 'separated':
      return `${who}: added to ManuallySeparateNPU (${tr.by}${tr.code ? ` ${tr.code}` : ''})`;
    case 'separation-refused':
      return `${who}: not added to ManuallySeparateNPU: ${tr.reason}`;
    case 'reasons-removed':
      return `${who}: upgrade reasons removed by ${tr.by}: ${tr.reasons.map((r) => `${r.fault_code}/${r.fault_level}/${r.upgrade_type}`).join(', ')}`;
    case 'released':
      return `${who}: released from ManuallySeparateNPU by ${tr.by}`;
    case 'event-ignored':
      return `${who}: ${tr.assertion} of ${tr.code} ignored: ${tr.reason}`;
    case 'resync':
      return `${who}: re-sync requested: ${tr.reason}`;
  }
}
