/**
 * Test helpers: small policies built from JSON text, an engine over N chips, a cycle shorthand.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import {
  FaultEngine,
  parsePolicy,
  type FaultEvent,
  type FaultPolicy,
  type Transition,
} from '../../src/faults/index.js';

export const T0 = 1767225600000;

export function shippedTexts(): { faultCode: string; customization: string } {
  return {
    faultCode: fs.readFileSync(path.join(PROJECT_ROOT, 'faultCode.json'), 'utf8'),
    customization: fs.readFileSync(path.join(PROJECT_ROOT, 'faultCustomization.json'), 'utf8'),
  };
}

export function policyOf(faultCode: unknown, customization: unknown = {}): FaultPolicy {
  const p = parsePolicy(JSON.stringify(faultCode), JSON.stringify(customization));
  if (!p.policy) throw new Error(`test policy unusable: ${JSON.stringify([p.faultCode, p.customization])}`);
  return p.policy;
}

export function shippedPolicy(): FaultPolicy {
  const t = shippedTexts();
  const p = parsePolicy(t.faultCode, t.customization);
  if (!p.policy) throw new Error('shipped policy unusable');
  return p.policy;
}

/** A test harness: engine over chips 0..n-1 (phy = logic), a simulated DCMI list per chip, cycle at T0 + t. */
export class Harness {
  readonly engine: FaultEngine;
  readonly live = new Map<number, number[]>();
  readonly transitions: Transition[] = [];

  constructor(
    policy: FaultPolicy,
    chips = 8,
    opts: { healthGroups?: number[][]; graceTolerance?: boolean; hyperPlane?: boolean } = {},
  ) {
    this.engine = new FaultEngine(policy, {
      chips: Array.from({ length: chips }, (_, i) => ({ logicId: i, phyId: i })),
      ...(opts.hyperPlane !== undefined ? { hyperPlane: opts.hyperPlane } : {}),
      ...(opts.healthGroups ? { healthGroups: opts.healthGroups } : {}),
      ...(opts.graceTolerance !== undefined ? { graceTolerance: opts.graceTolerance } : {}),
    });
  }

  /** One cycle; a recovery carries the chip's simulated DCMI list (`live`), as the health layer attaches it. */
  cycle(t: number, events: Partial<FaultEvent>[] = []): Transition[] {
    const evs: FaultEvent[] = events.map((e) => {
      const ev: FaultEvent = { logicId: 0, code: 0, assertion: 'occur', severity: 2, timeMs: T0 + t, ...e };
      const live = this.live.get(ev.logicId);
      return ev.assertion === 'recover' && live !== undefined && ev.liveCodes === undefined
        ? { ...ev, liveCodes: [...live] }
        : ev;
    });
    const r = this.engine.cycle({ now: T0 + t, events: evs });
    this.transitions.push(...r.transitions);
    return r.transitions;
  }

  occur(t: number, logicId: number, code: number, extra: Partial<FaultEvent> = {}): Transition[] {
    return this.cycle(t, [{ logicId, code, assertion: 'occur', ...extra }]);
  }

  recover(t: number, logicId: number, code: number, extra: Partial<FaultEvent> = {}): Transition[] {
    return this.cycle(t, [{ logicId, code, assertion: 'recover', ...extra }]);
  }

  view(logicId: number) {
    return this.engine.chipView(logicId)!;
  }
}
