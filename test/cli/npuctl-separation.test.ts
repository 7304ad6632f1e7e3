/**
 * `npuctl separation list|release` (architecture §7, issue [D]) against the API stand-in: reading one node's or every
 * node's device-info ConfigMap, deleting one name from `ManuallySeparateNPU` with optimistic concurrency (409 →
 * re-read, at most three writes), nothing else touched, exit statuses of the process.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { UsageError } from '../../src/cli/npuctl/io.js';
import {
  MAX_RELEASE_ATTEMPTS,
  SeparationError,
  checkChipName,
  checkNodeName,
  listSeparation,
  releaseChip,
  removeName,
  renderList,
  renderRelease,
  type SeparationApi,
  type SeparationTarget,
} from '../../src/cli/npuctl/separation.js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { parseManualNames } from '../../src/faults/index.js';
import { DESCRIPTION_TEXT, checkCodeOf, verifyDeviceInfoCfg } from '../../src/kube/device-info.js';
import { KubeClient } from '../../src/kube/kube-client.js';
import { CONFIGMAPS, KubeApiStandIn } from '../../src/sim/kube-api.js';
import { Harness, shippedPolicy } from '../faults/helpers.js';

const TOKEN = 'sep-token';
const NS = 'kube-system';
const HBM = 0x80e01801; // RestartBusiness, twice in 24 h → ManuallySeparateNPU (F.3)

let api: KubeApiStandIn;
let client: KubeClient;
let target: SeparationTarget;
let tmp: string;

beforeEach(async () => {
  api = await KubeApiStandIn.start({ token: TOKEN });
  client = new KubeClient({ server: api.url, token: TOKEN });
  target = { api: client, server: api.url };
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'npuctl-sep-'));
});

afterEach(async () => {
  client.close();
  await api.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const FAULTS = JSON.stringify([
  {
    fault_type: 'CardUnhealthy',
    npu_name: 'Ascend910-3',
    large_model_fault_level: 'ManuallySeparateNPU',
    fault_level: 'ManuallySeparateNPU',
    fault_handling: 'ManuallySeparateNPU',
    fault_code: '80E01801',
    fault_time_and_level_map: { '80E01801': { fault_time: 1767225600000, fault_level: 'ManuallySeparateNPU' } },
  },
]);

/** A device-info ConfigMap as the agent writes it (H.1, H.2), with a valid CheckCode. */
function seed(node: string, manual: string | undefined, deviceList?: Record<string, string>): k8s.V1ConfigMap {
  const list = deviceList ?? {
    'huawei.com/Ascend910': 'Ascend910-0,Ascend910-1,Ascend910-2,Ascend910-4,Ascend910-6,Ascend910-7',
    'huawei.com/Ascend910-Fault': FAULTS,
    'huawei.com/Ascend910-NetworkUnhealthy': '',
    'huawei.com/Ascend910-Recovering': '',
    'huawei.com/Ascend910-Unhealthy': 'Ascend910-3',
  };
  const updateTime = 1767225600;
  const cfg = JSON.stringify({
    DeviceInfo: { DeviceList: list, UpdateTime: updateTime },
    SuperPodID: -2,
    ServerIndex: -2,
    CheckCode: checkCodeOf(list, updateTime),
  });
  const data: Record<string, string> = {
    DeviceInfoCfg: cfg,
    UpgradeFaultReason: '{}',
    Description: DESCRIPTION_TEXT,
    ...(manual !== undefined ? { ManuallySeparateNPU: manual } : {}),
  };
  return api.store.create(CONFIGMAPS, NS, {
    metadata: { name: `mindx-dl-deviceinfo-${node}`, namespace: NS, labels: { 'mx-consumer-cim': 'true' } },
    data,
  }) as k8s.V1ConfigMap;
}

const live = (node: string): k8s.V1ConfigMap =>
  api.store.get(CONFIGMAPS, NS, `mindx-dl-deviceinfo-${node}`) as k8s.V1ConfigMap;

const updates = (): { status: number }[] => api.requests({ verb: 'update', resource: 'configmaps' });

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('the call succeeded');
}

describe('arguments', () => {
  test.each(['Ascend910-3', 'Ascend310P-0', 'Ascend310-12', 'npu-7', 'MyNpu-255'])('chip name %s is accepted', (n) =>
    expect(checkChipName(n)).toBe(n),
  );

  test.each(['', 'Ascend910', 'Ascend910-', 'Ascend910-03', 'Ascend910-256', 'Ascend910-3,Ascend910-5', '3', 'A-1'])(
    'chip name %j is refused',
    (n) => expect(() => checkChipName(n)).toThrow(UsageError),
  );

  test('node names: DNS subdomains; missing or malformed is a usage error', () => {
    expect(checkNodeName('node-a.example')).toBe('node-a.example');
    expect(() => checkNodeName(undefined)).toThrow(/--node is required/);
    expect(() => checkNodeName('Node_A')).toThrow(UsageError);
    expect(() => checkNodeName('a'.repeat(234))).toThrow(UsageError);
  });

  test('removeName drops exactly that name and keeps the other entries as written', () => {
    expect(removeName('Ascend910-3,Ascend910-5', 'Ascend910-3')).toEqual({ after: 'Ascend910-5', removed: 1 });
    expect(removeName('Ascend910-3', 'Ascend910-3')).toEqual({ after: '', removed: 1 });
    expect(removeName('Ascend910-13,Ascend910-3x,Ascend910-1', 'Ascend910-1')).toEqual({
      after: 'Ascend910-13,Ascend910-3x',
      removed: 1,
    });
    expect(removeName('', 'Ascend910-1')).toEqual({ after: '', removed: 0 });
  });
});

describe('list', () => {
  test('one node: the separated names and which device-info lists name them', async () => {
    seed('node-a', 'Ascend910-3,Ascend910-5');
    seed('node-b', '');
    const [n, ...rest] = await listSeparation(target, 'node-a');
    expect(rest).toEqual([]);
    expect(n).toMatchObject({
      node: 'node-a',
      configMap: 'kube-system/mindx-dl-deviceinfo-node-a',
      value: 'Ascend910-3,Ascend910-5',
      chips: [
        { name: 'Ascend910-3', listedIn: ['huawei.com/Ascend910-Fault', 'huawei.com/Ascend910-Unhealthy'] },
        { name: 'Ascend910-5', listedIn: [] },
      ],
      problems: [],
    });
    const text = renderList([n!], api.url);
    expect(text).toContain('Ascend910-3  huawei.com/Ascend910-Fault, huawei.com/Ascend910-Unhealthy');
    expect(text).toMatch(/node-a +Ascend910-5 +no\n/);
    expect(updates()).toEqual([]);
  });

  test('every node: only mindx-dl-deviceinfo-* of kube-system, by node name; unreadable entries reported', async () => {
    seed('node-b', 'Ascend910-1,bogus');
    seed('node-a', '');
    seed('node-c', undefined, {});
    api.store.create(CONFIGMAPS, NS, {
      metadata: { name: 'other', namespace: NS },
      data: { ManuallySeparateNPU: 'x' },
    });
    api.store.create(CONFIGMAPS, 'default', {
      metadata: { name: 'mindx-dl-deviceinfo-node-z', namespace: 'default' },
      data: {},
    });
    const nodes = await listSeparation(target);
    expect(nodes.map((n) => n.node)).toEqual(['node-a', 'node-b', 'node-c']);
    expect(nodes[0]!.chips).toEqual([]);
    expect(nodes[1]!.chips.map((c) => c.name)).toEqual(['Ascend910-1', 'bogus']);
    expect(nodes[1]!.problems).toEqual([expect.stringContaining('"bogus" does not match')]);
    expect(nodes[2]!.problems).toEqual([]); // an empty DeviceList is readable; no run mode → no G.2 check
    expect(renderList(nodes, api.url)).toMatch(/^NODE +SEPARATED +IN DEVICE-INFO\nnode-a +-\n/);
  });

  test('a missing ConfigMap is a SeparationError naming the object and the server', async () => {
    const e = await rejection(listSeparation(target, 'node-x'));
    expect(e).toBeInstanceOf(SeparationError);
    expect(e.message).toContain(`ConfigMap kube-system/mindx-dl-deviceinfo-node-x not found at ${api.url}`);
  });

  test('an API failure names the object, the server and the status', async () => {
    const denied: SeparationTarget = { api: new KubeClient({ server: api.url, token: 'wrong' }), server: api.url };
    const e = await rejection(listSeparation(denied));
    expect(e).toBeInstanceOf(SeparationError);
    expect(e.message).toContain(`cannot list the ConfigMaps of kube-system at ${api.url}: HTTP 401`);
    (denied.api as KubeClient).close();
  });
});

describe('release', () => {
  test('removes exactly that name, keeps the others and every other key, label and the CheckCode', async () => {
    const before = seed('node-a', 'Ascend910-3,Ascend910-5,Ascend910-10');
    const r = await releaseChip(target, 'node-a', 'Ascend910-5');
    expect(r).toMatchObject({ before: 'Ascend910-3,Ascend910-5,Ascend910-10', after: 'Ascend910-3,Ascend910-10' });
    expect(r.conflicts).toBe(0);
    const after = live('node-a');
    expect(after.data).toEqual({ ...before.data, ManuallySeparateNPU: 'Ascend910-3,Ascend910-10' });
    expect(after.metadata?.labels).toEqual({ 'mx-consumer-cim': 'true' });
    expect(verifyDeviceInfoCfg(after.data!.DeviceInfoCfg!)).toBe(true);
    expect(after.metadata?.resourceVersion).toBe(r.resourceVersionAfter);
    expect(updates().map((u) => u.status)).toEqual([200]);
    // the PUT carried the read resourceVersion and npuctl's field manager
    expect(api.requests({ verb: 'update' })[0]!.url).toContain('fieldManager=npuctl');
    const text = renderRelease(r);
    expect(text).toContain('before: "Ascend910-3,Ascend910-5,Ascend910-10"');
    expect(text).toContain('after:  "Ascend910-3,Ascend910-10"');
    expect(text).toContain(`released Ascend910-5 (resourceVersion ${r.resourceVersionBefore} → `);
  });

  test('the last name leaves an empty value', async () => {
    seed('node-a', 'Ascend910-3');
    await releaseChip(target, 'node-a', 'Ascend910-3');
    expect(live('node-a').data!.ManuallySeparateNPU).toBe('');
  });

  test.each([
    ['another chip listed', 'Ascend910-5'],
    ['empty value', ''],
    ['key absent', undefined],
    ['a longer name only', 'Ascend910-30'],
  ])('not separated (%s): SeparationError and nothing written', async (_what, value) => {
    seed('node-a', value);
    const e = await rejection(releaseChip(target, 'node-a', 'Ascend910-3'));
    expect(e).toBeInstanceOf(SeparationError);
    expect(e.message).toMatch(/^Ascend910-3 is not separated on node-a: ManuallySeparateNPU of ConfigMap /);
    expect(e.message).toContain('nothing written');
    expect(updates()).toEqual([]);
  });

  test('a missing ConfigMap: SeparationError naming object and server, nothing written', async () => {
    const e = await rejection(releaseChip(target, 'node-x', 'Ascend910-3'));
    expect(e).toBeInstanceOf(SeparationError);
    expect(e.message).toContain(`ConfigMap kube-system/mindx-dl-deviceinfo-node-x not found at ${api.url}`);
    expect(api.requests({ verb: ['update', 'create'] })).toEqual([]);
  });

  /** A client whose next `races` writes are each preceded by another writer (the agent) changing the object. */
  function racing(node: string, races: number): SeparationApi {
    let n = 0;
    return {
      readNamespacedConfigMap: (p) => client.readNamespacedConfigMap(p),
      listNamespacedConfigMap: (p) => client.listNamespacedConfigMap(p),
      replaceNamespacedConfigMap: (p) => {
        if (n < races) {
          n++;
          const name = `mindx-dl-deviceinfo-${node}`;
          const cur = api.store.get(CONFIGMAPS, NS, name)!;
          const data = (cur as { data?: Record<string, string> }).data;
          api.store.update(CONFIGMAPS, NS, name, { ...cur, data: { ...data, UpgradeFaultReason: `{"race":${n}}` } });
        }
        return client.replaceNamespacedConfigMap(p);
      },
    };
  }

  test('a conflict on the first write: re-read, redone on the live object, which keeps the other change', async () => {
    seed('node-a', 'Ascend910-3,Ascend910-5');
    const r = await releaseChip({ api: racing('node-a', 1), server: api.url }, 'node-a', 'Ascend910-3');
    expect(r.conflicts).toBe(1);
    expect(updates().map((u) => u.status)).toEqual([409, 200]);
    const after = live('node-a');
    expect(after.data!.ManuallySeparateNPU).toBe('Ascend910-5');
    expect(after.data!.UpgradeFaultReason).toBe('{"race":1}');
    expect(renderRelease(r)).toContain('after 1 conflict (409) re-read');
  });

  test('409 on every write: gives up after three writes, naming the conflict; the live object is not edited', async () => {
    seed('node-a', 'Ascend910-3,Ascend910-5');
    const e = await rejection(releaseChip({ api: racing('node-a', 99), server: api.url }, 'node-a', 'Ascend910-3'));
    expect(e).toBeInstanceOf(SeparationError);
    expect(e.message).toContain('the write conflicted 3 times (HTTP 409');
    expect(e.message).toContain(`ConfigMap kube-system/mindx-dl-deviceinfo-node-a at ${api.url}`);
    expect(updates().map((u) => u.status)).toEqual(Array(MAX_RELEASE_ATTEMPTS).fill(409));
    expect(live('node-a').data!.ManuallySeparateNPU).toBe('Ascend910-3,Ascend910-5');
  });

  test('the agent-side parser and G.2 comparison read the written value as the release of exactly that chip', async () => {
    // the agent separated chips 3 and 5 (F.3) and wrote them once
    const h = new Harness(shippedPolicy());
    for (const c of [3, 5]) {
      h.occur(0, c, HBM);
      h.occur(1000, c, HBM);
    }
    h.engine.markManualWritten([3, 5]);
    const value = h.engine.manualSeparationValue();
    expect(value).toBe('Ascend910-3,Ascend910-5');
    seed('node-a', value);
    const r = await releaseChip(target, 'node-a', 'Ascend910-3');
    const written = live('node-a').data!.ManuallySeparateNPU!;
    expect(written).toBe(r.after);
    expect(parseManualNames(written, 'Ascend910')).toEqual({ phyIds: [5], problems: [] });
    expect(h.engine.compareManualSeparation(written)).toEqual({ released: [3], notAdopted: [], problems: [] });
  });
});

describe('the npuctl process', () => {
  const run = (
    args: string[],
    env: NodeJS.ProcessEnv = {},
  ): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', path.join(PROJECT_ROOT, 'src', 'cli', 'npuctl.ts'), ...args],
        {
          cwd: PROJECT_ROOT,
          env: { PATH: process.env.PATH, HOME: tmp, ...env },
        },
        (err, stdout, stderr) => {
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        },
      );
    });
  let kubeconfig: string;
  beforeEach(async () => {
    kubeconfig = path.join(tmp, 'kubeconfig');
    await api.writeKubeconfig(kubeconfig);
  });

  test('list --node --json: 0 with one node', async () => {
    seed('node-a', 'Ascend910-3');
    const r = await run(['separation', 'list', '--node', 'node-a', '--json', '--kubeconfig', kubeconfig]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { server: string; nodes: { node: string; chips: unknown[] }[] };
    expect(doc.server).toBe(api.url);
    expect(doc.nodes).toEqual([expect.objectContaining({ node: 'node-a', chips: [expect.anything()] })]);
  });

  test('list via $KUBECONFIG: 0 with the table of every node', async () => {
    seed('node-a', 'Ascend910-3');
    seed('node-b', '');
    const r = await run(['separation', 'list'], { KUBECONFIG: kubeconfig });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/node-a +Ascend910-3 +huawei.com\/Ascend910-Fault/);
    expect(r.stdout).toMatch(/node-b +-/);
  });

  test('release: 0, prints before → after', async () => {
    seed('node-a', 'Ascend910-3,Ascend910-5');
    const r = await run([
      'separation',
      'release',
      '--node',
      'node-a',
      '--chip',
      'Ascend910-5',
      '--kubeconfig',
      kubeconfig,
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('before: "Ascend910-3,Ascend910-5"');
    expect(r.stdout).toContain('after:  "Ascend910-3"');
    expect(live('node-a').data!.ManuallySeparateNPU).toBe('Ascend910-3');
  });

  test('release of a chip not separated: 1, nothing written', async () => {
    seed('node-a', 'Ascend910-3');
    const r = await run([
      'separation',
      'release',
      '--node',
      'node-a',
      '--chip',
      'Ascend910-5',
      '--kubeconfig',
      kubeconfig,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Ascend910-5 is not separated on node-a');
    expect(updates()).toEqual([]);
  });

  test('a missing ConfigMap: 1, naming object and server', async () => {
    const r = await run(['separation', 'list', '--node', 'node-x', '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`mindx-dl-deviceinfo-node-x not found at ${api.url}`);
  });

  test.each([
    [['separation', 'release', '--chip', 'Ascend910-3'], '--node is required'],
    [['separation', 'release', '--node', 'node-a'], '--chip is required'],
    [['separation', 'release', '--node', 'node-a', '--chip', 'Ascend910-03'], 'is not a device name'],
    [['separation', 'list', '--node', 'Node_A'], 'is not a node name'],
    [['separation', 'list', '--bogus'], 'unknown option'],
    [['separation', 'list', '--kubeconfig', '/nonexistent/kubeconfig'], 'cannot load the kubeconfig'],
    [['separation', 'list'], 'no API server'],
  ])('2 on bad arguments: %j', async (args, message) => {
    seed('node-a', 'Ascend910-3');
    const r = await run(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(updates()).toEqual([]);
  });
});

describe('hostile values up to the 1 MiB ConfigMap limit (issue 12 item 4)', () => {
  /** 160 000 distinct entries of 2 to 5 characters: under 1 MiB, none a device name. */
  const distinct = Array.from({ length: 160_000 }, (_, i) => `z${i.toString(36)}`).join(',');

  test('list of a node whose ManuallySeparateNPU is "x," × 200000: one row, a bounded list of problems', async () => {
    seed('node-a', 'x,'.repeat(200_000));
    const [n] = await listSeparation(target, 'node-a');
    expect([n!.chips.map((c) => c.name), n!.problems.length <= 21, n!.problems.at(-1)]).toEqual([
      ['x'],
      true,
      expect.stringMatching(/^… and \d+ more problems$/),
    ]);
  });

  test('the listing of 160 000 distinct entries is rendered (no stack overflow)', async () => {
    seed('node-a', distinct);
    const [n] = await listSeparation(target, 'node-a');
    expect(renderList([n!], api.url).split('\n').length).toBeGreaterThan(160_000);
  });

  test('release against a 1 MiB value not listing the chip: the message quotes at most 200 characters of it', async () => {
    seed('node-a', distinct);
    const e = await rejection(releaseChip(target, 'node-a', 'Ascend910-3'));
    expect([e.message.includes('nothing written'), e.message.length < 1000]).toEqual([true, true]);
  });
});
