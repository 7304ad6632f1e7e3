/**
 * Online engine, L2 (hot-reset.md §3.5) and L3 (§3.6) flows, task selection (§3.2) and the cross-node case (§3.8)
 * on fixture F1: HR-12 – HR-15, HR-17 – HR-19 and the HR-29 timings.
 */
import { describe, expect, test } from '@jest/globals';
import { ResetConfigMapError, ResetConfigMapWriter, encodeResetJson } from '../../src/reset/reset-configmap.js';
import { CODE, Rig, T0, triple } from './online-fakes.js';

const triples = (rig: Rig): string[] => rig.cms.resetDocs().map(triple);
const at = (rig: Rig, i: number): number => (rig.cms.writes[i]!.at - T0) / 1000;

async function fault(rig: Rig, chip: number, level: 'RestartRequest' | 'RestartBusiness', code: number): Promise<void> {
  rig.world.set(chip, level, [code]);
  rig.cycle();
  await rig.advance(0);
}

describe('online L2 (§3.5)', () => {
  test('HR-12 L2 heals: unrecovered/restart_request then recovered/restart_request, no process wait, no reset', async () => {
    const rig = new Rig();
    await fault(rig, 5, 'RestartRequest', CODE.restartRequest);
    rig.clock.setTimeout(() => rig.world.clear(5), 10_000);
    expect(await rig.until(() => rig.state() === 'recovered', 120)).toBe(true);
    expect(triples(rig)).toEqual([
      'unrecovered/restart_request/restart_request',
      'recovered/restart_request/restart_request',
    ]);
    const docs = rig.cms.resetDocs();
    expect(docs[0]!.RetryTime).toBe(1);
    expect(docs[0]!.RankList.map((r) => r.RankId)).toEqual([8, 9, 10, 11, 12, 13, 14, 15]);
    expect(docs[1]!.RankList[5]!.ErrorCodeHex).toBe('80C98009'); // the episode-start snapshot
    expect(at(rig, 1)).toBeGreaterThanOrEqual(10);
    expect(at(rig, 1)).toBeLessThanOrEqual(15);
    expect(rig.dcmi.count('getProcessCount')).toBe(0);
    expect(rig.dcmi.count('setDeviceReset')).toBe(0);
    expect(rig.hooks.resyncs).toContainEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  test('HR-12 the L2 task is free WaitProcessReadCMTime after the recovered write (no WaitNpuReadyTime)', async () => {
    const rig = new Rig();
    await fault(rig, 5, 'RestartRequest', CODE.restartRequest);
    rig.clock.setTimeout(() => rig.world.clear(5), 10_000);
    await rig.until(() => rig.cms.writes.length === 2, 60);
    const written = rig.t;
    await rig.until(() => rig.coordinator.resetting().size === 0, 60);
    expect(rig.t - written).toBeGreaterThanOrEqual(29);
    expect(rig.t - written).toBeLessThanOrEqual(31);
  });

  test('HR-13 L2 upgraded at t≈30: unrecovered/reset/restart_request (RetryTime unchanged), reset, recovered/reset/restart_request', async () => {
    const rig = new Rig();
    await fault(rig, 5, 'RestartRequest', CODE.restartRequest);
    expect(await rig.until(() => rig.state() === 'recovered', 300)).toBe(true);
    expect(triples(rig)).toEqual([
      'unrecovered/restart_request/restart_request',
      'unrecovered/reset/restart_request',
      'recovered/reset/restart_request',
    ]);
    expect(at(rig, 1)).toBeGreaterThanOrEqual(30);
    expect(at(rig, 1)).toBeLessThanOrEqual(32);
    expect(rig.cms.resetDocs()[1]!.RetryTime).toBe(1);
    expect(rig.dcmi.callsOf('setDeviceReset').map((c) => c.logicId)).toEqual([5]);
    expect(rig.dcmi.count('getProcessCount')).toBeGreaterThan(0);
    expect(at(rig, 2) - at(rig, 1)).toBeGreaterThanOrEqual(90); // boot 60 s + 30 s WaitNpuReadyTime
  });

  test('HR-13 L2 upgraded, code survives the reset: failed/isolate/restart_request', async () => {
    const rig = new Rig();
    rig.world.afterReset.set(5, { level: 'RestartRequest', codes: [CODE.restartRequest] });
    await fault(rig, 5, 'RestartRequest', CODE.restartRequest);
    expect(await rig.until(() => rig.state() === 'failed', 300)).toBe(true);
    expect(triples(rig)).toEqual([
      'unrecovered/restart_request/restart_request',
      'unrecovered/reset/restart_request',
      'failed/isolate/restart_request',
    ]);
  });
});

describe('online L3 (§3.6)', () => {
  test('HR-14 L3 heals: unrecovered/restart, processes stop, 15 s sleep, recovered/restart/restart at t≈18–23, no reset', async () => {
    const rig = new Rig();
    await fault(rig, 2, 'RestartBusiness', CODE.restartBusiness);
    rig.clock.setTimeout(() => rig.world.clear(2), 10_000);
    expect(await rig.until(() => rig.state() === 'recovered', 120)).toBe(true);
    expect(triples(rig)).toEqual(['unrecovered/restart/restart', 'recovered/restart/restart']);
    expect(at(rig, 1)).toBeGreaterThanOrEqual(18);
    expect(at(rig, 1)).toBeLessThanOrEqual(23);
    expect(rig.dcmi.count('setDeviceReset')).toBe(0);
  });

  test('HR-15 L3 upgraded: unrecovered/reset/restart, reset at once (no second process wait), recovered/reset/restart', async () => {
    const rig = new Rig();
    await fault(rig, 2, 'RestartBusiness', CODE.restartBusiness);
    await rig.until(() => rig.cms.writes.length === 2, 60);
    expect(triple(rig.cms.resetDocs()[1]!)).toBe('unrecovered/reset/restart');
    const polls = rig.dcmi.count('getProcessCount');
    await rig.until(() => rig.dcmi.count('setDeviceReset') === 1, 10);
    expect(rig.dcmi.count('getProcessCount')).toBe(polls);
    expect(rig.dcmi.callsOf('setDeviceReset')[0]!.at).toBe(rig.cms.writes[1]!.at);
    expect(rig.dcmi.callsOf('setDeviceReset')[0]!.logicId).toBe(2);
    expect(await rig.until(() => rig.state() === 'recovered', 200)).toBe(true);
    expect(triples(rig)).toEqual([
      'unrecovered/restart/restart',
      'unrecovered/reset/restart',
      'recovered/reset/restart',
    ]);
  });

  test('HR-15 L3 upgraded, code survives the reset: failed/isolate/restart', async () => {
    const rig = new Rig();
    rig.world.afterReset.set(2, { level: 'RestartBusiness', codes: [CODE.restartBusiness] });
    await fault(rig, 2, 'RestartBusiness', CODE.restartBusiness);
    expect(await rig.until(() => rig.state() === 'failed', 300)).toBe(true);
    expect(triples(rig).at(-1)).toBe('failed/isolate/restart');
  });

  test('HR-29 WaitFaultSelfHealingTime 1 s and WaitProcessReadCMTime 5 s: HR-14 sleeps 1 s and frees the task 5 s after the write', async () => {
    const rig = new Rig({ timings: { waitFaultSelfHealing: 1_000, waitProcessReadCm: 5_000 } });
    await fault(rig, 2, 'RestartBusiness', CODE.restartBusiness);
    rig.clock.setTimeout(() => rig.world.clear(2), 3_500);
    await rig.until(() => rig.cms.writes.length === 2, 60);
    expect(triple(rig.cms.resetDocs()[1]!)).toBe('recovered/restart/restart');
    expect(at(rig, 1)).toBeGreaterThanOrEqual(4);
    expect(at(rig, 1)).toBeLessThanOrEqual(6);
    const written = rig.t;
    await rig.until(() => rig.coordinator.resetting().size === 0, 30);
    expect(rig.t - written).toBe(5);
  });

  test('D2 an L3 task left with a RestartRequest chip after the sleep is upgraded, not reported healed', async () => {
    const rig = new Rig();
    await fault(rig, 2, 'RestartBusiness', CODE.restartBusiness);
    rig.clock.setTimeout(() => rig.world.set(2, 'RestartRequest', [CODE.restartRequest]), 10_000);
    await rig.until(() => rig.cms.writes.length === 2, 60);
    expect(triple(rig.cms.resetDocs()[1]!)).toBe('unrecovered/reset/restart');
  });
});

describe('online task selection (§3.2) and cross-node (§3.8)', () => {
  test('HR-17 isolation-level task skipped: SeparateNPU on chip 4 and RestartNPU on chip 3 → no write, no reset, no filter', async () => {
    const rig = new Rig();
    rig.world.set(4, 'SeparateNPU', [CODE.separate]);
    rig.world.set(3, 'RestartNPU', [CODE.restartNpu]);
    await rig.advance(20);
    expect(rig.cms.writes).toHaveLength(0);
    expect(rig.dcmi.calls).toHaveLength(0);
    expect(rig.engine.healthOverrides().healthy.size).toBe(0);
    expect(rig.coordinator.resetting().size).toBe(0);
  });

  test('HR-18 task policy is the maximum: chip 0 reset and chip 1 restart_request → an L5 episode', async () => {
    const rig = new Rig();
    rig.world.set(0, 'RestartNPU', [CODE.restartNpu]);
    rig.world.set(1, 'RestartRequest', [CODE.restartRequest]);
    rig.cycle();
    await rig.advance(0);
    expect(triple(rig.cms.resetDocs()[0]!)).toBe('unrecovered/reset/reset');
  });

  test('HR-18 a chip whose level is outside the table counts as isolate: the task is skipped', async () => {
    const rig = new Rig();
    rig.world.set(0, 'RestartNPU', [CODE.restartNpu]);
    rig.world.set(1, 'Bogus' as 'NormalNPU', [1]);
    await rig.advance(5);
    expect(rig.cms.writes).toHaveLength(0);
  });

  test('HR-16 a FreeRestartNPU chip in use starts no online episode', async () => {
    const rig = new Rig();
    rig.world.set(1, 'FreeRestartNPU', [0x8c084e00]);
    await rig.advance(5);
    expect(rig.cms.writes).toHaveLength(0);
  });

  test('HR-19 another node is resetting: this node writes its ranks failed/isolate/reset once, no episode, no reset', async () => {
    const rig = new Rig({
      resetJson: encodeResetJson({
        RankList: [0, 1, 2, 3, 4, 5, 6, 7].map((i) => ({
          RankId: i,
          LogicId: i,
          Status: 'unrecovered',
          Policy: 'reset',
          InitialPolicy: 'reset',
          ErrorCode: [],
          ErrorCodeHex: i === 1 ? '8C03A000' : '',
        })),
        UpdateTime: 1748399990,
        RetryTime: 1,
        FaultFlushing: false,
        GracefulExit: 0,
        RestartFaultProcess: false,
      }),
    });
    rig.world.set(2, 'RestartNPU', [CODE.restartNpu]);
    rig.cycle();
    await rig.advance(0);
    expect(rig.cms.writes).toHaveLength(1);
    const doc = rig.cms.resetDocs()[0]!;
    expect(triple(doc)).toBe('failed/isolate/reset');
    expect(doc.RankList.map((r) => r.RankId)).toEqual([8, 9, 10, 11, 12, 13, 14, 15]);
    expect(doc.RetryTime).toBe(1);
    expect(rig.engine.status().tasks[0]).toMatchObject({ task: 'job1', crossNodeIsolation: true });
    await rig.advance(120);
    expect(rig.cms.writes).toHaveLength(1);
    expect(rig.dcmi.count('setDeviceReset')).toBe(0);
    expect(rig.coordinator.resetting().size).toBe(0);
    expect(rig.state()).toBe('failed');
    // node A's later recovered write is refused by the isolate guard (D8)
    const nodeA = new ResetConfigMapWriter({ api: rig.cms, now: () => rig.clock.now() });
    await expect(nodeA.write('job1', 'default', doc.RankList, false)).rejects.toBeInstanceOf(ResetConfigMapError);
  });

  test('HR-21 a ConfigMap cleared after rescheduling (§2.6) lets the failed task start a new episode (D5)', async () => {
    const rig = new Rig({ ignoresConfigMap: true });
    rig.world.set(3, 'RestartNPU', [CODE.restartNpu]);
    rig.cycle();
    await rig.until(() => rig.state() === 'failed', 200);
    await rig.advance(30);
    expect(rig.cms.writes).toHaveLength(2);
    const writer = new ResetConfigMapWriter({ api: rig.cms, now: () => rig.clock.now() });
    await writer.clearAfterReschedule('job1', 'default');
    await rig.advance(2);
    expect(rig.cms.resetDocs().map(triple)).toEqual([
      'unrecovered/reset/reset',
      'failed/isolate/reset',
      '',
      'unrecovered/reset/reset',
    ]);
    expect(rig.cms.resetDocs()[3]!.RetryTime).toBe(2);
  });
});
