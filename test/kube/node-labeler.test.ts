import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { buildDeviceList, type DeviceInfoChip, type DeviceInfoView } from '../../src/kube/device-info.js';
import {
  LABEL_NETWORK_RECOVER,
  LABEL_RECOVER,
  NodeLabeler,
  nodeLabelsOf,
  type BaseDeviceInfo,
  type NodeLabelFacts,
  type NodeLabelerOptions,
  type StowingChip,
} from '../../src/kube/node-labeler.js';
import { ApiRecovery, type QueueClock } from '../../src/kube/write-queue.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { FakeClock, NODE, until } from './harness.js';

const FACTS: NodeLabelFacts = {
  chipKind: 'Ascend910B',
  chipName: '910B3',
  driverVersion: '24.1.rc2',
  aiCoreCount: 20,
  realCardType: 'Ascend910B',
  hbmMb: 65536,
  boardId: 0x22,
  productTypes: [],
  superPodId: -2,
  serverIndex: -2,
};

const CHIPS: BaseDeviceInfo[] = [
  { name: 'Ascend910-0', ip: '192.168.1.10', superDeviceId: 0 },
  { name: 'Ascend910-1', ip: '192.168.1.11', superDeviceId: 0 },
];

/** A clock whose timers fire on the next turn of the event loop (retry pauses without real waiting). */
class ImmediateClock implements QueueClock {
  sleeps: number[] = [];
  now(): number {
    return 0;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    this.sleeps.push(ms);
    return setImmediate(fn);
  }
  clearTimeout(h: unknown): void {
    clearImmediate(h as NodeJS.Immediate);
  }
}

const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

let api: KubeApiStandIn;
let core: k8s.CoreV1Api;
let labeler: NodeLabeler | undefined;

beforeEach(async () => {
  api = await KubeApiStandIn.start();
  core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
  await core.createNode({ body: { metadata: { name: NODE, labels: { existing: 'x' } } } });
});

afterEach(async () => {
  labeler?.stop();
  labeler = undefined;
  await api.stop();
});

function make(o: Partial<NodeLabelerOptions> = {}, chips: () => BaseDeviceInfo[] = () => CHIPS): NodeLabeler {
  labeler = new NodeLabeler({
    api: core,
    nodeName: NODE,
    facts: FACTS,
    baseDeviceInfos: chips,
    clock: new ImmediateClock(),
    ...o,
  });
  return labeler;
}

async function node(): Promise<k8s.V1Node> {
  return core.readNode({ name: NODE });
}

async function setLabel(key: string, value: string | null): Promise<void> {
  await core.patchNode({ name: NODE, body: { metadata: { labels: { [key]: value } } } }, MERGE);
}

const chip = (id: number, health = 'Healthy', networkHealth = 'Healthy'): StowingChip =>
  ({ logicId: id, phyId: id, health, networkHealth }) as StowingChip;

function viewChip(id: number, networkHealth: 'Healthy' | 'Unhealthy' = 'Healthy'): DeviceInfoChip {
  const empty = { level: 'NormalNPU' as const, codes: [] };
  return {
    logicId: id,
    name: `Ascend910-${id}`,
    health: 'Healthy',
    networkHealth,
    podUsed: false,
    chipFaults: empty,
    networkFaults: empty,
    reasons: [],
    manuallySeparated: false,
  };
}

function listOf(l: NodeLabeler, chips: DeviceInfoChip[]): Record<string, string> {
  const view: DeviceInfoView = {
    runMode: 'Ascend910',
    resourceName: 'huawei.com/Ascend910',
    chips,
    superPodId: -2,
    serverIndex: -2,
    updateTimeSec: 0,
  };
  return buildDeviceList(l.applyToView(view));
}

describe('I.1 node labels at start', () => {
  test('I.1 the start-up labels of a 910B node are written', async () => {
    await make().start();
    expect((await node()).metadata?.labels).toMatchObject({
      'node.kubernetes.io/npu.chip.name': '910B3',
      'huawei.com/driver.version': '24.1.rc2',
      servertype: 'Ascend910B-20',
      'mind-cluster/npu-chip-memory': '64G',
      accelerator: 'huawei-Ascend910',
      existing: 'x',
    });
  });

  test('I.1 the patch uses the merge-patch content type', async () => {
    await make().start();
    const patches = api.requests({ verb: 'patch', resource: 'nodes' });
    expect(patches.map((r) => r.contentType)).toEqual(['application/merge-patch+json']);
  });

  test('I.1 servertype is not overwritten when present (not A5)', async () => {
    await setLabel('servertype', 'Custom-1');
    await make().start();
    expect((await node()).metadata?.labels?.servertype).toBe('Custom-1');
  });

  test('I.1 servertype is always written on A5', () => {
    const plan = nodeLabelsOf({ ...FACTS, chipKind: 'Ascend910A5' }, { servertype: 'Custom-1' });
    expect(plan.labels.servertype).toBe('npu-20');
  });

  test('I.1 a value outside the label pattern is skipped and logged with label and value', async () => {
    const lines: string[] = [];
    const logger = {
      debug: () => undefined,
      info: () => undefined,
      error: () => undefined,
      warn: (o: object | string, m?: string) => lines.push(typeof o === 'string' ? o : `${m}`),
    };
    await make({ facts: { ...FACTS, driverVersion: 'bad version!' }, logger }).start();
    expect((await node()).metadata?.labels?.['huawei.com/driver.version']).toBeUndefined();
    expect(lines.some((l) => l.includes('huawei.com/driver.version') && l.includes('bad version!'))).toBe(true);
  });

  test('I.1 accelerator-type is card-910b-infer on 910B boards 0x28/0x29', () => {
    expect(nodeLabelsOf({ ...FACTS, boardId: 0x29 }).labels['accelerator-type']).toBe('card-910b-infer');
  });

  test('I.1 infer-card-type is card-300i-duo when every product is an Atlas 300I Duo', () => {
    const f: NodeLabelFacts = { ...FACTS, chipKind: 'Ascend310P', productTypes: ['Atlas 300I Duo'] };
    expect(nodeLabelsOf(f).labels).toMatchObject({
      'infer-card-type': 'card-300i-duo',
      accelerator: 'huawei-Ascend310P',
    });
  });

  test('I.1 the super-pod label is written on 910A3 with a super-pod id >= 0', () => {
    expect(nodeLabelsOf({ ...FACTS, chipKind: 'Ascend910A3', superPodId: 7 }).labels).toMatchObject({
      'huawei.com/topotree.superpodid': '7',
    });
  });
});

describe('A.2 step 5.7 start-up patch failure (issue [R] item 1: not fatal)', () => {
  /** client-node's CoreV1Api whose Node patches are refused with `status` while `refusing()`. */
  const refusing = (status: number, on: () => boolean): NodeLabelerOptions['api'] => ({
    readNode: (p) => core.readNode(p),
    listNode: (p) => core.listNode(p),
    patchNode: (p, o) =>
      on() ? Promise.reject(Object.assign(new Error(`HTTP-Code: ${status}`), { code: status })) : core.patchNode(p, o),
  });

  test('issue [R] 1: refused after its 3 tries 1 s apart, start() resolves; the patch is retried with a backoff until written', async () => {
    let refuse = true;
    const refused: (number | undefined)[] = [];
    const clock = new ImmediateClock();
    labeler = make({ clock, api: refusing(403, () => refuse), onRefused: (s) => refused.push(s) });
    expect(await labeler.start()).toBe(false);
    expect([labeler.stats.setUp, refused, clock.sleeps.slice(0, 2)]).toEqual([false, [403, 403, 403], [1000, 1000]]);
    // the background retry: exponential backoff (500 ms first, ±20 %), not the 1 s pause of the start-up tries
    expect(clock.sleeps[2]).toBeGreaterThanOrEqual(400);
    expect(clock.sleeps[2]).toBeLessThanOrEqual(600);
    await until(() => refused.length >= 5);
    refuse = false;
    await until(() => labeler!.stats.setUp);
    expect((await node()).metadata?.labels?.['node.kubernetes.io/npu.chip.name']).toBe('910B3');
    expect(labeler.stats.setUpRetries).toBeGreaterThanOrEqual(3);
  });

  test('issue [R] 1: an API server that does not answer is retried the same way (no exit)', async () => {
    api.setAvailable(false);
    const refused: (number | undefined)[] = [];
    labeler = make({ clock: new ImmediateClock(), onRefused: (s) => refused.push(s) });
    expect(await labeler.start()).toBe(false);
    expect(refused.slice(0, 3)).toEqual([undefined, undefined, undefined]); // readNode fails first: no patch sent
    api.setAvailable(true);
    await until(() => labeler!.stats.setUp);
  });

  test('issue [R] 1: the Recover labels wait for the start-up patch (they start from the live labels it read)', async () => {
    let refuse = true;
    const clock = new FakeClock();
    labeler = make({ clock, autoStowing: false, tries: 1, api: refusing(422, () => refuse) });
    await labeler.start();
    refuse = false; // the background retry has not run yet (its timer is on the fake clock)
    await labeler.cycle([{ logicId: 0, phyId: 0, health: 'Unhealthy', networkHealth: 'Healthy' }]);
    expect(api.requests({ verb: 'patch', resource: 'nodes' })).toEqual([]);
    clock.advance(1000); // the retry writes the start-up labels; cycles run from then on
    await until(() => labeler!.stats.setUp);
  });
});

describe('I.2 node annotations', () => {
  test('I.2 the start-up annotations are written (baseDeviceInfos in Go JSON)', async () => {
    await make().start();
    expect((await node()).metadata?.annotations).toMatchObject({
      baseDeviceInfos:
        '{"Ascend910-0":{"IP":"192.168.1.10","SuperDeviceID":0},"Ascend910-1":{"IP":"192.168.1.11","SuperDeviceID":0}}',
      superPodID: '-2',
      serverIndex: '-2',
      serverType: '',
    });
  });

  test('I.2 the refresher re-writes baseDeviceInfos when a device IP changed', async () => {
    let chips = CHIPS;
    const clock = new FakeClock();
    const l = make({ clock }, () => chips);
    await l.start();
    chips = [{ ...CHIPS[0]!, ip: '192.168.1.99' }, CHIPS[1]!];
    expect(await l.refresh()).toBe(true);
    expect((await node()).metadata?.annotations?.baseDeviceInfos).toContain('192.168.1.99');
  });

  test('I.2 the refresher writes nothing when no IP changed', async () => {
    const l = make({ clock: new FakeClock() });
    await l.start();
    api.clearLog();
    expect(await l.refresh()).toBe(false);
    expect(api.requests({ verb: 'patch', resource: 'nodes' })).toEqual([]);
  });

  test('I.2 the refresher runs every 60 s of the injected clock', async () => {
    let reads = 0;
    const clock = new FakeClock();
    const l = make({ clock }, () => {
      reads++;
      return CHIPS;
    });
    await l.start();
    l.startRefresher();
    clock.advance(59_999);
    const before = reads;
    clock.advance(1);
    expect(reads - before).toBe(1);
  });

  test('I.2 legacy device-info annotations are deleted at the first device-info write', async () => {
    await core.patchNode(
      {
        name: NODE,
        body: {
          metadata: {
            annotations: { 'huawei.com/Ascend910': 'Ascend910-0', 'huawei.com/Ascend910-Unhealthy': '', keep: 'y' },
          },
        },
      },
      MERGE,
    );
    const l = make();
    await l.start();
    await l.onDeviceInfoWritten();
    const a = (await node()).metadata?.annotations ?? {};
    expect(['huawei.com/Ascend910', 'huawei.com/Ascend910-Unhealthy', 'keep'].filter((k) => k in a)).toEqual(['keep']);
  });

  test('I.2 the clean-up runs once', async () => {
    const l = make();
    await l.start();
    await l.onDeviceInfoWritten();
    await core.patchNode({ name: NODE, body: { metadata: { annotations: { 'huawei.com/Ascend910': 'x' } } } }, MERGE);
    await l.onDeviceInfoWritten();
    expect((await node()).metadata?.annotations?.['huawei.com/Ascend910']).toBe('x');
  });
});

describe('I.1 autoStowing Recover labels', () => {
  test('I.1 autoStowing=true deletes both Recover labels at the first write', async () => {
    await setLabel(LABEL_RECOVER, '1.3');
    await setLabel(LABEL_NETWORK_RECOVER, '2');
    const l = make({ autoStowing: true });
    await l.start();
    await l.onDeviceInfoWritten();
    const labels = (await node()).metadata?.labels ?? {};
    expect([LABEL_RECOVER, LABEL_NETWORK_RECOVER].filter((k) => k in labels)).toEqual([]);
  });

  test('I.1 autoStowing=false: a chip that was Unhealthy and is healthy again goes into -Recover', async () => {
    const l = make({ autoStowing: false });
    await l.start();
    await l.cycle([chip(0), chip(1, 'Unhealthy'), chip(3, 'Unhealthy')]);
    await l.cycle([chip(0), chip(1), chip(3)]);
    expect((await node()).metadata?.labels?.[LABEL_RECOVER]).toBe('1.3');
  });

  test('I.1 autoStowing=false: a chip pending in -Recover is withheld from the schedulable list', async () => {
    const l = make({ autoStowing: false });
    await l.start();
    await l.cycle([chip(0), chip(1, 'Unhealthy')]);
    await l.cycle([chip(0), chip(1)]);
    expect(listOf(l, [viewChip(0), viewChip(1)])['huawei.com/Ascend910']).toBe('Ascend910-0');
  });

  test('I.1 autoStowing=false: the chip returns once the operator removed it from -Recover', async () => {
    const l = make({ autoStowing: false });
    await l.start();
    await l.cycle([chip(0), chip(1, 'Unhealthy')]);
    await l.cycle([chip(0), chip(1)]);
    await setLabel(LABEL_RECOVER, '');
    await l.cycle([chip(0), chip(1)]);
    expect(listOf(l, [viewChip(0), viewChip(1)])['huawei.com/Ascend910']).toBe('Ascend910-0,Ascend910-1');
  });

  test('I.1 autoStowing=false: labels already in -Recover at start are kept (current ∪ new)', async () => {
    await setLabel(LABEL_RECOVER, '5');
    const l = make({ autoStowing: false });
    await l.start();
    await l.cycle([chip(0), chip(1, 'Unhealthy')]);
    await l.cycle([chip(0), chip(1)]);
    expect((await node()).metadata?.labels?.[LABEL_RECOVER]).toBe('1.5');
  });

  test('I.1 autoStowing=false: -NetworkUnhealthy stays sticky after a network recovery', async () => {
    const l = make({ autoStowing: false });
    await l.start();
    await l.cycle([chip(0), chip(2, 'Healthy', 'Unhealthy')]);
    await l.cycle([chip(0), chip(2)]);
    expect({
      label: (await node()).metadata?.labels?.[LABEL_NETWORK_RECOVER],
      list: listOf(l, [viewChip(0), viewChip(2)])['huawei.com/Ascend910-NetworkUnhealthy'],
    }).toEqual({ label: '2', list: 'Ascend910-2' });
  });

  test('I.1 autoStowing=false: the operator removing a chip from -NetworkRecover ends the stickiness', async () => {
    const l = make({ autoStowing: false });
    await l.start();
    await l.cycle([chip(0), chip(2, 'Healthy', 'Unhealthy')]);
    await l.cycle([chip(0), chip(2)]);
    await setLabel(LABEL_NETWORK_RECOVER, '');
    await l.cycle([chip(0), chip(2)]);
    expect({
      label: (await node()).metadata?.labels?.[LABEL_NETWORK_RECOVER],
      list: listOf(l, [viewChip(0), viewChip(2)])['huawei.com/Ascend910-NetworkUnhealthy'],
    }).toEqual({ label: '', list: '' });
  });

  test('I.1 autoStowing=false: a cycle without a change patches nothing', async () => {
    const l = make({ autoStowing: false });
    await l.start();
    await l.cycle([chip(0), chip(1)]);
    api.clearLog();
    await l.cycle([chip(0), chip(1)]);
    expect(api.requests({ verb: 'patch', resource: 'nodes' })).toEqual([]);
  });

  test('I.1 autoStowing=false: the operator edit is seen through the node watch', async () => {
    const l = make({ autoStowing: false, watch: api.kubeConfig(), clock: new FakeClock() });
    await l.start();
    await l.cycle([chip(0), chip(1, 'Unhealthy')]);
    await l.cycle([chip(0), chip(1)]);
    await setLabel(LABEL_RECOVER, '');
    let list = '';
    for (let i = 0; i < 200 && list !== 'Ascend910-0,Ascend910-1'; i++) {
      await new Promise((r) => setTimeout(r, 5));
      await l.cycle([chip(0), chip(1)]);
      list = listOf(l, [viewChip(0), viewChip(1)])['huawei.com/Ascend910']!;
    }
    expect(list).toBe('Ascend910-0,Ascend910-1');
  });
});

describe('I.1 Recover labels after an API outage (issue 12 loose end 7)', () => {
  /** The stand-in's API whose next `failures` node patches answer 503. */
  function flaky(failures: { n: number }): k8s.CoreV1Api {
    const api503 = Object.create(core) as k8s.CoreV1Api;
    api503.patchNode = async (...a: Parameters<k8s.CoreV1Api['patchNode']>) => {
      if (failures.n > 0) {
        failures.n--;
        throw Object.assign(new Error('service unavailable'), { code: 503 });
      }
      return core.patchNode(...a);
    };
    return api503;
  }

  test('I.1 a chip that recovered while its patch failed stays in -Recover: the next cycle writes it', async () => {
    const failures = { n: 0 };
    const l = make({ api: flaky(failures), autoStowing: false, clock: new FakeClock() });
    await l.start();
    await l.cycle([chip(0), chip(1, 'Unhealthy')]);
    failures.n = 1;
    await l.cycle([chip(0), chip(1)]); // the recovery's patch fails
    await l.cycle([chip(0), chip(1)]); // nothing new: the unwritten chip is still carried
    expect([
      l.stats.failedPatches,
      (await node()).metadata?.labels?.[LABEL_RECOVER],
      listOf(l, [viewChip(0), viewChip(1)])['huawei.com/Ascend910'],
    ]).toEqual([1, '1', 'Ascend910-0']);
  });

  test('I.1 a failed Recover patch is retried when the API server is back, woken by the recovery signal, without another cycle', async () => {
    const recovery = new ApiRecovery({ probe: () => Promise.resolve(true), probeIntervalMs: 50 });
    try {
      const failures = { n: 0 };
      // the retry's own delay is 60 s of a clock that does not move: only the wake can start it
      const l = make({
        api: flaky(failures),
        autoStowing: false,
        clock: new FakeClock(),
        backoff: { initialMs: 60_000, maxMs: 60_000, recovery },
      });
      await l.start();
      await l.cycle([chip(0), chip(1, 'Unhealthy')]);
      failures.n = 1;
      await l.cycle([chip(0), chip(1)]);
      let label: string | undefined;
      for (let i = 0; i < 400 && label !== '1'; i++) {
        await new Promise((r) => setTimeout(r, 25));
        label = (await node()).metadata?.labels?.[LABEL_RECOVER];
      }
      expect([l.stats.failedPatches, label]).toEqual([1, '1']);
    } finally {
      recovery.close();
    }
  });
});
