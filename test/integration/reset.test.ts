/**
 * Chip reset with the agent as a child process (issue [F] deliver 6; hot-reset.md §6.2): the built agent on the mock
 * DCMI library, the kubelet simulator and the Kubernetes API stand-in, plus the F1 training side
 * ({@link TrainingSimulator}) in the test process reading the host file the agent lands under `-hostRoot` (§2.8).
 * Every fixed reset wait is shortened with `-resetTimePercent` (GraceTolerance values too).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { sandboxFlags } from '../../src/sim/simulate.js';
import {
  AgentSandbox,
  deviceList,
  NETWORK_UNHEALTHY_KEY,
  NODE_NAME,
  RESOURCE,
  runAgentOnce,
  UNHEALTHY_KEY,
} from '../helpers/agent-process.js';
import {
  ALL,
  expectedResetJson,
  F1,
  healths,
  JOB,
  mockState,
  NS,
  PERCENT,
  readOr,
  RESTART_NPU,
  schedulable,
  sha256,
  sleep,
  withoutTime,
} from './reset-f1.js';

let sb: AgentSandbox | undefined;
let f1: F1 | undefined;

afterEach(async () => {
  await f1?.close();
  f1 = undefined;
  await sb?.close();
  sb = undefined;
});

async function startF1(flags: string[]): Promise<F1> {
  sb = await AgentSandbox.create();
  await sb.start(flags);
  f1 = new F1(sb);
  await f1.create();
  return f1;
}

const ONLINE = ['-hotReset=1', `-resetTimePercent=${PERCENT}`];

describe('hot-reset §3.7 online L5 flow (-hotReset=1, fixture F1)', () => {
  test('HR-02/HR-05 RestartNPU on chip 3: unrecovered/reset/reset, chip 3 Healthy meanwhile, one reset of chip 3, recovered', async () => {
    const f = await startF1(ONLINE);
    const s = f.sb;
    const sim = await f.startTraining();
    await s.mock({ op: 'resetResult', logicId: 3, result: 'ok', bootSeconds: 2 });
    await s.mock({ op: 'fault', logicId: 3, eventId: RESTART_NPU, assertion: 'occur' });

    // HR-02: the first write of the episode is (b) of §2.9 modulo UpdateTime/checkCode
    const first = await s.until(() => f.writes[0], 'the first reset ConfigMap write');
    const text = first.data['reset.json']!;
    expect(withoutTime(text)).toBe(expectedResetJson('unrecovered', 'reset', 'reset', 1));
    expect(first.data.checkCode).toBe(sha256(text));
    expect(first.data.restartType).toBe('hotReset');
    // §2.8 / §2.9 (i): the host files equal the ConfigMap values
    const file = path.join(f.hostDir, 'reset.json');
    await s.until(() => readOr(file) === text || f.writes.length > 1, 'the host file landing write (b)');
    expect(readOr(file)).toBe(text);
    expect(readOr(path.join(f.hostDir, 'restartType'))).toBe('hotReset');

    // §3.10 / HR-05: while chip 3 boots after its reset, kubelet sees it Healthy and the device-info ConfigMap lists no
    // chip as Unhealthy or Recovering
    const booting = await s.untilAsync(
      async () => {
        const chip = (await mockState(s)).chips[3]!;
        return chip.resets === 1 && chip.bootStatus !== 16
          ? { health: s.health('Ascend910-3'), list: deviceList(s) }
          : undefined;
      },
      'chip 3 booting after its reset',
      10_000,
    );
    expect(sim.state).toBe('stopped');
    expect(booting.health).toBe('Healthy');
    expect(booting.list?.[UNHEALTHY_KEY]).toBe('');
    expect(booting.list?.[`${RESOURCE}-Recovering`]).toBe('');

    await s.until(() => f.writes.length >= 2, 'the recovered write', 20_000);
    const last = f.writes[1]!;
    expect(withoutTime(last.data['reset.json']!)).toBe(expectedResetJson('recovered', 'reset', 'reset', 1));
    expect(last.data.checkCode).toBe(sha256(last.data['reset.json']!));
    expect(last.data.restartType).toBe('hotReset');
    // from the first Healthy report after write (b) until the recovered write, chip 3 never went Unhealthy
    const chip3 = s.kubelet.updates
      .filter((u) => u.at >= first.at && u.at < last.at)
      .map((u) => u.devices.find((d) => d.ID === 'Ascend910-3')?.health);
    expect(chip3.length).toBeGreaterThan(0);
    expect(chip3.slice(chip3.indexOf('Healthy'))).not.toContain('Unhealthy');
    expect(chip3.at(-1)).toBe('Healthy');

    // D1: one reset, of the faulty chip only
    const state = await mockState(s);
    expect(state.chips.map((c) => c.resets)).toEqual([0, 0, 0, 1, 0, 0, 0, 0]);
    await s.until(() => sim.restarts === 1, 'the training side restarting');
    expect(healths(s)).toEqual(ALL.map(() => 'Healthy'));
    const list = await s.until(() => {
      const l = deviceList(s);
      return l && !(l[`${RESOURCE}-Fault`] ?? '').includes(RESTART_NPU) ? l : undefined;
    }, 'no fault code of chip 3 in the device-info ConfigMap');
    expect(list[UNHEALTHY_KEY] ?? '').toBe('');
    expect(f.statuses()).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
  }, 30_000);

  test('HR-07 processes never stop: failed/isolate/reset written once, no DCMI reset, chip 3 Unhealthy', async () => {
    const f = await startF1(ONLINE);
    const s = f.sb;
    const sim = await f.startTraining({ ignoreResetFile: true });
    await s.mock({ op: 'fault', logicId: 3, eventId: RESTART_NPU, assertion: 'occur' });
    await s.until(() => f.writes.length >= 1, 'the first reset ConfigMap write');
    // §3.4.2: WaitProcessesToZeroTime (60 s × 5 % = 3 s), then the one isolate write (D6)
    const failed = await s.until(() => f.writes[1], 'the failed/isolate write', 15_000);
    expect(failed.at - f.writes[0]!.at).toBeGreaterThanOrEqual(2_500);
    expect(withoutTime(failed.data['reset.json']!)).toBe(expectedResetJson('failed', 'isolate', 'reset', 1));
    expect(failed.data.checkCode).toBe(sha256(failed.data['reset.json']!));
    await s.until(() => s.health('Ascend910-3') === 'Unhealthy', 'Ascend910-3 Unhealthy after the isolate write');
    // past WaitProcessReadCMTime (1.5 s) and a listWatchPeriod: no second write, no new episode
    await sleep(3_500);
    expect(f.statuses()).toEqual(['unrecovered/reset/reset', 'failed/isolate/reset']);
    const state = await mockState(s);
    expect(state.chips.map((c) => c.resetAttempts)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(state.chips.map((c) => c.processes)).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
    expect(sim.state).toBe('running');
    expect(healths(s)).toEqual(ALL.map((i) => (i === 3 ? 'Unhealthy' : 'Healthy')));
    expect(deviceList(s)?.[UNHEALTHY_KEY]).toBe('Ascend910-3');
  }, 30_000);

  test('HR-08 DCMI reset fails: 4 in-band attempts, failed/isolate/reset, only chip 3 turns Unhealthy', async () => {
    const f = await startF1(ONLINE);
    const s = f.sb;
    await f.startTraining();
    await s.mock({ op: 'resetResult', logicId: 3, result: 'fail' });
    await s.mock({ op: 'fault', logicId: 3, eventId: RESTART_NPU, assertion: 'occur' });
    await s.until(() => f.writes.length >= 2, 'the failed/isolate write', 20_000);
    expect(withoutTime(f.writes[1]!.data['reset.json']!)).toBe(expectedResetJson('failed', 'isolate', 'reset', 1));
    await s.until(() => s.health('Ascend910-3') === 'Unhealthy', 'Ascend910-3 Unhealthy after the isolate write');
    const state = await mockState(s);
    // §3.4.4: 4 in-band attempts (back-off 5/10/15 s × 5 %), on chip 3 only (D1); none succeeded
    expect(state.chips.map((c) => c.resetAttempts)).toEqual([0, 0, 0, 4, 0, 0, 0, 0]);
    expect(state.chips.map((c) => c.resets)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    // every other chip stays Healthy (the pod holds all 8, so none is in the free list huawei.com/Ascend910)
    expect(healths(s)).toEqual(ALL.map((i) => (i === 3 ? 'Unhealthy' : 'Healthy')));
    const list = await s.until(() => {
      const l = deviceList(s);
      return l?.[UNHEALTHY_KEY] === 'Ascend910-3' ? l : undefined;
    }, 'chip 3 alone in huawei.com/Ascend910-Unhealthy');
    expect(list[NETWORK_UNHEALTHY_KEY]).toBe('');
    expect(f.statuses()).toEqual(['unrecovered/reset/reset', 'failed/isolate/reset']);
    const event = await s.until(
      () => s.events().find((e) => e.reason === 'ResetFailed'),
      'the ResetFailed Event (recorded after the write)',
    );
    expect(event.type).toBe('Warning');
    expect(event.message).toContain('in-band reset of chip 3 failed 4 times');
    expect(s.events().filter((e) => e.reason === 'ResetFailed')).toHaveLength(1);
  }, 30_000);
});

describe('agent restart in the middle of an online reset (issue [F] deliver 6)', () => {
  const episodeFile = (s: AgentSandbox): string => path.join(s.dir, 'state', 'reset-episodes.json');

  /** F1 up to a SIGTERM while chip 3 boots after its reset (bootSeconds 30 > the 7.5 s boot budget). */
  async function interruptWhileBooting(): Promise<F1> {
    const f = await startF1(ONLINE);
    const s = f.sb;
    await f.startTraining();
    await s.mock({ op: 'resetResult', logicId: 3, result: 'ok', bootSeconds: 30 });
    await s.mock({ op: 'fault', logicId: 3, eventId: RESTART_NPU, assertion: 'occur' });
    await s.untilAsync(async () => (await mockState(s)).chips[3]!.resets === 1, 'the DCMI reset of chip 3', 10_000);
    expect((await mockState(s)).chips[3]!.bootStatus).not.toBe(16);
    s.agent!.child.kill('SIGTERM');
    expect(await s.agent!.waitExit(15_000)).toEqual({ code: 0, signal: null });
    expect(f.statuses()).toEqual(['unrecovered/reset/reset']);
    const saved = JSON.parse(fs.readFileSync(episodeFile(s), 'utf8')) as { task: string; state: string }[];
    expect(saved.map((r) => r.task)).toEqual([JOB]);
    expect(['resetting', 'waitingBoot']).toContain(saved[0]!.state);
    return f;
  }

  test('SIGTERM while the ring boots, restart on the same -stateDir: the episode resumes and ends recovered', async () => {
    const f = await interruptWhileBooting();
    const s = f.sb;
    // the new agent loads a fresh mock: chip 3 fault-free and booted, so no second reset is needed
    await s.start(ONLINE);
    await s.until(() => f.writes.length >= 2, 'the recovered write after the restart', 15_000);
    expect(withoutTime(f.writes[1]!.data['reset.json']!)).toBe(expectedResetJson('recovered', 'reset', 'reset', 1));
    await s.until(() => f.sim?.restarts === 1, 'the training side restarting');
    await s.until(() => readOr(episodeFile(s)) === '[]', 'the episode gone from -stateDir', 10_000);
    expect((await mockState(s)).chips.map((c) => c.resets)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(healths(s)).toEqual(ALL.map(() => 'Healthy'));
    expect(f.statuses()).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
    expect(s.agent!.logs().some((l) => l.msg === 'persisted reset episode found; resumed at the first cycle')).toBe(
      true,
    );
  }, 40_000);

  test('SIGTERM while the ring boots, restart while the pod list still fails: the episode waits for the pods and ends recovered', async () => {
    const f = await interruptWhileBooting();
    const s = f.sb;
    // The new agent's first pod lists fail; the Node patch succeeds at its second try (1 s later), before the pod
    // cache's third list: the reset layer starts with an empty pod cache and must not take the task for gone.
    s.api.clearLog();
    s.api.setAvailable(false);
    // a refused request is logged without its route: recognised by its URL
    const failedPodLists = (): number =>
      s.api
        .requests()
        .filter((r) => /^\/api\/v1\/pods(\?|$)/.test(r.url) && !r.url.includes('watch=') && r.status === 503).length;
    const restore = s
      .until(() => failedPodLists() >= 2, 'two failed pod lists of the new agent', 15_000)
      .finally(() => s.api.setAvailable(true));
    await s.start(ONLINE);
    await restore;
    await s.until(() => f.writes.length >= 2, 'the final write after the restart', 15_000);
    expect(f.statuses()).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
    await s.until(() => readOr(episodeFile(s)) === '[]', 'the episode gone from -stateDir', 10_000);
    expect(s.agent!.logs().some((l) => String(l.msg).startsWith('reset episode abandoned'))).toBe(false);
    expect(healths(s)).toEqual(ALL.map(() => 'Healthy'));
  }, 40_000);

  test('SIGTERM while the ring boots, restart with chip 3 still faulty: the reset stage runs again and ends recovered', async () => {
    const f = await interruptWhileBooting();
    const s = f.sb;
    // the interrupted reset left the fault behind: chip 3 still reports RestartNPU to the new agent
    const scenario = JSON.parse(fs.readFileSync(s.scenario, 'utf8')) as {
      cards: { chips: { logicId: number; errorCodes: string[]; bootSeconds?: number }[] }[];
    };
    for (const card of scenario.cards) {
      for (const chip of card.chips) {
        if (chip.logicId === 3) {
          chip.errorCodes = [RESTART_NPU];
          chip.bootSeconds = 1;
        }
      }
    }
    const restarted = path.join(s.dir, 'scenario-restart.json');
    fs.writeFileSync(restarted, JSON.stringify(scenario));
    await s.start(ONLINE, { ASCEND_MOCK_SCENARIO: restarted });
    await s.until(() => f.writes.length >= 2, 'the final write after the restart', 20_000);
    expect(f.statuses()).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
    expect(withoutTime(f.writes[1]!.data['reset.json']!)).toBe(expectedResetJson('recovered', 'reset', 'reset', 1));
    expect((await mockState(s)).chips.map((c) => c.resets)).toEqual([0, 0, 0, 1, 0, 0, 0, 0]);
    await s.until(() => readOr(episodeFile(s)) === '[]', 'the episode gone from -stateDir', 10_000);
    await s.until(() => s.health('Ascend910-3') === 'Healthy', 'Ascend910-3 Healthy after the episode');
    const list = await s.until(() => {
      const l = deviceList(s);
      return l && !(l[`${RESOURCE}-Fault`] ?? '').includes(RESTART_NPU) ? l : undefined;
    }, 'no fault code of chip 3 in the device-info ConfigMap');
    expect(list[UNHEALTHY_KEY] ?? '').toBe('');
    expect(healths(s)).toEqual(ALL.map(() => 'Healthy'));
  }, 45_000);
});

describe('device-plugin §J.2 offline reset (-hotReset=2)', () => {
  /** RestartNPU as the driver reports it: the code and a DCMI health ≠ 0 (§J.2 confirms with dcmi_get_device_health). */
  async function faultLikeDriver(s: AgentSandbox, logicId: number): Promise<void> {
    await s.mock({ op: 'health', logicId, value: 2 });
    await s.mock({ op: 'fault', logicId, eventId: RESTART_NPU, assertion: 'occur' });
  }
  const OFFLINE = ['-hotReset=2', `-resetTimePercent=${PERCENT}`];

  test('HR-30 an idle chip with RestartNPU is reset after the idle rule (60 s × 5 %) and comes back Healthy', async () => {
    sb = await AgentSandbox.create();
    const s = sb;
    await s.start(OFFLINE);
    await s.mock({ op: 'resetResult', logicId: 3, result: 'ok', bootSeconds: 0.5 });
    const t0 = Date.now();
    await faultLikeDriver(s, 3);
    await s.until(() => s.health('Ascend910-3') === 'Unhealthy', 'Ascend910-3 Unhealthy');
    await s.untilAsync(async () => (await mockState(s)).chips[3]!.resets === 1, 'the offline reset', 15_000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3_000);
    await s.until(() => s.health('Ascend910-3') === 'Healthy', 'Ascend910-3 Healthy after the reset', 10_000);
    const state = await mockState(s);
    expect(state.chips.map((c) => c.resetAttempts)).toEqual([0, 0, 0, 1, 0, 0, 0, 0]);
    expect(state.chips[3]!.errorCodes).toEqual([]);
    // Events reach the API through the recorder's queue: waited for, not sampled
    await s.until(
      () => s.events().some((e) => e.reason === 'OfflineResetSucceeded'),
      'the OfflineResetSucceeded Event',
    );
    await s.until(() => schedulable(s)?.length === 8, 'all 8 chips schedulable again');
  }, 30_000);

  test('issue 12 item 6 §J.2 a failing reset is retried one listWatchPeriod later, not in the same cycle', async () => {
    sb = await AgentSandbox.create();
    const s = sb;
    const period = 3_000; // -listWatchPeriod=3 of the sandbox flags
    await s.start([...OFFLINE, `-listWatchPeriod=${period / 1000}`]);
    await s.mock({ op: 'resetResult', logicId: 3, result: 'fail' });
    await faultLikeDriver(s, 3);
    await s.until(
      () => s.events().find((e) => e.reason === 'OfflineResetLimitReached'),
      'the OfflineResetLimitReached Event after three failed resets',
      30_000,
    );
    expect((await mockState(s)).chips.map((c) => c.resetAttempts)).toEqual([0, 0, 0, 3, 0, 0, 0, 0]);
    // the agent's own log times: each attempt starts at least one listWatchPeriod after the previous one
    const starts = s
      .agent!.logs()
      .filter((l) => l.msg === 'offline reset: resetting chip' && l.logicId === 3)
      .map((l) => Date.parse(String(l.time)));
    expect(starts).toHaveLength(3);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(period - 50); // timer vs wall-clock rounding
    expect(s.events().filter((e) => e.reason === 'OfflineResetFailed')).toHaveLength(3);
  }, 45_000);

  test('HR-24 a chip held by a pod is not reset while the pod exists; after the pod leaves it is', async () => {
    sb = await AgentSandbox.create();
    const s = sb;
    await s.start(OFFLINE);
    await s.core().createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'infer-0', namespace: NS, annotations: { 'huawei.com/Ascend910': 'Ascend910-3' } },
        spec: { nodeName: NODE_NAME, containers: [{ name: 'c0', image: 'x' }] },
      },
    });
    await faultLikeDriver(s, 3);
    await s.until(() => s.health('Ascend910-3') === 'Unhealthy', 'Ascend910-3 Unhealthy');
    await sleep(5_000); // > the 3 s idle rule
    expect((await mockState(s)).chips.map((c) => c.resetAttempts)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    await s.core().deleteNamespacedPod({ namespace: NS, name: 'infer-0' });
    await s.untilAsync(async () => (await mockState(s)).chips[3]!.resets === 1, 'the offline reset', 15_000);
    await s.until(() => s.health('Ascend910-3') === 'Healthy', 'Ascend910-3 Healthy after the reset', 10_000);
  }, 30_000);
});

describe('flag validation', () => {
  test('HR-01 -hotReset=3 exits 2 naming -hotReset', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npu-reset-flag-'));
    try {
      const r = await runAgentOnce(sandboxFlags(dir).concat('-hotReset=3'), {
        PATH: process.env.PATH,
        NODE_NAME: NODE_NAME,
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/-hotReset/);
      expect(r.stderr).toMatch(/must be -1, 0, 1 or 2/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
