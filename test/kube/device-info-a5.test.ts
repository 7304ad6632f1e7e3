/**
 * The Ascend910A5 device-info ConfigMap (spec H.2, H.3, H.6, L.6): `huawei.com/npu` keys, `npu-<phy>` names (the
 * run-mode names rewritten as upstream does on A5), `RackID` after `CheckCode` in a 1D/2D pod, `SwitchInfoCfg` zero
 * value. The node is `scenarios/950-8chip.json` (super pod 7, server 2, rack 3) with npu-3 SeparateNPU.
 */
import { createHash } from 'node:crypto';
import { describe, expect, test } from '@jest/globals';
import { A5_INFO_NAMES } from '../../src/core/public-names.js';
import { buildDeviceInfo, type DeviceInfoChip, type DeviceInfoView } from '../../src/kube/device-info.js';
import { EMPTY_SWITCH_INFO_CFG } from '../../src/kube/device-info-switch.js';

/** The exact DeviceInfoCfg of that node at UpdateTime 1796170001 (checked by eye against spec H.3). */
const A5_DEVICE_INFO_CFG =
  '{"DeviceInfo":{"DeviceList":{"huawei.com/npu":"npu-0,npu-1,npu-2,npu-4,npu-5,npu-6,npu-7","huawei.com/npu-Fault":"[{\\"fault_type\\":\\"CardUnhealthy\\",\\"npu_name\\":\\"npu-3\\",\\"large_model_fault_level\\":\\"SeparateNPU\\",\\"fault_level\\":\\"SeparateNPU\\",\\"fault_handling\\":\\"SeparateNPU\\",\\"fault_code\\":\\"80E3A201\\",\\"fault_time_and_level_map\\":{\\"80E3A201\\":{\\"fault_time\\":1796170000123,\\"fault_level\\":\\"SeparateNPU\\"}}}]","huawei.com/npu-NetworkUnhealthy":"","huawei.com/npu-Recovering":"","huawei.com/npu-Unhealthy":"npu-3"},"UpdateTime":1796170001},"SuperPodID":7,"ServerIndex":2,"CheckCode":"c9fb56f4771249452717c8e8196d2c751e4603a6ae54fdbf417cc9b4c4f70530","RackID":3}';

function chip(phy: number): DeviceInfoChip {
  return {
    logicId: phy,
    name: A5_INFO_NAMES.name(`Ascend910-${phy}`),
    health: 'Healthy',
    networkHealth: 'Healthy',
    podUsed: false,
    chipFaults: { level: 'NormalNPU', codes: [] },
    networkFaults: { level: 'NormalNPU', codes: [] },
    reasons: [],
    manuallySeparated: false,
  };
}

function a5View(rackId?: number): DeviceInfoView {
  const chips = [0, 1, 2, 3, 4, 5, 6, 7].map(chip);
  chips[3] = {
    ...chips[3]!,
    health: 'Unhealthy',
    chipFaults: {
      level: 'SeparateNPU',
      codes: [{ code: '80E3A201', firstSeenMs: 1796170000123, level: 'SeparateNPU' }],
    },
  };
  return {
    runMode: 'Ascend910',
    resourceName: 'huawei.com/npu',
    chips,
    superPodId: 7,
    serverIndex: 2,
    ...(rackId !== undefined ? { rackId } : {}),
    updateTimeSec: 1796170001,
    switchInfoCfg: EMPTY_SWITCH_INFO_CFG,
  };
}

describe('spec H.3 the A5 DeviceInfoCfg', () => {
  test('H.3 an A5 1D-pod node: the exact bytes', () => {
    expect(buildDeviceInfo(a5View(3)).data.DeviceInfoCfg).toBe(A5_DEVICE_INFO_CFG);
  });

  test('H.3 the CheckCode is the SHA-256 of the DeviceInfo bytes as written', () => {
    const cfg = buildDeviceInfo(a5View(3)).data.DeviceInfoCfg!;
    const inner = cfg.slice('{"DeviceInfo":'.length, cfg.indexOf(',"SuperPodID"'));
    expect(JSON.parse(cfg).CheckCode).toBe(createHash('sha256').update(inner).digest('hex'));
  });

  test('H.3 without a rack id (an A5 server) the object ends at CheckCode', () => {
    expect(buildDeviceInfo(a5View()).data.DeviceInfoCfg).toMatch(/"ServerIndex":2,"CheckCode":"[0-9a-f]{64}"}$/);
  });

  test('H.2 the A5 ConfigMap carries the SwitchInfoCfg zero value and the other keys', () => {
    const data = buildDeviceInfo(a5View(3)).data;
    expect(Object.keys(data)).toEqual([
      'DeviceInfoCfg',
      'ManuallySeparateNPU',
      'UpgradeFaultReason',
      'Description',
      'SwitchInfoCfg',
    ]);
    expect(data.SwitchInfoCfg).toBe(
      '{"FaultCode":null,"FaultLevel":"","UpdateTime":0,"NodeStatus":"","FaultTimeAndLevelMap":null}',
    );
  });
});
