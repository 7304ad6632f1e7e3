/**
 * Issue [DRA] item 6, device plugin side: `-cdiDevicePlugin` — Allocate answers `AllocateResponse.cdi_devices`
 * (`ascend.com/npu=davinci<N>`) instead of device specs, and the node's spec names every node Allocate can hand out.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { devicePluginCdiSpec } from '../../src/kubelet/cdi-spec.js';
import type { DeviceSnapshot } from '../../src/kubelet/device-source.js';
import { simSnapshot } from '../../src/sim/kubelet-devices.js';
import { startHarness, type Harness } from '../kubelet/harness.js';
import { makeCharDevices, MAJOR, mknod } from './helpers.js';

const R = 'huawei.com/Ascend910';
let h: Harness | undefined;
let dir: string | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('issue [DRA] item 6: AllocateResponse.cdi_devices', () => {
  test('native mode with -cdiDevicePlugin: one CDI device per chip, no device specs, the variables kept', async () => {
    h = await startHarness({ manager: { cdi: true, extraEnvs: () => ({ PERF_DUMP_PATH: '/p' }) } });
    await h.sim.waitForRegistration(R);
    const c = (await h.sim.allocate(R, [['Ascend910-0', 'Ascend910-3']])).containerResponses[0]!;
    expect([c.cdiDevices, c.devices, c.envs]).toEqual([
      [{ name: 'ascend.com/npu=davinci0' }, { name: 'ascend.com/npu=davinci3' }],
      [],
      { PERF_DUMP_PATH: '/p' },
    ]);
  });

  test('without the option the answer has device specs and no CDI device (upstream, spec C.4)', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    const c = (await h.sim.allocate(R, [['Ascend910-1']])).containerResponses[0]!;
    expect([c.cdiDevices, c.devices.length > 0]).toEqual([[], true]);
  });
});

describe('issue [DRA] item 6: the device plugin’s spec', () => {
  test('chips as davinci<phy>, static vNPUs as vdavinci<vdev> at /dev/davinci<vdev>, numbers from the host', () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-cdi-'));
    makeCharDevices(dir, 2);
    mknod(path.join(dir, 'vdavinci100'), MAJOR.vdavinci, 100);
    const base = simSnapshot({ kind: 'Ascend910B', chips: 2 });
    const chip = base.deviceTypes.Ascend910![1]!;
    const snapshot: DeviceSnapshot = {
      node: base.node,
      deviceTypes: { ...base.deviceTypes, 'Ascend910-4c': [{ ...chip, id: 'Ascend910-4c-100-1', vdevId: 100 }] },
    };
    const spec = devicePluginCdiSpec(
      snapshot,
      dir,
      [{ hostPath: path.join(dir, 'davinci_manager'), containerPath: '/dev/davinci_manager' }],
      [],
    );
    expect(
      spec.devices.map((d) => [
        d.name,
        d.containerEdits.deviceNodes!.map((n) => [n.path, n.hostPath, n.major, n.minor]),
      ]),
    ).toEqual([
      ['davinci0', [['/dev/davinci0', path.join(dir, 'davinci0'), MAJOR.davinci, 0]]],
      ['davinci1', [['/dev/davinci1', path.join(dir, 'davinci1'), MAJOR.davinci, 1]]],
      ['vdavinci100', [['/dev/davinci100', path.join(dir, 'vdavinci100'), MAJOR.vdavinci, 100]]],
    ]);
    expect(spec.containerEdits.deviceNodes!.map((n) => n.path)).toEqual(['/dev/davinci_manager']);
  });
});
