/**
 * Clock steps survived (issue [T] item 1): both programs built (`dist/`) and run as child processes under libfaketime
 * (test/helpers/faketime.ts: the wall clock moved through a timestamp file, CLOCK_MONOTONIC left alone), the API
 * stand-in and the kubelet simulator in this process. For each program, with faults flowing:
 *
 * - before: the write interval of its ConfigMap (fault center: `cluster-info-device-0`; agent: its device-info
 *   ConfigMap) while a change arrives every 250 ms;
 * - then the wall clock stepped back 1 h, forward 1 h, and frozen for `CLOCK_FROZEN_S` (default 60) seconds: the time
 *   from a fault to its ConfigMap (and, for the agent, to the kubelet stream) after the step, and the write interval
 *   while changes keep flowing; after the step back, the fault center's forced-rewrite interval with nothing changing.
 *
 * Times are measured here, on this process's monotonic clock; write times are seen by polling the stand-in every
 * 5 ms. A fault not visible within 10 s is reported as `> 10000`. Run: `npm run build && npx tsx bench/clock-steps.ts`
 * (about 5 min). Prints a table and one JSON line `{"bench":"clock-steps",...}`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { DEVICE_INFO_NAMESPACE, deviceInfoConfigMapName } from '../src/kube/device-info.js';
import { CONFIGMAPS, KubeApiStandIn, VOLCANO_PODGROUPS } from '../src/sim/kube-api.js';
import { deviceInfoCm, faultObject } from '../test/cluster/helpers.js';
import {
  AgentSandbox,
  NODE_NAME,
  SEPARATE_CODE,
  UNHEALTHY_KEY,
  deviceList,
  listed,
} from '../test/helpers/agent-process.js';
import { FakeTime } from '../test/helpers/faketime.js';
import { median, stopChild } from './stats.js';

const HOUR = 3_600_000;
const FROZEN_S = Number(process.env.CLOCK_FROZEN_S ?? 60);
const VISIBLE_BOUND_MS = 10_000;
const log = (line: string): void => void process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the bench drives and reads of one program. */
interface Target {
  /** Successful writes of the program's ConfigMap so far. */
  writes(): number;
  /** Makes one change (a fault on or off). */
  change(): Promise<void>;
  /** A new fault; resolves with the ms until the ConfigMap, and the kubelet stream where there is one. */
  fault(): Promise<{ configMapMs: number; kubeletMs?: number }>;
}

/** Write times (this process's monotonic ms) seen while `during` runs. */
async function writeTimes<T>(t: Target, during: () => Promise<T>): Promise<{ times: number[]; result: T }> {
  const times: number[] = [];
  let seen = t.writes();
  let done = false;
  const poll = (async () => {
    while (!done) {
      const n = t.writes();
      for (; seen < n; seen++) times.push(performance.now());
      await sleep(5);
    }
  })();
  const result = await during();
  done = true;
  await poll;
  return { times, result };
}

const gaps = (times: readonly number[]): number[] => times.slice(1).map((t, i) => t - times[i]!);

/** Changes every 250 ms for `ms`; the median interval between the writes meanwhile. */
async function flowInterval(t: Target, ms: number): Promise<{ writes: number; medianMs: number }> {
  const { times } = await writeTimes(t, async () => {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      await t.change();
      await sleep(250);
    }
  });
  return { writes: times.length, medianMs: median(gaps(times)) };
}

/** `n` faults 1.5 s apart: the median and the largest time to visibility. */
async function visibility(t: Target, n: number): Promise<{ configMapMs: number[]; kubeletMs: number[] }> {
  const configMapMs: number[] = [];
  const kubeletMs: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await t.fault();
    configMapMs.push(r.configMapMs);
    if (r.kubeletMs !== undefined) kubeletMs.push(r.kubeletMs);
    await sleep(1500);
  }
  return { configMapMs, kubeletMs };
}

async function until(check: () => boolean, boundMs = VISIBLE_BOUND_MS): Promise<number> {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > boundMs) return Number.POSITIVE_INFINITY;
    await sleep(2);
  }
  return performance.now() - start;
}

const ms = (v: number): string => (Number.isFinite(v) ? `${Math.round(v)}` : `> ${VISIBLE_BOUND_MS}`);
const summary = (v: readonly number[]): string => `${ms(median(v))} (max ${ms(Math.max(...v))})`;

interface Phase {
  step: string;
  visibleConfigMapMs: number[];
  visibleKubeletMs: number[];
  flow: { writes: number; medianMs: number };
  forcedRewriteMedianMs?: number;
}

/** Before, back 1 h, forward 1 h, frozen: the figures of one program. */
async function campaign(name: string, t: Target, time: FakeTime, forced: boolean): Promise<Phase[]> {
  const phases: Phase[] = [];
  const run = async (step: string, apply: () => void, flowMs: number): Promise<Phase> => {
    apply();
    const v = await visibility(t, 3);
    const flow = await flowInterval(t, flowMs);
    const p: Phase = { step, visibleConfigMapMs: v.configMapMs, visibleKubeletMs: v.kubeletMs, flow };
    phases.push(p);
    log(
      `  ${name} ${step}: fault → ConfigMap ${summary(v.configMapMs)} ms` +
        (v.kubeletMs.length > 0 ? `, → kubelet ${summary(v.kubeletMs)} ms` : '') +
        `; ${flow.writes} writes while faults flowed ${Math.round(flowMs / 1000)} s, median interval ${ms(flow.medianMs)} ms`,
    );
    return p;
  };
  await run('before', () => undefined, 6000);
  const back = await run('back 1 h', () => time.step(-HOUR), 6000);
  if (forced) {
    const { times } = await writeTimes(t, () => sleep(16_000));
    back.forcedRewriteMedianMs = median(gaps(times));
    log(
      `  ${name} back 1 h, nothing changing: ${times.length} forced rewrites in 16 s, interval ${ms(median(gaps(times)))} ms`,
    );
  }
  await run('forward 1 h', () => time.step(HOUR), 6000);
  await run(`frozen ${FROZEN_S} s`, () => time.freeze(), Math.max(0, FROZEN_S * 1000 - 3 * 1500));
  time.thaw();
  return phases;
}

async function faultCenter(): Promise<Phase[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-clock-fc-'));
  const time = new FakeTime(dir);
  const api = await KubeApiStandIn.start({ extraResources: [VOLCANO_PODGROUPS] });
  let child: ChildProcess | undefined;
  try {
    api.store.create(CONFIGMAPS, 'kube-system', deviceInfoCm('node-1', []));
    const kubeconfig = path.join(dir, 'kubeconfig');
    await api.writeKubeconfig(kubeconfig);
    child = spawn(
      process.execPath,
      [
        path.join(PROJECT_ROOT, 'dist', 'cli', 'fault-center.js'),
        `-kubeconfig=${kubeconfig}`,
        '-metricsAddress=127.0.0.1:0',
        '-grpcAddress=127.0.0.1:0',
        '-identity=bench',
        `-stateDir=${dir}`,
      ],
      { env: { PATH: process.env.PATH, ...time.env() }, stdio: 'ignore' },
    );
    const published = (): string => {
      const cm = api.store.get(CONFIGMAPS, 'mindx-dl', 'cluster-info-device-0') as
        { data?: Record<string, string> } | undefined;
      return cm?.data?.['cluster-info-device-0'] ?? '';
    };
    if (!Number.isFinite(await until(() => published().includes('node-1'), 30_000))) {
      throw new Error('the fault center published nothing in 30 s');
    }
    let seq = 0;
    const put = (): string => {
      const code = `80E0${String(1000 + (++seq % 9000)).padStart(4, '0')}`;
      const cm = deviceInfoCm('node-1', [faultObject('Ascend910-3', code, 'RestartNPU')]);
      api.store.update(CONFIGMAPS, 'kube-system', cm.metadata.name, cm);
      return code;
    };
    const target: Target = {
      writes: () => api.writeCount({ resource: 'configmaps', namespace: 'mindx-dl', name: 'cluster-info-device-0' }),
      change: () => {
        put();
        return Promise.resolve();
      },
      fault: async () => {
        const code = put();
        return { configMapMs: await until(() => published().includes(code)) };
      },
    };
    return await campaign('fault center', target, time, true);
  } finally {
    if (child) await stopChild(child);
    await api.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function agent(): Promise<Phase[]> {
  const sb = await AgentSandbox.create(undefined, { prefix: 'bench-clock-agent-' });
  try {
    const time = new FakeTime(sb.dir);
    await sb.start([], time.env());
    await sb.until(() => deviceList(sb) !== undefined, 'the first device-info write', 15_000);
    let k = 0;
    const target: Target = {
      writes: () =>
        sb.api.writeCount({
          resource: 'configmaps',
          namespace: DEVICE_INFO_NAMESPACE,
          name: deviceInfoConfigMapName(NODE_NAME),
        }),
      // chips 0…5 fall one by one, then recover one by one (a recovery is held 1 s, D.4)
      change: async () => {
        const chip = k % 6;
        const occur = Math.floor(k / 6) % 2 === 0;
        k++;
        await sb.mock({ op: 'fault', logicId: chip, eventId: SEPARATE_CODE, assertion: occur ? 'occur' : 'recover' });
      },
      fault: async () => {
        const name = 'Ascend910-7';
        const t0 = performance.now();
        await sb.mock({ op: 'fault', logicId: 7, eventId: SEPARATE_CODE, assertion: 'occur' });
        const kubeletMs = await until(() => sb.health(name) === 'Unhealthy');
        const cm = await until(() => listed(deviceList(sb)?.[UNHEALTHY_KEY], name));
        const configMapMs = Number.isFinite(cm) ? performance.now() - t0 : cm;
        await sb.mock({ op: 'fault', logicId: 7, eventId: SEPARATE_CODE, assertion: 'recover' });
        await until(() => !listed(deviceList(sb)?.[UNHEALTHY_KEY], name));
        return { configMapMs, kubeletMs };
      },
    };
    return await campaign('agent', target, time, false);
  } finally {
    await sb.close();
  }
}

log(`clock-steps: both programs under libfaketime, faults flowing (frozen ${FROZEN_S} s)`);
const fc = await faultCenter();
const ag = await agent();
log(JSON.stringify({ bench: 'clock-steps', frozenSeconds: FROZEN_S, faultCenter: fc, agent: ag }));
