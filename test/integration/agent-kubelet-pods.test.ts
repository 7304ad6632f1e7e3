/**
 * `-getPodFromKubelet` with the agent as a child process (issue 18 item 4; spec A.1, I.6): the pods come from the
 * kubelet simulator's HTTPS `/pods` with the bearer token, polled every 5 s; a failing kubelet keeps the last list.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { KEY_DEVICE_INFO } from '../../src/kube/device-info.js';
import type { KubeletPodsServer } from '../../src/sim/kubelet-pods.js';
import { AgentSandbox, deviceList, listed, NODE_NAME, RESOURCE } from '../helpers/agent-process.js';

let sb: AgentSandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

/** A pod only the kubelet knows (the API server has none): it holds Ascend910-2. */
const kubeletPod = {
  metadata: { name: 'train-0', namespace: 'default', uid: 'uid-train-0', annotations: { [RESOURCE]: 'Ascend910-2' } },
  spec: { nodeName: NODE_NAME, containers: [{ name: 'c0', resources: { limits: { [RESOURCE]: '1' } } }] },
  status: { phase: 'Running' },
};

async function start(pods: () => unknown[]): Promise<{ s: AgentSandbox; kubelet: KubeletPodsServer }> {
  const s = await AgentSandbox.create();
  sb = s;
  const kubelet = await s.kubelet.servePods({ token: 'stand-in-token', pods });
  await s.start(['-getPodFromKubelet'], { HOST_IP: '127.0.0.1', KUBELET_PORT: String(kubelet.port) });
  return { s, kubelet };
}

const schedulable = (s: AgentSandbox): string | undefined => deviceList(s)?.[RESOURCE];

describe('spec I.6 -getPodFromKubelet', () => {
  test('I.6 a pod listed by the kubelet /pods marks its chip used in the device-info ConfigMap', async () => {
    let pods: unknown[] = [];
    const { s, kubelet } = await start(() => pods);
    await s.until(() => s.deviceInfo()?.data?.[KEY_DEVICE_INFO], 'the device-info ConfigMap', 20_000);
    expect(listed(schedulable(s), 'Ascend910-2')).toBe(true);
    pods = [kubeletPod];
    await s.until(() => !listed(schedulable(s), 'Ascend910-2'), 'Ascend910-2 off the schedulable list', 20_000);
    expect(kubelet.requests.length).toBeGreaterThan(0);
    expect(kubelet.requests.every((r) => r.authorized && r.status === 200)).toBe(true);
  }, 60_000);

  test('I.6 a failing kubelet keeps the last list (logged); when it answers again the cache follows', async () => {
    let pods: unknown[] = [kubeletPod];
    const { s, kubelet } = await start(() => pods);
    await s.until(() => deviceList(s) && !listed(schedulable(s), 'Ascend910-2'), 'Ascend910-2 used', 20_000);
    kubelet.failWith = 500;
    pods = [];
    await s.until(
      () => s.agent?.logs().find((l) => l.msg === 'kubelet pod poll failed; pod cache kept as it was'),
      'the poll failure in the log',
      20_000,
    );
    expect(listed(schedulable(s), 'Ascend910-2')).toBe(false);
    kubelet.failWith = undefined;
    await s.until(() => listed(schedulable(s), 'Ascend910-2'), 'Ascend910-2 free again', 20_000);
  }, 60_000);

  test('A.1 without the right token every poll is refused and logged; the agent keeps serving', async () => {
    const s = await AgentSandbox.create();
    sb = s;
    const kubelet = await s.kubelet.servePods({ token: 'another-token', pods: () => [kubeletPod] });
    await s.start(['-getPodFromKubelet'], { HOST_IP: '127.0.0.1', KUBELET_PORT: String(kubelet.port) });
    await s.until(
      () => s.agent?.logs().find((l) => l.msg === 'kubelet pod poll failed; pod cache kept as it was'),
      'the refused poll in the log',
      20_000,
    );
    expect(kubelet.requests.some((r) => r.status === 401)).toBe(true);
    expect(s.health('Ascend910-2')).toBe('Healthy');
  }, 60_000);
});
