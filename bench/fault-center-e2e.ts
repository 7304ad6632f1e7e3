/**
 * bench/fault-center-e2e (issue [O] item 4): the real `ascend-fault-center` (`dist/cli/fault-center.js`, run
 * `npm run build` first) against the API stand-in running in another process (bench/fault-center-e2e-api.ts),
 * at N nodes of 16 chips (≈ 4.5 % of chips with a device fault, one job pod and PodGroup per node, policy with
 * threshold 1 so that counted faults separate), with and without 50,000 public faults (the cap, in 500 labelled
 * ConfigMaps). Per case:
 *
 * 1. start → first complete publish: from spawning the center to the API server holding `cluster-info-device-*`
 *    chunks that cover every node (seen by a subscription to the stand-in's store in the API process;
 *    `E2E_READER=watch`: by a client-node watch there instead, which then competes with the API for its CPU);
 * 2. settle (the job detector decides the first faults after 30 s; separations are published and written), then
 *    CPU with nothing changing: `/proc/<pid>/stat` utime + stime over `E2E_IDLE_SECONDS`, as % of one core;
 * 3. 1 % of the nodes updating their device info each second for `E2E_UPDATE_SECONDS`: update → a stored chunk
 *    holds the node's new value (p50/p99/max), CPU;
 * 4. event-loop lag p99 of the center (prom-client's `nodejs_eventloop_lag_p99_seconds`, reset at each scrape)
 *    over the idle and the update phases; RSS max (`VmHWM`);
 * 5. restart at scale (issue [O] item 2): SIGKILL, a new center on the same API: time to ready, and after a
 *    settle its counters: no hardware verdict (no present fault counted again), no new separation, the same number
 *    of separated devices; the persisted state's objects and sizes.
 *
 * The load average (`/proc/loadavg`) is read at the start and the end of every phase. Prints one line per phase and
 * one JSON line per case. Environment: `E2E_NODES` (comma-separated, default `1000,3000,10000`), `E2E_PUBLIC`
 * (`0,50000`), `E2E_IDLE_SECONDS` (30), `E2E_UPDATE_SECONDS` (60), `E2E_SETTLE_SECONDS` (50: the job detector's
 * 30 s and the 15 s release tick, which at threshold 1 releases the first separations, §1.5, are over),
 * `E2E_RESTART` (1), `E2E_READER` (`store` or `watch`), `E2E_CENTER_NODE_ARGS` (extra `node` options of the
 * center, e.g. `--cpu-prof`), `E2E_START_ONLY` (`1`: only the start → first complete publish of each case),
 * `E2E_LOG_DIR` (a directory to keep the centers' logs in), `E2E_CENTER_JS` (another build of the center, e.g. a
 * copy of an earlier commit's `dist/`, to compare back to back).
 *
 * `npm run bench:fault-center` (builds, then runs this with tsx).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../src/core/paths.js';
import type { Command, Report } from './fault-center-e2e-api.js';
import { fmt, stopChild } from './stats.js';

const CLK_TCK = 100;
const list = (v: string | undefined, d: string): number[] => (v ?? d).split(',').map(Number);
const NODES = list(process.env.E2E_NODES, '1000,3000,10000');
const PUBLIC = list(process.env.E2E_PUBLIC, '0,50000');
const IDLE_S = Number(process.env.E2E_IDLE_SECONDS ?? 30);
const UPDATE_S = Number(process.env.E2E_UPDATE_SECONDS ?? 60);
const SETTLE_S = Number(process.env.E2E_SETTLE_SECONDS ?? 50);
const RESTART = process.env.E2E_RESTART !== '0';
/** `E2E_START_ONLY=1`: stop each case after the first complete publish (start-up profiling) */
const START_ONLY = process.env.E2E_START_ONLY === '1';
/** `E2E_LOG_DIR`: keep the centers' logs there (the case's directory is removed) */
const LOG_DIR = process.env.E2E_LOG_DIR;
const CENTER_ARGS = (process.env.E2E_CENTER_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
const CENTER_JS = process.env.E2E_CENTER_JS || path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js');
const HERE = path.dirname(new URL(import.meta.url).pathname);

const log = (line: string): void => void process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const loadavg = (): string => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** CPU seconds (user + system) of a process. */
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

function statusKb(pid: number, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : Number.NaN;
}

function get(port: number, p: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

/** A metric's value from the exposition text (first sample whose labels contain `labels`). */
function metric(text: string, name: string, labels = ''): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    if (labels !== '' && !rest.includes(labels)) continue;
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

/** The API process. */
class Api {
  readonly child: ChildProcess;
  readonly #waiting = new Map<string, (r: Report) => void>();
  readonly #got: Report[] = [];

  constructor(nodes: number, publicFaults: number) {
    this.child = fork(path.join(HERE, 'fault-center-e2e-api.ts'), [], {
      execArgv: ['--import', 'tsx', '--max-old-space-size=4096'],
      env: { ...process.env, E2E_NODES: String(nodes), E2E_PUBLIC_FAULTS: String(publicFaults) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (r: Report) => {
      const w = this.#waiting.get(r.type);
      if (w !== undefined) {
        this.#waiting.delete(r.type);
        w(r);
      } else this.#got.push(r);
    });
  }

  next<T extends Report['type']>(type: T, timeoutMs = 600_000): Promise<Extract<Report, { type: T }>> {
    const i = this.#got.findIndex((r) => r.type === type);
    if (i >= 0) return Promise.resolve(this.#got.splice(i, 1)[0] as Extract<Report, { type: T }>);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no ${type} report within ${timeoutMs} ms`)), timeoutMs);
      this.#waiting.set(type, (r) => {
        clearTimeout(t);
        resolve(r as Extract<Report, { type: T }>);
      });
    });
  }

  send(c: Command): void {
    this.child.send(c);
  }
}

/** A running center. */
interface Center {
  child: ChildProcess;
  port: number;
  startedMs: number;
  logLines: number;
}

async function startCenter(kubeconfig: string, dir: string, identity: string): Promise<Center> {
  const child = spawn(
    process.execPath,
    [
      ...CENTER_ARGS,
      CENTER_JS,
      `-kubeconfig=${kubeconfig}`,
      '-metricsAddress=127.0.0.1:0',
      '-grpcAddress=127.0.0.1:0',
      `-identity=${identity}`,
      `-stateDir=${dir}`,
      '-leaseDurationSeconds=3',
      '-leaseRetryPeriodMs=500',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], cwd: dir },
  );
  const c: Center = { child, port: 0, startedMs: Date.now(), logLines: 0 };
  const out = fs.createWriteStream(path.join(dir, `${identity}.log`));
  let buf = '';
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`fault center exited with ${code}`)));
    child.stdout.on('data', (d: Buffer) => {
      out.write(d);
      buf += d.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        c.logLines++;
        if (c.port === 0 && line.includes('"metrics listening"')) {
          c.port = (JSON.parse(line) as { port: number }).port;
          resolve();
        }
      }
    });
  });
  return c;
}

async function scrape(c: Center): Promise<string> {
  return (await get(c.port, '/metrics')).body;
}

/** CPU % of one core over `seconds` (the center's, the API process's), with the event-loop lag p99 of that window. */
async function measure(c: Center, api: Api, seconds: number, during?: Promise<unknown>) {
  const m0 = await scrape(c); // resets the event-loop histogram
  const la0 = loadavg();
  const cpu0 = cpuSeconds(c.child.pid!);
  const apiCpu0 = cpuSeconds(api.child.pid!);
  const t0 = Date.now();
  if (during !== undefined) await during;
  else await sleep(seconds * 1000);
  const wall = (Date.now() - t0) / 1000;
  const cpu = ((cpuSeconds(c.child.pid!) - cpu0) / wall) * 100;
  const apiCpu = ((cpuSeconds(api.child.pid!) - apiCpu0) / wall) * 100;
  const text = await scrape(c);
  const writes = (t: string) => metric(t, 'ascend_fault_center_published_writes_total');
  return {
    cpuPercent: cpu,
    apiCpuPercent: apiCpu,
    chunkWritesPerSec: (writes(text) - writes(m0)) / wall,
    lagP99Ms: metric(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    lagMaxMs: metric(text, 'nodejs_eventloop_lag_max_seconds') * 1000,
    load: `${la0} → ${loadavg()}`,
    rssMiB: statusKb(c.child.pid!, 'VmRSS') / 1024,
    metrics: text,
  };
}

async function readyAfter(c: Center): Promise<number> {
  for (;;) {
    try {
      if ((await get(c.port, '/readyz')).status === 200) return Date.now() - c.startedMs;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
}

async function runCase(nodes: number, publicFaults: number): Promise<Record<string, number | string>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'afc-e2e-'));
  const result: Record<string, number | string> = { nodes, publicFaults };
  const api = new Api(nodes, publicFaults);
  let center: Center | undefined;
  try {
    const ready = await api.next('ready');
    const kubeconfig = path.join(dir, 'kubeconfig');
    fs.writeFileSync(kubeconfig, ready.kubeconfig, { mode: 0o600 });
    log(`  seeded in ${ready.seededMs} ms: ${JSON.stringify(ready.objects)}`);
    api.send({ type: 'watch' });
    await sleep(500);
    const loadStart = loadavg();
    center = await startCenter(kubeconfig, dir, 'e2e-a');
    const complete = await api.next('complete');
    result.firstCompletePublishMs = complete.atMs - center.startedMs;
    // the center's CPU until then: less dependent on the machine's load than the wall time
    result.firstCompletePublishCpuS = cpuSeconds(center.child.pid!);
    result.readyMs = await readyAfter(center);
    log(
      `  start → first complete publish ${result.firstCompletePublishMs} ms (${fmt(result.firstCompletePublishCpuS, 2)} s of CPU, ready after ${result.readyMs} ms), load ${loadStart} → ${loadavg()}`,
    );
    result.startLoad = loadStart;
    if (START_ONLY) return result;
    await sleep(SETTLE_S * 1000);
    const idle = await measure(center, api, IDLE_S);
    const separated = metric(idle.metrics, 'ascend_fault_center_separated_devices');
    Object.assign(result, {
      idleCpuPercent: idle.cpuPercent,
      idleLagP99Ms: idle.lagP99Ms,
      idleLoad: idle.load,
      separatedDevices: separated,
    });
    log(
      `  idle ${IDLE_S} s: CPU ${fmt(idle.cpuPercent, 1)} % of a core (API process ${fmt(idle.apiCpuPercent, 0)} %, ${fmt(idle.chunkWritesPerSec, 1)} chunk writes/s), event-loop lag p99 ${fmt(idle.lagP99Ms, 1)} ms (max ${fmt(idle.lagMaxMs, 1)}), RSS ${fmt(idle.rssMiB, 0)} MiB, ${separated} separated devices, load ${idle.load}`,
    );
    api.send({ type: 'updates', seconds: UPDATE_S, perSecond: nodes / 100 });
    const doneP = api.next('updates-done');
    const upd = await measure(center, api, UPDATE_S, doneP);
    const done = await doneP;
    Object.assign(result, {
      updateP50Ms: done.p50Ms,
      updateP99Ms: done.p99Ms,
      updateMaxMs: done.maxMs,
      updates: done.updates,
      unseen: done.unseen,
      updateCpuPercent: upd.cpuPercent,
      updateLagP99Ms: upd.lagP99Ms,
      updateLoad: upd.load,
    });
    log(
      `  updates ${UPDATE_S} s at ${nodes / 100}/s: ${done.updates} updates, seen ${done.seen} (superseded ${done.superseded}, unseen ${done.unseen}); update → cluster-info p50 ${fmt(done.p50Ms, 0)} ms, p99 ${fmt(done.p99Ms, 0)} ms, max ${fmt(done.maxMs, 0)} ms; CPU ${fmt(upd.cpuPercent, 1)} % (API process ${fmt(upd.apiCpuPercent, 0)} %, ${fmt(upd.chunkWritesPerSec, 1)} chunk writes/s), event-loop lag p99 ${fmt(upd.lagP99Ms, 1)} ms (max ${fmt(upd.lagMaxMs, 1)}); load ${upd.load}`,
    );
    result.rssMaxMiB = statusKb(center.child.pid!, 'VmHWM') / 1024;
    log(`  RSS max ${fmt(result.rssMaxMiB, 0)} MiB; log lines ${center.logLines}`);
    if (RESTART) {
      // nothing pending in the job detector at the kill (its 30 s window): whatever is counted after the restart
      // would be counted again
      await sleep(Math.max(35, SETTLE_S) * 1000);
      const before = metric(await scrape(center), 'ascend_fault_center_separated_devices');
      api.send({ type: 'state' });
      const st = await api.next('state');
      const stateBytes = st.objects.reduce((n, o) => n + o.bytes, 0);
      Object.assign(result, {
        stateObjects: st.objects.length,
        stateBytes,
        stateLargestWrite: Math.max(...st.objects.map((o) => o.bytes)),
        manualInfoBytes: st.manualInfoBytes,
        chunks: st.chunkBytes.length,
        largestChunk: Math.max(...st.chunkBytes),
      });
      log(
        `  persisted state: ${st.objects.length} objects, ${stateBytes} bytes (largest ${result.stateLargestWrite}); clusterd-manual-info-cm ${st.manualInfoBytes} bytes; ${st.chunkBytes.length} chunks, largest ${result.largestChunk} bytes`,
      );
      center.child.kill('SIGKILL');
      await new Promise((r) => center!.child.once('exit', r));
      const la = loadavg();
      center = await startCenter(kubeconfig, dir, 'e2e-b');
      result.restartReadyMs = await readyAfter(center);
      await sleep(SETTLE_S * 1000);
      const m = await scrape(center);
      Object.assign(result, {
        restartHardwareVerdicts: metric(m, 'ascend_fault_center_software_fault_verdicts_total', 'verdict="hardware"'),
        restartSeparations: metric(m, 'ascend_fault_center_separations_total', 'new="true"'),
        separatedBefore: before,
        separatedAfter: metric(m, 'ascend_fault_center_separated_devices'),
      });
      log(
        `  restart (SIGKILL): ready after ${result.restartReadyMs} ms; ${SETTLE_S} s later: hardware verdicts ${result.restartHardwareVerdicts}, new separations ${result.restartSeparations}, separated devices ${before} → ${result.separatedAfter}; load ${la} → ${loadavg()}`,
      );
    }
  } finally {
    if (center !== undefined) await stopChild(center.child);
    api.send({ type: 'stop' });
    await new Promise((r) => api.child.once('exit', r));
    if (LOG_DIR !== undefined) {
      for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.log'))) {
        fs.copyFileSync(path.join(dir, f), path.join(LOG_DIR, `${nodes}-${publicFaults}-${f}`));
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return result;
}

log(`node ${process.version}, ${os.cpus().length} cores, load ${loadavg()}`);
for (const nodes of NODES) {
  for (const publicFaults of PUBLIC) {
    log(`fault-center e2e: ${nodes} nodes, ${publicFaults} public faults`);
    const r = await runCase(nodes, publicFaults);
    log(JSON.stringify({ bench: 'fault-center-e2e', ...r }));
  }
}
