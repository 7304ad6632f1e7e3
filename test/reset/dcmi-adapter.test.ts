/**
 * The reset engines' DCMI port over the real binding and the mock library (dcmi-abi.md §4.7): logic ids are
 * translated to (card, device), and failures reach the engines as rejected promises carrying the DCMI code.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { resetDcmiOf } from '../../src/reset/dcmi-adapter.js';
import type { ResetChip } from '../../src/reset/types.js';
import { openMock, scenarioChips, type MockHarness } from '../helpers/mock-dcmi.js';

let mock: MockHarness | undefined;
afterEach(() => {
  mock?.close();
  mock = undefined;
});

async function open(): Promise<{ m: MockHarness; chips: ResetChip[] }> {
  mock = await openMock('910b-8chip');
  const chips = scenarioChips(mock.scenario).map((c) => ({
    logicId: c.logicId,
    phyId: c.phyId,
    cardId: c.cardId,
    deviceId: c.deviceId,
  }));
  return { m: mock, chips };
}

describe('reset DCMI port (dcmi-abi.md §4.7)', () => {
  test('§4.7 an in-band reset reaches the chip by logic id and its boot status follows the mock', async () => {
    const { m, chips } = await open();
    const port = resetDcmiOf(m.dcmi, chips);
    await m.control.expectOk({ op: 'resetResult', logicId: 3, result: 'ok', bootSeconds: 30 });
    await port.setDeviceReset(3, 'inband');
    const state = await m.control.state();
    const chip3 = state.chips.find((c) => c.logicId === 3) as unknown as { resets: number };
    expect(chip3.resets).toBe(1);
    expect(await port.getBootStatus(3)).not.toBe(16);
    expect(await port.getBootStatus(2)).toBe(16);
  });

  test('§4.7 a failing reset rejects with DCMI code -8015', async () => {
    const { m, chips } = await open();
    const port = resetDcmiOf(m.dcmi, chips);
    await m.control.expectOk({ op: 'resetResult', logicId: 1, result: 'fail' });
    await expect(port.setDeviceReset(1, 'inband')).rejects.toMatchObject({ code: -8015 });
  });

  test('§4.8 the process count is the number of processes DCMI lists', async () => {
    const { m, chips } = await open();
    const port = resetDcmiOf(m.dcmi, chips);
    await m.control.expectOk({ op: 'processes', logicId: 5, count: 2 });
    expect(await port.getProcessCount(5)).toBe(2);
    expect(await port.getProcessCount(4)).toBe(0);
  });

  test('§4.3 error codes and health of a chip are read by logic id', async () => {
    const { m, chips } = await open();
    const port = resetDcmiOf(m.dcmi, chips);
    await m.control.expectOk({ op: 'silentFault', logicId: 6, eventId: '8C03A000', assertion: 'occur' });
    expect(await port.getErrorCodes(6)).toEqual([0x8c03a000]);
    expect(await port.getErrorCodes(7)).toEqual([]);
  });

  test('an unknown logic id rejects naming it, without calling DCMI', async () => {
    const { m, chips } = await open();
    const port = resetDcmiOf(m.dcmi, chips);
    await expect(port.getBootStatus(42)).rejects.toThrow('logic id 42 is not a chip of this node');
  });
});
