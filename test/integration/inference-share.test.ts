/**
 * Issue 17 item 1: 310P share mode (`-shareDevCount` N) with the agent as a child process on the mock library
 * (`scenarios/310p-4chip.json`), the kubelet simulator and the API stand-in. Spec B.3 (copies `<name>-<phy>-<i>`),
 * C.1 (every copy carries its chip's health), C.3/C.4 (Allocate maps a copy to its chip), H.3 (device-info), A.1
 * (the cross-flag rule with `-volcanoType`).
 */
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import type { ServiceError } from '@grpc/grpc-js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import {
  AgentSandbox,
  deviceList,
  NODE_NAME,
  RESOURCE as RESOURCE_910,
  runAgentOnce,
} from '../helpers/agent-process.js';

const SCENARIO = path.join(PROJECT_ROOT, 'scenarios', '310p-4chip.json');
const R = 'huawei.com/Ascend310P';
const SEPARATE_CODE = '80E3A201';
const COPIES = 3;

let sb: AgentSandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

async function shareAgent(): Promise<AgentSandbox> {
  sb = await AgentSandbox.create(SCENARIO);
  await sb.start([`-shareDevCount=${COPIES}`], { ASCEND_DOCKER_RUNTIME: 'True' }, { resource: R });
  return sb;
}

function copiesOf(phy: number): string[] {
  return Array.from({ length: COPIES }, (_, i) => `Ascend310P-${phy}-${i}`);
}

describe('issue 17 item 1: 310P share mode, agent as a child process', () => {
  test('B.3/C.1 registers huawei.com/Ascend310P with 3 copies of each of the 4 chips, all Healthy', async () => {
    const s = await shareAgent();
    const devices = s.kubelet.devices(R)!;
    expect(devices.map((d) => d.ID).sort()).toEqual([0, 1, 2, 3].flatMap(copiesOf).sort());
    expect(devices.every((d) => d.health === 'Healthy')).toBe(true);
  });

  test('C.3/C.4 Allocate maps copies back to their chips; an unknown copy is refused with INVALID_ARGUMENT', async () => {
    const s = await shareAgent();
    const res = await s.kubelet.allocate(R, [['Ascend310P-2-1'], ['Ascend310P-0-2', 'Ascend310P-0-0']]);
    expect(res.containerResponses.map((c) => c.envs.ASCEND_VISIBLE_DEVICES)).toEqual(['2', '0']);
    const err = await s.kubelet.allocate(R, [['Ascend310P-2-3']]).then(
      () => undefined,
      (e: unknown) => e as ServiceError,
    );
    expect(err?.details).toContain('unknown device ID "Ascend310P-2-3"');
    expect(s.agent!.child.exitCode).toBeNull(); // the daemon keeps running
  });

  test('C.1/H.3 a fault on chip 1 makes all its copies Unhealthy in kubelet and in the ConfigMap; Allocate refuses them', async () => {
    const s = await shareAgent();
    await s.until(() => deviceList(s)?.[R], 'the first device-info write');
    await s.mock({ op: 'fault', logicId: 1, eventId: SEPARATE_CODE, assertion: 'occur' });
    await s.kubelet.waitForDevices(
      R,
      (d) => copiesOf(1).every((id) => d.find((x) => x.ID === id)?.health === 'Unhealthy'),
      'every copy of chip 1 Unhealthy',
      20_000,
    );
    const devices = s.kubelet.devices(R)!;
    expect(devices.filter((d) => d.health === 'Unhealthy').map((d) => d.ID)).toEqual(copiesOf(1));
    const list = await s.until(() => {
      const l = deviceList(s);
      return l?.[`${R}-Unhealthy`] === copiesOf(1).join(',') ? l : undefined;
    }, 'the copies in -Unhealthy');
    expect(list[R]).toBe([0, 2, 3].flatMap(copiesOf).sort().join(','));
    const faults = JSON.parse(list[`${R}-Fault`]!) as { npu_name: string }[];
    expect(faults.map((f) => f.npu_name)).toEqual(copiesOf(1));
    const err = await s.kubelet.allocate(R, [['Ascend310P-1-0']]).then(
      () => undefined,
      (e: unknown) => e as ServiceError,
    );
    expect(err?.details).toContain('Ascend310P-1-0 is Unhealthy');
  });

  test('H.3/I.3 a copy held by a pod leaves the schedulable list, its siblings stay; it returns when the pod is deleted', async () => {
    const s = await shareAgent();
    await s.core().createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'infer-0', namespace: 'default' },
        spec: { nodeName: NODE_NAME, containers: [{ name: 'c0', image: 'x', resources: { limits: { [R]: '1' } } }] },
      },
    });
    await s.kubelet.allocate(R, [['Ascend310P-3-1']], { namespace: 'default', name: 'infer-0' });
    const list = await s.until(
      () => {
        const l = deviceList(s);
        return l && !(l[R] ?? '').split(',').includes('Ascend310P-3-1') ? l : undefined;
      },
      'Ascend310P-3-1 off the schedulable list',
      20_000,
    );
    expect(list[R]!.split(',')).toEqual(expect.arrayContaining(['Ascend310P-3-0', 'Ascend310P-3-2']));
    // release on pod deletion: the copy is schedulable again
    await s.core().deleteNamespacedPod({ namespace: 'default', name: 'infer-0' });
    await s.until(
      () => (deviceList(s)?.[R] ?? '').split(',').includes('Ascend310P-3-1'),
      'Ascend310P-3-1 back on the schedulable list',
      20_000,
    );
  }, 60_000);

  test('A.1 upstream ShareDev(): on a 910B node the flag has no effect, and the log says so', async () => {
    sb = await AgentSandbox.create();
    await sb.start([`-shareDevCount=${COPIES}`]);
    expect(sb.kubelet.devices(RESOURCE_910)!.map((d) => d.ID)).toContain('Ascend910-0');
    expect(sb.kubelet.devices(RESOURCE_910)).toHaveLength(8);
    expect(
      sb.agent!.logs().some((l) => String(l.msg).startsWith('-shareDevCount has no effect on this chip kind')),
    ).toBe(true);
  });

  test('A.1 -shareDevCount > 1 with -volcanoType (no soft share) exits 2 naming the rule', async () => {
    sb = await AgentSandbox.create(SCENARIO);
    const r = await runAgentOnce(sb.flags(['-shareDevCount=3', '-volcanoType']), sb.env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('-shareDevCount > 1 without -softShareDevConfigDir requires -volcanoType=false');
  });
});
