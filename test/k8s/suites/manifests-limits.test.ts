/**
 * The shipped manifests on a real kube-apiserver at its limits (issue [R] item 5): a watch compacted by etcd, and
 * values near the 1 MiB object limit. The agent and the fault center run as in manifests.test.ts (host processes,
 * pod-bound tokens, behind recording proxies).
 *
 * The apiserver of this suite runs with `--watch-cache=false`. With its watch cache (the default) a watch from an
 * old resourceVersion is served from the cache's own history, which an etcd compaction does not shorten (only the
 * cache's list snapshots follow the compaction: k8s.io/apiserver storage/cacher/compactor.go); a client then gets
 * 410 only once that history has rolled over (75 s and more). Without it every watch is an etcd watch, and a
 * compaction past the client's resourceVersion answers its next watch with `410 Expired` at once.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { checkCodeOf } from '../../../src/kube/device-info.js';
import { marshalDeviceInfo } from '../../../src/core/go-json.js';
import { ANNOTATION_ASCEND_REAL } from '../../../src/kube/pod-annotator.js';
import { buildChunks } from '../../../src/cluster/cluster-info.js';
import { parseDeviceInfoConfigMap } from '../../../src/cluster/device-info-intake.js';
import { KubeApiStandIn } from '../../../src/sim/kube-api.js';
import { ApiProxy, type ProxiedRequest } from '../harness/api-proxy.js';
import type { ClusterAgent } from '../harness/agent.js';
import { Cluster } from '../harness/cluster.js';
import { pollUntil } from '../harness/component.js';
import type { ClusterFaultCenter } from '../harness/fault-center.js';
import { scrape, sum } from '../harness/metrics.js';
import { rawRequest, type RawAnswer } from '../harness/raw-api.js';
import { AGENT_NS, HOST_PROCESS_TOLERATION, PAUSE_IMAGE, Shipped } from '../harness/shipped.js';

const RESOURCE = 'huawei.com/Ascend910';
const SEPARATE_CODE = '80E3A201';
const MiB = 1024 * 1024;

let c: Cluster;
let shipped: Shipped;
let agentProxy: ApiProxy;
let centerProxy: ApiProxy;
let agent: ClusterAgent;
let center: ClusterFaultCenter;

beforeAll(async () => {
  c = await Cluster.start({ apiserverFlags: ['--watch-cache=false'] });
  shipped = await Shipped.deploy(c);
  [agentProxy, centerProxy] = await Promise.all([ApiProxy.start(c), ApiProxy.start(c)]);
  agent = shipped.agent({ server: agentProxy.url });
  center = await shipped.faultCenter({
    server: centerProxy.url,
    flags: ['-cycleMs=200', '-manualTickMs=1000', '-leaseRetryPeriodMs=500'],
  });
  await agent.start();
  await center.waitLeading();
}, 180_000);

afterAll(async () => {
  await agentProxy?.stop();
  await centerProxy?.stop();
  await c?.stop();
}, 60_000);

const core = () => c.core();
const cmData = async (namespace: string, name: string) => {
  try {
    return (await core().readNamespacedConfigMap({ name, namespace })).data;
  } catch {
    return undefined;
  }
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The node's published `DeviceList` in cluster-info-device-0, or undefined. */
async function publishedList(node = c.nodeName): Promise<Record<string, string> | undefined> {
  const text = (await cmData('mindx-dl', 'cluster-info-device-0'))?.['cluster-info-device-0'];
  if (text === undefined) return undefined;
  return (JSON.parse(text) as Record<string, { DeviceList: Record<string, string> }>)[`mindx-dl-deviceinfo-${node}`]
    ?.DeviceList;
}

/** The `DeviceList` of `node` in any cluster-info-device-<m> chunk, or undefined. */
async function publishedListIn(node: string): Promise<Record<string, string> | undefined> {
  for (const o of (await core().listNamespacedConfigMap({ namespace: 'mindx-dl' })).items) {
    for (const text of Object.values(o.data ?? {})) {
      const m = (JSON.parse(text) as Record<string, { DeviceList: Record<string, string> }>)[
        `mindx-dl-deviceinfo-${node}`
      ];
      if (m !== undefined) return m.DeviceList;
    }
  }
  return undefined;
}

/** etcd's current revision and a compaction at it, through etcd's gRPC gateway (`/v3/kv/...`). */
async function compactEtcd(): Promise<number> {
  const post = async (p: string, body: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${c.etcdUrl}${p}`, { method: 'POST', body: JSON.stringify(body) });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status !== 200) throw new Error(`etcd ${p}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const head = (await post('/v3/kv/range', { key: Buffer.from('/').toString('base64') })) as {
    header: { revision: string };
  };
  const revision = Number(head.header.revision);
  await post('/v3/kv/compaction', { revision, physical: true });
  return revision;
}

/** Watch requests after `mark` whose stream ended with an ERROR event of code 410. */
const expired = (p: ApiProxy, mark: number): ProxiedRequest[] =>
  p.requests(mark).filter((r) => r.watch && r.watchErrors.some((e) => e.code === 410));
/** What a list or watch asks for: its path and selectors. */
const collection = (r: ProxiedRequest): string =>
  `${r.path}?${r.query.get('labelSelector') ?? ''}&${r.query.get('fieldSelector') ?? ''}`;
/** Lists (GET, not a watch) of the collection of `w` after `seq`. */
const listsOf = (p: ApiProxy, w: ProxiedRequest, seq: number): ProxiedRequest[] =>
  p.requests(seq).filter((r) => r.method === 'GET' && !r.watch && collection(r) === collection(w));

describe('issue [R] item 5: a watch compacted by etcd', () => {
  test('410 Expired: the agent and the fault center list again, miss no change, and do not loop', async () => {
    // everything synced: the node published with 8 chips
    await pollUntil(
      async () => (await publishedList())?.[RESOURCE]?.split(',').length === 8,
      'the node published',
      30_000,
    );
    const marks = { agent: agentProxy.mark, center: centerProxy.mark };
    // both programs' watch streams end cleanly: each watches again from its last resourceVersion, held by the proxy
    agentProxy.holdWatches();
    centerProxy.holdWatches();
    await pollUntil(
      () => agentProxy.heldWatches >= 2 && centerProxy.heldWatches >= 4,
      'the watches of both programs held',
      30_000,
      () => `held: agent ${agentProxy.heldWatches}, fault center ${centerProxy.heldWatches}`,
    );
    // changes neither sees while behind: a pod for the agent, a fault and a public fault for the fault center
    await core().createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'late-0', namespace: 'default' },
        spec: {
          terminationGracePeriodSeconds: 1,
          tolerations: [HOST_PROCESS_TOLERATION],
          containers: [{ name: 'c0', image: PAUSE_IMAGE, resources: { limits: { [RESOURCE]: '1' } } }],
        },
      },
    });
    await agent.mock({ op: 'fault', logicId: 6, eventId: SEPARATE_CODE, assertion: 'occur' });
    await core().createNamespacedConfigMap({
      namespace: 'default',
      body: {
        metadata: { name: 'late-fault', namespace: 'default', labels: { 'mc-consumer-publicfault': 'true' } },
        data: {
          PublicFault: JSON.stringify({
            id: 'msg.late-0001',
            timestamp: Date.now(),
            version: '1.0',
            resource: 'CCAE',
            faults: [
              {
                faultId: 'msg.late-0001-0',
                faultType: 'Storage',
                faultCode: '010001001',
                faultTime: Date.now() - 1000,
                assertion: 'occur',
                influence: [{ nodeName: c.nodeName, deviceIds: [4] }],
              },
            ],
          }),
        },
      },
    });
    // the agent's device-info write of the fault, which the fault center's held watch would have carried
    await pollUntil(
      async () => (await cmData(AGENT_NS, `mindx-dl-deviceinfo-${c.nodeName}`))?.DeviceInfoCfg?.includes(SEPARATE_CODE),
      'the fault in device-info',
      30_000,
    );
    const revision = await compactEtcd();
    const released = { agent: agentProxy.mark, center: centerProxy.mark };
    agentProxy.releaseWatches();
    centerProxy.releaseWatches();

    // every held watch was answered 410 Expired by the server, and each of them was followed by a list of its path
    for (const [name, p] of [
      ['agent', agentProxy],
      ['fault center', centerProxy],
    ] as const) {
      const gone = await pollUntil(
        () => {
          const e = expired(p, marks[name === 'agent' ? 'agent' : 'center']);
          return e.length > 0 && e.every((r) => listsOf(p, r, r.seq).length > 0) ? e : undefined;
        },
        `the ${name}'s watches expired and listed again`,
        30_000,
      );
      for (const r of gone) {
        expect(Number(r.query.get('resourceVersion'))).toBeLessThan(revision);
        // etcd's answer, as kube-apiserver words it without its watch cache (the cache's: "too old resource version")
        expect(r.watchErrors[0]).toEqual({
          code: 410,
          reason: 'Expired',
          message: 'The resourceVersion for the provided watch is too old.',
        });
      }
    }
    // nothing lost: the pod created meanwhile is annotated, the fault and the public fault are published
    await pollUntil(
      async () =>
        (await core().readNamespacedPod({ name: 'late-0', namespace: 'default' })).metadata?.annotations?.[
          ANNOTATION_ASCEND_REAL
        ],
      'the late pod annotated by the agent',
      60_000,
    );
    await pollUntil(
      async () => {
        const faults = (await publishedList())?.[`${RESOURCE}-Fault`] ?? '';
        return faults.includes(SEPARATE_CODE) && faults.includes('010001001');
      },
      'the fault and the public fault published by the fault center',
      30_000,
    );
    // no loop: a few seconds on, one list of each expired path since the release (a paged list counts its pages
    // apart: none here, every list fits one page), and no further 410
    await sleep(5000);
    for (const [p, mark, after] of [
      [agentProxy, marks.agent, released.agent],
      [centerProxy, marks.center, released.center],
    ] as const) {
      const lists = expired(p, mark).map((w) => [collection(w), listsOf(p, w, after).length]);
      expect(lists.filter(([, n]) => n !== 1)).toEqual([]);
      const expiredNow = expired(p, mark).length;
      await sleep(2000);
      expect(expired(p, mark).length).toBe(expiredNow);
    }
  });
});

/**
 * A device-info ConfigMap of `node` (as an agent writes it: label `mx-consumer-cim=true`) whose only value, a valid
 * `DeviceInfoCfg` (its CheckCode matches), is exactly `bytes` long: a long fault list on 8 chips, the rest padding of
 * the available list.
 */
function deviceInfoOf(
  node: string,
  bytes: number,
): { metadata: Record<string, unknown>; data: Record<string, string> } {
  const chips = Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`);
  const t = Math.floor(Date.now() / 1000);
  const make = (codes: number, pad: number): string => {
    const per = Math.ceil(codes / chips.length);
    const faults = chips.map((name, i) => {
      const list = Array.from(
        { length: per },
        (_, k) => `8${(i * per + k).toString(16).toUpperCase().padStart(7, '0')}`,
      );
      return {
        fault_type: 'CardUnhealthy',
        npu_name: name,
        large_model_fault_level: 'SeparateNPU',
        fault_level: 'SeparateNPU',
        fault_handling: 'SeparateNPU',
        fault_code: list.join(','),
        fault_time_and_level_map: Object.fromEntries(
          list.map((code) => [code, { fault_time: t * 1000, fault_level: 'SeparateNPU' }]),
        ),
      };
    });
    const list = {
      [RESOURCE]: 'x'.repeat(pad),
      [`${RESOURCE}-Fault`]: JSON.stringify(faults),
      [`${RESOURCE}-NetworkUnhealthy`]: '',
      [`${RESOURCE}-Unhealthy`]: chips.join(','),
    };
    return `{"DeviceInfo":${marshalDeviceInfo(list, t)},"SuperPodID":-1,"ServerIndex":-1,"CheckCode":"${checkCodeOf(list, t)}"}`;
  };
  // about 85 bytes a code (at most 86 bytes on 8 chips): the fault list just under the size, then padding
  let codes = Math.floor((bytes - 2000) / 86);
  while (Buffer.byteLength(make(codes + 8, 0)) <= bytes) codes += 8;
  const text = make(codes, bytes - Buffer.byteLength(make(codes, 0)));
  if (Buffer.byteLength(text) !== bytes)
    throw new Error(`device-info of ${Buffer.byteLength(text)} bytes, not ${bytes}`);
  return {
    metadata: { name: `mindx-dl-deviceinfo-${node}`, namespace: AGENT_NS, labels: { 'mx-consumer-cim': 'true' } },
    data: { DeviceInfoCfg: text },
  };
}

describe('issue [R] item 5: values near the 1 MiB object limit, as the real server answers them', () => {
  let standIn: KubeApiStandIn;
  beforeAll(async () => {
    standIn = await KubeApiStandIn.start();
  });
  afterAll(async () => {
    await standIn?.stop();
  });

  /** The request to the real server and to the stand-in; both answers. */
  async function both(method: string, path: string, body: unknown): Promise<[RawAnswer, RawAnswer]> {
    return [
      await rawRequest(c, c.adminToken, method, path, body),
      await rawRequest({ server: standIn.url }, 'stand-in', method, path, body),
    ];
  }
  const summary = (a: RawAnswer) => ({ status: a.status, reason: a.reason, message: a.message, causes: a.causes });
  const filler = (name: string, data: Record<string, string>, extra: Record<string, unknown> = {}) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'default', ...extra },
    data,
  });

  test.each([
    ['data of exactly 1 MiB (keys not counted)', 'at-limit', { v: 'x'.repeat(MiB) }, undefined, 201],
    ['data of 1 MiB + 1 byte', 'over-limit', { v: 'x'.repeat(MiB + 1) }, undefined, 422],
    ['two values of 600,000 bytes', 'two-values', { a: 'x'.repeat(600_000), b: 'y'.repeat(600_000) }, undefined, 422],
    // binaryData counts decoded: 600,000 + 400,000 bytes fit (its base64 text would not)
    [
      '600,000 bytes of data and 400,000 of binaryData',
      'binary',
      { a: 'x'.repeat(600_000) },
      Buffer.alloc(400_000).toString('base64'),
      201,
    ],
  ] as const)('a ConfigMap with %s', async (_what, name, data, binary, status) => {
    const body = { ...filler(name, data), ...(binary !== undefined ? { binaryData: { b: binary } } : {}) };
    const [real, stand] = await both('POST', '/api/v1/namespaces/default/configmaps', body);
    expect(real.status).toBe(status);
    if (status === 422) {
      expect(summary(real)).toEqual({
        status: 422,
        reason: 'Invalid',
        message: `ConfigMap "${name}" is invalid: []: Too long: may not be more than 1048576 bytes`,
        causes: [{ reason: 'FieldValueTooLong', message: 'Too long: may not be more than 1048576 bytes', field: '[]' }],
      });
    }
    expect(summary(stand)).toEqual(summary(real));
  });

  test('an object over etcd’s request limit (1 MiB of data and 0.5 MiB of labels): 500 "etcdserver: request is too large"', async () => {
    const labels = Object.fromEntries(
      Array.from({ length: 4500 }, (_, i) => [`l${String(i).padStart(5, '0')}${'k'.repeat(50)}`, 'v'.repeat(60)]),
    );
    const [real, stand] = await both(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      filler('etcd-limit', { v: 'x'.repeat(MiB) }, { labels }),
    );
    expect(summary(real)).toEqual({ status: 500, reason: '', message: 'etcdserver: request is too large', causes: [] });
    expect(summary(stand)).toEqual(summary(real));
  });

  test('a request body over 3 MiB: 413 before anything is decoded', async () => {
    const [real, stand] = await both(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      filler('huge', { v: 'x'.repeat(3 * MiB) }),
    );
    expect(summary(real)).toEqual({
      status: 413,
      reason: 'RequestEntityTooLarge',
      message: 'Request entity too large: limit is 3145728',
      causes: [],
    });
    expect(summary(stand)).toEqual(summary(real));
  });

  test('a device-info ConfigMap of exactly 1 MiB: the server takes it, not its published form (27 bytes more); the fault center leaves that out, names and counts it, publishes the rest, and the node once it fits', async () => {
    const mark = centerProxy.mark;
    const big = deviceInfoOf('big-node', MiB);
    await core().createNamespacedConfigMap({ namespace: AGENT_NS, body: big });
    // what the fault center would write for it, refused by the real server and the stand-in alike
    const view = parseDeviceInfoConfigMap(big);
    if (!view.ok) throw new Error(`the test's device-info is not valid: ${view.detail}`);
    const value = buildChunks(new Map([['big-node', view.view]]))[0]!;
    expect(Buffer.byteLength(value)).toBe(MiB + 27);
    const chunk = filler('cluster-info-device-9', { 'cluster-info-device-9': value });
    const [real, stand] = await both('POST', '/api/v1/namespaces/default/configmaps', chunk);
    expect([real.status, real.reason]).toEqual([422, 'Invalid']);
    expect(summary(stand)).toEqual(summary(real));
    // the fault center: an error naming the node, counted once, no refused write, the other node still published
    const logged = await center.until(
      (l) => String(l.msg).startsWith('published value over the 1 MiB'),
      'the error about the oversize chunk',
      30_000,
    );
    expect(logged).toMatchObject({ level: 'error', nodes: ['big-node'], bytes: MiB + 27, limit: MiB });
    expect(
      sum(await scrape(center.metricsAddress), 'ascend_fault_center_rejected_inputs_total', {
        input: 'device-info',
        reason: 'too-large-to-publish',
      }),
    ).toBe(1);
    await sleep(6000); // past a forced rewrite of every chunk (publishForceMs, 5 s)
    const mindx = centerProxy.requests(mark).filter((r) => r.path.startsWith('/api/v1/namespaces/mindx-dl/'));
    expect(mindx.filter((r) => r.status >= 400).map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([]);
    expect(mindx.some((r) => r.method === 'PUT' && r.path.endsWith('/cluster-info-device-0') && r.status === 200)).toBe(
      true,
    );
    expect(await publishedList()).toBeDefined();
    // smaller again: published
    await core().replaceNamespacedConfigMap({
      name: 'mindx-dl-deviceinfo-big-node',
      namespace: AGENT_NS,
      body: deviceInfoOf('big-node', MiB - 1024),
    });
    await pollUntil(async () => publishedListIn('big-node'), 'big-node published once it fits', 30_000);
  });
});
