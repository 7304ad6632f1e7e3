/**
 * The fault engine on Ascend910A5 (spec device-plugin.md D.6 "A5 is the same plus derived codes", D.7, E.1 with the
 * shipped faultCode.json): hyper-plane (UB) codes enter the chip list, the node-wide UB codes 020001002 (some chips)
 * and 020000002 (all chips) are derived from 81B18603 with upstream's one-cycle confirmation, and the UBoE codes
 * 81078607 / 110000002 / 110001024 drive network health.
 */
import { describe, expect, test } from '@jest/globals';
import { Harness, shippedPolicy } from './helpers.js';

const UB_DOWN = 0x81b18603;
const UB_SEP = 0x020001002;
const UB_SUB = 0x020000002;
const UBOE_DOWN = 0x81078607;
const UBOE_SUB = 0x110000002;
const UBOE_PRE = 0x110001024;

const a5 = (chips = 4): Harness => new Harness(shippedPolicy(), chips, { hyperPlane: true });

describe('D.6 A5 hyper plane in the engine', () => {
  test('D.6 on A5 a hyper-plane code enters the chip list (81B18603 is NotHandle: still Healthy)', () => {
    const h = a5();
    h.occur(0, 1, UB_DOWN);
    expect(h.view(1)).toMatchObject({ faultCodes: ['81B18603'], health: 'Healthy' });
  });

  test('D.6 off A5 the same code is still ignored (the existing rule)', () => {
    const h = new Harness(shippedPolicy(), 4);
    const t = h.occur(0, 1, UB_DOWN);
    expect(h.view(1).faultCodes).toEqual([]);
    expect(t).toContainEqual(expect.objectContaining({ kind: 'event-ignored', code: '81B18603' }));
  });

  test('D.6 a recovery of 81B18603 removes it (no "DCMI still reports it" check for the hyper plane)', () => {
    const h = a5();
    h.occur(0, 1, UB_DOWN);
    h.live.set(1, [UB_DOWN]);
    h.recover(1000, 1, UB_DOWN);
    expect(h.view(1).faultCodes).toEqual([]);
  });

  test('D.6 a derived UB code arriving as an event is ignored: only the engine derives it', () => {
    const h = a5();
    const t = h.occur(0, 1, UB_SEP);
    expect(h.view(1).faultCodes).toEqual([]);
    expect(t).toContainEqual(expect.objectContaining({ kind: 'event-ignored', code: '020001002' }));
  });
});

describe('D.6 A5 derived UB codes across the node', () => {
  test('D.6 one chip of four with 81B18603: no derived code in the first cycle (confirmation pending)', () => {
    const h = a5();
    h.occur(0, 1, UB_DOWN);
    expect(h.view(1).faultCodes).toEqual(['81B18603']);
  });

  test('D.6 still there at the next cycle: 020001002 (SeparateNPU) is added and the chip is Unhealthy', () => {
    const h = a5();
    h.occur(0, 1, UB_DOWN);
    h.cycle(5000);
    expect(h.view(1)).toMatchObject({ faultCodes: ['81B18603', '020001002'], health: 'Unhealthy' });
    expect(h.view(0).faultCodes).toEqual([]);
  });

  test('D.6 every chip with 81B18603: 020000002 (SubHealth) on each, none separated, at once', () => {
    const h = a5(2);
    h.cycle(0, [
      { logicId: 0, code: UB_DOWN },
      { logicId: 1, code: UB_DOWN },
    ]);
    expect(h.view(0)).toMatchObject({ faultCodes: ['81B18603', '020000002'], health: 'Healthy' });
    expect(h.view(1)).toMatchObject({ faultCodes: ['81B18603', '020000002'], health: 'Healthy' });
  });

  test('D.6 the second chip arriving one cycle later turns a pending separation into SubHealth for both', () => {
    const h = a5(2);
    h.occur(0, 0, UB_DOWN);
    h.occur(1000, 1, UB_DOWN);
    expect(h.view(0).faultCodes).toEqual(['81B18603', '020000002']);
    expect(h.view(1).faultCodes).toEqual(['81B18603', '020000002']);
  });

  test('D.6 one of two recovering: the other moves from 020000002 to 020001002 after one more cycle', () => {
    const h = a5(2);
    h.cycle(0, [
      { logicId: 0, code: UB_DOWN },
      { logicId: 1, code: UB_DOWN },
    ]);
    h.recover(1000, 0, UB_DOWN);
    expect(h.view(1).faultCodes).toEqual(['81B18603']);
    h.cycle(6000);
    expect(h.view(1).faultCodes).toEqual(['81B18603', '020001002']);
    expect(h.view(0).faultCodes).toEqual([]);
  });

  test('D.6 81B18603 recovering takes the derived code with it and the chip is Healthy again', () => {
    const h = a5();
    h.occur(0, 1, UB_DOWN);
    h.cycle(5000);
    h.recover(6000, 1, UB_DOWN);
    expect(h.view(1)).toMatchObject({ faultCodes: [], health: 'Healthy' });
  });

  test('D.6 without hyperPlane (non-A5) nothing is derived', () => {
    const h = new Harness(shippedPolicy(), 2);
    h.cycle(0, [{ logicId: 0, code: UB_SUB }]);
    h.cycle(5000);
    expect(h.view(0).faultCodes).toEqual([]);
  });
});

describe('D.7 A5 UBoE codes and network health (shipped faultCode.json)', () => {
  test('D.7 81078607 alone is NotHandle: network Healthy', () => {
    const h = a5();
    h.occur(0, 0, UBOE_DOWN);
    expect(h.view(0)).toMatchObject({ networkFaultCodes: ['81078607'], networkHealth: 'Healthy', health: 'Healthy' });
  });

  test('D.7 with 110000002 (one bonding port down, SubHealth): network Unhealthy, chip Healthy', () => {
    const h = a5();
    h.cycle(0, [
      { logicId: 0, code: UBOE_DOWN, severity: 0 },
      { logicId: 0, code: UBOE_SUB, severity: 0 },
    ]);
    expect(h.view(0)).toMatchObject({ networkHealth: 'Unhealthy', health: 'Healthy', networkLevel: 'SubHealthFault' });
  });

  test('D.7 with 110001024 (both bonding ports down, PreSeparate): network Unhealthy at PreSeparateNPU', () => {
    const h = a5();
    h.cycle(0, [
      { logicId: 0, code: UBOE_DOWN, severity: 0 },
      { logicId: 0, code: UBOE_PRE, severity: 0 },
    ]);
    expect(h.view(0)).toMatchObject({ networkHealth: 'Unhealthy', networkLevel: 'PreSeparateNPU', health: 'Healthy' });
  });
});
