import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { faultEvent, releaseUpgradeFaultEvent, transitionEvents } from '../../src/kube/agent-events.js';
import { KubeEventRecorder } from '../../src/kube/event-recorder.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
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
