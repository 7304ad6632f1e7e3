/**
 * Issue [T] item 1, the agent's kube layer: the wall clock stepped back one hour, forward one hour, or frozen while
 * faults flow. The device-info ConfigMap keeps H.4's cadence (a change written at the end of the 1 s spacing, the
 * heartbeat 5 min after the last write) while its `UpdateTime` follows the wall clock (a domain time); the Event
 * recorder's bucket (K.1) keeps refilling. On the harness's manual clock (test/kube/harness.ts: timers due on
 * monotonic time, the wall clock stepped alone). The built agent under libfaketime:
 * test/integration/clock-steps-agent.test.ts.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { faultEvent } from '../../src/kube/agent-events.js';
import { KubeEventRecorder } from '../../src/kube/event-recorder.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { FakeClock as HealthClock } from '../health/fake-clock.js';
import { CM, KubeHarness, SEP, until } from './harness.js';

const HOUR = 3_600_000;
const HEARTBEAT = 5 * 60_000;

let api: KubeApiStandIn;
let h: KubeHarness;

beforeEach(async () => {
  api = await KubeApiStandIn.start();
  h = new KubeHarness(api);
});

afterEach(async () => {
  h.publisher?.stop();
  await api.stop();
});

const writes = (): number => api.writeCount({ resource: 'configmaps', name: CM });

async function info(): Promise<{ unhealthy: string; updateTime: number }> {
  const cfg = JSON.parse((await h.live()).DeviceInfoCfg!) as {
    DeviceInfo: { DeviceList: Record<string, string>; UpdateTime: number };
  };
  return {
    unhealthy: cfg.DeviceInfo.DeviceList['huawei.com/Ascend910-Unhealthy'] ?? '',
    updateTime: cfg.DeviceInfo.UpdateTime,
  };
}

/** The publisher started, its first write done, then `quietMs` without a change. */
async function started(quietMs = 5000): Promise<void> {
  h.makePublisher();
  await h.publisher.start();
  await h.settle();
  await h.advance(quietMs);
}

const fault = (logicId: number): void => void h.cycle([{ logicId, code: SEP }]);

describe('issue [T] item 1: the device-info ConfigMap under wall-clock steps (H.4)', () => {
  test('H.4 wall clock back 1 h: a fault after the step is written at once, the next one 1 s later, not an hour later', async () => {
    await started();
    h.clock.stepWall(-HOUR);
    fault(3);
    await h.settle();
    expect([writes(), (await info()).unhealthy]).toEqual([2, 'Ascend910-3']);
    fault(5);
    await h.advance(999);
    expect(writes()).toBe(2);
    await h.advance(1);
    expect([writes(), (await info()).unhealthy]).toEqual([3, 'Ascend910-3,Ascend910-5']);
  });

  test('H.4 UpdateTime is a domain time: written after a step back of 1 h, it is the stepped wall clock', async () => {
    await started();
    h.clock.stepWall(-HOUR);
    fault(3);
    await h.settle();
    expect((await info()).updateTime).toBe(Math.floor(h.clock.now() / 1000));
  });

  test('H.4 heartbeat after a step back of 1 h: 5 min after the last write, not 65 min', async () => {
    await started(0);
    const before = writes();
    h.clock.stepWall(-HOUR);
    await h.advance(HEARTBEAT - 1);
    expect(writes()).toBe(before);
    await h.advance(1);
    expect(writes()).toBe(before + 1);
  });

  test('H.4 wall clock forward 1 h: no write for the step itself, and changes stay 1 s apart', async () => {
    await started(0);
    const before = writes();
    h.clock.stepWall(HOUR);
    await h.advance(500);
    expect(writes()).toBe(before); // neither a heartbeat nor anything else is due
    fault(3);
    await h.advance(499);
    expect(writes()).toBe(before);
    await h.advance(1);
    expect([writes(), (await info()).unhealthy]).toEqual([before + 1, 'Ascend910-3']);
  });

  test('H.4 wall clock frozen while faults flow: every change is written, one write a second', async () => {
    await started();
    h.clock.freezeWall();
    const before = writes();
    for (let i = 0; i < 8; i++) {
      fault(i);
      await h.advance(250);
    }
    await h.advance(1000);
    // faults at 0, 250 … 1750 ms: written at 0, 1000, 2000 ms (the last one with every chip)
    expect([writes() - before, (await info()).unhealthy.split(',').length]).toEqual([3, 8]);
  });
});

describe('issue [T] item 1: Events under wall-clock steps (K.1)', () => {
  let clock: HealthClock;
  let rec: KubeEventRecorder | undefined;
  let core: k8s.CoreV1Api;

  beforeEach(() => {
    clock = new HealthClock();
    core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
  });

  afterEach(async () => {
    await rec?.close();
    rec = undefined;
  });

  const occur = (logicId: number) =>
    faultEvent(
      'node-a',
      { logicId, cardId: logicId, deviceId: 0, code: '80E18402', assertion: 'occur', level: 'SeparateNPU' },
      clock.now(),
    );

  async function listed(): Promise<k8s.CoreV1Event[]> {
    return (await core.listNamespacedEvent({ namespace: 'kube-system' })).items;
  }

  test('K.1 the bucket emptied, wall clock back 1 h: the waiting Event gets the next token 6 s later', async () => {
    rec = new KubeEventRecorder({ api: core, nodeName: 'node-a', podName: 'agent-x', clock });
    const r = rec;
    for (let i = 0; i < 11; i++) r.record(occur(i % 8)); // 10 tokens (10 a minute), the 11th waits
    await until(() => r.stats.created === 10);
    clock.stepWall(-HOUR);
    await clock.advance(5999);
    expect(r.stats.created).toBe(10);
    await clock.advance(1);
    await until(() => r.stats.created === 11);
    // its times are the wall clock's, stepped back: an hour before the ten others
    const times = (await listed()).map((e) => new Date(e.lastTimestamp!).getTime());
    expect([Math.min(...times), times.filter((t) => t > clock.now() + HOUR / 2).length]).toEqual([clock.now(), 10]);
  });

  test('K.1 wall clock frozen: the bucket refills at its rate, and Events of one frozen millisecond keep distinct names', async () => {
    rec = new KubeEventRecorder({ api: core, nodeName: 'node-a', podName: 'agent-x', clock });
    const r = rec;
    clock.freezeWall();
    for (let i = 0; i < 11; i++) r.record(occur(3));
    await until(() => r.stats.created === 10);
    await clock.advance(6000);
    await until(() => r.stats.created === 11);
    expect(new Set((await listed()).map((e) => e.metadata?.name)).size).toBe(11);
  });

  test('K.1 wall clock forward 1 h: no token is given for the step', async () => {
    rec = new KubeEventRecorder({ api: core, nodeName: 'node-a', podName: 'agent-x', clock });
    const r = rec;
    for (let i = 0; i < 12; i++) r.record(occur(i % 8)); // 10 created, 1 waits, 1 limited (→ a summary later)
    await until(() => r.stats.created === 10);
    clock.stepWall(HOUR);
    await clock.advance(5999);
    expect([r.stats.created, r.stats.limited]).toEqual([10, 1]);
  });
});
