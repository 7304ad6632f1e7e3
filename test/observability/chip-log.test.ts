/**
 * Issue [J] item 4: one info line per chip health or level change, naming the chip, its codes, level, health and the
 * rule that fired (FaultFrequency / FaultDuration / manual / code level), and one per release.
 */
import { describe, expect, test } from '@jest/globals';
import { FaultEngine } from '../../src/faults/index.js';
import { ChipNames } from '../../src/observability/chip-names.js';
import { logChipChanges } from '../../src/observability/chip-log.js';
import { NodeStateStore } from '../../src/state/store.js';
import { shippedPolicy } from '../faults/helpers.js';
import { FakeClock } from '../health/fake-clock.js';

/** SeparateNPU in faultCode.json, in no FaultFrequency rule. */
const SEPARATE = 0x80e18402;
/** RestartNPU with FaultFrequency Times 2 → ManuallySeparateNPU (shipped faultCustomization.json). */
const FREQUENCY = 0x80b78000;
const CHIPS = [0, 1].map((i) => ({ logicId: i, phyId: i + 4, cardId: i, deviceId: 0 }));

interface Line {
  obj: Record<string, unknown>;
  msg: string | undefined;
}

function setup(): { lines: Line[]; store: NodeStateStore; clock: FakeClock } {
  const lines: Line[] = [];
  const push = (level: string) => (a: object | string, msg?: string) =>
    lines.push(typeof a === 'string' ? { obj: { level }, msg: a } : { obj: { level, ...a }, msg });
  const log = { debug: push('debug'), info: push('info'), warn: push('warn'), error: push('error') };
  const names = new ChipNames();
  names.attach('Ascend910', CHIPS);
  const clock = new FakeClock();
  const store = new NodeStateStore({
    engine: new FaultEngine(shippedPolicy(), { chips: CHIPS }),
    chips: CHIPS,
    node: { chipKind: 'Ascend910B', boardId: 0 },
    clock,
    listWatchPeriodMs: 5000,
  });
  store.onChange((state, change) => logChipChanges(log, names, state, change));
  return { lines, store, clock };
}

describe('issue [J] item 4 chip change log', () => {
  test('a fault that turns a chip Unhealthy writes one info line naming chip, codes, level, health, rule', () => {
    const { lines, store } = setup();
    store.applyEvents([{ logicId: 1, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    expect(lines).toEqual([
      {
        obj: expect.objectContaining({
          level: 'info',
          chip: 'Ascend910-5',
          logicId: 1,
          phyId: 5,
          codes: ['80E18402'],
          health: 'Unhealthy',
          rule: 'code level',
          faultLevel: 'SeparateNPU',
          from: { faultLevel: 'NormalNPU', health: 'Healthy' },
        }) as unknown,
        msg: 'chip Ascend910-5 Unhealthy SeparateNPU (code level)',
      },
    ]);
  });

  test('the return to Healthy is logged too', () => {
    const { lines, store } = setup();
    store.applyEvents([{ logicId: 0, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    store.applyEvents([{ logicId: 0, code: SEPARATE, assertion: 'recover', severity: 2 }]);
    expect(lines.map((l) => l.msg)).toEqual([
      'chip Ascend910-4 Unhealthy SeparateNPU (code level)',
      'chip Ascend910-4 Healthy NormalNPU (code level)',
    ]);
  });

  test('F.3 a FaultFrequency separation names the rule; the operator release is its own line', async () => {
    const { lines, store, clock } = setup();
    for (let i = 0; i < 3; i++) {
      store.applyEvents([{ logicId: 0, code: FREQUENCY, assertion: 'occur', severity: 2 }]);
      await clock.advance(1000);
      store.applyEvents([{ logicId: 0, code: FREQUENCY, assertion: 'recover', severity: 2 }]);
      await clock.advance(1000);
    }
    const separated = lines.find((l) => l.obj.level === 'info' && String(l.msg).includes('ManuallySeparateNPU'));
    expect(separated?.obj).toEqual(expect.objectContaining({ chip: 'Ascend910-4', rule: 'FaultFrequency' }));
    lines.length = 0;
    store.release(0);
    expect(lines.map((l) => l.msg)).toContain('chip Ascend910-4 released from manual separation (operator)');
  });

  test('nothing is logged for a cycle that changed no health and no level', () => {
    const { lines, store } = setup();
    store.tick();
    expect(lines).toEqual([]);
  });
});
