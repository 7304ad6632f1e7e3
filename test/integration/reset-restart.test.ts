/**
 * Issue [T] item 4: the agent stopped (SIGTERM) or killed (SIGKILL) in each phase of a chip reset and started again,
 * on a mock whose chips outlive the agent (`ASCEND_MOCK_STATE`, scenarios/README.md "State file"), as real chips do:
 * (a) waiting for the processes to stop (online) / for the group to be idle (offline), (b) the reset issued (the
 * blocking `dcmi_set_device_reset` in flight, `callSeconds`), (c) the chips booting. After the restart no chip may be
 * left resetting, no chip reset beyond the token bucket (device-plugin.md §J.2), no training task told a wrong state
 * (the reset ConfigMap of hot-reset.md §2 and its host file, read by {@link TrainingSimulator}; the kubelet and
 * device-info health of §3.10) and no booting chip offered to kubelet. docs/hot-reset.md "Agent restart" has the
 * table of what the restarted agent does. Every wait is shortened (`-resetTimePercent=5`).
 */
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { KEY_DEVICE_INFO } from '../../src/kube/device-info.js';
import type { MockState } from '../../src/sim/mock-control.js';
import { AgentSandbox, deviceList, RESOURCE, UNHEALTHY_KEY } from '../helpers/agent-process.js';
import {
  expectedResetJson,
  F1,
  healths,
  mockState,
  PERCENT,
  readOr,
  RESTART_NPU,
  schedulable,
  sleep,
  withoutTime,
} from './reset-f1.js';

type Signal = 'SIGTERM' | 'SIGKILL';
const SIGNALS: Signal[] = ['SIGTERM', 'SIGKILL'];
const ONLINE = ['-hotReset=1', `-resetTimePercent=${PERCENT}`];
const OFFLINE = ['-hotReset=2', `-resetTimePercent=${PERCENT}`];

let sb: AgentSandbox | undefined;
let f1: F1 | undefined;

afterEach(async () => {
  await f1?.close();
  f1 = undefined;
  await sb?.close();
  sb = undefined;
});

/** The chips outlive the agent: every agent of the sandbox gets the same state file. */
const chipsEnv = (s: AgentSandbox): Record<string, string> => ({ ASCEND_MOCK_STATE: path.join(s.dir, 'chips.json') });
const episodeFile = (s: AgentSandbox): string => path.join(s.dir, 'state', 'reset-episodes.json');

interface ChipView extends Record<string, unknown> {
  resets: number;
  resetAttempts: number;
  bootStatus: number;
  errorCodes: string[];
}
const chip = async (s: AgentSandbox, id: number): Promise<ChipView> =>
  ((await mockState(s)) as MockState & { chips: ChipView[] }).chips[id]!;

/** Stops the running agent with `signal`, checks how it ended, and starts a new one on the same sandbox. */
async function restart(s: AgentSandbox, flags: string[], signal: Signal): Promise<number> {
  s.agent!.child.kill(signal);
  const exit = await s.agent!.waitExit(15_000);
  expect(exit).toEqual(signal === 'SIGTERM' ? { code: 0, signal: null } : { code: null, signal: 'SIGKILL' });
  const at = Date.now();
  await s.start(flags, chipsEnv(s));
  return at;
}

/** The agent's `/status` (reset layer: which chips are held by a reset, by whom). */
async function resetStatus(s: AgentSandbox): Promise<{ resetting: Record<string, string> }> {
  const line = s.agent?.logs().find((l) => l.msg === 'metrics and probes listening');
  const address = typeof line?.address === 'string' ? line.address : '';
  const res = await fetch(`http://127.0.0.1:${address.slice(address.lastIndexOf(':') + 1)}/status`);
  return ((await res.json()) as { reset: { resetting: Record<string, string> } }).reset;
}

/** Kubelet health of `device` in every ListAndWatch update from `since` until `until` (ms). */
const kubeletHealth = (s: AgentSandbox, device: string, since: number, until = Infinity): (string | undefined)[] =>
  s.kubelet.updates
    .filter((u) => u.at >= since && u.at <= until)
    .map((u) => u.devices.find((d) => d.ID === device)?.health);

/** Every value of the device-info ConfigMap's `huawei.com/Ascend910` and `-Unhealthy` keys the API saw written. */
function deviceInfoWrites(s: AgentSandbox): { at: number; free: string; unhealthy: string }[] {
  const seen: { at: number; free: string; unhealthy: string }[] = [];
  s.api.store.subscribe((c) => {
    const m = c.object.metadata as { name?: string } | undefined;
    if (c.type.plural !== 'configmaps' || !m?.name?.startsWith('mindx-dl-deviceinfo-')) return;
    const data = (c.object as { data?: Record<string, string> }).data ?? {};
    const list = JSON.parse(data[KEY_DEVICE_INFO] ?? '{}') as { DeviceInfo?: { DeviceList?: Record<string, string> } };
    const l = list.DeviceInfo?.DeviceList ?? {};
    seen.push({ at: Date.now(), free: l[RESOURCE] ?? '', unhealthy: l[UNHEALTHY_KEY] ?? '' });
  });
  return seen;
}

// ---------------------------------------------------------------------------------------------------------------
// Online (-hotReset=1), fixture F1: chip 3 of job1's ring gets RestartNPU (the L5 flow, §3.7)

type Phase = 'processes' | 'issued' | 'booting';

/** F1 up to the moment the agent is in `phase` of chip 3's reset. */
async function onlineUntil(phase: Phase): Promise<F1> {
  sb = await AgentSandbox.create();
  const s = sb;
  await s.start(ONLINE, chipsEnv(s));
  f1 = new F1(s);
  const f = f1;
  await f.create();
  // (a): the training side stops 2 s after it reads `unrecovered` (the process wait is 3 s)
  await f.startTraining({ stopAfterMs: phase === 'processes' ? 2_000 : 300 });
  await s.mock({
    op: 'resetResult',
    logicId: 3,
    result: 'ok',
    bootSeconds: phase === 'booting' ? 4 : 1,
    callSeconds: phase === 'issued' ? 3 : 0,
  });
  await s.mock({ op: 'fault', logicId: 3, eventId: RESTART_NPU, assertion: 'occur' });
  const saved = (): string | undefined => (JSON.parse(readOr(episodeFile(s)) ?? '[]') as { state: string }[])[0]?.state;
  if (phase === 'processes') {
    await s.until(() => saved() === 'waitingProcesses', 'the episode waiting for the processes', 10_000);
    expect((await chip(s, 3)).resets).toBe(0);
  } else if (phase === 'issued') {
    await s.untilAsync(async () => (await chip(s, 3)).resets === 1, 'the reset call of chip 3', 10_000);
    expect(saved()).toBe('resetting');
  } else {
    await s.untilAsync(
      async () => {
        const c = await chip(s, 3);
        return c.resets === 1 && c.bootStatus !== 16 && saved() === 'waitingBoot';
      },
      'chip 3 booting after its reset',
      10_000,
    );
  }
  expect(f.statuses()).toEqual(['unrecovered/reset/reset']);
  return f;
}

describe('issue [T] item 4 online reset interrupted and resumed (hot-reset.md §3.7, docs/hot-reset.md "Agent restart")', () => {
  const cases: [Phase, Signal][] = (['processes', 'issued', 'booting'] as Phase[]).flatMap((p) =>
    SIGNALS.map((sig): [Phase, Signal] => [p, sig]),
  );
  test.each(cases)(
    'phase %s, %s: one reset of chip 3, the task told unrecovered then recovered, chip 3 never Unhealthy, nothing held',
    async (phase, signal) => {
      const f = await onlineUntil(phase);
      const s = f.sb;
      const infos = deviceInfoWrites(s);
      const restartedAt = await restart(s, ONLINE, signal);
      await s.until(() => f.writes.length >= 2, 'the recovered write after the restart', 20_000);
      const recoveredAt = f.writes[1]!.at;
      // hot-reset §2.4: the task is told exactly what a run without the restart tells it: one round (RetryTime 1)
      expect(withoutTime(f.writes[1]!.data['reset.json']!)).toBe(expectedResetJson('recovered', 'reset', 'reset', 1));
      await s.until(() => f.sim?.restarts === 1, 'the training side restarting');
      await s.until(() => readOr(episodeFile(s)) === '[]', 'the episode gone from -stateDir', 10_000);
      expect(f.statuses()).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
      expect(f.sim?.state).toBe('running');
      // the interrupted reset is not repeated when it had been issued; (a) resets once, after the restart
      expect((await mockState(s)).chips.map((c) => c.resets)).toEqual([0, 0, 0, 1, 0, 0, 0, 0]);
      // §3.10 across the restart: chip 3 of a task in reset is never reported Unhealthy before the recovered write
      const health = kubeletHealth(s, 'Ascend910-3', restartedAt, recoveredAt);
      expect(health.length).toBeGreaterThan(0);
      expect(health).not.toContain('Unhealthy');
      expect(infos.filter((w) => w.at <= recoveredAt).map((w) => w.unhealthy)).not.toContain('Ascend910-3');
      await s.until(() => healths(s).every((h) => h === 'Healthy'), 'every chip Healthy');
      expect((await resetStatus(s)).resetting).toEqual({});
    },
    60_000,
  );
});

// ---------------------------------------------------------------------------------------------------------------
// Offline (-hotReset=2): an idle chip 3 with RestartNPU is reset after the idle rule (60 s × 5 % = 3 s)

/** RestartNPU as the driver reports it: the code and a DCMI health ≠ 0 (§J.2 confirms with the health). */
async function faultLikeDriver(s: AgentSandbox, logicId: number): Promise<void> {
  await s.mock({ op: 'health', logicId, value: 2 });
  await s.mock({ op: 'fault', logicId, eventId: RESTART_NPU, assertion: 'occur' });
}

describe('issue [T] item 4 offline reset interrupted (device-plugin.md §J.2, docs/hot-reset.md "Agent restart")', () => {
  test.each(SIGNALS)(
    'phase (a) the group busy, %s: nothing is reset while it is busy; once idle, one reset after the idle rule',
    async (signal) => {
      sb = await AgentSandbox.create();
      const s = sb;
      await s.start(OFFLINE, chipsEnv(s));
      await s.mock({ op: 'resetResult', logicId: 3, result: 'ok', bootSeconds: 0.5 });
      await s.mock({ op: 'processes', logicId: 0, count: 1 }); // §J.6: a process on the group
      await faultLikeDriver(s, 3);
      await s.until(() => s.health('Ascend910-3') === 'Unhealthy', 'Ascend910-3 Unhealthy');
      await restart(s, OFFLINE, signal);
      expect(s.health('Ascend910-3')).toBe('Unhealthy');
      await sleep(3_500); // > the idle rule: the busy group is not reset
      expect((await chip(s, 3)).resetAttempts).toBe(0);
      const idleAt = Date.now();
      await s.mock({ op: 'processes', logicId: 0, count: 0 });
      await s.untilAsync(async () => (await chip(s, 3)).resets === 1, 'the offline reset', 15_000);
      expect(Date.now() - idleAt).toBeGreaterThanOrEqual(2_900);
      await s.until(() => s.health('Ascend910-3') === 'Healthy', 'Ascend910-3 Healthy after the reset', 10_000);
      expect((await chip(s, 3)).resetAttempts).toBe(1);
    },
    45_000,
  );

  const booting: ['issued' | 'booting', Signal][] = (['issued', 'booting'] as const).flatMap((p) =>
    SIGNALS.map((sig): ['issued' | 'booting', Signal] => [p, sig]),
  );
  test.each(booting)(
    'phase %s, %s: the restarted agent keeps the group Unhealthy and -Recovering until it has booted, never resets it again',
    async (phase, signal) => {
      sb = await AgentSandbox.create();
      const s = sb;
      await s.start(OFFLINE, chipsEnv(s));
      // (b) the call blocks 3 s, then the group boots 5 s; (c) it boots 8 s (the boot limit is 180 s × 5 % = 9 s)
      const call = phase === 'issued' ? 3 : 0;
      await s.mock({
        op: 'resetResult',
        logicId: 3,
        result: 'ok',
        bootSeconds: phase === 'issued' ? 5 : 8,
        callSeconds: call,
      });
      await faultLikeDriver(s, 3);
      await s.untilAsync(async () => (await chip(s, 3)).resets === 1, 'the offline reset of chip 3', 15_000);
      if (phase === 'booting') await sleep(500); // past the call
      const restartedAt = await restart(s, OFFLINE, signal);
      expect((await chip(s, 3)).bootStatus).not.toBe(16); // the restarted agent meets a booting chip
      // while the mock says the group boots, chip 3 is neither Healthy for kubelet nor free in device-info
      const samples: { boot: number; health?: string; free?: string[]; recovering: string }[] = [];
      await s.untilAsync(
        async () => {
          const c = await chip(s, 3);
          const recovering = deviceList(s)?.[`${RESOURCE}-Recovering`] ?? '';
          samples.push({ boot: c.bootStatus, health: s.health('Ascend910-3'), free: schedulable(s), recovering });
          return c.bootStatus === 16;
        },
        'the boot of chip 3 to end',
        15_000,
      );
      const during = samples.filter((x) => x.boot !== 16);
      expect(during.length).toBeGreaterThan(0);
      expect(during.map((x) => x.health)).not.toContain('Healthy');
      expect(during.flatMap((x) => x.free ?? [])).not.toContain('Ascend910-3');
      expect(kubeletHealth(s, 'Ascend910-3', restartedAt)[0]).toBe('Unhealthy');
      expect(during.some((x) => x.recovering.split(',').includes('Ascend910-3'))).toBe(true);
      // then the group is released: Healthy, schedulable, no second reset within several idle periods
      await s.until(() => s.health('Ascend910-3') === 'Healthy', 'Ascend910-3 Healthy after its boot', 10_000);
      await s.until(() => schedulable(s)?.length === 8, 'all 8 chips schedulable again', 10_000);
      await sleep(4_000);
      expect((await chip(s, 3)).resetAttempts).toBe(1);
      expect((await resetStatus(s)).resetting).toEqual({});
    },
    60_000,
  );

  test.each(SIGNALS)(
    '§J.2 the token bucket outlives the agent (%s): 3 failing resets in all, then ManualResetDevs',
    async (signal) => {
      sb = await AgentSandbox.create();
      const s = sb;
      const flags = OFFLINE; // failed resets are retried one -listWatchPeriod (3 s) apart
      await s.start(flags, chipsEnv(s));
      await s.mock({ op: 'resetResult', logicId: 3, result: 'fail' });
      await faultLikeDriver(s, 3);
      // the chips outlive the agent: the mock the agent loaded keeps them in the sandbox's file
      expect(((await s.mock({ op: 'state' })) as { stateFile?: string }).stateFile).toBe(chipsEnv(s).ASCEND_MOCK_STATE);
      await s.untilAsync(async () => (await chip(s, 3)).resetAttempts === 2, 'two failed resets', 15_000);
      await restart(s, flags, signal);
      await s.until(
        () => s.events().find((e) => e.reason === 'OfflineResetLimitReached'),
        'the OfflineResetLimitReached Event',
        20_000,
      );
      await sleep(3_500); // past the idle rule and a listWatchPeriod
      expect((await chip(s, 3)).resetAttempts).toBe(3);
      expect(s.health('Ascend910-3')).toBe('Unhealthy');
      expect((await resetStatus(s)).resetting).toEqual({});
    },
    60_000,
  );
});
