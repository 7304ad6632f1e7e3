/**
 * The `SwitchInfoCfg` value of the device-info ConfigMap (spec H.2, L.9; issue 18 item 1).
 */
import { describe, expect, test } from '@jest/globals';
import { buildDeviceInfo, KEY_SWITCH_INFO } from '../../src/kube/device-info.js';
import { carriesSwitchInfo, EMPTY_SWITCH_INFO_CFG } from '../../src/kube/device-info-switch.js';

describe('spec H.2 SwitchInfoCfg while switch faults are off', () => {
  test('L.9 the value is the Go zero value of SwitchFaultInfo (nil slice and map as null, members in order)', () => {
    // what Go's json.Marshal(SwitchFaultInfo{}) writes for upstream's struct (FaultCode []string, FaultLevel
    // string, UpdateTime int64, NodeStatus string, FaultTimeAndLevelMap map[string]FaultTimeAndLevel)
    expect(EMPTY_SWITCH_INFO_CFG).toBe(
      '{"FaultCode":null,"FaultLevel":"","UpdateTime":0,"NodeStatus":"","FaultTimeAndLevelMap":null}',
    );
  });

  test('H.2 910A3 and 910A5 carry the key, the other kinds do not', () => {
    expect(carriesSwitchInfo('Ascend910A3')).toBe(true);
    expect(carriesSwitchInfo('Ascend910A5')).toBe(true);
    for (const k of ['Ascend910', 'Ascend910B', 'Ascend310P', 'Ascend310', 'Ascend310B'] as const) {
      expect(carriesSwitchInfo(k)).toBe(false);
    }
  });

  test('H.2 the ConfigMap data holds the value verbatim next to DeviceInfoCfg', () => {
    const content = buildDeviceInfo({
      runMode: 'Ascend910',
      resourceName: 'huawei.com/Ascend910',
      chips: [],
      superPodId: 1,
      serverIndex: 0,
      updateTimeSec: 1,
      switchInfoCfg: EMPTY_SWITCH_INFO_CFG,
    });
    expect(content.data[KEY_SWITCH_INFO]).toBe(EMPTY_SWITCH_INFO_CFG);
  });
});
