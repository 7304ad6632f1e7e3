/**
 * Issue 17 item 3: dynamic vNPU (`-presetVirtualDevice=false -volcanoType=true`) with the agent as a child process
 * on the mock library (`scenarios/310p-vnpu.json`: 4 × 310P3, 8 AI cores each), the kubelet simulator and the API
 * stand-in. Spec B.3 (the single `huawei.com/npu-core` server, `npu-core-<k>`), C.1 (core health), C.3 dynamic
 * mode (the `huawei.com/npu-core` annotation, `dcmi_create_vdevice`, `NoNPUResource` / `NPUSegmentFailed`), C.4
 * (visible vdev id, `VIRTUAL`, worker counts), D.2 step 1 (vNPUs no pod uses are destroyed), A.2 step 5.5 (Duo).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import type { ServiceError } from '@grpc/grpc-js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { AgentSandbox, NODE_NAME, runAgentOnce, SEPARATE_CODE } from '../helpers/agent-process.js';

const SCENARIO = path.join(PROJECT_ROOT, 'scenarios', '310p-vnpu.json');
const R = 'huawei.com/npu-core';
const CORES = 8;
const FLAGS = ['-presetVirtualDevice=false', '-volcanoType', '-listWatchPeriod=3'];

let sb: AgentSandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

async function vnpuAgent(): Promise<AgentSandbox> {
  sb = await AgentSandbox.create(SCENARIO);
  await sb.start(FLAGS, { ASCEND_DOCKER_RUNTIME: 'True' }, { resource: R });
  return sb;
}

const cores = (from: number, n: number): string[] => Array.from({ length: n }, (_, i) => `npu-core-${from + i}`);

/** A pod Volcano placed on this node: limits of npu-core and its `huawei.com/npu-core` annotation. */
async function volcanoPod(s: AgentSandbox, name: string, annotation: string, count: number, time: string) {
  await s.core().createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name, namespace: 'default', annotations: { [R]: annotation, 'predicate-time': time } },
      spec: {
        nodeName: NODE_NAME,
        containers: [{ name: 'c0', image: 'x', resources: { limits: { [R]: String(count) } } }],
      },
    },
  });
}

async function vdevs(s: AgentSandbox, logicId: number): Promise<{ vdevId: number; template: string }[]> {
  const r = await s.mock({ op: 'vdevs', logicId });
  return r.vdevs as { vdevId: number; template: string }[];
}

const refusal = (p: Promise<unknown>): Promise<ServiceError | undefined> =>
  p.then(
    () => undefined,
    (e: unknown) => e as ServiceError,
  );

describe('issue 17 item 3: dynamic vNPU, agent as a child process', () => {
  test('B.3/C.1 registers the single huawei.com/npu-core server with 8 AI-core pseudo-devices per chip, all Healthy', async () => {
    const s = await vnpuAgent();
    const devices = s.kubelet.devices(R)!;
    expect(devices.map((d) => d.ID).sort()).toEqual(cores(0, 4 * CORES).sort());
    expect(devices.every((d) => d.health === 'Healthy')).toBe(true);
    expect(s.kubelet.devices('huawei.com/Ascend310P')).toBeUndefined();
  });

  test('C.3/C.4 Allocate creates the vNPU of the annotation with dcmi_create_vdevice; deleting the pod destroys it', async () => {
    const s = await vnpuAgent();
    await volcanoPod(s, 'infer-0', '1-vir02', 2, '100');
    const res = await s.kubelet.allocate(R, [cores(20, 2)], { namespace: 'default', name: 'infer-0' });
    const made = await vdevs(s, 1);
    expect(made.map((v) => v.template)).toEqual(['vir02']);
    expect(res.containerResponses[0]!.envs).toMatchObject({
      ASCEND_VISIBLE_DEVICES: String(made[0]!.vdevId),
      ASCEND_RUNTIME_OPTIONS: 'VIRTUAL',
      WORLD_SIZE: '1',
      LOCAL_RANK: '0',
    });
    const pod = await s.core().readNamespacedPod({ namespace: 'default', name: 'infer-0' });
    expect(pod.metadata?.annotations?.['predicate-time']).toBe('18446744073709551615');
    // spec I.3: kltDev and AscendReal (the vNPU with _<vfgId>) on the pod
    const annotated = await s.untilAsync(async () => {
      const p = await s.core().readNamespacedPod({ namespace: 'default', name: 'infer-0' });
      return p.metadata?.annotations?.['huawei.com/AscendReal'] ? p.metadata.annotations : undefined;
    }, 'the AscendReal annotation');
    expect(annotated['huawei.com/AscendReal']).toBe(`Ascend310P-2c-${made[0]!.vdevId}-1_0`);
    expect(annotated['huawei.com/kltDev']).toBe('npu-core-20,npu-core-21');
    await s.core().deleteNamespacedPod({ namespace: 'default', name: 'infer-0' });
    await s.untilAsync(async () => (await vdevs(s, 1)).length === 0, 'the vNPU of the deleted pod destroyed', 20_000);
  }, 60_000);

  test('C.3 whole chips: annotation "3" maps 8 cores to Ascend310P-3, no vNPU', async () => {
    const s = await vnpuAgent();
    await volcanoPod(s, 'whole-0', '3', CORES, '5');
    const res = await s.kubelet.allocate(R, [cores(0, CORES)]);
    expect(res.containerResponses[0]!.envs).toMatchObject({ ASCEND_VISIBLE_DEVICES: '3', ASCEND_RUNTIME_OPTIONS: '' });
    expect(await vdevs(s, 3)).toEqual([]);
  });

  test('Bad input: a template the chip does not offer is refused (NPUSegmentFailed) naming the pod, with an Event on it, nothing created', async () => {
    const s = await vnpuAgent();
    await volcanoPod(s, 'big-0', '0-vir16', 16, '7');
    const err = await refusal(s.kubelet.allocate(R, [cores(0, 16)]));
    expect(err?.details).toContain('NPUSegmentFailed');
    expect(err?.details).toContain('pod default/big-0');
    expect(err?.details).toContain('vir16');
    const ev = await s.until(
      () => s.events().find((e) => e.involvedObject?.name === 'big-0' && e.reason === 'AllocateRefused'),
      'the AllocateRefused Event on the pod',
    );
    expect(ev.involvedObject).toMatchObject({ kind: 'Pod', namespace: 'default' });
    expect(ev.message).toContain('NPUSegmentFailed');
    expect(await vdevs(s, 0)).toEqual([]);
    expect(s.agent!.child.exitCode).toBeNull(); // the daemon keeps running
  });

  test('Bad input: a full chip refuses the next vNPU (NPUSegmentFailed, the DCMI code) and keeps the vNPUs of live pods', async () => {
    const s = await vnpuAgent();
    await volcanoPod(s, 'a', '2-vir04', 4, '1');
    await s.kubelet.allocate(R, [cores(0, 4)], { namespace: 'default', name: 'a' });
    await volcanoPod(s, 'b', '2-vir04_3c', 4, '2');
    await s.kubelet.allocate(R, [cores(4, 4)], { namespace: 'default', name: 'b' });
    await volcanoPod(s, 'c', '2-vir01', 1, '3');
    const err = await refusal(s.kubelet.allocate(R, [cores(8, 1)]));
    expect(err?.details).toContain('NPUSegmentFailed: pod default/c');
    expect(err?.details).toContain('-8008');
    expect((await vdevs(s, 2)).map((v) => v.template)).toEqual(['vir04', 'vir04_3c']);
  }, 60_000);

  test('Bad input: a phy id not on the node is refused with NoNPUResource naming the pod', async () => {
    const s = await vnpuAgent();
    await volcanoPod(s, 'lost-0', '9-vir02', 2, '4');
    const err = await refusal(s.kubelet.allocate(R, [cores(0, 2)]));
    expect(err?.details).toContain('NoNPUResource: pod default/lost-0');
  });

  test('Bad input: a malformed annotation is named with its pod in the refusal and an Event', async () => {
    const s = await vnpuAgent();
    await volcanoPod(s, 'odd-0', '1-vir02-x', 2, '4');
    const err = await refusal(s.kubelet.allocate(R, [cores(0, 2)]));
    expect(err?.details).toContain('pod default/odd-0: annotation huawei.com/npu-core "1-vir02-x"');
    await s.until(
      () => s.events().some((e) => e.involvedObject?.name === 'odd-0' && e.reason === 'AllocateRefused'),
      'the AllocateRefused Event on odd-0',
    );
  }, 30_000);

  test('C.1/D.7 a fault on chip 1 makes 8 AI cores Unhealthy, those of chip 1 when no pod holds any', async () => {
    const s = await vnpuAgent();
    await s.mock({ op: 'fault', logicId: 1, eventId: SEPARATE_CODE, assertion: 'occur' });
    const list = await s.kubelet.waitForDevices(
      R,
      (d) => d.filter((x) => x.health === 'Unhealthy').length === CORES,
      '8 Unhealthy cores',
      20_000,
    );
    expect(
      list
        .filter((d) => d.health === 'Unhealthy')
        .map((d) => d.ID)
        .sort(),
    ).toEqual(cores(CORES, CORES).sort());
  });

  test('A.2 step 5.5: dynamic vNPU on a node with an Atlas 300I Duo exits 2 naming it', async () => {
    const scenario = JSON.parse(fs.readFileSync(SCENARIO, 'utf8')) as Record<string, unknown>;
    sb = await AgentSandbox.create(SCENARIO);
    const file = path.join(sb.dir, 'duo.json');
    fs.writeFileSync(file, JSON.stringify({ ...scenario, productType: 'Atlas 300I Duo' }));
    const r = await runAgentOnce(sb.flags(FLAGS), { ...sb.env(), ASCEND_MOCK_SCENARIO: file });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Atlas 300I Duo is not supported by dynamic vNPU');
  });

  test('A.1 -presetVirtualDevice=false on a 910 (A1) node exits 2 naming the kinds that allow it', async () => {
    sb = await AgentSandbox.create(path.join(PROJECT_ROOT, 'scenarios', '910a-8chip.json'));
    const r = await runAgentOnce(sb.flags(FLAGS), sb.env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('-presetVirtualDevice=false needs a Ascend310P, Ascend910B, Ascend910A3 node');
  });
});
