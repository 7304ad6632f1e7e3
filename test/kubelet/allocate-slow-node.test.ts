/**
 * Spec C.4 `-enableSlowNode`: the PERF_DUMP_* variables are added in both mounting modes (issue 18 item 4).
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness } from './harness.js';

const R = 'huawei.com/Ascend910';
const ENV = { PERF_DUMP_PATH: '/root/a', PERF_DUMP_CONFIG: 'step:true,time=4' };

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('C.4 -enableSlowNode in Allocate', () => {
  test('C.4 ascend-docker mode: the variables beside ASCEND_VISIBLE_DEVICES', async () => {
    h = await startHarness({ manager: { useAscendDocker: true, extraEnvs: () => ENV } });
    await h.sim.waitForRegistration(R);
    const c = (await h.sim.allocate(R, [['Ascend910-2']])).containerResponses[0]!;
    expect(c.envs).toEqual({ ASCEND_VISIBLE_DEVICES: '2', ASCEND_RUNTIME_OPTIONS: '', ...ENV });
  });

  test('C.4 native mode: the variables beside the device specs', async () => {
    h = await startHarness({ manager: { extraEnvs: () => ENV } });
    await h.sim.waitForRegistration(R);
    const c = (await h.sim.allocate(R, [['Ascend910-2']])).containerResponses[0]!;
    expect(c.envs).toEqual(ENV);
    expect(c.devices.some((d) => d.containerPath === '/dev/davinci2')).toBe(true);
  });

  test('C.4 no variables: a native response has no envs', async () => {
    h = await startHarness({ manager: { extraEnvs: () => ({}) } });
    await h.sim.waitForRegistration(R);
    const c = (await h.sim.allocate(R, [['Ascend910-2']])).containerResponses[0]!;
    expect(c.envs).toEqual({});
  });
});
