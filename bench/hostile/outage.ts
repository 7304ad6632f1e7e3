/**
 * Outage and signal campaign (issue [K] item 8): the built agent (`dist/cli/agent.js`) as a child process on the
 * mock library, the kubelet simulator and the API stand-in in this process.
 *
 * - Signals: SIGTERM → process exit, in each start-up phase (`dcmi_init` failing at the default
 *   `-deviceResetTimeout=600`, the API start-up reads against an API server that never answers and one that answers
 *   503, the kubelet folder wait, the first-registration wait), while running, while running with a ConfigMap
 *   write waiting for its retry (API down), and the same with a second SIGTERM 300 ms after the first. Each phase is
 *   entered when the agent logs it (or the stand-in sees its request); an agent still running 20 s after the signal
 *   is killed and reported as `> 20000`.
 * - Outages: a manual separation of chip 3 (FaultFrequency) before, the stand-in answering 503 for N seconds, a
 *   SeparateNPU fault on chip 2 right at the start of the outage; then the time from the API's return to the fault in
 *   the device-info ConfigMap, and the time from an operator's release of chip 3 typed right after that to kubelet
 *   seeing the chip Healthy. Also the probe rate (`GET /readyz`) and all requests per second during the outage.
 *
 * Run: `npm run build && npx tsx bench/hostile/outage.ts` (about 2 min with the defaults). Environment:
 * OUTAGE_SECONDS (comma list of outage lengths, default `20,30`), OUTAGE_PHASES (comma list of phase names, default
 * all; `none` skips the signal part). Prints a table and one JSON line `{"campaign":"outage",...}`.
 */
import { performance } from 'node:perf_hooks';
import * as k8s from '@kubernetes/client-node';
import fs from 'node:fs';
import path from 'node:path';
import { MockControlClient } from '../../src/sim/mock-control.js';
import { operatorRelease } from '../../src/sim/simulate.js';
import {
  AGENT_JS,
  type AgentChild,
  type ApiMode,
  Env,
  FREQUENCY_CODE,
  NODE,
  RESOURCE,
  SEPARATE_CODE,
  UNHEALTHY,
  until,
} from './agent-env.js';

/** An agent still running this long after SIGTERM is killed. */
const EXIT_CAP_MS = 20_000;

interface PhaseResult {
  readonly phase: string;
  /** SIGTERM → exit (ms); Infinity when killed at the cap. */
  readonly ms: number;
  readonly exit: number | string;
  readonly loggedStop: boolean;
}

interface Phase {
  readonly name: string;
  readonly env: { kubelet: boolean; api: ApiMode };
  readonly flags?: (e: Env) => string[];
  readonly childEnv?: (e: Env) => Record<string, string>;
  /** Resolves when the agent is in the phase. */
  readonly enter: (e: Env, a: AgentChild) => Promise<void>;
  readonly secondSignalAfterMs?: number;
}

const PHASES: readonly Phase[] = [
  {
    name: 'dcmi_init retries',
    env: { kubelet: true, api: 'up' },
    flags: () => ['-deviceResetTimeout=600'],
    childEnv: (e) => ({ ASCEND_MOCK_SCENARIO: path.join(e.dir, 'no-scenario.json') }),
    enter: (_e, a) => until(() => a.logged('DCMI not ready; retrying'), 'a failed dcmi_init'),
  },
  {
    name: 'API start-up reads (no answer)',
    env: { kubelet: true, api: 'silent' },
    enter: async (_e, a) => {
      await until(() => a.logged('Kubernetes API client'), 'the API client');
      await new Promise((r) => setTimeout(r, 300));
    },
  },
  {
    name: 'API start-up reads (503)',
    env: { kubelet: true, api: '503' },
    enter: (e) => until(() => e.api.requests().some((q) => q.url.startsWith('/api/v1/nodes/')), 'the node patch'),
  },
  {
    name: 'kubelet folder wait',
    env: { kubelet: false, api: 'up' },
    enter: (_e, a) => until(() => a.logged(/^waiting for kubelet directory/), 'the kubelet folder wait'),
  },
  {
    name: 'first registration wait',
    env: { kubelet: false, api: 'up' },
    flags: (e) => {
      fs.mkdirSync(path.join(e.dir, 'kubelet'), { recursive: true });
      return [];
    },
    enter: (_e, a) => until(() => a.logged(/^waiting for kubelet registration socket/), 'the registration wait'),
  },
  {
    name: 'running',
    env: { kubelet: true, api: 'up' },
    enter: (_e, a) => until(() => a.logged('agent started'), 'the start'),
  },
  {
    name: 'running, API down, write retrying',
    env: { kubelet: true, api: 'up' },
    enter: (e, a) => enterPendingWrite(e, a),
  },
  {
    name: 'same, second SIGTERM after 300 ms',
    env: { kubelet: true, api: 'up' },
    enter: (e, a) => enterPendingWrite(e, a),
    secondSignalAfterMs: 300,
  },
];

async function enterPendingWrite(e: Env, a: AgentChild): Promise<void> {
  await until(() => a.logged('agent started') && e.deviceList() !== undefined, 'the first ConfigMap write');
  e.api.setAvailable(false);
  const control = await MockControlClient.connect(e.control);
  await control.expectOk({ op: 'fault', logicId: 2, eventId: SEPARATE_CODE, assertion: 'occur' });
  control.close();
  await until(() => a.logged('device-info write failed; retrying'), 'a failed ConfigMap write');
}

async function runPhase(p: Phase): Promise<PhaseResult> {
  const e = await Env.create(p.env);
  const a = e.spawn(p.flags?.(e) ?? [], p.childEnv?.(e) ?? {});
  try {
    await Promise.race([
      p.enter(e, a),
      a.exited.then((x) => {
        throw new Error(`agent exited (${x.code}) before the phase`);
      }),
    ]);
    const t0 = performance.now();
    a.child.kill('SIGTERM');
    if (p.secondSignalAfterMs !== undefined) {
      setTimeout(() => a.child.kill('SIGTERM'), p.secondSignalAfterMs).unref();
    }
    const capped = new Promise<'cap'>((r) => setTimeout(() => r('cap'), EXIT_CAP_MS).unref());
    const r = await Promise.race([a.exited, capped]);
    if (r === 'cap') {
      await a.kill();
      return { phase: p.name, ms: Number.POSITIVE_INFINITY, exit: 'killed at the cap', loggedStop: false };
    }
    return {
      phase: p.name,
      ms: r.at - t0,
      exit: r.code ?? `signal ${r.signal}`,
      loggedStop: a.logged('stopped by a signal'),
    };
  } finally {
    await a.kill();
    await e.close();
  }
}

interface OutageResult {
  readonly outageSeconds: number;
  /** API back → the fault of the outage in the ConfigMap. */
  readonly convergeMs: number;
  /** Operator release (right after convergence) → kubelet sees the chip Healthy. */
  readonly releaseSeenMs: number;
  readonly probesPerSecond: number;
  readonly requestsPerSecond: number;
}

async function runOutage(seconds: number): Promise<OutageResult> {
  const e = await Env.create({ kubelet: true, api: 'up' });
  const a = e.spawn();
  let control: MockControlClient | undefined;
  try {
    await e.kubelet!.waitForRegistration(RESOURCE, 0, 30_000);
    control = await MockControlClient.connect(e.control);
    const c = control;
    const fault = (logicId: number, code: string, assertion: string): Promise<unknown> =>
      c.expectOk({ op: 'fault', logicId, eventId: code, assertion });
    await until(() => e.deviceList() !== undefined, 'the first ConfigMap write');
    // chip 3 manually separated (spec G.2: the second occurrence of a FaultFrequency code), its fault recovered
    await fault(3, FREQUENCY_CODE, 'occur');
    await until(() => e.health('Ascend910-3') === 'Unhealthy', 'chip 3 Unhealthy');
    await fault(3, FREQUENCY_CODE, 'recover');
    await until(() => e.health('Ascend910-3') === 'Healthy', 'chip 3 Healthy');
    await fault(3, FREQUENCY_CODE, 'occur');
    await until(() => e.manual().split(',').includes('Ascend910-3'), 'chip 3 in ManuallySeparateNPU');
    await fault(3, FREQUENCY_CODE, 'recover');
    await new Promise((r) => setTimeout(r, 1500)); // the recovery's write done
    e.api.clearLog();
    e.api.setAvailable(false);
    const off = performance.now();
    await fault(2, SEPARATE_CODE, 'occur');
    await new Promise((r) => setTimeout(r, seconds * 1000 - (performance.now() - off)));
    const during = e.api.requests();
    const outMs = performance.now() - off;
    e.api.setAvailable(true);
    const back = performance.now();
    await until(() => (e.deviceList()?.[UNHEALTHY] ?? '').split(',').includes('Ascend910-2'), 'convergence', 60_000, 5);
    const converged = performance.now();
    const core = e.api.kubeConfig().makeApiClient(k8s.CoreV1Api);
    const rel = performance.now();
    if (!(await operatorRelease(core, NODE, 'Ascend910-3'))) throw new Error('chip 3 was not in ManuallySeparateNPU');
    await until(() => e.health('Ascend910-3') === 'Healthy', 'the release seen', 60_000, 5);
    const seen = performance.now();
    return {
      outageSeconds: seconds,
      convergeMs: converged - back,
      releaseSeenMs: seen - rel,
      probesPerSecond: during.filter((q) => q.url.startsWith('/readyz')).length / (outMs / 1000),
      requestsPerSecond: during.length / (outMs / 1000),
    };
  } finally {
    control?.close();
    await a.kill();
    await e.close();
  }
}

function ms(n: number): string {
  return Number.isFinite(n) ? n.toFixed(0) : `> ${EXIT_CAP_MS}`;
}

async function main(): Promise<void> {
  if (!fs.existsSync(AGENT_JS)) throw new Error(`${AGENT_JS} missing: run npm run build first`);
  const phaseFilter = process.env.OUTAGE_PHASES?.split(',').map((s) => s.trim());
  const phases =
    phaseFilter?.[0] === 'none' ? [] : PHASES.filter((p) => phaseFilter === undefined || phaseFilter.includes(p.name));
  const outages = (process.env.OUTAGE_SECONDS ?? '20,30')
    .split(',')
    .filter((s) => s.trim() !== '')
    .map(Number)
    .filter((n) => Number.isFinite(n) && n > 0);
  const signals: PhaseResult[] = [];
  for (const p of phases) {
    signals.push(await runPhase(p));
    const r = signals.at(-1)!;
    console.log(`signal: ${r.phase}: ${ms(r.ms)} ms, exit ${r.exit}`);
  }
  const outs: OutageResult[] = [];
  for (const s of outages) {
    outs.push(await runOutage(s));
    console.log(`outage ${s} s: converged ${outs.at(-1)!.convergeMs.toFixed(0)} ms after the API returned`);
  }
  console.log('\n| SIGTERM during | SIGTERM → exit (ms) | exit status | "stopped by a signal" logged |');
  console.log('| --- | --- | --- | --- |');
  for (const r of signals) console.log(`| ${r.phase} | ${ms(r.ms)} | ${r.exit} | ${r.loggedStop ? 'yes' : 'no'} |`);
  console.log(
    '\n| outage (503) | API back → ConfigMap converged (ms) | release → seen (ms) | probes/s during | requests/s during |',
  );
  console.log('| --- | --- | --- | --- | --- |');
  for (const o of outs) {
    console.log(
      `| ${o.outageSeconds} s | ${o.convergeMs.toFixed(0)} | ${o.releaseSeenMs.toFixed(0)} | ` +
        `${o.probesPerSecond.toFixed(2)} | ${o.requestsPerSecond.toFixed(2)} |`,
    );
  }
  const round = (n: number): number | null => (Number.isFinite(n) ? Math.round(n) : null);
  console.log(
    JSON.stringify({
      campaign: 'outage',
      signals: signals.map((r) => ({ phase: r.phase, exitMs: round(r.ms), exit: r.exit, loggedStop: r.loggedStop })),
      outages: outs.map((o) => ({
        outageSeconds: o.outageSeconds,
        convergeMs: round(o.convergeMs),
        releaseSeenMs: round(o.releaseSeenMs),
        probesPerSecond: Number(o.probesPerSecond.toFixed(2)),
        requestsPerSecond: Number(o.requestsPerSecond.toFixed(2)),
      })),
    }),
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
