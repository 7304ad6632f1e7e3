/**
 * Issue 17 "Bad input": a refused dynamic vNPU Allocate is reported by an Event on the pod itself (the recorder's
 * `involvedPod`), in the pod's namespace; the agent's own Events keep their K.1 shape.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { KubeEventRecorder } from '../../src/kube/event-recorder.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';

let api: KubeApiStandIn;
let core: k8s.CoreV1Api;
let rec: KubeEventRecorder | undefined;

beforeEach(async () => {
  api = await KubeApiStandIn.start();
  core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
});

afterEach(async () => {
  await rec?.close();
  rec = undefined;
  await api.stop();
});

async function waitCreated(n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (rec!.stats.created < n) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} Events`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('issue 17 Bad input: the Event on the refused pod', () => {
  test('an Event with involvedPod names the pod (kind Pod, its namespace and uid) and lives in its namespace', async () => {
    rec = new KubeEventRecorder({ api: core, nodeName: 'node-a', podName: 'agent-x', now: () => 1700000000000 });
    rec.record({
      type: 'Warning',
      reason: 'AllocateRefused',
      message: 'NPUSegmentFailed: pod team-a/infer-0: template vir16 is not a vNPU template of Ascend310P',
      involvedPod: { namespace: 'team-a', name: 'infer-0', uid: 'u-1' },
    });
    await waitCreated(1);
    const [e] = (await core.listNamespacedEvent({ namespace: 'team-a' })).items;
    expect([e?.metadata?.name, e?.reason, e?.involvedObject]).toEqual([
      'infer-0.1700000000000',
      'AllocateRefused',
      { kind: 'Pod', namespace: 'team-a', name: 'infer-0', uid: 'u-1' },
    ]);
    expect(e?.message).toContain('NPUSegmentFailed');
    expect((await core.listNamespacedEvent({ namespace: 'kube-system' })).items).toEqual([]);
  });
});
