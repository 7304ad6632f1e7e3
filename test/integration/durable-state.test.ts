/**
 * Issue 12 item 8 (part): escalation state is durable as soon as a fault has been processed. The agent runs as a
 * child process; a FaultFrequency fault goes in through the mock's control socket; the agent is killed with
 * SIGKILL the moment the kubelet simulator shows the fault (no grace, no SIGTERM flush) and started again on the
 * same `-stateDir`. The count must have survived: the second occurrence escalates to ManuallySeparateNPU as if
 * there had been no restart (spec F.3, G.1; docs/fault-engine.md "Limits and durability").
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { KEY_MANUALLY_SEPARATE } from '../../src/kube/device-info.js';
import {
  AgentSandbox,
  deviceList,
  FREQUENCY_CODE,
  listed,
  RESOURCE,
  SEPARATE_CODE,
  UNHEALTHY_KEY,
} from '../helpers/agent-process.js';

let sb: AgentSandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

/** Resolves once the kubelet simulator's list shows `id` with `health`. */
function kubeletShows(s: AgentSandbox, id: string, health: string): Promise<unknown> {
  return s.kubelet.waitForDevices(
    RESOURCE,
    (d) => d.some((x) => x.ID === id && x.health === health),
    `${id} ${health}`,
  );
}

describe('issue 12 item 8: kill -9 right after a fault', () => {
  test('F.3 a FaultFrequency count survives SIGKILL right after the first occurrence: the second one separates', async () => {
    sb = await AgentSandbox.create();
    const s = sb;
    await s.start();
    await s.until(() => deviceList(s), 'the first ConfigMap write'); // the start-up is over
    await s.mock({ op: 'fault', logicId: 3, eventId: FREQUENCY_CODE, assertion: 'occur' });
    await kubeletShows(s, 'Ascend910-3', 'Unhealthy');
    await s.agent!.kill(); // SIGKILL: nothing is flushed on the way out
    await s.start();
    await s.mock({ op: 'fault', logicId: 3, eventId: FREQUENCY_CODE, assertion: 'occur' });
    const value = await s.until(() => {
      const v = s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE];
      return listed(v, 'Ascend910-3') ? v : undefined;
    }, 'ManuallySeparateNPU after the second occurrence');
    expect(value).toBe('Ascend910-3');
  });

  test('G.1 a separation made right before SIGKILL survives it, before the ConfigMap was written', async () => {
    sb = await AgentSandbox.create();
    const s = sb;
    await s.start();
    await s.until(() => deviceList(s), 'the first ConfigMap write');
    await s.mock({ op: 'fault', logicId: 5, eventId: FREQUENCY_CODE, assertion: 'occur' });
    await kubeletShows(s, 'Ascend910-5', 'Unhealthy');
    await s.mock({ op: 'fault', logicId: 5, eventId: FREQUENCY_CODE, assertion: 'recover' });
    await kubeletShows(s, 'Ascend910-5', 'Healthy');
    await s.until(() => !listed(deviceList(s)?.[UNHEALTHY_KEY], 'Ascend910-5'), 'the recovery in the ConfigMap');
    await s.mock({ op: 'fault', logicId: 5, eventId: FREQUENCY_CODE, assertion: 'occur' });
    await kubeletShows(s, 'Ascend910-5', 'Unhealthy');
    await s.agent!.kill();
    await s.start();
    const value = await s.until(() => {
      const v = s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE];
      return listed(v, 'Ascend910-5') ? v : undefined;
    }, 'ManuallySeparateNPU after the restart');
    expect(value).toBe('Ascend910-5');
  });
});

describe('issue 12 item 5: a start without the API server', () => {
  test('G.3 the state file is read before anything saves: a count survives a start while the API server is down', async () => {
    sb = await AgentSandbox.create();
    const s = sb;
    await s.start();
    await s.until(() => deviceList(s), 'the first ConfigMap write');
    await s.mock({ op: 'fault', logicId: 2, eventId: FREQUENCY_CODE, assertion: 'occur' });
    await kubeletShows(s, 'Ascend910-2', 'Unhealthy');
    s.agent!.child.kill('SIGTERM');
    expect((await s.agent!.waitExit()).code).toBe(0);
    s.api.setAvailable(false);
    // The engine starts without the ConfigMap; a fault on another chip arrives (a store change, so a save); the API
    // server comes back while the agent still sets up the Node (its retries span a few seconds), and the
    // publisher's first read does the G.3 start-up (lateStartup) from the state file of the first run.
    const started = s.start();
    started.catch(() => undefined); // awaited below; a failure before that is reported by the step that failed
    try {
      // The control socket of the first run may still be there: retry until the new mock answers.
      await s.untilAsync(
        () =>
          s.mock({ op: 'fault', logicId: 6, eventId: SEPARATE_CODE, assertion: 'occur' }).then(
            () => true,
            () => false,
          ),
        'the fault through the new mock',
        20_000,
      );
      await s.until(() => s.agent!.stdout.includes('node label/annotation patch failed'), 'the Node set-up retrying');
    } finally {
      s.api.setAvailable(true);
    }
    await started;
    await s.until(() => deviceList(s), 'a ConfigMap write after the API server came back');
    await s.mock({ op: 'fault', logicId: 2, eventId: FREQUENCY_CODE, assertion: 'occur' });
    const value = await s.until(() => {
      const v = s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE];
      return listed(v, 'Ascend910-2') ? v : undefined;
    }, 'ManuallySeparateNPU after the second occurrence');
    expect(value).toBe('Ascend910-2');
  });
});
