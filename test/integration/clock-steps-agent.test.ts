/**
 * Issue [T] item 1: the built agent (`dist/cli/agent.js`, run `npm run build` first) on the mock library under
 * libfaketime, its wall clock stepped back one hour, forward one hour and frozen while faults flow; CLOCK_MONOTONIC
 * is left alone (test/helpers/faketime.ts). A fault still reaches the kubelet stream, the device-info ConfigMap
 * (spec H.4: at the end of the 1 s spacing, one write a second while faults flow) and a K.1 Event. Before the change
 * the ConfigMap was not written for an hour after the step back (the spacing was measured on the wall clock) and
 * Events waited an hour in the rate limiter. The 5 min heartbeat is covered on the manual clock
 * (test/kube/clock-steps.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { DEVICE_INFO_NAMESPACE, deviceInfoConfigMapName } from '../../src/kube/device-info.js';
import { AgentSandbox, NODE_NAME, SEPARATE_CODE, UNHEALTHY_KEY, deviceList, listed } from '../helpers/agent-process.js';
import { FakeTime } from '../helpers/faketime.js';

const HOUR = 3_600_000;

let sb: AgentSandbox;
let time: FakeTime;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function cmWrites(): number {
  return sb.api.writeCount({
    resource: 'configmaps',
    namespace: DEVICE_INFO_NAMESPACE,
    name: deviceInfoConfigMapName(NODE_NAME),
  });
}

const occurEvents = (): number => sb.events().filter((e) => e.reason === 'Occur').length;

async function fault(logicId: number, assertion: 'occur' | 'recover'): Promise<void> {
  await sb.mock({ op: 'fault', logicId, eventId: SEPARATE_CODE, assertion });
}

/**
 * A SeparateNPU fault on chip `logicId` after the step: in kubelet and in the ConfigMap (5 s bound), then recovered.
 * K.1: with `ownEvent`, its Occur Event follows within 5 s (a full bucket); otherwise (the bucket emptied by an
 * earlier flow: 10 a minute) the next Event the bucket lets through — the fault's or the summary of those it
 * refused — within 8 s.
 */
async function faultArrives(logicId: number, ownEvent: boolean): Promise<void> {
  const name = `Ascend910-${logicId}`;
  const occurs = occurEvents();
  const events = sb.events().length;
  await fault(logicId, 'occur');
  await sb.until(() => sb.health(name) === 'Unhealthy', `${name} Unhealthy in kubelet`, 5000);
  await sb.until(() => listed(deviceList(sb)?.[UNHEALTHY_KEY], name), `${name} in the ConfigMap`, 5000);
  if (ownEvent) await sb.until(() => occurEvents() > occurs, `the Occur Event of ${name}`, 5000);
  else await sb.until(() => sb.events().length > events, 'the next Event through the bucket', 8000);
  await fault(logicId, 'recover');
  await sb.until(() => !listed(deviceList(sb)?.[UNHEALTHY_KEY], name), `${name} recovered in the ConfigMap`, 5000);
}

/**
 * Faults flowing: chips 0…7 fall one every 250 ms (2 s); resolves with the ConfigMap's writes from the first fault
 * until 1.5 s after the last (H.4: the first at once, then one a second: 2 to 4), once it lists all eight. Then
 * every chip recovers.
 */
async function flow(): Promise<number> {
  const before = cmWrites();
  for (let i = 0; i < 8; i++) {
    await fault(i, 'occur');
    await sleep(250);
  }
  await sleep(1500);
  const writes = cmWrites() - before;
  const all = deviceList(sb)
    ?.[UNHEALTHY_KEY]?.split(',')
    .filter((n) => n !== '').length;
  for (let i = 0; i < 8; i++) await fault(i, 'recover');
  await sb.until(() => deviceList(sb)?.[UNHEALTHY_KEY] === '', 'every chip recovered in the ConfigMap', 5000);
  expect(all).toBe(8);
  return writes;
}

beforeAll(async () => {
  sb = await AgentSandbox.create(undefined, { prefix: 'npu-clock-' });
  time = new FakeTime(sb.dir);
  await sb.start([], time.env());
  await sb.until(() => deviceList(sb) !== undefined, 'the first device-info write', 15_000);
  await sleep(1500); // the first write's spacing is over
}, 60_000);

afterAll(async () => {
  await sb.close();
});

describe('issue [T] item 1: ascend-npu-agent under libfaketime', () => {
  test('H.4/K.1 wall clock back 1 h: a fault reaches kubelet, the ConfigMap and an Event; one write a second while faults flow', async () => {
    time.step(-HOUR);
    await faultArrives(3, true);
    const writes = await flow();
    expect(writes).toBeGreaterThanOrEqual(2);
    expect(writes).toBeLessThanOrEqual(4);
  }, 40_000);

  test('H.4/K.1 wall clock forward 1 h: a fault arrives everywhere; no burst of writes while faults flow', async () => {
    time.step(HOUR);
    await faultArrives(4, false);
    const writes = await flow();
    expect(writes).toBeGreaterThanOrEqual(2);
    expect(writes).toBeLessThanOrEqual(4);
  }, 40_000);

  test('H.4/K.1 wall clock frozen: a fault arrives everywhere; one write a second while faults flow', async () => {
    time.freeze();
    try {
      await faultArrives(5, false);
      const writes = await flow();
      expect(writes).toBeGreaterThanOrEqual(2);
      expect(writes).toBeLessThanOrEqual(4);
    } finally {
      time.thaw();
    }
  }, 40_000);

  test('the agent is still running after the steps', () => {
    expect([sb.agent?.child.exitCode, sb.agent?.stderr]).toEqual([null, '']);
  });
});
