/**
 * The fault center against the Kubernetes API stand-in: intake, published view, manual-info ConfigMap, policy
 * rejection, Lease hand-over (in-process, short durations, injected clock offset), and the built CLI as a child
 * process.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { SYSTEM_CLOCK } from '../../src/core/clock.js';
import {
  FaultCenter,
  firstCycleSlice,
  type FaultCenterOptions,
  type FaultCenterTimings,
} from '../../src/cluster/fault-center.js';
import { CONFIGMAPS, KubeApiStandIn, VOLCANO_PODGROUPS, PODS, CORE_EVENTS, LEASES } from '../../src/sim/kube-api.js';
import { centerKube, deviceInfoCm, faultObject, jobPod, podGroup, policyText } from './helpers.js';

let api: KubeApiStandIn;
let offset = 0;
const centers: FaultCenter[] = [];

const now = () => Date.now() + offset;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(fn: () => T | undefined | false, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function cm(ns: string, name: string) {
  return api.store.get(CONFIGMAPS, ns, name) as { data?: Record<string, string> } | undefined;
}

function center(
  identity: string,
  opts: {
    countJoblessFaults?: boolean;
    timings?: Partial<FaultCenterTimings>;
    backoff?: FaultCenterOptions['backoff'];
  } = {},
): FaultCenter {
  const c = new FaultCenter({
    ...(opts.backoff ? { backoff: opts.backoff } : {}),
    kube: centerKube(api),
    identity,
    leaseName: 'ascend-fault-center',
    leaseNamespace: 'cluster-system',
    countJoblessFaults: opts.countJoblessFaults ?? false,
    logger: pino({ level: process.env.AFC_LOG ?? 'silent' }),
    registry: new Registry(),
    timings: {
      cycleMs: 50,
      releaseTickMs: 200,
      publishMinIntervalMs: 50,
      leaseDurationSec: 1,
      leaseRenewDeadlineMs: 500,
      leaseRetryPeriodMs: 100,
      startupRetryMs: 50,
      ...opts.timings,
    },
    clock: { ...SYSTEM_CLOCK, now },
  });
  centers.push(c);
  c.start();
  return c;
}

function seed(threshold = '1'): void {
  api.store.create(CONFIGMAPS, 'cluster-system', {
    metadata: { name: 'clusterd-config-cm', namespace: 'cluster-system' },
    data: { 'manually_separate_policy.conf': policyText({ threshold }) },
  });
  api.store.create(PODS, 'default', jobPod('p0', 'node-1', 'uid-J', [3, 5]));
  api.store.create(VOLCANO_PODGROUPS, 'default', podGroup('pg', 'uid-J'));
}

function published(): string {
  return cm('mindx-dl', 'cluster-info-device-0')?.data?.['cluster-info-device-0'] ?? '';
}

/** A node of about 450 KiB published (9,000 codes, each with its time entry once published): two make two chunks. */
function big(node: string, t: number) {
  const codes = Array.from({ length: 9000 }, (_, i) => `8${i.toString(16).toUpperCase().padStart(7, '0')}`);
  const f = { ...faultObject('Ascend910-0', codes.join(','), 'NotHandleFault'), fault_time_and_level_map: {} };
  return deviceInfoCm(node, [f], { updateTime: t });
}

function createBigNodes(t: number): void {
  for (const node of ['node-1', 'node-2']) api.store.create(CONFIGMAPS, 'kube-system', big(node, t));
}

function putBig(node: string, t: number): void {
  const m = big(node, t);
  api.store.update(CONFIGMAPS, 'kube-system', m.metadata.name, m);
}

/** A big node's published UpdateTime in chunk 0 or 1, found by text (each chunk is 450 KiB; the poll stays cheap). */
function bigValueOf(node: string): number | undefined {
  const re = new RegExp(`"UpdateTime":(\\d+),"CmName":"mindx-dl-deviceinfo-${node}"`);
  for (const i of [0, 1]) {
    const m = re.exec(cm('mindx-dl', `cluster-info-device-${i}`)?.data?.[`cluster-info-device-${i}`] ?? '');
    if (m !== null) return Number(m[1]);
  }
  return undefined;
}

/** When each of the two big nodes first shows `t` in the chunks (ms since the epoch), polled every 20 ms. */
async function bigSeenAt(t: number, timeoutMs: number): Promise<[number, number]> {
  const seen: [number, number] = [NaN, NaN];
  const end = Date.now() + timeoutMs;
  while ((Number.isNaN(seen[0]) || Number.isNaN(seen[1])) && Date.now() < end) {
    ['node-1', 'node-2'].forEach((n, k) => {
      if (Number.isNaN(seen[k]) && bigValueOf(n) === t) seen[k] = Date.now();
    });
    await sleep(20);
  }
  return seen;
}

beforeEach(async () => {
  offset = 0;
  api = await KubeApiStandIn.start({ extraResources: [VOLCANO_PODGROUPS] });
});

afterEach(async () => {
  await Promise.all(centers.splice(0).map((c) => c.stop()));
  await api.stop();
});

describe('issue [P] 6 the first cycle in slices', () => {
  test('[P] 6 10,000 nodes: slices of 1,000, then halves down to 200, every node once, the last slice one chunk or less', () => {
    const slices: number[] = [];
    for (let pending = 10_000, slice = 1000; pending > 0; slice = firstCycleSlice(pending)) {
      slices.push(Math.min(slice, pending));
      pending -= Math.min(slice, pending);
    }
    expect(slices).toEqual([1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 500, 250, 200, 50]);
  });
});

describe('fault center against the stand-in', () => {
  test('0.3 a verified device-info ConfigMap is published in cluster-info-device-0', async () => {
    seed();
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', []));
    center('a');
    await until(() => published().includes('mindx-dl-deviceinfo-node-1'), 'published node');
    expect(JSON.parse(published())['mindx-dl-deviceinfo-node-1'].CmName).toBe('mindx-dl-deviceinfo-node-1');
  });

  test('0.3 issue [O] start-up: a chunk absent at take-over is created by one POST, not an update answered 404', async () => {
    seed();
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', []));
    center('a');
    await until(() => published().includes('mindx-dl-deviceinfo-node-1'), 'published node');
    const writes = api
      .requests()
      .filter((r) => r.namespace === 'mindx-dl' && r.method !== 'GET')
      .map((r) => `${r.method} ${r.status}`);
    expect(writes[0]).toBe('POST 201');
  });

  test('0.3 issue [O] start-up: the first complete publish comes before the persisted state is written', async () => {
    seed();
    api.store.create(
      CONFIGMAPS,
      'kube-system',
      deviceInfoCm('node-1', [faultObject('Ascend910-3', '80E01801', 'RestartNPU')]),
    );
    center('a');
    await until(() => published().includes('mindx-dl-deviceinfo-node-1'), 'published node');
    await until(
      () =>
        api
          .requests()
          .some(
            (r) =>
              r.namespace === 'cluster-system' && r.name?.startsWith('ascend-fault-center-state') && r.method !== 'GET',
          ),
      'state written',
    );
    const order = api
      .requests()
      .filter(
        (r) => r.method !== 'GET' && (r.namespace === 'mindx-dl' || r.name?.startsWith('ascend-fault-center-state')),
      )
      .map((r) => r.namespace);
    expect(order[0]).toBe('mindx-dl');
  });

  test('0.1 a tampered device-info ConfigMap is ignored', async () => {
    seed();
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', []));
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-2', [], { tamper: true }));
    center('a');
    await until(() => published().includes('node-1'), 'published node-1');
    expect(published()).not.toContain('node-2');
  });

  test('issue [O] bad input: a device-info ConfigMap refused for its CheckCode is counted once however often it is rewritten, and other nodes keep flowing', async () => {
    seed();
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-2', [], { tamper: true }));
    const a = center('a');
    await until(() => a.ready, 'ready');
    for (let i = 0; i < 3; i++) {
      const bad = deviceInfoCm('node-2', [], { tamper: true, updateTime: 1772359300 + i });
      api.store.update(CONFIGMAPS, 'kube-system', bad.metadata.name, bad);
    }
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', []));
    await until(() => published().includes('node-1'), 'published node-1');
    const m = await a.metrics.rejectedInputs.get();
    expect(m.values.map((v) => [v.labels.reason, v.value])).toEqual([['check-code', 1]]);
  });

  test('issue [R] item 5: a node whose published value outgrows a ConfigMap (1 MiB) is not written but named and counted once; the other nodes are published', async () => {
    seed();
    // 100,000 codes without time entries: about 0.9 MB of device-info, over 5 MB once published (every code gets
    // its fault_time/fault_level entry, cluster-faults §0.1, §0.3); the real server refuses such a chunk (422/413)
    const codes = Array.from({ length: 100_000 }, (_, i) => `8${i.toString(16).toUpperCase().padStart(7, '0')}`);
    const big = { ...faultObject('Ascend910-0', codes.join(','), 'SeparateNPU'), fault_time_and_level_map: {} };
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-big', [big]));
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', []));
    const a = center('a', { timings: { publishForceMs: 200 } });
    await until(() => published().includes('mindx-dl-deviceinfo-node-1'), 'published node-1');
    await sleep(600); // a few forced rewrites (publishForceMs)
    // 415: the stand-in refusing the first protobuf body (the writer falls back to JSON), not a size refusal
    const refused = api
      .requests()
      .filter((r) => r.url.includes('/namespaces/mindx-dl/') && r.status >= 400 && r.status !== 415);
    expect(refused.map((r) => `${r.method} ${r.url} ${r.status}`)).toEqual([]);
    const m = await a.metrics.rejectedInputs.get();
    expect(m.values.map((v) => [v.labels.reason, v.value])).toEqual([['too-large-to-publish', 1]]);
    expect(published()).not.toContain('node-big');
  });

  test('1.7 a hardware fault at threshold 1 separates, writes clusterd-manual-info-cm and publishes the marker', async () => {
    seed();
    api.store.create(
      CONFIGMAPS,
      'kube-system',
      deviceInfoCm('node-1', [faultObject('Ascend910-3', '80E01801', 'RestartNPU')]),
    );
    const a = center('a');
    await until(() => a.core?.manual.jobs.faultsOf('uid-J').length === 1, 'queued job fault');
    offset = 31_000;
    await until(() => cm('cluster-system', 'clusterd-manual-info-cm')?.data?.['node-1'], 'manual-info written');
    await until(() => published().includes('ManuallySeparateNPU'), 'marker published');
    expect(JSON.parse(cm('cluster-system', 'clusterd-manual-info-cm')!.data!['node-1']!).Total).toEqual([
      'Ascend910-3',
    ]);
  });

  test('outage: a cluster-info write backing off after a 503 outage is woken when the API server is back, not after its backoff', async () => {
    seed();
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', []));
    center('a', {
      // the Lease outlives the outage (the term and its queues stay); a publish is forced every 200 ms
      timings: { leaseDurationSec: 60, leaseRenewDeadlineMs: 30_000, leaseRetryPeriodMs: 1000, publishForceMs: 200 },
      backoff: { initialMs: 60_000, maxMs: 60_000 }, // a retry that only its timer could start comes after the test
    });
    await until(() => published().includes('node-1'), 'published node-1');
    api.setAvailable(false);
    await sleep(1000); // forced publishes fail: the chunk queue waits 60 s for its retry
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-2', []));
    api.setAvailable(true);
    await until(() => published().includes('node-2'), 'node-2 published after the outage', 20_000);
    expect(JSON.parse(published())['mindx-dl-deviceinfo-node-2'].CmName).toBe('mindx-dl-deviceinfo-node-2');
  }, 30_000);

  test('issue [O] 1 a chunk whose nodes change every 100 ms is written at most once per chunkMinIntervalMs, and its last value arrives', async () => {
    seed();
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', []));
    const intervalMs = 1500;
    center('a', { timings: { chunkMinIntervalMs: intervalMs } });
    await until(() => published().includes('node-1'), 'published node-1');
    const name = 'cluster-info-device-0';
    const writes = () => api.writeCount({ resource: 'configmaps', namespace: 'mindx-dl', name });
    const before = writes();
    const started = Date.now();
    let last = 0;
    for (let i = 1; i <= 30; i++) {
      last = 1772359300 + i;
      const c = deviceInfoCm('node-1', [], { updateTime: last });
      api.store.update(CONFIGMAPS, 'kube-system', c.metadata.name, c);
      await sleep(100);
    }
    await until(
      () => JSON.parse(published() || '{}')['mindx-dl-deviceinfo-node-1']?.UpdateTime === last,
      'the last update published',
    );
    // one write per interval of the time taken (however slow the machine), plus the first and a forced rewrite
    const bound = Math.ceil((Date.now() - started) / intervalMs) + 2;
    expect(writes() - before).toBeLessThanOrEqual(bound);
    expect(writes() - before).toBeGreaterThan(0);
  }, 30_000);

  test('issue [P] 6 a change whose on-demand cycle is still waiting when a deferred chunk write runs is in that write', async () => {
    seed();
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', [], { updateTime: 1772359301 }));
    // a change waits 1.5 s for its cycle; a chunk is written at most every 2.5 s; no periodic cycle or forced write
    const c = center('a', {
      timings: {
        onDemandDelayMs: 1500,
        onDemandMinIntervalMs: 0,
        chunkMinIntervalMs: 2500,
        cycleMs: 600_000,
        publishForceMs: 600_000,
      },
    });
    const updateTime = () => JSON.parse(published() || '{}')['mindx-dl-deviceinfo-node-1']?.UpdateTime as number;
    await until(() => updateTime() === 1772359301, 'first value published');
    const cycles = async () => (await c.metrics.cycles.get()).values[0]?.value ?? 0;
    const put = (t: number) => {
      const m = deviceInfoCm('node-1', [], { updateTime: t });
      api.store.update(CONFIGMAPS, 'kube-system', m.metadata.name, m);
    };
    // v2: its cycle runs 1.5 s later and defers the chunk write to 2.5 s after the first one
    put(1772359302);
    const before = await cycles();
    const seen = new Set<number>();
    const deadline = Date.now() + 15_000;
    while ((await cycles()) === before && Date.now() < deadline) await sleep(10);
    // v3 right after v2's cycle: its own cycle (1.5 s away) is still waiting when the deferred write runs
    put(1772359303);
    while (updateTime() !== 1772359303 && Date.now() < deadline) {
      seen.add(updateTime());
      await sleep(10);
    }
    seen.add(updateTime());
    // the deferred write took v3 with it: v2 was never published
    expect([...seen]).toEqual([1772359301, 1772359303]);
  }, 30_000);

  test('issue [P] 6 a chunk write that waited (here: refused with 409, then retried) carries the changes that reached the chunk meanwhile', async () => {
    seed();
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', [], { updateTime: 1772359301 }));
    const intervalMs = 4000;
    center('a', { timings: { chunkMinIntervalMs: intervalMs, publishForceMs: 600_000 } });
    const updateTime = () => JSON.parse(published() || '{}')['mindx-dl-deviceinfo-node-1']?.UpdateTime as number;
    await until(() => updateTime() === 1772359301, 'first value published');
    await sleep(intervalMs + 200); // the chunk may be written again at once
    const put = (t: number) => {
      const m = deviceInfoCm('node-1', [], { updateTime: t });
      api.store.update(CONFIGMAPS, 'kube-system', m.metadata.name, m);
    };
    // v2's write is refused for 1.5 s and retried; v3 reaches the chunk meanwhile, its own write a whole interval away
    api.setConflicts(1500, { resource: 'configmaps', namespace: 'mindx-dl', name: 'cluster-info-device-0' });
    put(1772359302);
    await until(() => api.conflictsAnswered > 0, 'the write of v2 refused');
    put(1772359303);
    const seen = new Set<number>();
    const deadline = Date.now() + 15_000;
    while (updateTime() !== 1772359303 && Date.now() < deadline) {
      seen.add(updateTime());
      await sleep(10);
    }
    seen.add(updateTime());
    // the retry took v3 with it: v2 was never stored
    expect([...seen]).toEqual([1772359301, 1772359303]);
  }, 30_000);

  test('issue [P] 6 a changed chunk free to be written does not wait for the publish armed for another chunk deferred further', async () => {
    seed();
    createBigNodes(1772359301);
    const intervalMs = 6000;
    center('a', { timings: { chunkMinIntervalMs: intervalMs, publishForceMs: 600_000 } });
    const valueOf = bigValueOf;
    await until(() => valueOf('node-1') === 1772359301 && valueOf('node-2') === 1772359301, 'both published');
    expect(cm('mindx-dl', 'cluster-info-device-1')).toBeDefined();
    await sleep(intervalMs + 200); // both chunks may be written again at once
    const put = putBig;
    // node-1 written at once, then changed again: its chunk's next write is a whole interval away (a publish armed for it)
    put('node-1', 1772359302);
    await until(() => valueOf('node-1') === 1772359302, 'node-1 v2 published');
    put('node-1', 1772359303);
    await sleep(300);
    // node-2's chunk was last written more than an interval ago: it goes out now, not with node-1's deferred write
    put('node-2', 1772359302);
    await until(() => valueOf('node-2') === 1772359302, 'node-2 v2 published', 20_000);
    // half a second on, node-1's deferred write (due about 4 s later) has still not gone out; had node-2's chunk
    // waited for the publish armed for node-1's, both would have been written together
    await sleep(500);
    expect(valueOf('node-1')).toBe(1772359302);
  }, 60_000);

  test('issue [P] 6 a deferred chunk is written at its turn, not held back by publishMinIntervalMs from a publish just before it', async () => {
    seed();
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', [], { updateTime: 1772359301 }));
    // a chunk at most every 4 s; publishes at most every 3 s; no forced rewrite
    center('a', { timings: { chunkMinIntervalMs: 4000, publishMinIntervalMs: 3000, publishForceMs: 600_000 } });
    const updateTime = () => JSON.parse(published() || '{}')['mindx-dl-deviceinfo-node-1']?.UpdateTime as number;
    await until(() => updateTime() === 1772359301, 'first value published');
    const firstSeen = Date.now();
    const written = () =>
      api.writeCount({ resource: 'configmaps', namespace: 'mindx-dl', name: 'cluster-info-device-0' });
    const writes = written();
    // 3.3 s after the first write: the change's publish runs at once (3 s passed) and defers the chunk to 4 s
    await sleep(3300);
    const m = deviceInfoCm('node-1', [], { updateTime: 1772359302 });
    api.store.update(CONFIGMAPS, 'kube-system', m.metadata.name, m);
    await until(() => updateTime() === 1772359302, 'the change published', 10_000);
    // at its turn (≈ 4 s after the first write), not 3 s after that publish (≈ 6.3 s)
    expect(Date.now() - firstSeen).toBeLessThan(5300);
    expect(written() - writes).toBe(1);
  }, 30_000);

  test('issue [P] 6 chunks changed together after their first writes leave paced, not in one burst', async () => {
    seed();
    createBigNodes(1772359301);
    // the gap between two chunk writes: min(publishMinIntervalMs, 3000 / (2 chunks + 1)) = 1 s
    center('a', { timings: { chunkMinIntervalMs: 3000, publishMinIntervalMs: 2000, publishForceMs: 600_000 } });
    await until(() => bigValueOf('node-1') === 1772359301 && bigValueOf('node-2') === 1772359301, 'both published');
    await sleep(3200); // both chunks may be written again
    putBig('node-1', 1772359302);
    putBig('node-2', 1772359302);
    const [one, two] = await bigSeenAt(1772359302, 10_000);
    // both written (nothing lost), the second a gap after the first instead of in the same publish
    expect([Number.isNaN(one), Number.isNaN(two)]).toEqual([false, false]);
    expect(Math.abs(two - one)).toBeGreaterThanOrEqual(700);
  }, 60_000);

  test('issue [P] 6 the first publication writes every chunk at once, unpaced', async () => {
    seed();
    createBigNodes(1772359301);
    center('a', { timings: { chunkMinIntervalMs: 3000, publishMinIntervalMs: 2000, publishForceMs: 600_000 } });
    const [one, two] = await bigSeenAt(1772359301, 20_000);
    expect(Math.abs(two - one)).toBeLessThan(500);
  }, 60_000);

  test('1.2 an invalid policy edit is rejected with an Event naming the key, previous policy kept', async () => {
    seed();
    const a = center('a');
    await until(() => a.core?.manual.enabled, 'policy applied');
    api.store.update(CONFIGMAPS, 'cluster-system', 'clusterd-config-cm', {
      metadata: { name: 'clusterd-config-cm', namespace: 'cluster-system' },
      data: { 'manually_separate_policy.conf': policyText({ threshold: '99' }) },
    });
    const ev = await until(
      () => api.store.list(CORE_EVENTS, 'cluster-system').find((e) => JSON.stringify(e).includes('PolicyRejected')),
      'PolicyRejected event',
    );
    expect([
      JSON.stringify(ev).includes('manually_separate_policy.conf'),
      a.core?.manual.policy?.faultThreshold,
    ]).toEqual([true, 1]);
  });

  test('1.9 a restored separation is surfaced without a policy ConfigMap being needed to keep it', async () => {
    api.store.create(CONFIGMAPS, 'cluster-system', {
      metadata: { name: 'clusterd-manual-info-cm', namespace: 'cluster-system' },
      data: {
        'node-1':
          '{"Total":["Ascend910-3"],"Detail":{"Ascend910-3":[{"FaultCode":"c","FaultLevel":"ManuallySeparateNPU","LastSeparateTime":1}]}}',
      },
    });
    const a = center('a');
    await until(() => a.ready, 'ready');
    await sleep(600); // several 200 ms manual ticks
    expect(cm('cluster-system', 'clusterd-manual-info-cm')?.data?.['node-1']).toContain('Ascend910-3');
  });

  test('lease: a standby takes over when the leader stops renewing and continues the counter', async () => {
    seed('3');
    api.store.create(
      CONFIGMAPS,
      'kube-system',
      deviceInfoCm('node-1', [faultObject('Ascend910-3', '80E01801', 'RestartNPU')]),
    );
    const a = center('a');
    await until(() => a.core?.manual.jobs.faultsOf('uid-J').length === 1, 'queued');
    offset = 31_000;
    await until(() => a.core?.manual.counter.size === 1, 'counted');
    await until(
      () => cm('cluster-system', 'ascend-fault-center-state')?.data?.state?.includes('80E01801'),
      'state persisted',
    );
    // the clock jumped: let the leader renew on the new clock before a standby looks at the Lease
    await until(() => {
      const l = api.store.get(LEASES, 'cluster-system', 'ascend-fault-center') as { spec: { renewTime: string } };
      return Date.parse(l.spec.renewTime) > Date.now() + 20_000;
    }, 'renewal on the new clock');
    const b = center('b');
    await sleep(300);
    expect(b.isLeader).toBe(false);
    await a.halt();
    await until(() => b.ready, 'b leads', 10_000);
    await sleep(300);
    expect(b.core?.manual.counter.times('node-1', 'Ascend910-3', '80E01801')?.length).toBe(1);
  });

  test('lease: the Lease names the leader', async () => {
    center('a');
    const lease = await until(() => api.store.get(LEASES, 'cluster-system', 'ascend-fault-center'), 'lease');
    expect((lease as { spec: { holderIdentity: string } }).spec.holderIdentity).toBe('a');
  });
});

describe('ascend-fault-center child process', () => {
  let child: ChildProcess | undefined;
  let tmp: string;
  const bin = path.resolve('dist/cli/fault-center.js');

  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'afc-'));
  });
  afterEach(async () => {
    if (child !== undefined && child.exitCode === null) {
      const done = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await done;
    }
    child = undefined;
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('cli: runs against the stand-in and publishes the processed view', async () => {
    seed();
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', []));
    const kubeconfig = path.join(tmp, 'kubeconfig');
    await api.writeKubeconfig(kubeconfig);
    child = spawn(
      process.execPath,
      [
        bin,
        `-kubeconfig=${kubeconfig}`,
        '-metricsAddress=127.0.0.1:0',
        '-grpcAddress=127.0.0.1:0',
        '-identity',
        'cli',
        `--stateDir=${tmp}`,
        '-cycleMs=50',
        '-leaseRetryPeriodMs=100',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    await until(() => published().includes('mindx-dl-deviceinfo-node-1'), 'published by the child');
    expect(
      (api.store.get(LEASES, 'cluster-system', 'ascend-fault-center') as { spec: { holderIdentity: string } }).spec
        .holderIdentity,
    ).toBe('cli');
  });

  test('cli: an invalid flag value exits 2 with a message', async () => {
    child = spawn(process.execPath, [bin, '-leaseDurationSeconds=zero'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise((r) => child!.once('exit', r));
    expect([code, err]).toEqual([2, expect.stringContaining('invalid integer value "zero" for -leaseDurationSeconds')]);
  });
});
