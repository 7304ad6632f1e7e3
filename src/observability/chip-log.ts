/**
 * The operator's log of chip changes (issue [J] item 4), a projection of the store's snapshot like the metrics: one
 * info line per chip whose health or level changed in a cycle, naming the chip, its codes, level and health and the
 * rule that decided it, and one info line per release from manual separation. A fault that turns a chip Unhealthy is
 * in the log, not only in a Kubernetes Event.
 *
 * The rule (`rule` field):
 * - `FaultFrequency` / `FaultDuration`: a frequency or duration rule fired in this cycle (spec F.3, F.4), or a
 *   reason it left still raises the chip's level (spec E.4);
 * - `manual`: the chip is manually separated (spec G.1: the ConfigMap's list at start, an operator's entry);
 * - `code level`: the codes' own levels (faultCode.json, spec E.4), including the return to Healthy when they went.
 */
import type { Logger } from '../core/logger.js';
import type { Transition } from '../faults/engine-types.js';
import type { ChipState, NodeState, StateChange } from '../state/store.js';
import type { ChipNames } from './chip-names.js';

/** At most this many codes are named in one line (a chip with more is cut, `codesOmitted` says how many). */
export const MAX_LOGGED_CODES = 16;

/** Which rule decided the chip's level in this cycle (see the module comment). */
export function ruleOf(chip: ChipState, transitions: readonly Transition[]): string {
  for (const t of transitions) {
    if (t.logicId !== chip.logicId) continue;
    if (t.kind === 'escalated' && t.upgradeType !== 'FaultAutofill') return t.upgradeType;
    if (t.kind === 'separated') return t.by === 'FaultFrequency' ? 'FaultFrequency' : 'manual';
  }
  if (chip.manuallySeparated) return 'manual';
  const raising = chip.reasons.find(
    (r) => r.fault_level === chip.chipRaisedLevel && r.upgrade_type !== 'FaultAutofill',
  );
  if (raising && chip.chipRaisedLevel === chip.level) return raising.upgrade_type;
  return 'code level';
}

function codes(list: readonly string[]): { codes: string[]; codesOmitted?: number } {
  if (list.length <= MAX_LOGGED_CODES) return { codes: [...list] };
  return { codes: list.slice(0, MAX_LOGGED_CODES), codesOmitted: list.length - MAX_LOGGED_CODES };
}

/** Logs what one published snapshot changed (the store's `onChange` listener). */
export function logChipChanges(log: Logger, names: ChipNames, state: NodeState, change: StateChange): void {
  const touched = new Map<number, Extract<Transition, { kind: 'level' | 'health' }>[]>();
  for (const t of change.transitions) {
    if (t.kind === 'level' || t.kind === 'health') {
      const list = touched.get(t.logicId) ?? [];
      list.push(t);
      touched.set(t.logicId, list);
    } else if (t.kind === 'released') {
      log.info(
        { chip: names.nameOf(t.logicId), logicId: t.logicId, by: t.by },
        `chip ${names.nameOf(t.logicId)} released from manual separation (${t.by})`,
      );
    }
  }
  if (touched.size === 0) return;
  const byId = new Map(state.chips.map((c) => [c.logicId, c]));
  for (const [logicId, list] of touched) {
    const c = byId.get(logicId);
    if (!c) continue;
    const chip = names.nameOf(logicId);
    const from: Record<string, string> = {};
    for (const t of list) {
      const field = t.kind === 'level' ? 'FaultLevel' : 'Health';
      from[t.scope === 'chip' ? (t.kind === 'level' ? 'faultLevel' : 'health') : `network${field}`] = t.from;
    }
    const rule = ruleOf(c, change.transitions);
    log.info(
      {
        chip,
        logicId,
        phyId: c.phyId,
        health: c.health,
        networkHealth: c.networkHealth,
        // not `level`: that key is the line's log level (architecture §4 format)
        faultLevel: c.level,
        networkFaultLevel: c.networkLevel,
        ...codes(c.faultCodes),
        ...(c.networkFaultCodes.length > 0 ? { networkCodes: c.networkFaultCodes.slice(0, MAX_LOGGED_CODES) } : {}),
        rule,
        from,
        cause: change.cause,
      },
      `chip ${chip} ${c.health} ${c.level} (${rule})`,
    );
  }
}
