/**
 * bench/fault-center-real (issue [P] items 6 and 7): the built `ascend-fault-center` (`dist/cli/fault-center.js`)
 * as a child process against a real etcd and kube-apiserver (test/k8s/harness/cluster.ts, `controlPlaneOnly`: no
 * kubelet, scheduler or controller-manager), filled with the simulated cluster of bench/fault-center-cluster.ts:
 * N Nodes, N device-info ConfigMaps of 16 chips, 0.8 N job pods and PodGroups (a CRD), the policy (threshold 1),
 * and for the second case 50,000 public faults in 500 labelled ConfigMaps.
 *
 * The fill runs once, with bounded parallel creates (its time is printed, not a figure). Then per run, from a clean
 * slate (the center's chunks, state objects, manual-info and statistics ConfigMaps and its Lease deleted; a fresh
 * `-stateDir`), a watch on `mindx-dl` ConfigMaps is opened and the center is spawned:
 *
 * 1. Lease acquired: spawn → the center's `started leading` log line (its `time`);
 * 2. first complete publication: spawn → the watch has delivered `cluster-info-device-*` chunks that together hold
 *    every node (what a reader of the chunks, the scheduler, sees), with the center's CPU until then;
 * 3. after `FCR_SETTLE_SECONDS` (the job detector's 30 s, a 15 s release tick), idle CPU of the center over
 *    `FCR_IDLE_SECONDS` (`/proc/<pid>/stat`, % of one core), and the apiserver's and etcd's beside it;
 * 4. a wave: `FCR_WAVE_RATE` device-info ConfigMaps rewritten per second (new faults and a marker) for
 *    `FCR_WAVE_SECONDS`, each a `PUT`; latency = from sending the `PUT` (and from its answer) until the watch
 *    delivers a chunk holding that node's new value; a node rewritten again before its value showed counts as
 *    superseded; "lost" = not shown 5 s after the wave; and, for a build that has the histogram
 *    `ascend_fault_center_published_write_seconds` (scraped from the center's metrics before and after the wave),
 *    how long its chunk write requests took (mean; p50 and p99 as the histogram's bucket bounds);
 * 5. RSS: `VmRSS` after the idle phase and `VmHWM` (the peak) at the end of the run.
 *
 * Each figure is reported as median and p99 (nearest rank) over `FCR_RUNS` runs. With `FCR_BASELINE_JS` (another
 * build of the center, e.g. main's `dist/cli/fault-center.js` in another checkout) the two builds alternate run by
 * run on the same apiserver, and the ratio of the medians (this build / baseline) is printed; `FCR_VARIANT_JS` adds
 * a third build to the rotation (its ratio to the baseline printed too). The public-fault case
 * measures the start (1, 2) only unless `FCR_PUBLIC_FULL=1`. The load average is printed with every run.
 *
 * Environment: `FCR_NODES` (10000), `FCR_PODS` (0.8 × nodes), `FCR_PUBLIC` (50000; 0 skips that case), `FCR_RUNS`
 * (5), `FCR_SETTLE_SECONDS` (50), `FCR_IDLE_SECONDS` (30), `FCR_WAVE_SECONDS` (30), `FCR_WAVE_RATE` (100),
 * `FCR_FILL_CONCURRENCY` (32), `FCR_CENTER_JS`, `FCR_BASELINE_JS`, `FCR_CENTER_NODE_ARGS` (e.g. `--cpu-prof
 * --cpu-prof-dir=/tmp/prof`), `FCR_LOG_DIR` (keep the centers' logs), `FCR_APISERVER_FLAGS` (extra
 * kube-apiserver flags, space-separated), `FCR_ONLY` (`plain` or `public`: one case), `FCR_APISERVER_PROFILE` (a
 * directory: kube-apiserver's CPU profile of each start's first 3 s and of each wave, for `go tool pprof`).
 *
 * `npm run bench:fault-center-real` (builds dist/; needs the binaries of `npm run build:k8s`; no root).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { Cluster } from '../test/k8s/harness/cluster.js';
import { PODGROUP_CRD } from '../test/k8s/harness/volcano.js';
import { shebangNodeArgs } from '../test/helpers/idle-figures.js';
import { deviceInfo, jobPod, node, podGroup, publicFaultConfigMaps } from './fault-center-cluster.js';
import { fmt, median, percentile, stopChild } from './stats.js';

const num = (name: string, def: number): number => {
  const v = process.env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name}=${v}: not a non-negative number`);
  return n;
};
const NODES = num('FCR_NODES', 10_000);
const PODS = num('FCR_PODS', Math.round(NODES * 0.8));
const PUBLIC = num('FCR_PUBLIC', 50_000);
const RUNS = Math.max(1, num('FCR_RUNS', 5));
const SETTLE_S = num('FCR_SETTLE_SECONDS', 50);
const IDLE_S = num('FCR_IDLE_SECONDS', 30);
const WAVE_S = num('FCR_WAVE_SECONDS', 30);
const WAVE_RATE = num('FCR_WAVE_RATE', 100);
const FILL_CONCURRENCY = Math.max(1, num('FCR_FILL_CONCURRENCY', 32));
const CENTER_JS = process.env.FCR_CENTER_JS || path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js');
const BASELINE_JS = process.env.FCR_BASELINE_JS || undefined;
/** a third build (e.g. this one with one change undone), run in turn with the others and compared with the baseline */
const VARIANT_JS = process.env.FCR_VARIANT_JS || undefined;
const CENTER_ARGS = (process.env.FCR_CENTER_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
const LOG_DIR = process.env.FCR_LOG_DIR || undefined;
const APISERVER_FLAGS = (process.env.FCR_APISERVER_FLAGS ?? '').split(' ').filter((a) => a !== '');
const PUBLIC_FULL = process.env.FCR_PUBLIC_FULL === '1';
const ONLY = process.env.FCR_ONLY;
/** a directory: CPU profiles of kube-apiserver during each wave (pprof format, `go tool pprof -top <file>`) */
const APISERVER_PROFILE = process.env.FCR_APISERVER_PROFILE || undefined;
if (ONLY !== undefined && ONLY !== '' && ONLY !== 'plain' && ONLY !== 'public')
  throw new Error(`FCR_ONLY=${ONLY}: plain or public`);

const CLK_TCK = 100;
const CLUSTER_NS = 'cluster-system';
const CHUNK_NS = 'mindx-dl';
const POLICY =
  'enabled: true\nseparate:\n  fault_window_hours: 24\n  fault_threshold: 1\nrelease:\n  fault_free_hours: 48\n';

const log = (line: string): void => void process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const loadavg = (): string => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const load1 = (): number => Number(loadavg().split(' ')[0]);

/** CPU seconds (user + system, all threads) of a process; NaN once it is gone. */
function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}

function statusMiB(pid: number, key: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** The admin's JSON requests to the apiserver over keep-alive connections. */
class Api {
  readonly #url: URL;
  readonly #agent: https.Agent;
  readonly #token: string;

  constructor(server: string, ca: string, token: string, maxSockets: number) {
    this.#url = new URL(server);
    this.#token = token;
    this.#agent = new https.Agent({ keepAlive: true, maxSockets, ca });
  }

  /** One request; resolves with the status and the answer's text (never rejects on an HTTP status). */
  async request(method: string, p: string, body?: unknown): Promise<{ status: number; text: string }> {
    const r = await this.requestRaw(method, p, body);
    return { status: r.status, text: r.body.toString('utf8') };
  }

  /** One request; resolves with the status and the answer's bytes. */
  requestRaw(method: string, p: string, body?: unknown): Promise<{ status: number; body: Buffer }> {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          agent: this.#agent,
          hostname: this.#url.hostname,
          port: this.#url.port,
          method,
          path: p,
          timeout: 120_000,
          headers: {
            Authorization: `Bearer ${this.#token}`,
            Accept: 'application/json',
            ...(data !== undefined ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {}),
          },
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (d: Buffer) => parts.push(d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${p}: no answer within 120 s`)));
      req.on('error', reject);
      req.end(data);
    });
  }

  /** A request that must succeed (2xx, or one of `also`); returns the parsed answer. */
  async must(method: string, p: string, body?: unknown, also: number[] = []): Promise<unknown> {
    const r = await this.request(method, p, body);
    if ((r.status < 200 || r.status >= 300) && !also.includes(r.status))
      throw new Error(`${method} ${p}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
    return r.text === '' ? undefined : (JSON.parse(r.text) as unknown);
  }

  /** A streaming GET (a watch): the response object, for the caller to read and destroy. */
  stream(p: string): Promise<import('node:http').IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          hostname: this.#url.hostname,
          port: this.#url.port,
          method: 'GET',
          path: p,
          ca: this.#agent.options.ca,
          headers: { Authorization: `Bearer ${this.#token}`, Accept: 'application/json' },
        },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            reject(new Error(`GET ${p}: HTTP ${res.statusCode}`));
          } else resolve(res);
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

/** Runs `fn(0..n-1)` with at most `concurrency` at a time; rejects on the first failure. */
async function pool(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}

/** Creates `count` objects made by `make` with bounded concurrency; prints the rate. */
async function fill(api: Api, what: string, count: number, make: (i: number) => { path: string; body: unknown }) {
  const t0 = Date.now();
  await pool(count, FILL_CONCURRENCY, async (i) => {
    const o = make(i);
    await api.must('POST', o.path, o.body, [409]);
  });
  const s = (Date.now() - t0) / 1000;
  log(`  filled ${count} ${what} in ${fmt(s, 1)} s (${fmt(count / s, 0)}/s)`);
}

async function seed(api: Api): Promise<void> {
  for (const ns of [CLUSTER_NS, CHUNK_NS])
    await api.must('POST', '/api/v1/namespaces', { metadata: { name: ns } }, [409]);
  // pods need their ServiceAccount (no controller-manager makes it)
  await api.must('POST', '/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'default' } }, [409]);
  await api.must('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', PODGROUP_CRD, [409]);
  for (let i = 0; ; i++) {
    const r = await api.request('GET', '/apis/scheduling.volcano.sh/v1beta1/podgroups?limit=1');
    if (r.status === 200) break;
    if (i > 300) throw new Error(`the PodGroup CRD is not served after 30 s: HTTP ${r.status}`);
    await sleep(100);
  }
  await api.must(
    'POST',
    `/api/v1/namespaces/${CLUSTER_NS}/configmaps`,
    {
      metadata: { name: 'clusterd-config-cm', namespace: CLUSTER_NS },
      data: { 'manually_separate_policy.conf': POLICY },
    },
    [409],
  );
  const t0 = Date.now();
  await fill(api, 'Nodes', NODES, (n) => ({ path: '/api/v1/nodes', body: node(n) }));
  await fill(api, 'device-info ConfigMaps', NODES, (n) => ({
    path: '/api/v1/namespaces/kube-system/configmaps',
    body: deviceInfo(n, 0),
  }));
  await fill(api, 'job pods', PODS, (n) => ({ path: '/api/v1/namespaces/default/pods', body: jobPod(n) }));
  await fill(api, 'PodGroups', PODS, (n) => ({
    path: '/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups',
    body: podGroup(n),
  }));
  log(`  fill done in ${fmt((Date.now() - t0) / 1000, 1)} s, load ${loadavg()}`);
}

async function seedPublicFaults(api: Api): Promise<void> {
  const cms = publicFaultConfigMaps(PUBLIC, NODES, Date.now());
  await fill(api, `public-fault ConfigMaps (${PUBLIC} faults)`, cms.length, (i) => ({
    path: '/api/v1/namespaces/default/configmaps',
    body: cms[i],
  }));
}

/** Everything the center wrote, and its Lease: the next run starts as on a fresh cluster. */
async function reset(api: Api): Promise<void> {
  type L = { items: { metadata: { name: string } }[] };
  const chunks = (await api.must('GET', `/api/v1/namespaces/${CHUNK_NS}/configmaps`)) as L;
  const mine = (await api.must('GET', `/api/v1/namespaces/${CLUSTER_NS}/configmaps`)) as L;
  const names = [
    ...chunks.items.map((c) => `${CHUNK_NS}/${c.metadata.name}`),
    ...mine.items
      .filter((c) => c.metadata.name !== 'clusterd-config-cm')
      .map((c) => `${CLUSTER_NS}/${c.metadata.name}`),
  ];
  await pool(names.length, 8, async (i) => {
    const [ns, name] = names[i]!.split('/');
    await api.must('DELETE', `/api/v1/namespaces/${ns}/configmaps/${name}`, undefined, [404]);
  });
  await api.must(
    'DELETE',
    `/apis/coordination.k8s.io/v1/namespaces/${CLUSTER_NS}/leases/ascend-fault-center`,
    undefined,
    [404],
  );
}

/** What a reader of the chunks sees: a watch on the `mindx-dl` ConfigMaps, scanned without parsing. */
class ChunkWatch {
  /** chunk name → how many nodes it holds */
  readonly #nodes = new Map<string, number>();
  #complete: ((atMs: number) => void) | undefined;
  readonly complete: Promise<number>;
  /** node → its pending update */
  readonly pending = new Map<number, { seq: number; sentMs: number; ackMs: number | undefined }>();
  readonly #nodeBySeq = new Map<number, number>();
  readonly fromSent: number[] = [];
  readonly fromAck: number[] = [];
  /** while counting (`intervals` set): ms between two events of the same chunk */
  intervals: number[] | undefined;
  readonly #lastEvent = new Map<string, number>();

  /** Starts counting the intervals between two events of a chunk, both inside the count. */
  countIntervals(): void {
    this.#lastEvent.clear();
    this.intervals = [];
  }
  events = 0;
  #res: import('node:http').IncomingMessage | undefined;

  constructor() {
    this.complete = new Promise((r) => (this.#complete = r));
  }

  async start(api: Api): Promise<void> {
    const list = (await api.must('GET', `/api/v1/namespaces/${CHUNK_NS}/configmaps`)) as {
      metadata: { resourceVersion: string };
    };
    this.#res = await api.stream(
      `/api/v1/namespaces/${CHUNK_NS}/configmaps?watch=true&resourceVersion=${list.metadata.resourceVersion}`,
    );
    let parts: Buffer[] = [];
    this.#res.on('data', (d: Buffer) => {
      let from = 0;
      for (let nl = d.indexOf(10); nl >= 0; nl = d.indexOf(10, from)) {
        parts.push(d.subarray(from, nl));
        this.#line(Buffer.concat(parts).toString('utf8'));
        parts = [];
        from = nl + 1;
      }
      if (from < d.length) parts.push(d.subarray(from));
    });
    this.#res.on('error', () => undefined);
  }

  /** One watch event: `{"type":…,"object":{…"metadata":{"name":…},"data":{"<name>":"<escaped chunk>"}}}`. */
  #line(line: string): void {
    const now = Date.now();
    this.events++;
    const type = /^\{"type":"([A-Z]+)"/.exec(line)?.[1];
    if (type === 'ERROR') {
      log(`  chunk watch: ${line.slice(0, 300)}`);
      return;
    }
    if (type !== 'ADDED' && type !== 'MODIFIED') return;
    const name = /"name":"(cluster-info-device-\d+)"/.exec(line)?.[1];
    if (name === undefined) return;
    const last = this.#lastEvent.get(name);
    this.#lastEvent.set(name, now);
    if (this.intervals !== undefined && last !== undefined) this.intervals.push(now - last);
    if (this.#complete !== undefined) {
      // node keys inside the escaped chunk value: \"mindx-dl-deviceinfo-node-<n>\":{
      this.#nodes.set(name, line.match(/mindx-dl-deviceinfo-node-\d+\\":\{/g)?.length ?? 0);
      let total = 0;
      for (const n of this.#nodes.values()) total += n;
      if (total >= NODES) {
        this.#complete(now);
        this.#complete = undefined;
      }
    }
    if (this.#nodeBySeq.size === 0) return;
    // a marker's fault_time (7 digits; real times have 13), escaped twice inside the event
    for (const m of line.matchAll(/fault_time\\+":(\d{7}),/g)) {
      const seq = Number(m[1]);
      const n = this.#nodeBySeq.get(seq);
      if (n === undefined) continue;
      this.#nodeBySeq.delete(seq);
      const p = this.pending.get(n);
      if (p?.seq !== seq) continue;
      this.pending.delete(n);
      this.fromSent.push(now - p.sentMs);
      if (p.ackMs !== undefined) this.fromAck.push(now - p.ackMs);
    }
  }

  /** An update is being sent. */
  expect(n: number, seq: number, sentMs: number): { superseded: boolean } {
    const old = this.pending.get(n);
    if (old !== undefined) this.#nodeBySeq.delete(old.seq);
    this.pending.set(n, { seq, sentMs, ackMs: undefined });
    this.#nodeBySeq.set(seq, n);
    return { superseded: old !== undefined };
  }

  acked(n: number, seq: number, atMs: number): void {
    const p = this.pending.get(n);
    if (p?.seq === seq) p.ackMs = atMs;
  }

  stop(): void {
    this.#res?.destroy();
  }
}

/** A running center. */
interface Center {
  child: ChildProcess;
  spawnedMs: number;
  leading: Promise<number>;
  /** the port of the center's metrics (from its log) */
  metricsPort: Promise<number>;
}

function startCenter(js: string, kubeconfig: string, dir: string, logFile: string): Center {
  const spawnedMs = Date.now();
  const child = spawn(
    process.execPath,
    [
      // each build with the `node` options of its own `#!` line (what the image runs) and the bench's
      ...shebangNodeArgs(js),
      ...CENTER_ARGS,
      js,
      `-kubeconfig=${kubeconfig}`,
      '-metricsAddress=127.0.0.1:0',
      '-grpcAddress=127.0.0.1:0',
      '-identity=bench',
      `-stateDir=${dir}`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], cwd: dir },
  );
  const out = fs.createWriteStream(logFile);
  let buf = '';
  let portOf: (port: number) => void = () => undefined;
  const metricsPort = new Promise<number>((r) => (portOf = r));
  const leading = new Promise<number>((resolve, reject) => {
    child.once('exit', (code, signal) => reject(new Error(`fault center exited (${code ?? signal})`)));
    child.stdout.on('data', (d: Buffer) => {
      out.write(d);
      buf += d.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.includes('"started leading"')) resolve(Date.parse((JSON.parse(line) as { time: string }).time));
        if (line.includes('"metrics listening"')) portOf((JSON.parse(line) as { port: number }).port);
      }
    });
  });
  leading.catch(() => undefined);
  child.once('exit', () => out.end());
  return { child, spawnedMs, leading, metricsPort };
}

/**
 * The center's chunk write histogram (`ascend_fault_center_published_write_seconds`, a build that has it): per
 * stage, the cumulative bucket counts by upper bound, their sum and count.
 */
async function writeHistogram(
  port: number,
): Promise<Map<string, { le: Map<number, number>; sum: number; count: number }>> {
  const out = new Map<string, { le: Map<number, number>; sum: number; count: number }>();
  let text: string;
  try {
    const r = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
    text = await r.text();
  } catch {
    return out;
  }
  for (const m of text.matchAll(
    /^ascend_fault_center_published_write_seconds_(bucket|sum|count)(?:\{([^}]*)\})? (\S+)$/gm,
  )) {
    const stage = /stage="([^"]+)"/.exec(m[2] ?? '')?.[1] ?? '';
    const h = out.get(stage) ?? { le: new Map<number, number>(), sum: 0, count: 0 };
    out.set(stage, h);
    if (m[1] === 'bucket') {
      const le = /le="([^"]+)"/.exec(m[2] ?? '')?.[1] ?? 'NaN';
      h.le.set(le === '+Inf' ? Infinity : Number(le), Number(m[3]));
    } else if (m[1] === 'sum') h.sum = Number(m[3]);
    else h.count = Number(m[3]);
  }
  return out;
}

/** Mean and the bucket bound holding the p50 / p99 of a stage's observations between two scrapes (ms). */
function histogramFigures(
  before: Awaited<ReturnType<typeof writeHistogram>>,
  after: Awaited<ReturnType<typeof writeHistogram>>,
  stage: string,
): { meanMs: number; p50Ms: number; p99Ms: number } {
  const a = after.get(stage);
  if (a === undefined) return { meanMs: Number.NaN, p50Ms: Number.NaN, p99Ms: Number.NaN };
  const b = before.get(stage);
  const n = a.count - (b?.count ?? 0);
  const bound = (q: number): number => {
    for (const [le, c] of [...a.le].sort(([x], [y]) => x - y)) if (c - (b?.le.get(le) ?? 0) >= q * n) return le * 1000;
    return Number.NaN;
  };
  return { meanMs: n > 0 ? ((a.sum - (b?.sum ?? 0)) / n) * 1000 : Number.NaN, p50Ms: bound(0.5), p99Ms: bound(0.99) };
}

/** One run's figures (ms, %, MiB). */
type Figures = Record<string, number>;

async function timeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(t);
  }
}

/** 100 device-info rewrites a second (by default) for the wave's length; resolves after the drain. */
async function wave(api: Api, watch: ChunkWatch): Promise<Figures> {
  let seq = 1_000_000 + Math.floor(Math.random() * 1000) * 1000;
  let sent = 0;
  let superseded = 0;
  let failed = 0;
  const inFlight = new Set<Promise<void>>();
  watch.countIntervals();
  const start = Date.now();
  const end = start + WAVE_S * 1000;
  while (Date.now() < end) {
    const t = Date.now();
    // as many as the elapsed time calls for: a late tick catches up
    const due = Math.floor(((t - start) / 1000) * WAVE_RATE);
    for (; sent < due; sent++) {
      const n = Math.floor(Math.random() * NODES);
      const s = ++seq;
      const cm = deviceInfo(n, s, s);
      if (watch.expect(n, s, Date.now()).superseded) superseded++;
      const p = api
        .request('PUT', `/api/v1/namespaces/kube-system/configmaps/${cm.metadata.name}`, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          ...cm,
        })
        .then((r) => {
          if (r.status !== 200) failed++;
          else watch.acked(n, s, Date.now());
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await sleep(Math.max(0, 20 - (Date.now() - t)));
  }
  await Promise.all(inFlight);
  const deadline = Date.now() + 5000;
  while (watch.pending.size > 0 && Date.now() < deadline) await sleep(50);
  const lost = watch.pending.size;
  watch.pending.clear();
  const intervals = watch.intervals ?? [];
  watch.intervals = undefined;
  return {
    waveUpdates: sent,
    waveFailed: failed,
    waveSuperseded: superseded,
    waveLost: lost,
    waveP50Ms: percentile(watch.fromSent, 50),
    waveP99Ms: percentile(watch.fromSent, 99),
    waveMaxMs: watch.fromSent.length > 0 ? Math.max(...watch.fromSent) : Number.NaN,
    waveAckP50Ms: percentile(watch.fromAck, 50),
    waveAckP99Ms: percentile(watch.fromAck, 99),
    waveChunkIntervalP50Ms: percentile(intervals, 50),
    waveChunkIntervalP99Ms: percentile(intervals, 99),
    waveChunkEventsPerSec: intervals.length / WAVE_S,
  };
}

async function run(
  cluster: Cluster,
  api: Api,
  kubeconfig: string,
  js: string,
  label: string,
  full: boolean,
): Promise<Figures> {
  await reset(api);
  await sleep(2000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'afc-real-'));
  const logFile = path.join(LOG_DIR ?? dir, `${label}-${Date.now()}.log`);
  const watch = new ChunkWatch();
  await watch.start(api);
  const apiPid = cluster.pid('kube-apiserver');
  const etcdPid = cluster.pid('etcd');
  const f: Figures = { loadAtStart: load1() };
  const s0 = [cpuSeconds(apiPid), cpuSeconds(etcdPid), process.cpuUsage()] as const;
  // with FCR_APISERVER_PROFILE: also the API server's CPU profile of the start (its first 3 s)
  const startProfile =
    APISERVER_PROFILE === undefined
      ? undefined
      : api.requestRaw('GET', '/debug/pprof/profile?seconds=3').then((r) => {
          const file = path.join(APISERVER_PROFILE, `apiserver-start-${label}-${Date.now()}.pprof`);
          fs.mkdirSync(APISERVER_PROFILE, { recursive: true });
          if (r.status === 200) fs.writeFileSync(file, r.body);
          else log(`  apiserver profile: HTTP ${r.status}`);
        });
  const center = startCenter(js, kubeconfig, dir, logFile);
  const pid = center.child.pid!;
  try {
    f.leaseMs = (await timeout(center.leading, 120_000, 'Lease')) - center.spawnedMs;
    f.firstPublishMs = (await timeout(watch.complete, 300_000, 'first complete publication')) - center.spawnedMs;
    f.firstPublishCpuS = cpuSeconds(pid);
    // the others on the machine meanwhile (2 cores: the center competes with them)
    f.firstPublishApiserverCpuS = cpuSeconds(apiPid) - s0[0];
    f.firstPublishEtcdCpuS = cpuSeconds(etcdPid) - s0[1];
    const own = process.cpuUsage(s0[2]);
    f.firstPublishBenchCpuS = (own.user + own.system) / 1e6;
    f.rssAtFirstPublishMiB = statusMiB(pid, 'VmRSS');
    await startProfile;
    if (full) {
      await sleep(SETTLE_S * 1000);
      const c0 = [cpuSeconds(pid), cpuSeconds(apiPid), cpuSeconds(etcdPid)];
      f.loadIdle = load1();
      const t0 = Date.now();
      await sleep(IDLE_S * 1000);
      const wall = (Date.now() - t0) / 1000;
      const c1 = [cpuSeconds(pid), cpuSeconds(apiPid), cpuSeconds(etcdPid)];
      f.idleCpuPercent = ((c1[0]! - c0[0]!) / wall) * 100;
      f.idleApiserverCpuPercent = ((c1[1]! - c0[1]!) / wall) * 100;
      f.idleEtcdCpuPercent = ((c1[2]! - c0[2]!) / wall) * 100;
      f.idleRssMiB = statusMiB(pid, 'VmRSS');
      f.loadWave = load1();
      const w0 = Date.now();
      const profile =
        APISERVER_PROFILE === undefined
          ? undefined
          : api.requestRaw('GET', `/debug/pprof/profile?seconds=${Math.max(1, WAVE_S - 1)}`).then((r) => {
              const file = path.join(APISERVER_PROFILE, `apiserver-${label}-${w0}.pprof`);
              fs.mkdirSync(APISERVER_PROFILE, { recursive: true });
              if (r.status === 200) fs.writeFileSync(file, r.body);
              else log(`  apiserver profile: HTTP ${r.status}`);
            });
      const port = await center.metricsPort;
      const h0 = await writeHistogram(port);
      Object.assign(f, await wave(api, watch));
      const h1 = await writeHistogram(port);
      const h = histogramFigures(h0, h1, '');
      f.waveWriteMeanMs = h.meanMs;
      f.waveWriteP50Ms = h.p50Ms;
      f.waveWriteP99Ms = h.p99Ms;
      await profile;
      const ww = (Date.now() - w0) / 1000;
      const c2 = [cpuSeconds(pid), cpuSeconds(apiPid), cpuSeconds(etcdPid)];
      f.waveCpuPercent = ((c2[0]! - c1[0]!) / ww) * 100;
      f.waveApiserverCpuPercent = ((c2[1]! - c1[1]!) / ww) * 100;
      f.waveEtcdCpuPercent = ((c2[2]! - c1[2]!) / ww) * 100;
    }
    f.rssMaxMiB = statusMiB(pid, 'VmHWM');
    f.chunkEvents = watch.events;
  } finally {
    watch.stop();
    await stopChild(center.child);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  f.loadAtEnd = load1();
  return f;
}

/** Order in which figures are printed, and their units. */
const ROWS: [string, string][] = [
  ['leaseMs', 'ms'],
  ['firstPublishMs', 'ms'],
  ['firstPublishCpuS', 's CPU'],
  ['firstPublishApiserverCpuS', 's CPU'],
  ['firstPublishEtcdCpuS', 's CPU'],
  ['firstPublishBenchCpuS', 's CPU'],
  ['rssAtFirstPublishMiB', 'MiB'],
  ['idleCpuPercent', '% of a core'],
  ['idleRssMiB', 'MiB'],
  ['rssMaxMiB', 'MiB'],
  ['waveP50Ms', 'ms'],
  ['waveP99Ms', 'ms'],
  ['waveMaxMs', 'ms'],
  ['waveAckP50Ms', 'ms'],
  ['waveAckP99Ms', 'ms'],
  ['waveChunkIntervalP50Ms', 'ms'],
  ['waveChunkIntervalP99Ms', 'ms'],
  ['waveChunkEventsPerSec', '/s'],
  ['waveWriteMeanMs', 'ms'],
  ['waveWriteP50Ms', 'ms (bucket bound)'],
  ['waveWriteP99Ms', 'ms (bucket bound)'],
  ['waveLost', ''],
  ['waveSuperseded', ''],
  ['waveFailed', ''],
  ['waveCpuPercent', '% of a core'],
  ['waveApiserverCpuPercent', '% of a core'],
  ['waveEtcdCpuPercent', '% of a core'],
  ['idleApiserverCpuPercent', '% of a core'],
  ['idleEtcdCpuPercent', '% of a core'],
  ['loadAtStart', ''],
  ['loadWave', ''],
];

function summary(caseName: string, byLabel: Map<string, Figures[]>): Record<string, unknown> {
  const out: Record<string, unknown> = { bench: 'fault-center-real', case: caseName, nodes: NODES, pods: PODS };
  log(`  summary ${caseName} (median / p99 over runs${BASELINE_JS !== undefined ? '; ratio = this / baseline' : ''}):`);
  const labels = [...byLabel.keys()];
  for (const [key, unit] of ROWS) {
    const cols: string[] = [];
    const med: Record<string, number> = {};
    for (const l of labels) {
      const vals = byLabel
        .get(l)!
        .map((f) => f[key])
        .filter((v): v is number => v !== undefined && !Number.isNaN(v));
      if (vals.length === 0) continue;
      med[l] = median(vals);
      const p99 = percentile(vals, 99);
      cols.push(`${l} ${fmt(med[l], 1)} / ${fmt(p99, 1)}`);
      out[`${l}.${key}`] = { median: med[l], p99, runs: vals };
    }
    if (cols.length === 0) continue;
    const ratio = ['this', 'variant']
      .filter((l) => med[l] !== undefined && med.baseline !== undefined && med.baseline !== 0)
      .map((l) => `  ratio${l === 'this' ? '' : ` ${l}`} ${fmt(med[l]! / med.baseline!, 2)}`)
      .join('');
    log(`    ${key} (${unit}): ${cols.join('; ')}${ratio}`);
  }
  return out;
}

async function runCase(cluster: Cluster, api: Api, kubeconfig: string, caseName: string, full: boolean) {
  const builds: [string, string][] = [['this', CENTER_JS]];
  if (BASELINE_JS !== undefined) builds.push(['baseline', BASELINE_JS]);
  if (VARIANT_JS !== undefined) builds.push(['variant', VARIANT_JS]);
  const byLabel = new Map<string, Figures[]>(builds.map(([l]) => [l, []]));
  for (let r = 0; r < RUNS; r++) {
    // rotate which build goes first
    const order = builds.map((_, k) => builds[(k + r) % builds.length]!);
    for (const [label, js] of order) {
      const f = await run(cluster, api, kubeconfig, js, label, full);
      byLabel.get(label)!.push(f);
      log(
        `  ${caseName} run ${r + 1} ${label}: Lease ${fmt(f.leaseMs!, 0)} ms, first publication ${fmt(f.firstPublishMs!, 0)} ms ` +
          `(${fmt(f.firstPublishCpuS!, 2)} s CPU; apiserver ${fmt(f.firstPublishApiserverCpuS!, 2)} s, etcd ` +
          `${fmt(f.firstPublishEtcdCpuS!, 2)} s, this bench ${fmt(f.firstPublishBenchCpuS!, 2)} s; RSS ${fmt(f.rssAtFirstPublishMiB!, 0)} MiB)` +
          (full
            ? `, idle CPU ${fmt(f.idleCpuPercent!, 1)} % (apiserver ${fmt(f.idleApiserverCpuPercent!, 1)} %, etcd ${fmt(f.idleEtcdCpuPercent!, 1)} %), ` +
              `RSS ${fmt(f.idleRssMiB!, 0)} MiB (max ${fmt(f.rssMaxMiB!, 0)}); wave ${f.waveUpdates} updates: p50 ${fmt(f.waveP50Ms!, 0)} ` +
              `p99 ${fmt(f.waveP99Ms!, 0)} max ${fmt(f.waveMaxMs!, 0)} ms (from the answer p50 ${fmt(f.waveAckP50Ms!, 0)} p99 ${fmt(f.waveAckP99Ms!, 0)}), ` +
              `chunk events ${fmt(f.waveChunkEventsPerSec!, 1)}/s, chunk write mean ${fmt(f.waveWriteMeanMs!, 0)} p50 ≤ ${fmt(f.waveWriteP50Ms!, 0)} p99 ≤ ${fmt(f.waveWriteP99Ms!, 0)} ms, interval p50 ${fmt(f.waveChunkIntervalP50Ms!, 0)} p99 ${fmt(f.waveChunkIntervalP99Ms!, 0)} ms, lost ${f.waveLost}, superseded ${f.waveSuperseded}, failed ${f.waveFailed}; CPU ${fmt(f.waveCpuPercent!, 0)} % ` +
              `(apiserver ${fmt(f.waveApiserverCpuPercent!, 0)} %, etcd ${fmt(f.waveEtcdCpuPercent!, 0)} %)`
            : `, RSS max ${fmt(f.rssMaxMiB!, 0)} MiB`) +
          `; load ${f.loadAtStart} → ${f.loadAtEnd}`,
      );
    }
  }
  log(JSON.stringify(summary(caseName, byLabel)));
}

log(`node ${process.version}, ${os.cpus().length} cores, load ${loadavg()}`);
log(
  `fault-center-real: ${NODES} Nodes, ${NODES} device-info ConfigMaps, ${PODS} pods and PodGroups` +
    `${PUBLIC > 0 ? `, then ${PUBLIC} public faults` : ''}; ${RUNS} runs${BASELINE_JS !== undefined ? ' per build' : ''}`,
);
const started = Date.now();
const cluster = await Cluster.start({
  controlPlaneOnly: true,
  apiserverFlags: [...APISERVER_FLAGS, ...(APISERVER_PROFILE !== undefined ? ['--profiling=true'] : [])],
  // the wave rewrites chunks of 800 KiB at ~10/s; history until the apiserver's compaction (5 min) stays in etcd
  etcdFlags: ['--quota-backend-bytes=8589934592'],
});
let api: Api | undefined;
try {
  log(`  control plane up in ${fmt((Date.now() - started) / 1000, 1)} s`);
  api = new Api(cluster.server, cluster.pki!.caPem, cluster.adminToken, FILL_CONCURRENCY + 4);
  const kubeconfig = cluster.writeKubeconfig(path.join(cluster.runDir, 'center.kubeconfig'));
  await seed(api);
  if (ONLY !== 'public') await runCase(cluster, api, kubeconfig, `${NODES} nodes`, true);
  if (PUBLIC > 0 && ONLY !== 'plain') {
    await seedPublicFaults(api);
    await runCase(cluster, api, kubeconfig, `${NODES} nodes + ${PUBLIC} public faults`, PUBLIC_FULL);
  }
} finally {
  api?.close();
  await cluster.stop();
}
