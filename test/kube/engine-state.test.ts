import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FaultEngine } from '../../src/faults/index.js';
import { readStartupValues } from '../../src/kube/device-info-publisher.js';
import { restoreEngine } from '../../src/state/restore.js';
import { EngineStatePersistence } from '../../src/kube/engine-state-persistence.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { shippedPolicy } from '../faults/helpers.js';
import { HBM, KubeHarness, NODE, until } from './harness.js';

let api: KubeApiStandIn;
let dir: string;

beforeEach(async () => {
  api = await KubeApiStandIn.start();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-state-'));
});

afterEach(async () => {
  await api.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const newEngine = (): FaultEngine =>
  new FaultEngine(shippedPolicy(), { chips: Array.from({ length: 8 }, (_, i) => ({ logicId: i, phyId: i })) });

/** First life: chip 3 separated, chip 5 one HBM occurrence short of its threshold; state saved; layer stopped. */
async function firstLife(): Promise<{ persistence: EngineStatePersistence; h: KubeHarness }> {
  const h = new KubeHarness(api);
  h.makePublisher();
  await h.publisher.start();
  await h.settle();
  h.cycle([{ logicId: 3, code: HBM }]);
  await h.advance(1000);
  h.cycle([
    { logicId: 3, code: HBM },
    { logicId: 5, code: HBM },
  ]);
  await h.advance(1000);
  const persistence = new EngineStatePersistence({ dir, nodeName: NODE, now: () => h.clock.now() });
  await persistence.save(persistence.capture(h.store, h.publisher.confirmedManualSeparation()));
  h.publisher.stop();
  return { persistence, h };
}

/** Second life: a new store and publisher restored from the state file and the live ConfigMap. */
async function secondLife(first: KubeHarness): Promise<{ h: KubeHarness; source: string; released: number[] }> {
  const h = new KubeHarness(api, { engine: newEngine() });
  h.clock.advance(first.clock.now() + 10_000 - h.clock.now());
  h.persisted = new EngineStatePersistence({ dir, nodeName: NODE }).load();
  const live = await readStartupValues(h.core, NODE);
  const r = h.store.restore(live!);
  h.makePublisher({ confirmedManual: r.confirmedManual });
  await h.publisher.start();
  await h.settle();
  return { h, source: r.source, released: r.releasedWhileDown };
}

describe('restart of the kube layer with a separation and a half-reached threshold in flight', () => {
  test('the separation survives the restart', async () => {
    const { h: first } = await firstLife();
    const { h, source } = await secondLife(first);
    expect([source, h.separated(), (await h.live()).ManuallySeparateNPU]).toEqual(['state-file', [3], 'Ascend910-3']);
  });

  test('a half-reached frequency threshold is not forgotten: one more occurrence separates the chip', async () => {
    const { h: first } = await firstLife();
    const { h } = await secondLife(first);
    h.cycle([{ logicId: 5, code: HBM }]);
    expect(h.separated()).toEqual([3, 5]);
  });

  test('the restart does not count an occurrence twice', async () => {
    const { h: first } = await firstLife();
    const { h } = await secondLife(first);
    h.cycle();
    expect(h.separated()).toEqual([3]);
  });

  test('G.2 a name deleted while the agent was down releases the chip at start', async () => {
    const { h: first } = await firstLife();
    await first.operatorSets('ManuallySeparateNPU', '');
    const { h, released } = await secondLife(first);
    expect([released, h.separated()]).toEqual([[3], []]);
  });

  test('G.3 a name added while the agent was down is adopted at start with an autofill reason', async () => {
    const { h: first } = await firstLife();
    await first.operatorSets('ManuallySeparateNPU', 'Ascend910-3,Ascend910-6');
    const { h } = await secondLife(first);
    expect([h.separated(), h.engine.chipView(6)?.reasons.map((r) => r.upgrade_type)]).toEqual([
      [3, 6],
      ['FaultAutofill'],
    ]);
  });

  test('without a state file the start is upstream G.3 (from the ConfigMap)', async () => {
    const { h: first } = await firstLife();
    fs.rmSync(path.join(dir, 'engine-state.json'));
    const { h, source } = await secondLife(first);
    expect([source, h.separated()]).toEqual(['configmap', [3]]);
  });
});

describe('state file', () => {
  test('the state file is written with mode 0600 and no temporary file is left', async () => {
    const { persistence } = await firstLife();
    expect([(fs.statSync(persistence.file).mode & 0o777).toString(8), fs.readdirSync(dir)]).toEqual([
      '600',
      ['engine-state.json'],
    ]);
  });

  test('a corrupt state file is logged, moved aside and not used (no throw)', () => {
    fs.writeFileSync(path.join(dir, 'engine-state.json'), '{"format": "ascend-npu-agent/engine-st');
    const p = new EngineStatePersistence({ dir, nodeName: NODE, now: () => 42 });
    expect([p.load(), fs.readdirSync(dir)]).toEqual([undefined, ['engine-state.json.corrupt-42']]);
  });

  test('a state file larger than the limit is not read', () => {
    fs.writeFileSync(path.join(dir, 'engine-state.json'), 'x'.repeat(2000));
    expect(new EngineStatePersistence({ dir, nodeName: NODE, maxBytes: 1000 }).load()).toBeUndefined();
  });

  test('a state file of another node is not used', async () => {
    await firstLife();
    expect(new EngineStatePersistence({ dir, nodeName: 'node-b' }).load()).toBeUndefined();
  });

  test('a state file the engine refuses falls back to the ConfigMap start', () => {
    const engine = newEngine();
    const r = restoreEngine(engine, {
      persisted: {
        confirmedManual: null,
        engine: { version: 999 } as never,
      },
      live: { found: true, manuallySeparateNPU: 'Ascend910-1', upgradeFaultReason: '{}' },
      now: 1,
      runMode: 'Ascend910',
    });
    expect([r.source, engine.manuallySeparated()]).toEqual(['configmap', [1]]);
  });
});

describe('G.2/G.3 bad input typed while the agent was down releases nothing (issue 12 item 3)', () => {
  /** First life with chips 3 and 5 separated and written; state saved; layer stopped. */
  async function separatedLife(): Promise<KubeHarness> {
    const h = new KubeHarness(api);
    h.makePublisher();
    await h.publisher.start();
    await h.settle();
    for (let i = 0; i < 2; i++) {
      h.cycle([
        { logicId: 3, code: HBM },
        { logicId: 5, code: HBM },
      ]);
      await h.advance(1000);
    }
    const persistence = new EngineStatePersistence({ dir, nodeName: NODE, now: () => h.clock.now() });
    await persistence.save(persistence.capture(h.store, h.publisher.confirmedManualSeparation()));
    h.publisher.stop();
    return h;
  }

  const BAD = [
    'garbage',
    'Ascend910-3;Ascend910-5',
    'ascend910-3,ascend910-5',
    'Ascend910-3,Ascend910-99',
    'Ascend910-3,',
    'x,'.repeat(200_000),
  ];

  for (const bad of BAD) {
    const label = bad.length > 40 ? `"x," × 200000` : JSON.stringify(bad);
    test(`G.2 ${label} typed while down: nothing released at start, and the separations are written over it`, async () => {
      const first = await separatedLife();
      await first.operatorSets('ManuallySeparateNPU', bad);
      const { h, released } = await secondLife(first);
      expect([released, h.separated(), (await h.live()).ManuallySeparateNPU]).toEqual([
        [],
        [3, 5],
        'Ascend910-3,Ascend910-5',
      ]);
    });
  }

  test('G.2 the rejected value is reported by one DeviceInfoEditRejected Event at the first write', async () => {
    const first = await separatedLife();
    await first.operatorSets('ManuallySeparateNPU', 'Ascend910-3;Ascend910-5');
    const { h } = await secondLife(first);
    const rejected = h.events.events.filter((e) => e.reason === 'DeviceInfoEditRejected');
    expect([rejected.length, rejected[0]?.message.includes('"Ascend910-3;Ascend910-5"')]).toEqual([1, true]);
  });

  test('G.2 the rejection is among the start-up problems (logged by the agent)', async () => {
    const first = await separatedLife();
    await first.operatorSets('ManuallySeparateNPU', 'garbage');
    const h = new KubeHarness(api, { engine: newEngine() });
    const persisted = new EngineStatePersistence({ dir, nodeName: NODE }).load();
    const live = await readStartupValues(h.core, NODE);
    const r = restoreEngine(h.engine, { persisted, live: live!, now: h.clock.now(), runMode: 'Ascend910' });
    expect(
      r.problems.filter((p) => p.startsWith('ManuallySeparateNPU "garbage" of the live ConfigMap not used')),
    ).toHaveLength(1);
  });

  test('G.2 the start-up problem of a 1 MiB rejected value is one log line of at most 1 KiB of JSON text', async () => {
    const first = await separatedLife();
    await first.operatorSets('ManuallySeparateNPU', '\u0001,'.repeat(400_000));
    const h = new KubeHarness(api, { engine: newEngine() });
    const persisted = new EngineStatePersistence({ dir, nodeName: NODE }).load();
    const live = await readStartupValues(h.core, NODE);
    const r = restoreEngine(h.engine, { persisted, live: live!, now: h.clock.now(), runMode: 'Ascend910' });
    expect(r.problems.map((p) => Buffer.byteLength(JSON.stringify(p)) <= 1026)).toEqual([true]);
  });

  test('G.2 a release typed cleanly after rejected garbage still releases the chip', async () => {
    const first = await separatedLife();
    await first.operatorSets('ManuallySeparateNPU', 'garbage');
    const { h } = await secondLife(first);
    const edits = h.publisher.stats.foreignEdits;
    await h.operatorSets('ManuallySeparateNPU', 'Ascend910-3');
    await until(() => h.publisher.stats.foreignEdits > edits);
    await h.advance(1000);
    expect([h.separated(), (await h.live()).ManuallySeparateNPU]).toEqual([[3], 'Ascend910-3']);
  });

  test('G.3 without a state file, garbage typed while down keeps the separations its UpgradeFaultReason records', async () => {
    const first = await separatedLife();
    fs.rmSync(path.join(dir, 'engine-state.json'));
    await first.operatorSets('ManuallySeparateNPU', 'ascend910-3,ascend910-5');
    const { h, source } = await secondLife(first);
    expect([source, h.separated(), (await h.live()).ManuallySeparateNPU]).toEqual([
      'configmap',
      [3, 5],
      'Ascend910-3,Ascend910-5',
    ]);
  });

  test('G.2 the ConfigMap deleted while down releases nothing: the separations are written into a new object', async () => {
    const first = await separatedLife();
    await first.core.deleteNamespacedConfigMap({ name: `mindx-dl-deviceinfo-${NODE}`, namespace: 'kube-system' });
    const { h, released } = await secondLife(first);
    expect([released, h.separated(), (await h.live()).ManuallySeparateNPU]).toEqual([
      [],
      [3, 5],
      'Ascend910-3,Ascend910-5',
    ]);
  });

  test('G.2 a clean deletion typed while down still releases the chip', async () => {
    const first = await separatedLife();
    await first.operatorSets('ManuallySeparateNPU', 'Ascend910-5');
    const { h, released } = await secondLife(first);
    expect([released, h.separated()]).toEqual([[3], [5]]);
  });
});
