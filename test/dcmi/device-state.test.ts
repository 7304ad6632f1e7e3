/**
 * Contract tests of card drop, reset, processes and link status against the mock (dcmi-abi.md §4.3, §4.7, §4.8,
 * §7; architecture §5).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { MOCK_HCCN_TOOL } from '../../src/core/paths.js';
import { BOOT_STATUS_STARTED } from '../../src/dcmi/dcmi.js';
import { CARD_DROP_CODE } from '../../src/core/chips.js';
import { DcmiError } from '../../src/dcmi/errors.js';
import { queryLinkStatus, queryRoceStats } from '../../src/dcmi/hccn.js';
import { openMock, type MockHarness } from '../helpers/mock-dcmi.js';

async function rejection(p: Promise<unknown>): Promise<DcmiError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof DcmiError) return err;
    throw err;
  }
  throw new Error('expected a DcmiError');
}

describe('910b-8chip device state', () => {
  let h: MockHarness;
  beforeAll(async () => {
    h = await openMock('910b-8chip');
  });
  afterAll(() => h.close());

  test('dcmi-abi §4.3 a dropped card answers -8012', async () => {
    await h.control.expectOk({ op: 'drop', logicId: 2 });
    try {
      expect(() => h.dcmi.getDeviceHealth(2, 0)).toThrow(expect.objectContaining({ code: -8012, isCardDrop: true }));
    } finally {
      await h.control.expectOk({ op: 'restore', logicId: 2 });
    }
  });

  test('dcmi-abi §4.3 all error codes of a dropped card end with the synthetic 0x40F84E00', async () => {
    await h.control.expectOk({ op: 'silentFault', logicId: 2, eventId: '80E01801', assertion: 'occur' });
    await h.control.expectOk({ op: 'drop', logicId: 2 });
    try {
      const r = h.dcmi.getDeviceAllErrorCodes(2, 0);
      expect(r.cardDropped).toBe(true);
      expect(r.codes[r.codes.length - 1]).toBe(CARD_DROP_CODE);
    } finally {
      await h.control.expectOk({ op: 'restore', logicId: 2 });
      await h.control.expectOk({ op: 'silentFault', logicId: 2, eventId: '80E01801', assertion: 'recover' });
    }
  });

  test('architecture §5 restore ends the drop', async () => {
    await h.control.expectOk({ op: 'drop', logicId: 2 });
    await h.control.expectOk({ op: 'restore', logicId: 2 });
    expect(h.dcmi.getDeviceHealth(2, 0)).toBe(0);
    expect(h.dcmi.getDeviceAllErrorCodes(2, 0)).toEqual({ codes: [], cardDropped: false });
  });

  test('architecture §5 drop affects that chip only', async () => {
    await h.control.expectOk({ op: 'drop', logicId: 2 });
    try {
      expect(h.dcmi.getDeviceHealth(1, 0)).toBe(0);
    } finally {
      await h.control.expectOk({ op: 'restore', logicId: 2 });
    }
  });

  test('architecture §5 health value set through the control socket', async () => {
    await h.control.expectOk({ op: 'health', logicId: 4, value: 2 });
    try {
      expect(h.dcmi.getDeviceHealth(4, 0)).toBe(2);
    } finally {
      await h.control.expectOk({ op: 'health', logicId: 4, value: 0 });
    }
  });

  test('dcmi-abi §4.7 a successful reset clears the codes and boots to 16', async () => {
    await h.control.expectOk({ op: 'silentFault', logicId: 6, eventId: '80E01801', assertion: 'occur' });
    await h.control.expectOk({ op: 'resetResult', logicId: 6, result: 'ok', bootSeconds: 0 });
    await h.dcmi.setDeviceReset(6, 0);
    expect(await h.dcmi.getDeviceBootStatus(6, 0)).toBe(BOOT_STATUS_STARTED);
    expect(h.dcmi.getDeviceAllErrorCodes(6, 0).codes).toEqual([]);
    const chip = (await h.control.state()).chips.find((c) => c.logicId === 6)!;
    expect(chip.resets).toBe(1);
  });

  test('dcmi-abi §4.7 a chip still booting does not report 16', async () => {
    await h.control.expectOk({ op: 'resetResult', logicId: 7, result: 'ok', bootSeconds: 30 });
    await h.dcmi.setDeviceReset(7, 0);
    expect(await h.dcmi.getDeviceBootStatus(7, 0)).not.toBe(BOOT_STATUS_STARTED);
  });

  test('dcmi-abi §4.7 resetResult fail makes the reset return -8015', async () => {
    await h.control.expectOk({ op: 'resetResult', logicId: 1, result: 'fail' });
    const err = await rejection(h.dcmi.setDeviceReset(1, 0));
    expect(err.code).toBe(-8015);
    expect(err.fn).toBe('dcmi_set_device_reset');
  });

  test('dcmi-abi §4.7 resetResult hang never reaches boot status 16', async () => {
    await h.control.expectOk({ op: 'resetResult', logicId: 0, result: 'hang' });
    await h.dcmi.setDeviceReset(0, 0);
    expect(await h.dcmi.getDeviceBootStatus(0, 0)).not.toBe(BOOT_STATUS_STARTED);
  });

  test('dcmi-abi §4.8 process count follows the control socket; 0 means idle', async () => {
    await h.control.expectOk({ op: 'processes', logicId: 3, count: 2 });
    expect(h.dcmi.getProcesses(3, 0)).toHaveLength(2);
    await h.control.expectOk({ op: 'processes', logicId: 3, count: 0 });
    expect(h.dcmi.getProcesses(3, 0)).toEqual([]);
  });

  test('dcmi-abi §7 hccn_tool link status follows the control socket', async () => {
    const hccn = { toolPath: MOCK_HCCN_TOOL, env: { ASCEND_MOCK_CONTROL: h.controlPath } };
    expect(await queryLinkStatus(hccn, 3)).toEqual({ status: 'UP' });
    await h.control.expectOk({ op: 'link', logicId: 3, status: 'DOWN' });
    try {
      expect(await queryLinkStatus(hccn, 3)).toEqual({ status: 'DOWN' });
    } finally {
      await h.control.expectOk({ op: 'link', logicId: 3, status: 'UP' });
    }
  });

  test('dcmi-abi §7 hccn_tool failure is Abnormal with the reason', async () => {
    const hccn = { toolPath: MOCK_HCCN_TOOL, env: { ASCEND_MOCK_CONTROL: h.controlPath } };
    const r = await queryLinkStatus(hccn, 200);
    expect(r.status).toBe('Abnormal');
    expect(r.error).toMatch(/hccn_tool -i 200 -link -g/);
  });

  test('dcmi-abi §7 hccn_tool -stat -g gives the RoCE packet counters', async () => {
    const hccn = { toolPath: MOCK_HCCN_TOOL, env: { ASCEND_MOCK_CONTROL: h.controlPath } };
    const stats = await queryRoceStats(hccn, 1);
    expect(stats.has('roce_tx_all_pkt_num')).toBe(true);
    expect(stats.has('roce_rx_all_pkt_num')).toBe(true);
  });

  test('architecture §5 state counts DCMI calls by name', async () => {
    const before = (await h.control.state()).counters.callsByName.dcmi_get_device_health ?? 0;
    h.dcmi.getDeviceHealth(0, 0);
    h.dcmi.getDeviceHealth(1, 0);
    const after = (await h.control.state()).counters.callsByName.dcmi_get_device_health ?? 0;
    expect(after - before).toBe(2);
  });
});
