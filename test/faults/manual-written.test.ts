/**
 * Spec G.2 split into a pure comparison (`compareManualSeparation`) and the "written once" mark
 * (`markManualWritten`), called after a successful device-info write.
 */
import { describe, expect, test } from '@jest/globals';
import { exportEngineState } from '../../src/faults/index.js';
import { Harness, shippedPolicy } from './helpers.js';

const HBM = 0x80e01801; // RestartBusiness, frequency 2 / 24 h -> ManuallySeparateNPU

const separated = (chips: number[]): Harness => {
  const h = new Harness(shippedPolicy());
  for (const c of chips) {
    h.occur(0, c, HBM);
    h.occur(1000, c, HBM);
  }
  return h;
};

describe('G.2 compareManualSeparation (pure)', () => {
  test('G.2 compare: an entry never written is not released when its name is missing', () => {
    const h = separated([3]);
    expect(h.engine.compareManualSeparation('').released).toEqual([]);
  });

  test('G.2 compare: a written entry missing from the live value is reported as released', () => {
    const h = separated([3]);
    h.engine.markManualWritten([3]);
    expect(h.engine.compareManualSeparation('').released).toEqual([3]);
  });

  test('G.2 compare: changes neither the cache nor the written marks', () => {
    const h = separated([3]);
    h.engine.markManualWritten([3]);
    const before = JSON.stringify(exportEngineState(h.engine));
    h.engine.compareManualSeparation('');
    h.engine.compareManualSeparation('Ascend910-5');
    expect(JSON.stringify(exportEngineState(h.engine))).toBe(before);
    expect(h.engine.manuallySeparated()).toEqual([3]);
  });

  test('G.2 compare: an unwritten entry stays unwritten after a comparison', () => {
    const h = separated([3]);
    h.engine.compareManualSeparation('Ascend910-3');
    expect(h.engine.manualWritten()).toEqual([]);
  });

  test('G.2 compare: names not in the cache are reported as not adopted', () => {
    const h = separated([3]);
    expect(h.engine.compareManualSeparation('Ascend910-3,Ascend910-4,Ascend910-40').notAdopted).toEqual([4, 40]);
  });

  test('G.2 compare: unreadable entries are reported as problems', () => {
    const h = separated([3]);
    expect(h.engine.compareManualSeparation('Ascend310-1').problems).toHaveLength(1);
  });
});

describe('G.2 markManualWritten', () => {
  test('G.2 mark: only the given logic ids count as written', () => {
    const h = separated([2, 3]);
    h.engine.markManualWritten([2]);
    expect(h.engine.manualWritten()).toEqual([2]);
  });

  test('G.2 mark: ids not in the cache are ignored', () => {
    const h = separated([3]);
    expect(h.engine.markManualWritten([1, 3, 99])).toBe(1);
    expect(h.engine.manuallySeparated()).toEqual([3]);
  });

  test('G.2 mark: a failed write (no mark) keeps an operator deletion from releasing the chip', () => {
    const h = separated([3]);
    // The write attempt after the comparison failed (409): nothing is marked, so the retry's fresh read, which does
    // not list the chip yet, must not release it.
    h.engine.compareManualSeparation('');
    expect(h.engine.compareManualSeparation('').released).toEqual([]);
  });

  test('G.2 mark: the written mark is part of the exported engine state', () => {
    const h = separated([3]);
    h.engine.markManualWritten([3]);
    const doc = exportEngineState(h.engine);
    expect(doc.chips.find((c) => c.logicId === 3)?.manual?.written).toBe(true);
  });

  test('G.2 reconcileManualSeparation still releases and marks everything in one step', () => {
    const h = separated([3]);
    h.engine.reconcileManualSeparation('');
    expect(h.engine.manualWritten()).toEqual([3]);
    expect(h.engine.reconcileManualSeparation('').transitions).toContainEqual({
      kind: 'released',
      logicId: 3,
      by: 'operator',
    });
  });
});
