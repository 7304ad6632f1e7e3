import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { restoreEngine } from '../../src/kube/engine-startup.js';
import { readStartupValues } from '../../src/kube/device-info-publisher.js';
import { verifyDeviceInfoCfg } from '../../src/kube/device-info.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { CM, HBM, KubeHarness, NODE, SEP, until } from './harness.js';

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

/** Separates chip `id` by two HBM occurrences (shipped rule: 2 in 24 h → ManuallySeparateNPU). */
async function separate(id: number): Promise<void> {
  h.cycle([{ logicId: id, code: HBM }]);
  await h.advance(1000);
  h.cycle([{ logicId: id, code: HBM }]);
  await h.advance(1000);
}

async function started(o: { watch?: boolean; api?: k8s.CoreV1Api } = {}): Promise<void> {
  h.makePublisher(o);
  await h.publisher.start();
  await h.settle();
}

describe('G.2 ManuallySeparateNPU written from the engine', () => {
  test('G.2 a chip separated by a FaultFrequency rule is written to ManuallySeparateNPU', async () => {
    await started();
    await separate(3);
    expect((await h.live()).ManuallySeparateNPU).toBe('Ascend910-3');
  });

  test('G.2 separated names are ordered by logic id', async () => {
    await started();
    await separate(5);
    await separate(2);
    expect((await h.live()).ManuallySeparateNPU).toBe('Ascend910-2,Ascend910-5');
  });
});

describe('G.2 operator release', () => {
  test('G.2 deleting a name is noticed through the watch and releases the chip in the engine', async () => {
    await started();
    await separate(3);
    const edits = h.publisher.stats.foreignEdits;
    await h.operatorSets('ManuallySeparateNPU', '');
    await until(() => h.publisher.stats.foreignEdits > edits);
    await h.advance(1000);
    expect(h.separated()).toEqual([]);
  });

  test('G.2 the release is reported by an Event naming the chip and who is assumed to have released it', async () => {
    await started();
    await separate(3);
    const edits = h.publisher.stats.foreignEdits;
    await h.operatorSets('ManuallySeparateNPU', '');
    await until(() => h.publisher.stats.foreignEdits > edits);
    await h.advance(1000);
    const e = h.events.events.find((x) => x.reason === 'ManualSeparationReleased');
    expect(e?.message).toMatch(/^Ascend910-3 \(logic id 3\) released .* assumed by an operator/);
  });

  test('G.2 a released name is not written back', async () => {
    await started();
    await separate(3);
    const edits = h.publisher.stats.foreignEdits;
    await h.operatorSets('ManuallySeparateNPU', '');
    await until(() => h.publisher.stats.foreignEdits > edits);
    await h.advance(1000);
    h.cycle([{ logicId: 1, code: SEP }]); // any later change is written
    await h.advance(1000);
    expect((await h.live()).ManuallySeparateNPU).toBe('');
  });

  test('G.2/K.2 the removed ManuallySeparateNPU reason is reported by one EventReleaseUpgradeFault after the write', async () => {
    await started();
    await separate(3);
    const edits = h.publisher.stats.foreignEdits;
    await h.operatorSets('ManuallySeparateNPU', '');
    await until(() => h.publisher.stats.foreignEdits > edits);
    await h.advance(1000);
    const k2 = h.events.events.filter((x) => x.reason === 'EventReleaseUpgradeFault');
    expect(k2.map((e) => Object.keys(JSON.parse(e.message) as object))).toEqual([['Ascend910-3']]);
  });

  test('G.2 an operator deletion racing an agent write: the 409 is retried on a fresh read and the name is not re-added', async () => {
    await started({ watch: false });
    await separate(3);
    // The next write attempt reads the object; the operator's edit lands between that read and the agent's PUT.
    let raced = false;
    const racing = Object.create(h.core) as k8s.CoreV1Api;
    racing.readNamespacedConfigMap = async (p) => {
      const live = await h.core.readNamespacedConfigMap(p);
      if (!raced) {
        raced = true;
        await h.operatorSets('ManuallySeparateNPU', '');
      }
      return live;
    };
    h.publisher.stop();
    h.makePublisher({ watch: false, api: racing, confirmedManual: 'Ascend910-3' });
    await h.publisher.start();
    await h.settle();
    h.cycle([{ logicId: 1, code: SEP }]);
    await h.advance(1000);
    expect([raced, h.publisher.stats.conflicts >= 1, (await h.live()).ManuallySeparateNPU, h.separated()]).toEqual([
      true,
      true,
      '',
      [],
    ]);
  });
});

describe('G.2 names an operator adds', () => {
  test('G.2 an added name is not adopted and is reported by one Event', async () => {
    await started();
    const edits = h.publisher.stats.foreignEdits;
    await h.operatorSets('ManuallySeparateNPU', 'Ascend910-4');
    await until(() => h.publisher.stats.foreignEdits > edits);
    await h.advance(1000);
    expect([h.separated(), h.events.reasons().filter((r) => r === 'DeviceInfoEditRejected').length]).toEqual([[], 1]);
  });

  test('G.2 an added name disappears with the next write', async () => {
    await started();
    const edits = h.publisher.stats.foreignEdits;
    await h.operatorSets('ManuallySeparateNPU', 'Ascend910-4');
    await until(() => h.publisher.stats.foreignEdits > edits);
    await h.advance(1000);
    expect((await h.live()).ManuallySeparateNPU).toBe('');
  });
});

describe('bad input: a hand-edited device-info ConfigMap', () => {
  test('garbage in ManuallySeparateNPU releases nothing, is reported once naming key and value, and is overwritten', async () => {
    await started();
    await separate(3);
    const edits = h.publisher.stats.foreignEdits;
    await h.operatorSets('ManuallySeparateNPU', 'rubbish!');
    await until(() => h.publisher.stats.foreignEdits > edits);
    await h.advance(1000);
    const rejected = h.events.events.filter((e) => e.reason === 'DeviceInfoEditRejected');
    expect([
      h.separated(),
      rejected.length,
      rejected[0]?.message.includes('ManuallySeparateNPU = "rubbish!"'),
      (await h.live()).ManuallySeparateNPU,
    ]).toEqual([[3], 1, true, 'Ascend910-3']);
  });

  test('invalid JSON in UpgradeFaultReason and DeviceInfoCfg is reported and replaced by a valid ConfigMap', async () => {
    await started();
    await separate(3);
    const edits = h.publisher.stats.foreignEdits;
    await h.core.patchNamespacedConfigMap(
      { name: CM, namespace: 'kube-system', body: { data: { UpgradeFaultReason: '{oops', DeviceInfoCfg: '[' } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await until(() => h.publisher.stats.foreignEdits > edits);
    await h.advance(1000);
    const live = await h.live();
    const keys = h.events.events
      .filter((e) => e.reason === 'DeviceInfoEditRejected')
      .map((e) => e.message.split(' ')[2]);
    expect([keys.sort(), verifyDeviceInfoCfg(live.DeviceInfoCfg!), JSON.parse(live.UpgradeFaultReason!)]).toEqual([
      ['DeviceInfoCfg', 'UpgradeFaultReason'],
      true,
      { 'Ascend910-3': [expect.objectContaining({ fault_level: 'ManuallySeparateNPU' })] },
    ]);
  });
});

describe('H.4 outage', () => {
  test('a 30 s outage with faults arriving meanwhile ends in one write showing the final state', async () => {
    await started();
    const before = api.writeCount({ resource: 'configmaps', name: CM });
    api.setAvailable(false);
    for (let s = 0; s < 30; s++) {
      h.cycle([{ logicId: s % 8, code: SEP, assertion: s % 3 === 2 ? 'recover' : 'occur' }]);
      await h.step(1000);
    }
    h.cycle([{ logicId: 7, code: SEP }]);
    await h.step(1000);
    api.setAvailable(true);
    await h.advance(5000);
    const live = await h.live();
    const expected = h.engine
      .snapshot()
      .filter((v) => v.health === 'Unhealthy')
      .map((v) => v.name)
      .sort()
      .join(',');
    expect([
      api.writeCount({ resource: 'configmaps', name: CM }) - before,
      JSON.parse(live.DeviceInfoCfg!).DeviceInfo.DeviceList['huawei.com/Ascend910-Unhealthy'],
    ]).toEqual([1, expected]);
  });
});

describe('G.3 start-up load', () => {
  test('G.3 a name listed without a reason is adopted at start with an autofill reason, which is written back', async () => {
    await h.core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: { metadata: { name: CM }, data: { ManuallySeparateNPU: 'Ascend910-2', UpgradeFaultReason: '{}' } },
    });
    const live = await readStartupValues(h.core, NODE);
    const r = restoreEngine(h.engine, { persisted: undefined, live: live!, now: h.clock.now(), runMode: 'Ascend910' });
    h.makePublisher({ confirmedManual: r.confirmedManual });
    await h.publisher.start();
    await h.settle();
    expect(JSON.parse((await h.live()).UpgradeFaultReason!)).toEqual({
      'Ascend910-2': [
        {
          upgrade_time: h.clock.now(),
          fault_code: 'AutofillFaultCode',
          fault_level: 'ManuallySeparateNPU',
          upgrade_type: 'FaultAutofill',
        },
      ],
    });
  });

  test('G.3 the start-up read of a missing ConfigMap gives empty values', async () => {
    expect(await readStartupValues(h.core, NODE)).toEqual({
      found: false,
      manuallySeparateNPU: '',
      upgradeFaultReason: '',
    });
  });

  test('G.3 the start-up read while the API server is down gives undefined (never throws)', async () => {
    api.setAvailable(false);
    expect(await readStartupValues(h.core, NODE)).toBeUndefined();
  });
});
