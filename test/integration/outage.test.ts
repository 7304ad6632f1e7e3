/**
 * Issue [K] item 8, spec H.4 and G.2: after an API server outage (the stand-in answering 503) the agent catches up
 * within about a second of the API's return, not after its retriers slept out a backoff of up to 30 s: the final
 * state reaches the device-info ConfigMap, and an operator's release made right after the outage is seen. The
 * mechanism is the shared recovery signal of `src/kube/write-queue.ts` (`ApiRecovery`: a `GET /readyz` probe about
 * once a second while a retrier waits) that wakes every waiting retrier at once.
 *
 * Why the bounds prove it (no stopwatch): each test ends the outage right after the agent logged a failed attempt
 * whose next retry is at least 12 s away (the backoff's 16 s step, −20 % jitter). Without the wake-up nothing else
 * retries before that delay has passed, so the 10 s (ConfigMap) and 5 s (release) deadlines below cannot be met;
 * with it the probe sees the API back within ≈ 1.2 s.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { deviceInfoConfigMapName, KEY_MANUALLY_SEPARATE } from '../../src/kube/device-info.js';
import { operatorRelease } from '../../src/sim/simulate.js';
import {
  AgentSandbox,
  deviceList,
  FREQUENCY_CODE,
  listed,
  NODE_NAME,
  SEPARATE_CODE,
  UNHEALTHY_KEY,
  type AgentProcess,
} from '../helpers/agent-process.js';

/** A logged retry at least this far away: the 16 s backoff step with the largest jitter (−20 %). */
const LONG_RETRY_MS = 12_000;

/** Jest bound of one test: its own polls (start-up, outage, exit) take longer than the default 20 s. */
const OUTAGE_TEST_MS = 120_000;

let sb: AgentSandbox | undefined;

afterEach(async () => {
  sb?.api.setAvailable(true);
  await sb?.close();
  sb = undefined;
});

/** The agent's first log line with message `msg` whose fields pass `pick`. */
function logLine(agent: AgentProcess, msg: string, pick: (l: Record<string, unknown>) => boolean): boolean {
  return agent.logs().some((l) => l.msg === msg && pick(l));
}

function longRetry(l: Record<string, unknown>): boolean {
  return typeof l.retryInMs === 'number' && l.retryInMs >= LONG_RETRY_MS;
}

describe('issue [K] item 8: final state within seconds of the API server returning (spec H.4)', () => {
  test(
    'a fault injected during a 503 outage is in the ConfigMap within 10 s after the API returns',
    async () => {
      sb = await AgentSandbox.create();
      const s = sb;
      const agent = await s.start();
      await s.until(() => deviceList(s), 'the first ConfigMap write');
      s.api.setAvailable(false);
      await s.mock({ op: 'fault', logicId: 2, eventId: SEPARATE_CODE, assertion: 'occur' });
      await s.until(() => s.health('Ascend910-2') === 'Unhealthy', 'Ascend910-2 Unhealthy (kubelet is not held up)');
      // about 15 s into the outage the write queue's backoff reaches its 16 s step
      await s.until(
        () => logLine(agent, 'device-info write failed; retrying', longRetry),
        `a failed write whose retry is ≥ ${LONG_RETRY_MS} ms away`,
        60_000,
      );
      expect(listed(deviceList(s)?.[UNHEALTHY_KEY], 'Ascend910-2')).toBe(false);
      s.api.setAvailable(true);
      const list = await s.until(
        () => {
          const l = deviceList(s);
          return l && listed(l[UNHEALTHY_KEY], 'Ascend910-2') ? l : undefined;
        },
        'the fault in the ConfigMap within 10 s after the outage',
        10_000,
      );
      expect(list[UNHEALTHY_KEY]).toBe('Ascend910-2');
    },
    OUTAGE_TEST_MS,
  );
});

describe('issue [K] item 8: the device-info watch is back within seconds of the API server (spec G.2)', () => {
  test(
    'an operator release typed right after a 503 outage is seen within 5 s',
    async () => {
      sb = await AgentSandbox.create();
      const s = sb;
      const agent = await s.start();
      // spec G.2: the second occurrence of a FaultFrequency code separates the chip; its recovery does not release it
      await s.mock({ op: 'fault', logicId: 3, eventId: FREQUENCY_CODE, assertion: 'occur' });
      await s.until(() => s.health('Ascend910-3') === 'Unhealthy', 'Unhealthy');
      await s.mock({ op: 'fault', logicId: 3, eventId: FREQUENCY_CODE, assertion: 'recover' });
      await s.until(() => s.health('Ascend910-3') === 'Healthy', 'Healthy after the first recovery');
      await s.mock({ op: 'fault', logicId: 3, eventId: FREQUENCY_CODE, assertion: 'occur' });
      await s.until(() => listed(s.deviceInfo()?.data?.[KEY_MANUALLY_SEPARATE], 'Ascend910-3'), 'the separation');
      await s.mock({ op: 'fault', logicId: 3, eventId: FREQUENCY_CODE, assertion: 'recover' });
      await s.until(() => s.events().some((e) => e.reason === 'ManuallySeparated'), 'a ManuallySeparated Event');
      expect(s.health('Ascend910-3')).toBe('Unhealthy');
      s.api.setAvailable(false);
      // the watch of the device-info ConfigMap fails with the rest and backs off like the write queue
      const what = `configmap kube-system/${deviceInfoConfigMapName(NODE_NAME)}`;
      await s.until(
        () => logLine(agent, 'list/watch failed; re-listing later', (l) => l.what === what && longRetry(l)),
        `the device-info watch retrying ≥ ${LONG_RETRY_MS} ms later`,
        60_000,
      );
      s.api.setAvailable(true);
      expect(await operatorRelease(s.core(), NODE_NAME, 'Ascend910-3')).toBe(true);
      await s.until(() => s.health('Ascend910-3') === 'Healthy', 'the release seen within 5 s', 5_000);
      expect(s.health('Ascend910-3')).toBe('Healthy');
    },
    OUTAGE_TEST_MS,
  );
});
