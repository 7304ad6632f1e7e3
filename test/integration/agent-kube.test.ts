/**
 * The agent as a child process and what it writes to the Node and to pods (issue [E] item 6; spec I.1 labels,
 * I.2 annotations, I.3 pod annotations after an Allocate of a pod).
 */
import * as k8s from '@kubernetes/client-node';
import { afterEach, describe, expect, test } from '@jest/globals';
import { KEY_DEVICE_INFO } from '../../src/kube/device-info.js';
import { LABEL_RECOVER } from '../../src/kube/node-labeler.js';
import { ANNOTATION_ASCEND_REAL, ANNOTATION_KLT_DEV, ANNOTATION_RANK_TABLE_910 } from '../../src/kube/pod-annotator.js';
import { AgentSandbox, NODE_NAME, RESOURCE, SEPARATE_CODE } from '../helpers/agent-process.js';

let sb: AgentSandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

describe('spec I.1/I.2 node labels and annotations', () => {
  test('after start the Node carries the chip labels and baseDeviceInfos with the chips and their IPs', async () => {
    sb = await AgentSandbox.create();
    await sb.start();
    const node = sb.node()!;
    expect(node.metadata?.labels).toMatchObject({
      'node.kubernetes.io/npu.chip.name': '910B3',
      accelerator: 'huawei-Ascend910',
    });
    expect(node.metadata?.labels?.servertype).toMatch(/^Ascend910B-\d+$/);
    const base = JSON.parse(node.metadata!.annotations!.baseDeviceInfos!) as Record<string, { IP: string }>;
    expect(Object.keys(base).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `Ascend910-${i}`).sort());
    expect(base['Ascend910-0']?.IP).toBe('192.168.100.101');
  });
});

describe('spec I.3 pod annotations', () => {
  test('a pod that kubelet allocated a chip to gets kltDev, AscendReal and the rank table', async () => {
    sb = await AgentSandbox.create();
    await sb.start();
    const s = sb;
    const annotations = await s.allocatedPodAnnotations(RESOURCE, ['Ascend910-2']);
    expect(annotations[ANNOTATION_ASCEND_REAL]).toBe('Ascend910-2');
    expect(annotations[ANNOTATION_KLT_DEV]).toBe('Ascend910-2');
    const rank = JSON.parse(annotations[ANNOTATION_RANK_TABLE_910]!) as {
      pod_name: string;
      devices: { device_id: string; device_ip: string }[];
    };
    expect(rank.pod_name).toBe('train-0');
    expect(rank.devices).toEqual([expect.objectContaining({ device_id: '2', device_ip: '192.168.100.103' })]);
  });
});

function schedulable(s: AgentSandbox): string[] | undefined {
  const cfg = s.deviceInfo()?.data?.[KEY_DEVICE_INFO];
  if (!cfg) return undefined;
  const list = (JSON.parse(cfg) as { DeviceInfo: { DeviceList: Record<string, string> } }).DeviceInfo.DeviceList;
  return (list[RESOURCE] ?? '').split(',').filter((n) => n !== '');
}

describe('spec I.1 -autoStowing=false', () => {
  test('a recovered chip waits in huawei.com/Ascend910-Recover off the schedulable list until the label is removed', async () => {
    sb = await AgentSandbox.create();
    await sb.start(['-autoStowing=false']);
    const s = sb;
    await s.mock({ op: 'fault', logicId: 3, eventId: SEPARATE_CODE, assertion: 'occur' });
    await s.until(() => s.health('Ascend910-3') === 'Unhealthy', 'Unhealthy');
    await s.mock({ op: 'fault', logicId: 3, eventId: SEPARATE_CODE, assertion: 'recover' });
    await s.until(() => s.health('Ascend910-3') === 'Healthy', 'Healthy in kubelet');
    await s.until(() => s.node()?.metadata?.labels?.[LABEL_RECOVER] === '3', 'the Recover label');
    await s.until(() => {
      const l = schedulable(s);
      return l && l.length === 7 && !l.includes('Ascend910-3');
    }, 'Ascend910-3 withheld from the schedulable list');
    await s
      .core()
      .patchNode(
        { name: NODE_NAME, body: { metadata: { labels: { [LABEL_RECOVER]: null } } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    await s.until(() => schedulable(s)?.includes('Ascend910-3'), 'Ascend910-3 schedulable again', 15_000);
  });
});
