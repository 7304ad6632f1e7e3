import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { exportEngineState, FaultEngine } from '../../src/faults/index.js';
import { ENGINE_STATE_FORMAT, type PersistedState } from '../../src/kube/engine-state-persistence.js';
import { DeviceInfoPublisher, readStartupValues, storeSeparationHost } from '../../src/kube/device-info-publisher.js';
import { verifyDeviceInfoCfg } from '../../src/kube/device-info.js';
import { deviceInfoViewOf } from '../../src/kube/device-info-view.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { shippedPolicy } from '../faults/helpers.js';
import { CM, HBM, KubeHarness, NODE, SEP, T0, tick, until, VIEW } from './harness.js';

const hbm = (logicId: number, timeMs: number) => ({
  logicId,
  code: HBM,
  assertion: 'occur' as const,
  severity: 2,
  timeMs,
});

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

describe('H.4 the content is built when a write can be due, not per change', () => {
  let views: number;

  /** The harness's publisher, counting the builds of the content (one `view()` call each). */
  async function counted(): Promise<void> {
    views = 0;
    h.publisher = new DeviceInfoPublisher({
      api: h.core,
      nodeName: NODE,
      runMode: 'Ascend910',
      view: (now) => {
        views++;
        return deviceInfoViewOf(h.store.snapshot().chips, VIEW, now);
      },
      separation: storeSeparationHost(h.store, 'Ascend910'),
      events: h.events,
      confirmedManual: '',
      clock: h.clock,
    });
    await h.publisher.start();
    await h.settle();
  }

  const writes = (): number => api.writeCount({ resource: 'configmaps', name: CM });
  const unhealthy = async (): Promise<string> =>
    JSON.parse((await h.live()).DeviceInfoCfg!).DeviceInfo.DeviceList['huawei.com/Ascend910-Unhealthy'];

  /** `n` cycles 10 ms apart flapping SeparateNPU on chip 3, each decided on its own (one microtask turn each). */
  async function flap(n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      h.cycle([{ logicId: 3, code: SEP, assertion: i % 2 === 0 ? 'occur' : 'recover' }]);
      await tick();
      h.clock.advance(10);
    }
  }

  test('H.4 51 changes within one write interval build nothing; at its end one build decides and one is written, showing the last state', async () => {
    await counted();
    expect([writes(), await unhealthy()]).toEqual([1, '']);
    const before = views;
    await flap(51); // ends with chip 3 faulty, 510 ms after the first write
    expect(views - before).toBe(0);
    await h.advance(489); // 999 ms after the first write: not yet
    expect([writes(), views - before]).toEqual([1, 0]);
    await h.advance(1); // exactly 1 s after it (H.4 "now - lastWrite < 1 s: wait")
    expect([writes(), await unhealthy()]).toEqual([2, 'Ascend910-3']);
    // the decision's build, the write's build (after the G.2 read) and the comparison after the write
    expect(views - before).toBe(3);
  });

  test('H.4 changes ending in the written state are not written, and the heartbeat stays 5 min after the last write', async () => {
    await counted();
    const before = views;
    await flap(50); // ends with chip 3 healthy again: the same as written
    await h.advance(10_000);
    expect([writes(), views - before]).toEqual([1, 1]);
    await h.advance(5 * 60_000 - 10_500 - 1);
    expect(writes()).toBe(1);
    await h.advance(1);
    expect(writes()).toBe(2);
  });

  test('H.4 a change after a quiet second is written at once, and the next one exactly 1 s later', async () => {
    await counted();
    await h.advance(5000);
    const t0 = h.clock.now();
    h.cycle([{ logicId: 3, code: SEP }]);
    await h.settle();
    expect([writes(), await unhealthy()]).toEqual([2, 'Ascend910-3']);
    h.cycle([{ logicId: 5, code: SEP }]);
    await h.settle();
    await h.advance(999);
    expect(writes()).toBe(2);
    await h.advance(1);
    expect([writes(), h.clock.now() - t0, await unhealthy()]).toEqual([3, 1000, 'Ascend910-3,Ascend910-5']);
  });
});

describe('issue [P] item 5: a write due at its timer starts in the output lane', () => {
  test('H.4 the write due at the end of the minimum interval waits for `defer` to run it', async () => {
    const lane: (() => void)[] = [];
    h.publisher = new DeviceInfoPublisher({
      api: h.core,
      nodeName: NODE,
      runMode: 'Ascend910',
      view: (now) => deviceInfoViewOf(h.store.snapshot().chips, VIEW, now),
      separation: storeSeparationHost(h.store, 'Ascend910'),
      events: h.events,
      confirmedManual: '',
      clock: h.clock,
      defer: (run) => lane.push(run),
    });
    await h.publisher.start();
    await h.settle();
    const writes = (): number => api.writeCount({ resource: 'configmaps', name: CM });
    h.cycle([{ logicId: 3, code: SEP }]); // within the first write's second: due at its end
    await h.settle();
    await h.advance(1000);
    const held = [writes(), lane.length];
    for (const run of lane.splice(0)) run();
    await h.settle();
    expect([held, writes()]).toEqual([[1, 1], 2]);
  });
});

describe('G.3 start-up load', () => {
  test('G.3 a name listed without a reason is adopted at start with an autofill reason, which is written back', async () => {
    await h.core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: { metadata: { name: CM }, data: { ManuallySeparateNPU: 'Ascend910-2', UpgradeFaultReason: '{}' } },
    });
    const live = await readStartupValues(h.core, NODE);
    const r = h.store.restore(live!);
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

describe('H.4 own writes recognised in either watch order (issue 12 item 1)', () => {
  const writes = (): number => api.writeCount({ resource: 'configmaps', name: CM });
  /** `seconds` of fake time, one second at a time, letting watch events arrive (real time) in between. */
  async function idle(seconds: number): Promise<void> {
    for (let s = 0; s < seconds; s++) {
      await new Promise((r) => setTimeout(r, 20));
      await h.advance(1000);
    }
  }

  test('H.4 a change while the first write finds no ConfigMap: one CREATE and no second write within the second', async () => {
    const changing = Object.create(h.core) as k8s.CoreV1Api;
    changing.readNamespacedConfigMap = async (p) => {
      h.publisher.changed(); // a cycle while the attempt runs
      return h.core.readNamespacedConfigMap(p);
    };
    await started({ api: changing });
    await new Promise((r) => setTimeout(r, 50));
    await h.settle();
    expect(writes()).toBe(1);
  });

  for (const order of ['watch-first', 'response-first'] as const) {
    test(`H.4 an idle publisher writes once in 30 s when the API server delivers the ${order}`, async () => {
      api.setWatchOrder(order);
      await started();
      await idle(30);
      expect([writes(), h.publisher.stats.foreignEdits]).toEqual([1, 0]);
    });

    test(`H.4 an idle publisher writes only the 5-minute heartbeat in 10 min when the API server delivers the ${order}`, async () => {
      api.setWatchOrder(order);
      await started();
      for (let i = 0; i < 20; i++) {
        await new Promise((r) => setTimeout(r, 20)); // the watch events of the last write arrive
        await h.advance(30_000);
      }
      await idle(1);
      expect([writes(), h.publisher.stats.foreignEdits]).toEqual([3, 0]);
    });

    test(`G.2 an operator deletion landing just after our write is seen when the API server delivers the ${order}`, async () => {
      api.setWatchOrder(order);
      // The operator's edit is committed 10 ms after the agent's write that carries Ascend910-3, before (watch-first)
      // or after (response-first) the agent has the write's response.
      let raced = false;
      const racing = Object.create(h.core) as k8s.CoreV1Api;
      racing.replaceNamespacedConfigMap = async (p) => {
        const pending = h.core.replaceNamespacedConfigMap(p);
        if (!raced && p.body.data?.ManuallySeparateNPU === 'Ascend910-3') {
          raced = true;
          await new Promise((r) => setTimeout(r, 10));
          await h.operatorSets('ManuallySeparateNPU', '');
        }
        return pending;
      };
      await started({ api: racing });
      await separate(3);
      await idle(3);
      expect([raced, h.separated(), (await h.live()).ManuallySeparateNPU, h.publisher.stats.operatorReleases]).toEqual([
        true,
        [],
        '',
        1,
      ]);
    });
  }
});

describe('bad input: operator values up to the 1 MiB ConfigMap limit (issue 12 item 4)', () => {
  /** Log lines as pino would write them (one JSON object each). */
  let lines: string[];

  /** The harness's publisher with a logger that keeps the lines. */
  async function logged(): Promise<void> {
    lines = [];
    const log = (obj: object | string, msg?: string): void => {
      lines.push(JSON.stringify(typeof obj === 'string' ? { msg: obj } : { ...obj, msg }));
    };
    h.publisher = new DeviceInfoPublisher({
      api: h.core,
      watch: api.kubeConfig(),
      nodeName: NODE,
      runMode: 'Ascend910',
      view: (now) => deviceInfoViewOf(h.store.snapshot().chips, VIEW, now),
      separation: storeSeparationHost(h.store, 'Ascend910'),
      events: h.events,
      confirmedManual: '',
      clock: h.clock,
      logger: { debug: log, info: log, warn: log, error: log },
    });
    await h.publisher.start();
    await h.settle();
  }

  /** An operator edit, then the forced write 1 s later. */
  async function operatorEdit(key: string, value: string): Promise<void> {
    const edits = h.publisher.stats.foreignEdits;
    await h.operatorSets(key, value);
    await until(() => h.publisher.stats.foreignEdits > edits);
    await h.advance(1000);
  }

  const unhealthy = async (): Promise<string> =>
    JSON.parse((await h.live()).DeviceInfoCfg!).DeviceInfo.DeviceList['huawei.com/Ascend910-Unhealthy'];

  test('"x," × 200000 in ManuallySeparateNPU: writes go on, a new fault reaches the ConfigMap, nothing is released', async () => {
    await logged();
    await separate(3);
    await operatorEdit('ManuallySeparateNPU', 'x,'.repeat(200_000));
    h.cycle([{ logicId: 6, code: SEP }]);
    await h.advance(1000);
    expect([
      h.publisher.stats.rejected,
      await unhealthy(),
      h.separated(),
      (await h.live()).ManuallySeparateNPU,
    ]).toEqual([0, 'Ascend910-3,Ascend910-6', [3], 'Ascend910-3']);
  });

  const HUGE: [string, string][] = [
    ['ManuallySeparateNPU', 'x,'.repeat(520_000)],
    ['ManuallySeparateNPU', 'Ascend910-\u00e9\u{1F600}'.repeat(60_000)],
    ['UpgradeFaultReason', `{"Ascend910-1":[${'{"fault_level":"x","upgrade_type":"y"},'.repeat(25_000)}{}]}`],
    ['UpgradeFaultReason', `{"${'k'.repeat(1_000_000)}":[]}`],
    ['DeviceInfoCfg', '['.repeat(1_000_000)],
  ];
  for (const [key, value] of HUGE) {
    test(`a ${value.length}-character ${key} is rejected by one Event of at most 1 KiB and one log line under 2 KiB`, async () => {
      await logged();
      await operatorEdit(key, value);
      const rejected = h.events.events.filter((e) => e.reason === 'DeviceInfoEditRejected');
      const line = lines.find((l) => l.includes('hand-edited value not used')) ?? '';
      expect([
        rejected.length,
        Buffer.byteLength(rejected[0]?.message ?? '') <= 1024,
        line.includes(key),
        Buffer.byteLength(line) < 2048,
      ]).toEqual([1, true, true, true]);
    });
  }
});

describe('H.4 shutdown flush (issue 12 loose end 1)', () => {
  const writes = (): number => api.writeCount({ resource: 'configmaps', name: CM });
  const unhealthy = async (): Promise<string> =>
    JSON.parse((await h.live()).DeviceInfoCfg!).DeviceInfo.DeviceList['huawei.com/Ascend910-Unhealthy'];

  test('H.4 flush writes a change still waiting for the end of the 1 s spacing, without the clock moving', async () => {
    await started();
    h.cycle([{ logicId: 3, code: SEP }]); // within 1 s of the first write: waits for the spacing
    await h.settle();
    expect([writes(), await unhealthy()]).toEqual([1, '']);
    await h.publisher.flush();
    expect([writes(), await unhealthy()]).toEqual([2, 'Ascend910-3']);
  });

  test('H.4 flush writes a change noted while a write was in flight', async () => {
    // chip 5 fails after the content of the write of chip 3 was built, while its PUT runs
    let during: (() => void) | undefined;
    const racing = Object.create(h.core) as k8s.CoreV1Api;
    racing.replaceNamespacedConfigMap = async (p) => {
      during?.();
      during = undefined;
      return h.core.replaceNamespacedConfigMap(p);
    };
    await started({ api: racing });
    await h.advance(5000);
    during = () => h.cycle([{ logicId: 5, code: SEP }]);
    h.cycle([{ logicId: 3, code: SEP }]); // a quiet second before: written at once
    await tick();
    await h.publisher.flush();
    expect([writes(), await unhealthy()]).toEqual([3, 'Ascend910-3,Ascend910-5']);
  });

  test('H.4 flush without a change writes nothing (the heartbeat is not due)', async () => {
    await started();
    await h.advance(2000);
    await h.publisher.flush();
    expect(writes()).toBe(1);
  });
});

describe('G.3 late start-up load takes exactly what the restore confirmed (issue 12 loose end 4)', () => {
  test('G.3 garbage read late over a state file: a chip separated after our last write is not taken as written, and a clean edit later does not release it', async () => {
    // The previous run separated chips 3 and 6, but its last successful write carried only chip 3.
    const before = new FaultEngine(shippedPolicy(), {
      chips: Array.from({ length: 8 }, (_, i) => ({ logicId: i, phyId: i })),
    });
    for (const id of [3, 6]) {
      for (let k = 0; k < 2; k++) before.cycle({ now: T0 + k * 1000, events: [hbm(id, T0 + k * 1000)] });
    }
    const persisted: PersistedState = {
      format: ENGINE_STATE_FORMAT,
      savedAtMs: T0,
      nodeName: NODE,
      confirmedManual: 'Ascend910-3',
      engine: exportEngineState(before),
    };
    // While the agent was down an operator typed garbage; at start the read failed (no confirmedManual).
    await h.core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: { metadata: { name: CM }, data: { ManuallySeparateNPU: 'garbage', UpgradeFaultReason: '{}' } },
    });
    let failed = false;
    const flaky = Object.create(h.core) as k8s.CoreV1Api;
    flaky.replaceNamespacedConfigMap = async (p) => {
      if (!failed) {
        failed = true; // the first write after the late load does not get through
        throw Object.assign(new Error('service unavailable'), { code: 503 });
      }
      return h.core.replaceNamespacedConfigMap(p);
    };
    h.publisher = new DeviceInfoPublisher({
      api: flaky,
      watch: api.kubeConfig(),
      nodeName: NODE,
      runMode: 'Ascend910',
      view: (now) => deviceInfoViewOf(h.store.snapshot().chips, VIEW, now),
      separation: storeSeparationHost(h.store, 'Ascend910'),
      events: h.events,
      lateStartup: (v) => {
        h.persisted = persisted;
        return h.store.restore(v);
      },
      clock: h.clock,
      backoff: { initialMs: 500, maxMs: 4000, jitter: 0 },
      random: () => 0.5,
    });
    await h.publisher.start();
    await until(() => failed && h.publisher.stats.failures === 1); // its retry waits 500 ms of the fake clock
    const confirmed = h.publisher.confirmedManualSeparation();
    // The operator replaces the garbage by a clean value naming the one chip they could have seen.
    await h.operatorSets('ManuallySeparateNPU', 'Ascend910-3');
    await h.advance(1000);
    await h.advance(1000);
    expect([failed, confirmed, h.separated(), (await h.live()).ManuallySeparateNPU]).toEqual([
      true,
      'Ascend910-3',
      [3, 6],
      'Ascend910-3,Ascend910-6',
    ]);
  });
});
