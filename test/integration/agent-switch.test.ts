/**
 * 910A3 switch faults with the agent as a child process (issue 18 items 1 and 6; spec H.2, L.9): the device-info
 * ConfigMap of an A3 node carries `SwitchInfoCfg`.
 */
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { KEY_DEVICE_INFO, KEY_SWITCH_INFO } from '../../src/kube/device-info.js';
import { EMPTY_SWITCH_INFO_CFG } from '../../src/kube/device-info-switch.js';
import { AgentSandbox } from '../helpers/agent-process.js';

let sb: AgentSandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

const A3 = path.join(PROJECT_ROOT, 'scenarios', '910a3-16chip.json');

describe('spec H.2 SwitchInfoCfg on 910A3', () => {
  test('L.9 without a switch library the A3 ConfigMap carries the empty SwitchInfoCfg', async () => {
    sb = await AgentSandbox.create(A3);
    await sb.start();
    const s = sb;
    const data = await s.until(() => s.deviceInfo()?.data, 'the device-info ConfigMap', 20_000);
    expect(data[KEY_DEVICE_INFO]).toBeDefined();
    expect(data[KEY_SWITCH_INFO]).toBe(EMPTY_SWITCH_INFO_CFG);
  });

  test('H.2 a 910B ConfigMap has no SwitchInfoCfg', async () => {
    sb = await AgentSandbox.create();
    await sb.start();
    const s = sb;
    const data = await s.until(() => s.deviceInfo()?.data, 'the device-info ConfigMap', 20_000);
    expect(data[KEY_DEVICE_INFO]).toBeDefined();
    expect(Object.keys(data)).not.toContain(KEY_SWITCH_INFO);
  });
});
