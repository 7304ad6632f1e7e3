/**
 * The shipped manifests on a real kube-apiserver (issue [R] item 5, item 1 "proven both ways on the real server"):
 * `deploy/rendered/` 910.yaml, fault-center.yaml and admission-policies.yaml applied with kubectl as they are; the
 * agent and the fault center (dist/, host processes: see harness/shipped.ts) with pod-bound ServiceAccount tokens,
 * each behind a recording proxy (harness/api-proxy.ts) so that every answer the server gave them is known.
 *
 * Order: the programs start in beforeAll; the tests then read back each object they write (content, not existence),
 * check that nothing they did was refused, show that what they must not do is refused with 403 (and that the API
 * stand-in answers each of those requests exactly as the real server), and last restart the agent under a policy
 * that refuses its Node writes (issue [R] defect 4). On the code before the fixes of issue [R] item 1 the agent dies
 * at start (defect 3: every Node patch 422) and the fault center never leads (defect 2): see docs/testing.md for which
 * test proves which defect.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../../src/core/paths.js';
import { loadPubFaultProto } from '../../../src/cluster/public-fault/proto.js';
import { POD_DEVICE_ANNOTATION } from '../../../src/cluster/job-index.js';
import { decodeDeviceInfoCfg, KEY_DEVICE_INFO } from '../../../src/kube/device-info.js';
import { ANNOTATION_ASCEND_REAL } from '../../../src/kube/pod-annotator.js';
import { PodResourcesClient } from '../../../src/kubelet/podresources-client.js';
import { KubeApiStandIn } from '../../../src/sim/kube-api.js';
import { ApiProxy, type ProxiedRequest } from '../harness/api-proxy.js';
import type { ClusterAgent } from '../harness/agent.js';
import { Cluster } from '../harness/cluster.js';
import { pollUntil } from '../harness/component.js';
import type { ClusterFaultCenter } from '../harness/fault-center.js';
import { samples, scrape, sum } from '../harness/metrics.js';
import { rawRequest } from '../harness/raw-api.js';
import {
  AGENT_NS,
  AGENT_SA,
  CENTER_NS,
  HOST_PROCESS_TOLERATION,
  PAUSE_IMAGE,
  renderedDocs,
  SHIPPED_FILES,
  Shipped,
} from '../harness/shipped.js';
import { ALLOWED, REFUSED, seedObjects, startStandIn, type StandInServer, type Who } from './manifests-cases.js';

const RESOURCE = 'huawei.com/Ascend910';
/** SeparateNPU (faultCode.json), in no FaultFrequency rule. */
const SEPARATE_CODE = '80E3A201';
const SCENARIO = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json'), 'utf8')) as {
  chipName: string;
  hbmSizeMiB: number;
  cards: { chips: { logicId: number; ip: string }[] }[];
};
const CHIPS = SCENARIO.cards.flatMap((c) => c.chips);
const ALL = CHIPS.map((c) => `Ascend910-${c.logicId}`);

let c: Cluster;
let shipped: Shipped;
let agentProxy: ApiProxy;
let centerProxy: ApiProxy;
let agent: ClusterAgent;
let center: ClusterFaultCenter;
/** Why the agent did not start (the tests that need it fail with this). */
let agentStartError: Error | undefined;

beforeAll(async () => {
  c = await Cluster.start();
  shipped = await Shipped.deploy(c);
  // the operator's policy edit (cluster-faults §1.2): one counted fault separates, so one fault shows manual-info
  await c.kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'clusterd-config-cm', namespace: CENTER_NS },
      data: {
        'manually_separate_policy.conf':
          'enabled: true\nseparate:\n  fault_window_hours: 24\n  fault_threshold: 1\nrelease:\n  fault_free_hours: 48\n',
      },
    }),
  );
  [agentProxy, centerProxy] = await Promise.all([ApiProxy.start(c), ApiProxy.start(c)]);
  agent = shipped.agent({ server: agentProxy.url });
  center = await shipped.faultCenter({
    server: centerProxy.url,
    // shorter periods than upstream's so that the tests wait less; jobless chips count (no job runs here)
    flags: ['-cycleMs=200', '-manualTickMs=1000', '-leaseRetryPeriodMs=500', '-countJoblessFaults=true'],
  });
  try {
    await agent.start();
  } catch (e) {
    agentStartError = e as Error;
  }
}, 180_000);

afterAll(async () => {
  await agentProxy?.stop();
  await centerProxy?.stop();
  await c?.stop();
}, 60_000);

function requireAgent(): void {
  if (agentStartError !== undefined) throw agentStartError;
}

const core = () => c.core();
const cm = async (namespace: string, name: string) => {
  try {
    return await core().readNamespacedConfigMap({ name, namespace });
  } catch {
    return undefined;
  }
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The device-info `DeviceList` of the node, or undefined. */
async function deviceList(): Promise<Record<string, string> | undefined> {
  const text = (await cm(AGENT_NS, `mindx-dl-deviceinfo-${c.nodeName}`))?.data?.[KEY_DEVICE_INFO];
  if (text === undefined) return undefined;
  const d = decodeDeviceInfoCfg(text);
  return d.ok ? d.value.deviceList : undefined;
}
const names = (v: string | undefined): string[] => (v ?? '').split(',').filter((s) => s !== '');

/** The node's member of `mindx-dl/cluster-info-device-0`, parsed. */
async function published(): Promise<{ DeviceList: Record<string, string>; CmName: string } | undefined> {
  const text = (await cm('mindx-dl', 'cluster-info-device-0'))?.data?.['cluster-info-device-0'];
  if (text === undefined) return undefined;
  return (JSON.parse(text) as Record<string, { DeviceList: Record<string, string>; CmName: string }>)[
    `mindx-dl-deviceinfo-${c.nodeName}`
  ];
}

/** A public-fault message (cluster-faults §2.1, §2.5) on `device` of the node, sender CCAE. */
function publicFault(id: string, device: number): Record<string, unknown> {
  const now = Date.now();
  return {
    id,
    timestamp: now,
    version: '1.0',
    resource: 'CCAE',
    faults: [
      {
        faultId: `${id}-0`,
        faultType: 'Storage',
        faultCode: '010001001',
        faultTime: now - 1000,
        assertion: 'occur',
        influence: [{ nodeName: c.nodeName, deviceIds: [device] }],
      },
    ],
  };
}

describe('issue [R] item 5: the shipped manifests applied as they are', () => {
  test('kubectl apply creates every object of 910.yaml, fault-center.yaml and admission-policies.yaml', async () => {
    const docs = SHIPPED_FILES.flatMap((f) => renderedDocs(f));
    const created = shipped.applied.split('\n').filter((l) => / created$/.test(l));
    expect(created).toHaveLength(docs.length);
    // each object is on the server as applied (its kind and name)
    const listed = JSON.parse(
      await c.kubectl(['get', ...SHIPPED_FILES.flatMap((f) => ['-f', path.join(PROJECT_ROOT, f)]), '-o', 'json']),
    ) as { items: { kind: string; metadata: { name: string } }[] };
    expect(listed.items.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
      docs.map((d) => `${String(d.kind)}/${String((d.metadata as { name: string }).name)}`).sort(),
    );
  });

  test('every other rendered overlay is accepted by the real server (server-side dry run)', async () => {
    const others = fs
      .readdirSync(path.join(PROJECT_ROOT, 'deploy', 'rendered'))
      .filter((f) => !SHIPPED_FILES.includes(`deploy/rendered/${f}` as (typeof SHIPPED_FILES)[number]));
    const served = new Set((await c.kubectl(['api-versions'])).split('\n').filter((l) => l !== ''));
    // the monitoring overlay's prometheus-operator kinds need its CRDs, which this cluster does not have
    const docs = others.flatMap((f) => renderedDocs(`deploy/rendered/${f}`));
    const unserved = docs.filter((d) => !served.has(String(d.apiVersion)));
    expect([...new Set(unserved.map((d) => String(d.apiVersion)))]).toEqual(['monitoring.coreos.com/v1']);
    const out = await c.kubectl(
      ['apply', '--dry-run=server', '-f', '-'],
      docs
        .filter((d) => served.has(String(d.apiVersion)))
        .map((d) => JSON.stringify(d))
        .join('\n'),
    );
    expect(out.split('\n').filter((l) => /\(server dry run\)$/.test(l)).length).toBe(docs.length - unserved.length);
  });

  test('the stand-in pods are bound to the node and their tokens carry the node (authentication.kubernetes.io/node-name)', async () => {
    for (const [kubeconfig, pod] of [
      [shipped.agentKubeconfig, shipped.agentPod],
      [shipped.centerKubeconfig, shipped.centerPod],
    ] as const) {
      const review = JSON.parse(await c.kubectl(['auth', 'whoami', '-o', 'json'], undefined, kubeconfig)) as {
        status: { userInfo: { username: string; extra: Record<string, string[]> } };
      };
      expect(review.status.userInfo.extra['authentication.kubernetes.io/node-name']).toEqual([c.nodeName]);
      expect(review.status.userInfo.extra['authentication.kubernetes.io/pod-name']).toEqual([pod.name]);
      expect(review.status.userInfo.extra['authentication.kubernetes.io/pod-uid']).toEqual([pod.uid]);
    }
    // the workloads' own pods stay off the node (taint): nothing ran their host paths here
    const pods = await core().listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${c.nodeName}` });
    expect(pods.items.map((p) => p.metadata!.name).filter((n) => n!.startsWith('ascend-'))).toEqual(
      expect.arrayContaining([shipped.agentPod.name, shipped.centerPod.name]),
    );
    expect(
      pods.items.filter((p) => p.metadata?.ownerReferences !== undefined && p.metadata.name!.startsWith('ascend-')),
    ).toEqual([]);
  });
});

describe('issue [R] item 5: the agent writes through its pod-bound token, read back from the real server', () => {
  test('device-info ConfigMap kube-system/mindx-dl-deviceinfo-<node>: its label, keys and verified DeviceInfoCfg with the 8 chips', async () => {
    requireAgent();
    const list = await pollUntil(deviceList, 'the device-info ConfigMap', 30_000);
    const obj = (await cm(AGENT_NS, `mindx-dl-deviceinfo-${c.nodeName}`))!;
    expect(obj.metadata?.labels).toEqual({ 'mx-consumer-cim': 'true' });
    expect(Object.keys(obj.data ?? {}).sort()).toEqual(
      ['Description', 'DeviceInfoCfg', 'ManuallySeparateNPU', 'UpgradeFaultReason'].sort(),
    );
    expect(names(list[RESOURCE]).sort()).toEqual([...ALL].sort());
    expect(list[`${RESOURCE}-Unhealthy`] ?? '').toBe('');
  });

  test('node labels (spec I.1) and annotations (spec I.2) from the chips, on the real Node kubelet registered', async () => {
    requireAgent();
    const node = await pollUntil(
      async () => {
        const n = await c.node();
        return n.metadata?.annotations?.baseDeviceInfos !== undefined ? n : undefined;
      },
      'the agent labels and annotations',
      30_000,
    );
    const labels = node.metadata!.labels!;
    expect(labels).toMatchObject({
      accelerator: 'huawei-Ascend910',
      'node.kubernetes.io/npu.chip.name': SCENARIO.chipName,
      'mind-cluster/npu-chip-memory': `${SCENARIO.hbmSizeMiB / 1024}G`,
      // kubelet's own labels stay
      'kubernetes.io/hostname': c.nodeName,
    });
    const base = JSON.parse(node.metadata!.annotations!.baseDeviceInfos!) as Record<string, { IP: string }>;
    expect(Object.fromEntries(Object.entries(base).map(([k, v]) => [k, v.IP]))).toEqual(
      Object.fromEntries(CHIPS.map((ch) => [`Ascend910-${ch.logicId}`, ch.ip])),
    );
  });

  test('a fault: device-info lists the chip Unhealthy, and its Event is stored (core v1 and events.k8s.io/v1 views)', async () => {
    requireAgent();
    await agent.mock({ op: 'fault', logicId: 5, eventId: SEPARATE_CODE, assertion: 'occur' });
    await pollUntil(
      async () => names((await deviceList())?.[`${RESOURCE}-Unhealthy`]).includes('Ascend910-5'),
      'Ascend910-5 Unhealthy in device-info',
      30_000,
    );
    const event = await pollUntil(
      async () =>
        (await core().listNamespacedEvent({ namespace: AGENT_NS })).items.find(
          (e) => e.reason === 'Occur' && e.message?.includes(`faultCodes:${SEPARATE_CODE}`),
        ),
      'the Occur Event in kube-system',
      30_000,
      () =>
        agent
          .logs()
          .filter((l) => String(l.msg).includes('event'))
          .slice(-5)
          .map((l) => JSON.stringify(l))
          .join('\n'),
    );
    expect(event).toMatchObject({
      type: 'Warning',
      involvedObject: { kind: 'pod', namespace: AGENT_NS, name: shipped.agentPod.name },
      source: { component: 'device-plugin', host: c.nodeName },
      reportingComponent: 'device-plugin',
      reportingInstance: shipped.agentPod.name,
      count: 1,
    });
    expect(event.message).toContain(`nodeName:${c.nodeName}, assertion:Occur`);
    // eventTime is a MicroTime: the server keeps the microseconds (six digits), the other times whole seconds
    const raw = (
      await rawRequest(c, c.adminToken, 'GET', `/api/v1/namespaces/${AGENT_NS}/events/${event.metadata.name}`)
    ).body as { eventTime: string; firstTimestamp: string };
    expect(raw.eventTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(raw.firstTimestamp).toBe(`${raw.eventTime.slice(0, 19)}Z`);
    const v1 = (
      await rawRequest(
        c,
        c.adminToken,
        'GET',
        `/apis/events.k8s.io/v1/namespaces/${AGENT_NS}/events/${event.metadata.name}`,
      )
    ).body as Record<string, unknown>;
    expect(v1).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      eventTime: raw.eventTime,
      note: event.message,
      regarding: { kind: 'pod', namespace: AGENT_NS, name: shipped.agentPod.name },
      reportingController: 'device-plugin',
      reportingInstance: shipped.agentPod.name,
      deprecatedSource: { component: 'device-plugin', host: c.nodeName },
    });
    await agent.mock({ op: 'fault', logicId: 5, eventId: SEPARATE_CODE, assertion: 'recover' });
    await pollUntil(
      async () => !names((await deviceList())?.[`${RESOURCE}-Unhealthy`]).includes('Ascend910-5'),
      'Ascend910-5 Healthy again',
      30_000,
    );
  });

  test('a pod on the node using 2 chips: the agent annotates it with the chips kubelet allocated', async () => {
    requireAgent();
    await core().createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'train-0', namespace: 'default' },
        spec: {
          terminationGracePeriodSeconds: 1,
          tolerations: [HOST_PROCESS_TOLERATION],
          containers: [{ name: 'c0', image: PAUSE_IMAGE, resources: { limits: { [RESOURCE]: '2' } } }],
        },
      },
    });
    const annotations = await pollUntil(
      async () => {
        const a = (await core().readNamespacedPod({ name: 'train-0', namespace: 'default' })).metadata?.annotations;
        return a?.[ANNOTATION_ASCEND_REAL] !== undefined && a[POD_DEVICE_ANNOTATION] !== undefined ? a : undefined;
      },
      'the pod annotations',
      60_000,
    );
    const list = await new PodResourcesClient(c.podResourcesSocket).list();
    const ids = (list.podResources.find((p) => p.name === 'train-0')?.containers[0]?.devices ?? [])
      .filter((d) => d.resourceName === RESOURCE)
      .flatMap((d) => d.deviceIds)
      .sort();
    expect(ids).toHaveLength(2);
    expect(annotations[ANNOTATION_ASCEND_REAL]!.split(',').sort()).toEqual(ids);
    const rankTable = JSON.parse(annotations[POD_DEVICE_ANNOTATION]!) as {
      pod_name: string;
      devices: { device_id: string; device_ip: string }[];
    };
    expect(rankTable.pod_name).toBe('train-0');
    expect(rankTable.devices.map((d) => `Ascend910-${d.device_id}`).sort()).toEqual(ids);
    expect(rankTable.devices.map((d) => d.device_ip).sort()).toEqual(
      ids.map((id) => CHIPS.find((ch) => `Ascend910-${ch.logicId}` === id)!.ip).sort(),
    );
  });
});

describe('issue [R] item 5: the fault center writes through its pod-bound token, read back from the real server', () => {
  test('it leads: its Lease names it, with MicroTimes of six digits, renewed', async () => {
    await center.waitLeading();
    const read = async () =>
      (
        await rawRequest(
          c,
          c.adminToken,
          'GET',
          `/apis/coordination.k8s.io/v1/namespaces/${CENTER_NS}/leases/ascend-fault-center`,
        )
      ).body as {
        spec: { holderIdentity: string; leaseDurationSeconds: number; acquireTime: string; renewTime: string };
      };
    const first = await read();
    expect(first.spec).toMatchObject({ holderIdentity: shipped.centerPod.name, leaseDurationSeconds: 15 });
    expect(first.spec.acquireTime).toMatch(/\.\d{6}Z$/);
    const renewed = await pollUntil(
      async () => {
        const l = await read();
        return l.spec.renewTime > first.spec.renewTime ? l : undefined;
      },
      'a renewal of the Lease',
      15_000,
    );
    expect(renewed.spec.acquireTime).toBe(first.spec.acquireTime);
    expect(sum(await scrape(center.metricsAddress), 'ascend_fault_center_lease_leader')).toBe(1);
  });

  test('a chip fault in device-info is counted and separated: clusterd-manual-info-cm and the persisted state', async () => {
    requireAgent();
    await center.waitLeading();
    await agent.mock({ op: 'fault', logicId: 1, eventId: SEPARATE_CODE, assertion: 'occur' });
    const written = await pollUntil(
      async () => {
        const v = (await cm(CENTER_NS, 'clusterd-manual-info-cm'))?.data?.[c.nodeName];
        return v?.includes('"Ascend910-1"') === true ? v : undefined;
      },
      'Ascend910-1 in clusterd-manual-info-cm',
      30_000,
    );
    const info = JSON.parse(written) as {
      Total: string[];
      Detail: Record<string, { FaultCode: string; FaultLevel: string }[]>;
    };
    expect(info.Total).toContain('Ascend910-1');
    expect(info.Detail['Ascend910-1']).toEqual([
      expect.objectContaining({ FaultCode: SEPARATE_CODE, FaultLevel: 'ManuallySeparateNPU' }),
    ]);
    const state = await pollUntil(
      async () => (await cm(CENTER_NS, 'ascend-fault-center-state'))?.data,
      'the persisted state',
      30_000,
    );
    expect(Object.keys(state).length).toBeGreaterThan(0);
    await agent.mock({ op: 'fault', logicId: 1, eventId: SEPARATE_CODE, assertion: 'recover' });
  });

  test("cluster-info-device-0 in mindx-dl publishes the node: the agent's chip lists, the separated chips unhealthy and marked (§1.8)", async () => {
    requireAgent();
    const separated = (
      JSON.parse((await cm(CENTER_NS, 'clusterd-manual-info-cm'))?.data?.[c.nodeName] ?? '{"Total":[]}') as {
        Total: string[];
      }
    ).Total;
    // the separations of the tests above (chips 5 and 1)
    expect(separated).toEqual(expect.arrayContaining(['Ascend910-1', 'Ascend910-5']));
    const keys = [RESOURCE, `${RESOURCE}-Unhealthy`, `${RESOURCE}-NetworkUnhealthy`, `${RESOURCE}-Recovering`];
    const pick = (l: Record<string, string> | undefined) =>
      Object.fromEntries(keys.map((k) => [k, names(l?.[k]).sort().join(',')]));
    // what the node's member must say: the agent's lists, each separated chip moved from the available list to the
    // unhealthy one (cluster-faults §1.8, "add fault and fix" of §0.3)
    const expected = (l: Record<string, string> | undefined) => {
      const p = pick(l);
      p[RESOURCE] = names(p[RESOURCE])
        .filter((n) => !separated.includes(n))
        .join(',');
      const unhealthy = new Set([...names(p[`${RESOURCE}-Unhealthy`]), ...separated]);
      p[`${RESOURCE}-Unhealthy`] = [...unhealthy].sort().join(',');
      return p;
    };
    let last = '';
    const member = await pollUntil(
      async () => {
        const m = await published();
        const faults = JSON.parse(m?.DeviceList[`${RESOURCE}-Fault`] ?? '[]') as {
          npu_name: string;
          fault_level: string;
        }[];
        const marked = faults.filter((f) => f.fault_level === 'ManuallySeparateNPU').map((f) => f.npu_name);
        const want = expected(await deviceList());
        last = JSON.stringify({ published: pick(m?.DeviceList), expected: want, marked });
        return JSON.stringify(pick(m?.DeviceList)) === JSON.stringify(want) &&
          separated.every((n) => marked.includes(n))
          ? m
          : undefined;
      },
      "the node's chip lists and separation markers in cluster-info-device-0",
      30_000,
      () => `last published: ${last}`,
    );
    const obj = (await cm('mindx-dl', 'cluster-info-device-0'))!;
    expect(obj.metadata?.labels).toEqual({ 'mx-consumer-volcano': 'true' });
    expect(member.CmName).toBe(`mindx-dl-deviceinfo-${c.nodeName}`);
    expect(names(member.DeviceList[RESOURCE]).length).toBeGreaterThan(0);
  });

  test('a public-fault ConfigMap (label mc-consumer-publicfault=true) is taken in: statistic-fault-info and the published chip', async () => {
    await center.waitLeading();
    await core().createNamespacedConfigMap({
      namespace: 'default',
      body: {
        metadata: { name: 'ccae-fault', namespace: 'default', labels: { 'mc-consumer-publicfault': 'true' } },
        data: { PublicFault: JSON.stringify(publicFault('msg.cm-0001', 2)) },
      },
    });
    const stats = await pollUntil(
      async () => {
        const d = (await cm(CENTER_NS, 'statistic-fault-info'))?.data;
        return d?.PublicFaults?.includes('msg.cm-0001-0') === true ? d : undefined;
      },
      'the public fault in statistic-fault-info',
      30_000,
    );
    expect(stats.PublicFaults).toContain('010001001');
    await pollUntil(
      async () => (await published())?.DeviceList[`${RESOURCE}-Fault`]?.includes('010001001') === true,
      'the public fault on the published node',
      30_000,
    );
  });

  test('a public fault by gRPC PubFault is accepted and persisted', async () => {
    const address = await center.grpcAddress();
    const proto = loadPubFaultProto();
    const client = new proto.PubFault(address, grpc.credentials.createInsecure());
    try {
      const msg = publicFault('msg.grpc-0001', 3);
      const res = await new Promise<{ code: number; info: string }>((resolve, reject) =>
        client.SendPublicFault(
          {
            ...msg,
            timestamp: String(msg.timestamp),
            faults: (msg.faults as Record<string, unknown>[]).map((f) => ({ ...f, faultTime: String(f.faultTime) })),
          },
          { deadline: Date.now() + 10_000 },
          (err, value) => (err ? reject(err) : resolve(value as { code: number; info: string })),
        ),
      );
      expect(res).toEqual({ code: 0, info: 'public fault send successfully' });
    } finally {
      client.close();
    }
    await pollUntil(
      async () => (await cm(CENTER_NS, 'statistic-fault-info'))?.data?.PublicFaults?.includes('msg.grpc-0001-0'),
      'the gRPC public fault in statistic-fault-info',
      30_000,
    );
  });
});

/** Requests the server refused or could not take (a 404 of a read is an answer, not a refusal). */
const refused = (rs: readonly ProxiedRequest[]): string[] =>
  rs
    .filter((r) => [400, 401, 403, 413, 422].includes(r.status) || r.status >= 500)
    .map((r) => `${r.method} ${r.path} → ${r.status} ${r.message ?? ''}`);

describe('issue [R] item 1: the shipped policy allows every write the programs make', () => {
  test('no request of the agent or of the fault center was refused (their proxies saw no 400/401/403/413/422/5xx)', () => {
    requireAgent();
    expect({ agent: refused(agentProxy.requests()), faultCenter: refused(centerProxy.requests()) }).toEqual({
      agent: [],
      faultCenter: [],
    });
    const writes = (rs: readonly ProxiedRequest[]) => rs.filter((r) => r.method !== 'GET').length;
    // both really wrote through their tokens (ConfigMaps, Node, pod, Events; Lease, ConfigMaps)
    expect(writes(agentProxy.requests())).toBeGreaterThan(5);
    expect(writes(centerProxy.requests())).toBeGreaterThan(5);
  });

  test("no refusal in the programs' logs, their refusal and failure counters at zero", async () => {
    requireAgent();
    const bad = (lines: Record<string, unknown>[]) =>
      lines.filter(
        (l) => [400, 403, 422].includes(Number(l.status)) || /\b(403|422)\b/.test(JSON.stringify([l.err, l.error])),
      );
    expect(bad(agent.logs())).toEqual([]);
    expect(bad(center.logs())).toEqual([]);
    const address = agent.logs().find((l) => l.msg === 'metrics and probes listening')?.address;
    const agentMetrics = await scrape(String(address));
    expect(samples(agentMetrics, 'ascend_npu_agent_kube_writes_refused_total').filter((s) => s.value > 0)).toEqual([]);
    expect(sum(agentMetrics, 'ascend_npu_agent_configmap_writes_total', { result: 'failed' })).toBe(0);
    expect(sum(agentMetrics, 'ascend_npu_agent_configmap_writes_total', { result: 'ok' })).toBeGreaterThan(0);
    const centerMetrics = await scrape(center.metricsAddress);
    expect(sum(centerMetrics, 'ascend_fault_center_state_commits_total', { result: 'refused' })).toBe(0);
    expect(sum(centerMetrics, 'ascend_fault_center_published_writes_total')).toBeGreaterThan(0);
  });
});

describe('issue [R] item 7: what the fault center meets on a cluster without Volcano', () => {
  test('PodGroups not served: 404 in plain text from the real server and the stand-in; the fault center retries with a growing backoff and works on', async () => {
    const p = '/apis/scheduling.volcano.sh/v1beta1/podgroups?limit=500';
    const real = await rawRequest(c, shipped.centerToken, 'GET', p);
    expect({ status: real.status, text: real.text }).toEqual({ status: 404, text: '404 page not found\n' });
    const standIn = await KubeApiStandIn.start();
    try {
      const stand = await rawRequest({ server: standIn.url }, 'any', 'GET', p);
      expect({ status: stand.status, text: stand.text }).toEqual({ status: real.status, text: real.text });
    } finally {
      await standIn.stop();
    }
    const retries = center
      .logs()
      .filter((l) => l.what === 'podgroups' && l.msg === 'list/watch failed; re-listing later')
      .map((l) => Number(l.retryInMs));
    expect(retries.length).toBeGreaterThan(2);
    // exponential with jitter: each wait about twice the one before, up to the cap
    expect(retries[2]!).toBeGreaterThan(retries[0]!);
  });
});

describe('issue [R] item 1: the policy both ways on the real server, and the stand-in answering as it', () => {
  let standIn: StandInServer;
  const tokens = {} as Record<Who, string>;
  beforeAll(async () => {
    // the objects the requests name, on both servers
    await c.kubectl(
      ['apply', '-f', '-'],
      seedObjects()
        .map((o) => JSON.stringify(o))
        .join('\n'),
    );
    tokens.agent = shipped.agentToken;
    tokens.center = shipped.centerToken;
    tokens['agent-unbound'] = await c.createToken(AGENT_NS, AGENT_SA);
    standIn = await startStandIn({ tokens, adminToken: c.adminToken });
  }, 60_000);
  afterAll(async () => {
    await standIn?.stop();
  });

  test.each(REFUSED.map((k) => [k.what, k] as const))('refused with 403: %s', async (_what, k) => {
    const real = await rawRequest(c, tokens[k.who], k.method, k.path, k.body, k.contentType);
    expect([real.status, real.reason]).toEqual([k.expect.status, k.expect.reason]);
    expect(real.message).toContain(k.expect.message);
    const stand = await standIn.request(k);
    expect({ status: stand.status, reason: stand.reason, message: stand.message }).toEqual({
      status: real.status,
      reason: real.reason,
      message: real.message,
    });
  });

  test.each(ALLOWED.map((k) => [k.what, k] as const))('allowed: %s', async (_what, k) => {
    const real = await rawRequest(c, tokens[k.who], k.method, k.path, k.body, k.contentType);
    expect({ status: real.status, message: real.message }).toEqual({ status: k.expect.status, message: '' });
    expect((await standIn.request(k)).status).toBe(real.status);
  });

  test('kubectl with the agent token: its own Node labelled; another Node labelled, its own cordoned or tainted, a pod elsewhere annotated, a ConfigMap created → Forbidden', async () => {
    const as = (args: string[]) => c.kubectlRun(args, undefined, shipped.agentKubeconfig);
    expect((await as(['label', 'node', c.nodeName, 'ascend-test/probe=1'])).stdout).toContain('labeled');
    expect((await as(['label', 'node', c.nodeName, 'ascend-test/probe-'])).stdout).toContain('unlabeled');
    const outcomes = [];
    for (const args of [
      ['label', 'node', 'other-node', 'ascend-test/probe=1'],
      // kubectl cordon reports a refused patch on stderr and still exits 0 (kubectl's drain.RunCordonOrUncordon)
      ['cordon', c.nodeName],
      ['taint', 'node', c.nodeName, 'ascend-test/probe=1:NoSchedule'],
      ['-n', 'default', 'annotate', 'pod', 'on-other-node', 'ascend-test/probe=1'],
      ['-n', AGENT_NS, 'create', 'configmap', 'mindx-dl-deviceinfo-fourth-node'],
    ]) {
      const r = await as(args);
      outcomes.push(
        `kubectl ${args.join(' ')}: ${/is forbidden/.test(r.stderr) ? 'Forbidden' : `${r.code} ${r.stdout}${r.stderr}`}`,
      );
    }
    expect(outcomes.filter((o) => !o.endsWith(': Forbidden'))).toEqual([]);
    const node = await c.node();
    expect(node.spec?.unschedulable).toBeFalsy();
    expect(node.spec?.taints?.map((t) => t.key)).toEqual([HOST_PROCESS_TOLERATION.key]);
  });
});

describe('issue [R] item 1, defect 4: a refused Node write does not stop the agent', () => {
  test('under a policy refusing its Node writes the restarted agent serves kubelet and device-info, counts the 403s, and labels the Node once allowed', async () => {
    requireAgent();
    const policy = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'ascend-test-refuse-agent-node-writes' },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] }],
        },
        matchConditions: [
          {
            name: 'agent',
            expression: "request.userInfo.username == 'system:serviceaccount:kube-system:ascend-npu-agent'",
          },
        ],
        validations: [{ expression: 'false', message: 'node writes refused by the test', reason: 'Forbidden' }],
      },
    };
    const binding = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: 'ascend-test-refuse-agent-node-writes' },
      spec: { policyName: 'ascend-test-refuse-agent-node-writes', validationActions: ['Deny'] },
    };
    await agent.stop();
    await c.kubectl(['apply', '-f', '-'], [policy, binding].map((o) => JSON.stringify(o)).join('\n'));
    await pollUntil(
      async () =>
        (
          await rawRequest(
            c,
            shipped.agentToken,
            'PATCH',
            `/api/v1/nodes/${c.nodeName}?dryRun=All`,
            { metadata: {} },
            'application/merge-patch+json',
          )
        ).message.includes('node writes refused by the test'),
      'the test policy in force',
      30_000,
    );
    // a label the agent writes at start-up, removed, so that its return shows the retried patch
    await c.kubectl(['label', 'node', c.nodeName, 'accelerator-']);
    const mark = agentProxy.mark;
    await agent.start();
    const address = String(agent.logs().find((l) => l.msg === 'metrics and probes listening')?.address);
    await pollUntil(
      async () =>
        sum(await scrape(address), 'ascend_npu_agent_kube_writes_refused_total', { object: 'node', status: '403' }) > 0,
      'a refused Node patch counted',
      30_000,
    );
    expect(agentProxy.requests(mark).some((r) => r.path === `/api/v1/nodes/${c.nodeName}` && r.status === 403)).toBe(
      true,
    );
    // still serving: registered with kubelet, device-info written by this agent, and alive a while later
    await pollUntil(
      () =>
        agentProxy
          .requests(mark)
          .some(
            (r) =>
              r.path.endsWith(`/configmaps/mindx-dl-deviceinfo-${c.nodeName}`) &&
              r.method === 'PUT' &&
              r.status === 200,
          ),
      'a device-info write of the restarted agent',
      30_000,
    );
    await sleep(3000);
    expect(agent.process?.child.exitCode).toBeNull();
    expect(agent.registrations()).toBeGreaterThan(0);
    await c.kubectl(['delete', 'validatingadmissionpolicybinding', binding.metadata.name]);
    await c.kubectl(['delete', 'validatingadmissionpolicy', policy.metadata.name]);
    const node = await pollUntil(
      async () => {
        const n = await c.node();
        return n.metadata?.labels?.accelerator === 'huawei-Ascend910' ? n : undefined;
      },
      'the accelerator label written once the policy is gone',
      60_000,
    );
    expect(node.spec?.unschedulable).toBeFalsy();
  });
});
