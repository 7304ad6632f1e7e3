/**
 * The agent as a child process when something around it fails (issue [E] item 6): a card drop (spec D.5
 * 0x40F84E00), a kubelet restart (A.5), an API server outage (H.4: kubelet is never held up, the ConfigMap catches
 * up with the final state), an agent restart in the middle of a FaultFrequency window (G.3 + `-stateDir`), and a
 * kubelet folder that never appears (architecture §4 exit status 4).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { KEY_MANUALLY_SEPARATE } from '../../src/kube/device-info.js';
import {
  AgentSandbox,
  deviceList,
  FREQUENCY_CODE,
  listed,
  NODE_NAME,
  RESOURCE,
  runAgentOnce,
  SEPARATE_CODE,
  UNHEALTHY_KEY,
} from '../helpers/agent-process.js';

const CARD_DROP_CODE = '40F84E00';

let sb: AgentSandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

describe('spec D.5 card drop (0x40F84E00)', () => {
  test('a dropped card is Unhealthy with 40F84E00 in the ConfigMap; restoring it makes the chip Healthy', async () => {
    sb = await AgentSandbox.create();
    await sb.start();
    const s = sb;
    await s.mock({ op: 'drop', logicId: 4 });
    await s.until(() => s.health('Ascend910-4') === 'Unhealthy', 'Ascend910-4 Unhealthy after the drop');
    const list = await s.until(() => {
      const l = deviceList(s);
      return l && listed(l[UNHEALTHY_KEY], 'Ascend910-4') && JSON.stringify(l).includes(CARD_DROP_CODE) ? l : undefined;
    }, '-Unhealthy and 40F84E00 in the ConfigMap');
    expect(list[`${RESOURCE}-Fault`]).toContain(CARD_DROP_CODE);
    await s.mock({ op: 'restore', logicId: 4 });
    await s.until(() => s.health('Ascend910-4') === 'Healthy', 'Ascend910-4 Healthy after the restore');
  });
});

describe('spec A.5 kubelet restart', () => {
  test('after kubelet restarts the agent registers again and sends the full list, faults included', async () => {
    sb = await AgentSandbox.create();
    await sb.start();
    const s = sb;
    await s.mock({ op: 'fault', logicId: 1, eventId: SEPARATE_CODE, assertion: 'occur' });
    await s.until(() => s.health('Ascend910-1') === 'Unhealthy', 'Ascend910-1 Unhealthy');
    const before = s.kubelet.registrations.at(-1)!.seq;
    await s.kubelet.restart();
    await s.kubelet.waitForRegistration(RESOURCE, before, 20_000);
    const devices = await s.kubelet.waitForDevices(RESOURCE, (d) => d.length === 8, 'the full list');
    expect(devices.map((d) => d.ID).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `Ascend910-${i}`).sort());
    expect(devices.find((d) => d.ID === 'Ascend910-1')?.health).toBe('Unhealthy');
    expect(devices.filter((d) => d.health === 'Healthy')).toHaveLength(7);
  });
});

describe('spec H.4 API server outage', () => {
  test('faults during an outage reach kubelet at once and the ConfigMap shows the final state after it', async () => {
    sb = await AgentSandbox.create();
    await sb.start();
    const s = sb;
    await s.until(() => deviceList(s), 'the first ConfigMap write');
    s.api.setAvailable(false);
    await s.mock({ op: 'fault', logicId: 2, eventId: SEPARATE_CODE, assertion: 'occur' });
    await s.mock({ op: 'fault', logicId: 5, eventId: SEPARATE_CODE, assertion: 'occur' });
    await s.until(() => s.health('Ascend910-2') === 'Unhealthy', 'Ascend910-2 Unhealthy during the outage');
    await s.until(() => s.health('Ascend910-5') === 'Unhealthy', 'Ascend910-5 Unhealthy during the outage');
    await s.mock({ op: 'fault', logicId: 5, eventId: SEPARATE_CODE, assertion: 'recover' });
    await s.until(() => s.health('Ascend910-5') === 'Healthy', 'Ascend910-5 Healthy during the outage');
    expect(s.api.unavailable).toBe(true);
    expect(listed(deviceList(s)?.[UNHEALTHY_KEY], 'Ascend910-2')).toBe(false);
    s.api.setAvailable(true);
    const list = await s.until(
      () => {
        const l = deviceList(s);
        return l && listed(l[UNHEALTHY_KEY], 'Ascend910-2') ? l : undefined;
      },
      'the final state in the ConfigMap after the outage',
      40_000,
    );
    expect(list[UNHEALTHY_KEY]).toBe('Ascend910-2');
  });

  test('failed ConfigMap writes during an outage are counted in /metrics', async () => {
    sb = await AgentSandbox.create();
    await sb.start();
    const s = sb;
    await s.until(() => deviceList(s), 'the first ConfigMap write');
    s.api.setAvailable(false);
    await s.mock({ op: 'fault', logicId: 6, eventId: SEPARATE_CODE, assertion: 'occur' });
    await s.until(() => s.health('Ascend910-6') === 'Unhealthy', 'Ascend910-6 Unhealthy');
    const failed = await s.untilAsync(async () => {
      const m = /^ascend_npu_agent_configmap_writes_total\{result="failed"\} (\d+)/m.exec(await s.metrics());
      return m && Number(m[1]) > 0 ? Number(m[1]) : undefined;
    }, 'a failed write in /metrics');
    expect(failed).toBeGreaterThan(0);
    s.api.setAvailable(true);
  });
});

describe('spec G.3 agent restart', () => {
  test('an occurrence before the restart and one after it reach the FaultFrequency threshold', async () => {
    sb = await AgentSandbox.create();
    await sb.start();
    const s = sb;
    await s.mock({ op: 'fault', logicId: 3, eventId: FREQUENCY_CODE, assertion: 'occur' });
    await s.until(() => s.health('Ascend910-3') === 'Unhealthy', 'Unhealthy');
    await s.mock({ op: 'fault', logicId: 3, eventId: FREQUENCY_CODE, assertion: 'recover' });
    await s.until(() => s.health('Ascend910-3') === 'Healthy', 'Healthy after the first recovery');
    await s.until(() => !listed(deviceList(s)?.[UNHEALTHY_KEY], 'Ascend910-3'), 'the recovery in the ConfigMap');
    s.agent!.child.kill('SIGTERM');
    expect((await s.agent!.waitExit()).code).toBe(0);
    await s.start();
    expect(s.health('Ascend910-3')).toBe('Healthy');
    expect(listed(s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE], 'Ascend910-3')).toBe(false);
    await s.mock({ op: 'fault', logicId: 3, eventId: FREQUENCY_CODE, assertion: 'occur' });
    await s.until(
      () => listed(s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE], 'Ascend910-3'),
      'ManuallySeparateNPU after the second occurrence',
    );
  });
});

describe('architecture §4 exit status 4', () => {
  test('a kubelet folder that never appears exits 4 naming it (-kubeletWaitTimeout)', async () => {
    sb = await AgentSandbox.create();
    const missing = path.join(sb.dir, 'no-kubelet');
    const flags = sb
      .flags(['-kubeletWaitTimeout=1'])
      .map((f) => (f.startsWith('-kubeletDir=') ? `-kubeletDir=${missing}` : f));
    const r = await runAgentOnce(flags, sb.env());
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(missing);
    expect(fs.existsSync(missing)).toBe(false);
  });
});

describe('spec A.2 step 5.7 node set-up (issue [R] item 1: not fatal)', () => {
  test('issue [R] 1: a Node that cannot be patched does not stop the agent: it registers, and labels the Node once it can', async () => {
    const s = (sb = await AgentSandbox.create());
    const nodes = s.api.resourceType('', 'nodes');
    s.api.store.delete(nodes, undefined, NODE_NAME); // read and patch answer 404
    const agent = await s.start(); // rejects if the agent exits before registering with kubelet
    await s.until(() => s.deviceInfo(), 'the first device-info write', 20_000);
    expect(agent.child.exitCode).toBeNull();
    s.api.store.create(nodes, undefined, { metadata: { name: NODE_NAME } });
    await s.until(() => s.node()?.metadata?.labels?.accelerator, 'the labels once the Node exists', 40_000);
  }, 70_000);
});
