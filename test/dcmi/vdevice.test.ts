/**
 * Contract tests of the vNPU calls against the mock (dcmi-abi.md §4.5 main 52, §4.6 create/destroy; issue 17
 * item 3): templates from the scenario, AI-core accounting, the query the agent reads, the control ops.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { DcmiError } from '../../src/dcmi/errors.js';
import { openMock, type MockHarness } from '../helpers/mock-dcmi.js';

describe('310p-vnpu vdevice calls', () => {
  let h: MockHarness;
  beforeAll(async () => {
    h = await openMock('310p-vnpu');
  });
  afterAll(() => h.close());

  test('dcmi-abi §4.6 create takes the template AI cores from the chip and §4.5 lists the vNPU', () => {
    const out = h.dcmi.createVirtualDevice(1, 0, 'vir02');
    try {
      expect(out.vdevId).toBeGreaterThanOrEqual(100);
      const info = h.dcmi.getVirtualDevices(1, 0);
      expect(info.aicoreTotal).toBe(8);
      expect(info.aicoreFree).toBe(6);
      expect(info.vdevs).toEqual([{ vdevId: out.vdevId, templateName: 'vir02', vfgId: out.vfgId, aicore: 2 }]);
    } finally {
      h.dcmi.destroyVirtualDevice(1, 0, out.vdevId);
    }
    expect(h.dcmi.getVirtualDevices(1, 0)).toEqual({ aicoreTotal: 8, aicoreFree: 8, vdevs: [] });
  });

  test('dcmi-abi §4.6 a template the chip does not offer is refused (-8001) and nothing is created', () => {
    expect(() => h.dcmi.createVirtualDevice(0, 0, 'vir16')).toThrow(expect.objectContaining({ code: -8001 }));
    expect(h.dcmi.getVirtualDevices(0, 0).vdevs).toEqual([]);
  });

  test('dcmi-abi §4.6 a full chip refuses the next vNPU (-8008) and keeps the others', () => {
    const a = h.dcmi.createVirtualDevice(2, 0, 'vir04');
    const b = h.dcmi.createVirtualDevice(2, 0, 'vir04_3c');
    try {
      expect(b.vdevId).not.toBe(a.vdevId);
      expect(() => h.dcmi.createVirtualDevice(2, 0, 'vir01')).toThrow(expect.objectContaining({ code: -8008 }));
      expect(h.dcmi.getVirtualDevices(2, 0).vdevs.map((v) => v.templateName)).toEqual(['vir04', 'vir04_3c']);
    } finally {
      h.dcmi.destroyVirtualDevice(2, 0, a.vdevId);
      h.dcmi.destroyVirtualDevice(2, 0, b.vdevId);
    }
  });

  test('dcmi-abi §4.6 destroying an unknown vNPU fails (-8007); an id outside 100..1123 is refused before the call', () => {
    expect(() => h.dcmi.destroyVirtualDevice(0, 0, 150)).toThrow(expect.objectContaining({ code: -8007 }));
    expect(() => h.dcmi.destroyVirtualDevice(0, 0, 99)).toThrow(DcmiError);
  });

  test('scenarios/README vNPU ops: createVdev, vdevs, vdevResult, destroyVdev and the state reply', async () => {
    const created = await h.control.expectOk({ op: 'createVdev', logicId: 3, template: 'vir01' });
    const listed = await h.control.expectOk({ op: 'vdevs', logicId: 3 });
    expect(listed).toMatchObject({ aicoreFree: 7, vdevs: [{ vdevId: created.vdevId, template: 'vir01', aicore: 1 }] });
    const state = await h.control.state();
    expect(state.chips[3]).toMatchObject({ aicoreFree: 7, vdevs: [{ vdevId: created.vdevId }] });
    await h.control.expectOk({ op: 'vdevResult', logicId: 3, result: 'fail' });
    expect(() => h.dcmi.createVirtualDevice(3, 0, 'vir01')).toThrow(expect.objectContaining({ code: -8005 }));
    await h.control.expectOk({ op: 'vdevResult', logicId: 3, result: 'ok' });
    await h.control.expectOk({ op: 'destroyVdev', logicId: 3, vdevId: created.vdevId });
    expect(h.dcmi.getVirtualDevices(3, 0).vdevs).toEqual([]);
    const bad = await h.control.request({ op: 'createVdev', logicId: 3, template: 'vir99' });
    expect(bad).toMatchObject({ ok: false, error: expect.stringContaining('vir99') });
  });
});

describe('310p-4chip without templates', () => {
  let h: MockHarness;
  beforeAll(async () => {
    h = await openMock('310p-4chip');
  });
  afterAll(() => h.close());

  test('dcmi-abi §4.6 a scenario without vnpuTemplates answers create with -8255', () => {
    expect(() => h.dcmi.createVirtualDevice(0, 0, 'vir02')).toThrow(expect.objectContaining({ code: -8255 }));
  });
});
