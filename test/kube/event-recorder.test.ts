import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import Bottleneck from 'bottleneck';
import { NOOP_LOGGER, type Logger } from '../../src/core/logger.js';
import { faultEvent, releaseUpgradeFaultEvent, transitionEvents } from '../../src/kube/agent-events.js';
import { KubeEventRecorder } from '../../src/kube/event-recorder.js';
import { ApiRecovery } from '../../src/kube/write-queue.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { KubeClient } from '../../src/kube/kube-client.js';
import { until } from './harness.js';

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

async function events(): Promise<k8s.CoreV1Event[]> {
  return (await core.listNamespacedEvent({ namespace: 'kube-system' })).items;
}

const occur = (logicId: number, t: number) =>
  faultEvent(
    'node-a',
    { logicId, cardId: logicId, deviceId: 0, code: '80E18402', assertion: 'occur', level: 'SeparateNPU' },
    t,
  );

describe('K.1 fault events', () => {
  test('K.1 name, type, reason, action, involvedObject and source are upstream', async () => {
    rec = new KubeEventRecorder({ api: core, nodeName: 'node-a', podName: 'agent-x', now: () => 1700000000000 });
    rec.record(occur(3, 1700000000000));
    await until(() => rec!.stats.created === 1);
    const [e] = await events();
    expect([
      e?.metadata?.name,
      e?.type,
      e?.reason,
      e?.action,
      e?.involvedObject,
      e?.source,
      e?.reportingInstance,
    ]).toEqual([
      'agent-x.17000000000003',
      'Warning',
      'Occur',
      'SeparateNPU',
      { kind: 'pod', namespace: 'kube-system', name: 'agent-x' },
      { component: 'device-plugin', host: 'node-a' },
      'agent-x',
    ]);
  });

  test('K.1 the message names node, assertion, card, device, code and level', () => {
    expect(occur(3, 0).message).toMatch(
      /^device fault, nodeName:node-a, assertion:Occur, cardID:3, deviceID:0, faultCodes:80E18402, faultLevelName:SeparateNPU, alarmRaisedTime:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/,
    );
  });

  test('K.1 a recovery is a Normal event with reason Recovery', () => {
    const e = faultEvent(
      'n',
      { logicId: 1, cardId: 1, deviceId: 0, code: 'A', assertion: 'recover', level: 'NotHandleFault' },
      0,
    );
    expect([e.type, e.reason]).toEqual(['Normal', 'Recovery']);
  });
});

describe('K.1 rate limit with a summary of what was left out', () => {
  test('K.1 events beyond the bucket are not created one by one but counted in one summary Event', async () => {
    rec = new KubeEventRecorder({
      api: core,
      nodeName: 'node-a',
      podName: 'agent-x',
      perInterval: 3,
      intervalMs: 300,
    });
    for (let i = 0; i < 12; i++) rec.record(occur(i, 1000 + i));
    await until(() => rec!.stats.summaries === 1);
    await rec.whenIdle();
    const all = await events();
    const summary = all.find((e) => e.reason === 'EventsRateLimited');
    const created = all.filter((e) => e.reason === 'Occur').length;
    expect([created + Number(/^(\d+) events/.exec(summary?.message ?? '')?.[1]), rec.stats.limited]).toEqual([
      12,
      12 - created,
    ]);
  });
});

describe('K.1 rate limit under a fault storm', () => {
  test('K.1 Events beyond the bucket are refused at once, not held behind the limiter', () => {
    rec = new KubeEventRecorder({
      api: core,
      nodeName: 'node-a',
      podName: 'agent-x',
      perInterval: 3,
      intervalMs: 60_000,
    });
    for (let i = 0; i < 10_000; i++) rec.record(occur(i % 16, 1000 + i));
    // at most the bucket (3) plus one waiter are handed to the limiter; every other Event is counted at once
    expect(rec.stats.limited).toBeGreaterThanOrEqual(10_000 - 4);
  });
});

describe('K.2 and ours', () => {
  test('K.2 the release event message is the removed reasons in the G.5 format', () => {
    const e = releaseUpgradeFaultEvent(
      new Map([
        [
          'Ascend910-3',
          [
            {
              upgrade_time: 5,
              fault_code: '80e01801',
              fault_level: 'ManuallySeparateNPU',
              upgrade_type: 'FaultFrequency',
            },
          ],
        ],
      ]),
      7,
    );
    expect([e.nameSuffix, e.message]).toEqual([
      'EventReleaseUpgradeFault.7',
      '{"Ascend910-3":[{"upgrade_time":5,"fault_code":"80e01801","fault_level":"ManuallySeparateNPU","upgrade_type":"FaultFrequency"}]}',
    ]);
  });

  test('escalations and separations become Warning Events naming the chip', () => {
    const evs = transitionEvents(
      [
        {
          kind: 'escalated',
          logicId: 2,
          code: '80e01801',
          level: 'ManuallySeparateNPU',
          upgradeType: 'FaultFrequency',
          time: 1,
        },
        { kind: 'separated', logicId: 2, by: 'FaultFrequency', code: '80e01801' },
      ],
      (id) => `Ascend910-${id}`,
    );
    expect(evs.map((e) => [e.type, e.reason, e.message.startsWith('Ascend910-2 (logic id 2)')])).toEqual([
      ['Warning', 'FaultEscalated', true],
      ['Warning', 'ManuallySeparated', true],
    ]);
  });
});

describe('K.1 Events during an API outage are retried, bounded (issue 12 loose end 2)', () => {
  /** A recorder on the stand-in whose retries wait long unless woken by `recovery`. */
  function recorder(o: { recovery?: ApiRecovery; maxRetained?: number; perInterval?: number } = {}) {
    const lines: string[] = [];
    const logger = {
      ...NOOP_LOGGER,
      warn: (_o: unknown, msg?: string) => void lines.push(msg ?? ''),
      info: (_o: unknown, msg?: string) => void lines.push(msg ?? ''),
    } as unknown as Logger;
    rec = new KubeEventRecorder({
      api: core,
      nodeName: 'node-a',
      podName: 'agent-x',
      perInterval: o.perInterval ?? 100,
      intervalMs: 1000,
      logger,
      backoff: { initialMs: 60_000, maxMs: 60_000, ...(o.recovery ? { recovery: o.recovery } : {}) },
      ...(o.maxRetained !== undefined ? { maxRetained: o.maxRetained } : {}),
    });
    return { rec, lines };
  }

  test('K.1 Events refused with 503 are created once the API server is back, woken by the recovery signal', async () => {
    const recovery = new ApiRecovery({ probe: () => Promise.resolve(!api.unavailable), probeIntervalMs: 50 });
    try {
      const { rec: r } = recorder({ recovery });
      api.setAvailable(false);
      for (let i = 0; i < 5; i++) r.record(occur(i, 1000 + i));
      await until(() => r.stats.retaining === 5);
      api.setAvailable(true);
      await until(() => r.stats.retried === 5); // the retry's own delay is 60 s: only the wake can do it
      expect([(await events()).filter((e) => e.reason === 'Occur').length, r.stats.failed]).toEqual([5, 0]);
    } finally {
      recovery.close();
    }
  });

  test('K.1 the retry queue is bounded: the oldest are dropped first, counted, and logged by one line', async () => {
    const recovery = new ApiRecovery({ probe: () => Promise.resolve(!api.unavailable), probeIntervalMs: 50 });
    try {
      const { rec: r, lines } = recorder({ recovery, maxRetained: 3 });
      api.setAvailable(false);
      for (let i = 0; i < 8; i++) r.record(occur(i, 1000 + i));
      await until(() => r.stats.retaining + r.stats.retryDropped === 8);
      api.setAvailable(true);
      await until(() => r.stats.retried === 3);
      const names = (await events()).map((e) => e.metadata?.name).sort();
      expect([
        r.stats.retryDropped,
        names,
        lines.filter((l) => l.startsWith('events kept for a retry over their bound')).length,
      ]).toEqual([5, ['agent-x.10055', 'agent-x.10066', 'agent-x.10077'], 1]);
    } finally {
      recovery.close();
    }
  });

  test('K.1 retries take tokens of the same bucket: after the outage no more Events than the bucket allows', async () => {
    const recovery = new ApiRecovery({ probe: () => Promise.resolve(!api.unavailable), probeIntervalMs: 50 });
    try {
      rec = new KubeEventRecorder({
        api: core,
        nodeName: 'node-a',
        podName: 'agent-x',
        perInterval: 3,
        intervalMs: 60_000, // no token comes back during the test
        backoff: { initialMs: 60_000, maxMs: 60_000, recovery },
      });
      const r = rec;
      api.setAvailable(false);
      r.record(occur(1, 1001)); // takes one token, fails
      await until(() => r.stats.retaining === 1);
      api.setAvailable(true);
      await until(() => r.stats.retried === 1); // the retry takes the second token
      r.record(occur(2, 1002)); // the third
      r.record(occur(3, 1003)); // waits for a token (one may wait)
      r.record(occur(4, 1004)); // over the bucket: counted for the summary, not created
      await until(() => r.stats.created === 2 && r.stats.limited === 1);
      await new Promise((res) => setTimeout(res, 100));
      expect((await events()).length).toBe(2);
    } finally {
      recovery.close();
    }
  });

  test('issue [R] 1: an Event refused (422 here, as a 403 of a policy) is kept for a retry, counted, logged once', async () => {
    const { rec: r, lines } = recorder();
    r.record({ ...occur(1, 1001), nameSuffix: 'Not_A_Valid_Name' }); // 422 from the stand-in's name check
    r.record({ ...occur(2, 1002), nameSuffix: 'Also_Invalid' });
    await until(() => r.stats.refused === 2);
    await new Promise((res) => setTimeout(res, 100));
    expect([
      r.stats.retaining,
      r.stats.failed,
      lines.filter((l) => l.startsWith('event refused by the API server')).length,
    ]).toEqual([2, 0, 1]);
  });

  test('issue [R] 1: a refused Event goes to the back of the retry queue, so it cannot hold the others back', async () => {
    const refusedNames = new Set<string>();
    let calls = 0;
    const picky: Pick<k8s.CoreV1Api, 'createNamespacedEvent'> = {
      createNamespacedEvent: (p) => {
        calls++;
        const name = p.body.metadata?.name ?? '';
        // everything is refused at first; later only the one event ending in "forever"
        if (calls <= 2 || name.endsWith('forever')) {
          refusedNames.add(name);
          return Promise.reject(Object.assign(new Error('HTTP-Code: 403'), { code: 403 }));
        }
        return core.createNamespacedEvent(p);
      },
    };
    rec = new KubeEventRecorder({
      api: picky,
      nodeName: 'node-a',
      podName: 'agent-x',
      perInterval: 100,
      intervalMs: 1000,
      backoff: { initialMs: 10, maxMs: 20 },
    });
    rec.record({ ...occur(1, 1001), nameSuffix: 'forever' });
    rec.record({ ...occur(2, 1002), nameSuffix: 'later' });
    await until(() => rec!.stats.retried === 1);
    expect((await events()).map((e) => e.metadata?.name)).toEqual(['agent-x.later']);
    expect(rec.stats.retaining).toBe(1);
  });

  test('issue [R] 1: a request the server cannot decode (400) is not retried', async () => {
    const { rec: r } = recorder();
    const bad: Pick<k8s.CoreV1Api, 'createNamespacedEvent'> = {
      createNamespacedEvent: () => Promise.reject(Object.assign(new Error('HTTP-Code: 400'), { code: 400 })),
    };
    await r.close();
    rec = new KubeEventRecorder({ api: bad, nodeName: 'node-a', podName: 'agent-x' });
    rec.record(occur(1, 1001));
    await until(() => rec!.stats.failed === 1);
    expect([rec.stats.retaining, rec.stats.refused]).toEqual([0, 0]);
  });
});

describe('K.1 a refused summary does not spin (issue 12 loose end 2)', () => {
  test('K.1 while an Event waits for a token, the summary of what was limited is scheduled once, not in a loop', async () => {
    let schedules = 0;
    rec = new KubeEventRecorder({
      api: core,
      nodeName: 'node-a',
      podName: 'agent-x',
      perInterval: 1,
      intervalMs: 60_000,
    });
    // Bottleneck's own schedule, counted (the recorder's limiter is private)
    const proto = Bottleneck.prototype as unknown as { schedule: (...a: unknown[]) => Promise<unknown> };
    const orig = proto.schedule;
    proto.schedule = function (this: unknown, ...a: unknown[]): Promise<unknown> {
      schedules++;
      return orig.apply(this, a);
    };
    try {
      for (let i = 0; i < 5; i++) rec.record(occur(i, 1000 + i)); // 1 created, 1 waits for a token, 3 limited
      await new Promise((res) => setTimeout(res, 500));
      expect(schedules).toBeLessThan(20);
    } finally {
      proto.schedule = orig;
    }
  });
});

describe('issue [R] item 1: the Event decodes on a real API server', () => {
  const NOW = Date.UTC(2026, 11, 3, 14, 20, 45, 167);
  test.each([
    ['client-node', () => core],
    ['KubeClient', () => new KubeClient({ server: api.url, token: 'stand-in-token' })],
  ])('through %s: eventTime carries six fractional digits, the metav1.Times whole seconds', async (_, client) => {
    rec = new KubeEventRecorder({ api: client(), nodeName: 'node-a', podName: 'agent-x', now: () => NOW });
    rec.record(occur(3, NOW));
    await until(() => rec!.stats.created + rec!.stats.failed === 1);
    // the raw JSON the stand-in stores (client-node would turn the times into Dates)
    const list = (await (await fetch(`${api.url}/api/v1/namespaces/kube-system/events`)).json()) as {
      items: Record<string, unknown>[];
    };
    const e = list.items[0];
    expect([rec.stats.failed, e?.eventTime, e?.firstTimestamp, e?.lastTimestamp]).toEqual([
      0,
      '2026-12-03T14:20:45.167000Z',
      '2026-12-03T14:20:45Z',
      '2026-12-03T14:20:45Z',
    ]);
  });
});
