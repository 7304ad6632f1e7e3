/**
 * The agent as a child process against hostile and independent peers around its device-info ConfigMap (issue 12
 * items 1, 3, 4): an API server that delivers the watch event of a write before the write's response (spec H.4: an
 * idle agent writes only the heartbeat), and operator values typed while the agent was down (spec G.2, G.3: bad
 * input never releases a chip).
 */
import * as k8s from '@kubernetes/client-node';
import { afterEach, describe, expect, test } from '@jest/globals';
import { DEVICE_INFO_NAMESPACE, deviceInfoConfigMapName, KEY_MANUALLY_SEPARATE } from '../../src/kube/device-info.js';
import { AgentSandbox, FREQUENCY_CODE, NODE_NAME } from '../helpers/agent-process.js';

const CM = deviceInfoConfigMapName(NODE_NAME);

let sb: AgentSandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const writes = (s: AgentSandbox): number =>
  s.api.writeCount({ resource: 'configmaps', namespace: DEVICE_INFO_NAMESPACE, name: CM });

const reconcileLogs = (s: AgentSandbox): number =>
  s.agent!.logs().filter((l) => l.msg === 'device-info ConfigMap edited by someone else; reconciling').length;

describe('spec H.4 an idle agent against either watch order (issue 12 item 1)', () => {
  for (const order of ['as-is', 'watch-first', 'response-first'] as const) {
    test(`H.4 an idle agent writes its ConfigMap once in 8 s when the API server delivers the ${order}`, async () => {
      sb = await AgentSandbox.create();
      sb.api.setWatchOrder(order);
      await sb.start();
      const s = sb;
      await s.until(() => writes(s) >= 1, 'the first device-info write', 20_000);
      await sleep(8000);
      expect([writes(s), reconcileLogs(s)]).toEqual([1, 0]);
    }, 60_000);
  }
});

describe('spec G.2/G.3 garbage typed into ManuallySeparateNPU while the agent is down (issue 12 item 3)', () => {
  /** Separates `chip` by two occurrences of a FaultFrequency code (Times 2 → ManuallySeparateNPU). */
  async function separate(s: AgentSandbox, chip: number): Promise<void> {
    const name = `Ascend910-${chip}`;
    await s.mock({ op: 'fault', logicId: chip, eventId: FREQUENCY_CODE, assertion: 'occur' });
    await s.until(() => s.health(name) === 'Unhealthy', `${name} Unhealthy`);
    await s.mock({ op: 'fault', logicId: chip, eventId: FREQUENCY_CODE, assertion: 'recover' });
    await s.until(() => s.health(name) === 'Healthy', `${name} Healthy after the recovery`);
    await s.mock({ op: 'fault', logicId: chip, eventId: FREQUENCY_CODE, assertion: 'occur' });
  }

  const manual = (s: AgentSandbox): string | undefined => s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE];

  for (const bad of ['garbage', 'Ascend910-3;Ascend910-5', 'ascend910-3,ascend910-5']) {
    test(`G.2 ${JSON.stringify(bad)} typed while down: nothing released, the rejection logged and in an Event, the separations written back`, async () => {
      sb = await AgentSandbox.create();
      await sb.start();
      const s = sb;
      await separate(s, 3);
      await separate(s, 5);
      await s.until(() => manual(s) === 'Ascend910-3,Ascend910-5', 'chips 3 and 5 separated in the ConfigMap', 20_000);
      s.agent!.child.kill('SIGTERM');
      expect((await s.agent!.waitExit()).code).toBe(0);
      await s
        .core()
        .patchNamespacedConfigMap(
          { name: CM, namespace: DEVICE_INFO_NAMESPACE, body: { data: { [KEY_MANUALLY_SEPARATE]: bad } } },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        );
      await s.start();
      await s.until(
        () => s.events().some((e) => e.reason === 'DeviceInfoEditRejected'),
        'the DeviceInfoEditRejected Event',
        20_000,
      );
      await s.until(() => manual(s) === 'Ascend910-3,Ascend910-5', 'the separations written back', 20_000);
      const logs = s.agent!.logs();
      const restored = logs.find((l) => l.msg === 'engine state restored');
      const rejectedLog = logs.find((l) => l.msg === 'hand-edited value not used' && l.key === KEY_MANUALLY_SEPARATE);
      const event = s.events().find((e) => e.reason === 'DeviceInfoEditRejected');
      const restoreProblem = logs.find((l) => l.msg === 'engine restore' && String(l.problem).includes('not used'));
      expect([
        restoreProblem !== undefined,
        restored?.releasedWhileDown,
        restored?.separated,
        rejectedLog?.value,
        event?.message?.includes(JSON.stringify(bad)),
      ]).toEqual([true, [], 'Ascend910-3,Ascend910-5', bad, true]);
    }, 90_000);
  }
});
