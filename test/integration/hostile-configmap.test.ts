/**
 * The agent as a child process against hostile and independent peers around its device-info ConfigMap (issue 12
 * items 1, 3, 4): an API server that delivers the watch event of a write before the write's response (spec H.4: an
 * idle agent writes only the heartbeat), and operator values typed while the agent was down (spec G.2, G.3: bad
 * input never releases a chip).
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { DEVICE_INFO_NAMESPACE, deviceInfoConfigMapName } from '../../src/kube/device-info.js';
import { AgentSandbox, NODE_NAME } from '../helpers/agent-process.js';

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
