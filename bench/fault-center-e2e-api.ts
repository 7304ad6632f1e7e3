/**
 * The API side of bench/fault-center-e2e.ts, run as its own process (so the fault center's CPU is not shared with
 * it): the Kubernetes API stand-in seeded with a cluster of N nodes (device-info ConfigMaps with a valid CheckCode,
 * one job pod and one PodGroup per node, the policy, optionally 50,000 public faults in labelled ConfigMaps), the
 * driver of device-info updates, and a watch on `cluster-info-device-*` that measures what a reader sees.
 *
 * Talks to its parent over IPC (see `Command` / `Report`). Not a test: figures only.
 */
import * as k8s from '@kubernetes/client-node';
import { CONFIGMAPS, KubeApiStandIn, PODS, VOLCANO_PODGROUPS } from '../src/sim/kube-api.js';
import { deviceInfo, jobPod, podGroup, publicFaultConfigMaps } from './fault-center-cluster.js';
import { percentile } from './stats.js';

/** What the parent asks. */
export type Command =
  { type: 'watch' } | { type: 'updates'; seconds: number; perSecond: number } | { type: 'state' } | { type: 'stop' };

/** What this process reports. */
export type Report =
  | { type: 'ready'; kubeconfig: string; seededMs: number; objects: Record<string, number> }
  | { type: 'complete'; atMs: number; chunks: number; bytes: number }
  | {
      type: 'updates-done';
      updates: number;
      seen: number;
      superseded: number;
      unseen: number;
      p50Ms: number;
      p99Ms: number;
      maxMs: number;
    }
  | { type: 'state'; objects: { name: string; bytes: number }[]; manualInfoBytes: number; chunkBytes: number[] };

const N = Number(process.env.E2E_NODES ?? 1000);
const PUBLIC = Number(process.env.E2E_PUBLIC_FAULTS ?? 0);
const send = (r: Report): void => void process.send!(r);

const started = Date.now();
// history: the center's watches resume within seconds; a longer one keeps hundreds of 800 KiB chunk versions alive
const api = await KubeApiStandIn.start({ extraResources: [VOLCANO_PODGROUPS], historyLimit: 1000, logLimit: 100 });
/** `store` (default): "shows it" = the API server stored the chunk; `watch`: a client-node watch in this process */
const READER = process.env.E2E_READER ?? 'store';
api.store.create(CONFIGMAPS, 'cluster-system', {
  metadata: { name: 'clusterd-config-cm', namespace: 'cluster-system' },
  data: {
    'manually_separate_policy.conf':
      'enabled: true\nseparate:\n  fault_window_hours: 24\n  fault_threshold: 1\nrelease:\n  fault_free_hours: 48\n',
  },
});
for (let n = 0; n < N; n++) {
  api.store.create(CONFIGMAPS, 'kube-system', deviceInfo(n, 0));
  api.store.create(PODS, 'default', jobPod(n));
  api.store.create(VOLCANO_PODGROUPS, 'default', podGroup(n));
}
const pfs = publicFaultConfigMaps(PUBLIC, N, Date.now());
for (const cm of pfs) api.store.create(CONFIGMAPS, 'default', cm);
send({
  type: 'ready',
  kubeconfig: api.kubeconfigYaml(),
  seededMs: Date.now() - started,
  objects: { deviceInfo: N, pods: N, podGroups: N, publicFaultConfigMaps: pfs.length },
});

// ---- what a reader sees: the chunks as stored (or through a watch on mindx-dl) ----

/** chunk name → its node keys */
const chunkNodes = new Map<string, Set<string>>();
let completeSent = false;
/** node → the pending update (its marker and when it was written) */
const pending = new Map<number, { seq: number; atMs: number }>();
const latencies: number[] = [];
let superseded = 0;

function onChunk(cm: k8s.V1ConfigMap): void {
  const name = cm.metadata?.name ?? '';
  if (!name.startsWith('cluster-info-device-')) return;
  const value = cm.data?.[name];
  if (value === undefined) return;
  const now = Date.now();
  const map = JSON.parse(value) as Record<string, { DeviceList: Record<string, string> }>;
  chunkNodes.set(name, new Set(Object.keys(map)));
  if (!completeSent) {
    let total = 0;
    for (const s of chunkNodes.values()) total += s.size;
    if (total >= N) {
      completeSent = true;
      const bytes = [...chunkNodes.keys()].length;
      send({ type: 'complete', atMs: now, chunks: bytes, bytes: Buffer.byteLength(value) });
    }
  }
  if (pending.size === 0) return;
  for (const [node, p] of pending) {
    const info = map[`mindx-dl-deviceinfo-node-${node}`];
    if (info === undefined) continue;
    if (info.DeviceList['huawei.com/Ascend910-Fault']?.includes(`"fault_time":${p.seq},`)) {
      latencies.push(now - p.atMs);
      pending.delete(node);
    }
  }
}

/** node keys of a chunk value (the CmName values are not followed by `:{`) */
const NODE_KEY = /"mindx-dl-deviceinfo-node-(\d+)":\{/g;
/** update markers in a chunk value: fault_time of 7 digits inside the escaped `-Fault` string (real times have 13) */
const MARKER = /\\"fault_time\\":(\d{7}),/g;
/** seq → node of the pending updates */
const pendingBySeq = new Map<number, number>();

/** The same as {@link onChunk} on the stored value, without parsing 800 KiB per change. */
function onStoredChunk(name: string, value: string): void {
  const now = Date.now();
  if (!completeSent) {
    chunkNodes.set(name, new Set(Array.from(value.matchAll(NODE_KEY), (m) => m[1]!)));
    let total = 0;
    for (const s of chunkNodes.values()) total += s.size;
    if (total >= N) {
      completeSent = true;
      send({ type: 'complete', atMs: now, chunks: chunkNodes.size, bytes: Buffer.byteLength(value) });
    }
  }
  if (pendingBySeq.size === 0) return;
  for (const m of value.matchAll(MARKER)) {
    const s = Number(m[1]);
    const node = pendingBySeq.get(s);
    if (node === undefined) continue;
    pendingBySeq.delete(s);
    const p = pending.get(node);
    if (p?.seq === s) {
      latencies.push(now - p.atMs);
      pending.delete(node);
    }
  }
}

let watchAbort: AbortController | undefined;
async function startWatch(): Promise<void> {
  if (READER === 'store') {
    const stop = api.store.subscribe((c) => {
      const name = c.object.metadata?.name ?? '';
      if (c.change === 'DELETED' || c.object.metadata?.namespace !== 'mindx-dl') return;
      if (!name.startsWith('cluster-info-device-')) return;
      const value = (c.object as { data?: Record<string, string> }).data?.[name];
      if (value !== undefined) onStoredChunk(name, value);
    });
    const ctl = new AbortController();
    ctl.signal.addEventListener('abort', stop);
    watchAbort = ctl;
    return;
  }
  const watch = new k8s.Watch(api.kubeConfig());
  const ctl = await watch.watch(
    '/api/v1/namespaces/mindx-dl/configmaps',
    {},
    (phase, obj: k8s.V1ConfigMap) => {
      if (phase === 'ADDED' || phase === 'MODIFIED') onChunk(obj);
    },
    (err) => {
      if (err !== null && err !== undefined) process.stderr.write(`watch ended: ${String(err)}\n`);
    },
  );
  watchAbort = ctl;
}

let seq = 1_000_000;
async function updates(seconds: number, perSecond: number): Promise<void> {
  latencies.length = 0;
  superseded = 0;
  let updates = 0;
  const tickMs = 100;
  const start = Date.now();
  const end = start + seconds * 1000;
  while (Date.now() < end) {
    const t = Date.now();
    // as many as the elapsed time calls for: a slow tick (this process is busy too) is caught up, not lost
    const due = Math.floor(((t - start) / 1000) * perSecond);
    for (; updates < due;) {
      const n = Math.floor(Math.random() * N);
      const s = ++seq;
      if (pending.has(n)) superseded++;
      const cm = deviceInfo(n, s, s);
      api.store.update(CONFIGMAPS, 'kube-system', cm.metadata.name, cm);
      const old = pending.get(n);
      if (old !== undefined) pendingBySeq.delete(old.seq);
      pending.set(n, { seq: s, atMs: Date.now() });
      pendingBySeq.set(s, n);
      updates++;
    }
    await new Promise((r) => setTimeout(r, Math.max(0, tickMs - (Date.now() - t))));
  }
  // the last ones get 5 s to show up
  const deadline = Date.now() + 5000;
  while (pending.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  send({
    type: 'updates-done',
    updates,
    seen: latencies.length,
    superseded,
    unseen: pending.size,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.length > 0 ? Math.max(...latencies) : Number.NaN,
  });
  pending.clear();
  pendingBySeq.clear();
}

function stateReport(): void {
  const bytes = (o: unknown): number => {
    const c = o as { data?: Record<string, string>; binaryData?: Record<string, string> };
    let b = 0;
    for (const m of [c.data, c.binaryData]) for (const [k, v] of Object.entries(m ?? {})) b += k.length + v.length;
    return b;
  };
  const objects = api.store
    .list(CONFIGMAPS, 'cluster-system')
    .filter((o) => o.metadata?.name?.startsWith('ascend-fault-center-state'))
    .map((o) => ({ name: o.metadata!.name!, bytes: bytes(o) }));
  const manual = api.store.get(CONFIGMAPS, 'cluster-system', 'clusterd-manual-info-cm');
  const chunks = api.store
    .list(CONFIGMAPS, 'mindx-dl')
    .filter((o) => o.metadata?.name?.startsWith('cluster-info-device-'))
    .map(bytes);
  send({ type: 'state', objects, manualInfoBytes: manual === undefined ? 0 : bytes(manual), chunkBytes: chunks });
}

process.on('message', (c: Command) => {
  switch (c.type) {
    case 'watch':
      void startWatch();
      break;
    case 'updates':
      void updates(c.seconds, c.perSecond);
      break;
    case 'state':
      stateReport();
      break;
    case 'stop':
      watchAbort?.abort();
      void api.stop().then(() => process.exit(0));
      break;
  }
});
