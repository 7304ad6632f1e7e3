/**
 * Online engine, L5 flow (hot-reset.md §3.7) on fixture F1 (§6.2): HR-02, HR-05 – HR-08, HR-10, HR-11, HR-20 and
 * the hang / boot-failure scenarios of issue [F].
 */
import { describe, expect, test } from '@jest/globals';
import { CODE, Rig, T0, f1Task, sha, triple } from './online-fakes.js';

const EXAMPLE_B =
  '{"RankList":[{"RankId":8,"LogicId":0,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""},{"RankId":9,"LogicId":1,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""},{"RankId":10,"LogicId":2,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""},{"RankId":11,"LogicId":3,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":"8C03A000"},{"RankId":12,"LogicId":4,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""},{"RankId":13,"LogicId":5,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""},{"RankId":14,"LogicId":6,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""},{"RankId":15,"LogicId":7,"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset","ErrorCode":[],"ErrorCodeHex":""}],"UpdateTime":1748400000,"RetryTime":1,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":false}';

/** Example (b) turned into (c) / (d): other statuses and UpdateTime, same ranks and codes. */
function variant(status: string, policy: string, initial: string, updateTime: number): string {
  return EXAMPLE_B.replaceAll(
    '"Status":"unrecovered","Policy":"reset","InitialPolicy":"reset"',
    `"Status":"${status}","Policy":"${policy}","InitialPolicy":"${initial}"`,
  ).replace('"UpdateTime":1748400000', `"UpdateTime":${updateTime}`);
}

/** F1 with chip 3 at RestartNPU (0x8C03A000) seen by the cycle at t = 0. */
async function l5(rig: Rig): Promise<void> {
  rig.world.set(3, 'RestartNPU', [CODE.restartNpu]);
  rig.cycle();
  await rig.advance(0);
}

const resetCalls = (rig: Rig): { id: number; t: number; ch: unknown }[] =>
  rig.dcmi.callsOf('setDeviceReset').map((c) => ({ id: c.logicId, t: (c.at - T0) / 1000, ch: c.arg }));

describe('online L5 (§3.7)', () => {
  test('HR-02 first write of an episode equals §2.9 example (b) byte for byte', async () => {
    const rig = new Rig();
    await l5(rig);
    expect(rig.cms.writes).toHaveLength(1);
    const data = rig.cms.writes[0]!.data;
    expect(data['reset.json']).toBe(EXAMPLE_B);
    expect(data.checkCode).toBe('6ebd4cb4c39472e67b0c6b8bcc4c7b751d6df6a7f463f1657f2814eabb331952');
    expect(data.restartType).toBe('hotReset');
    expect(rig.state()).toBe('waitingProcesses');
  });

  test('HR-02 the episode holds the ring in the coordinator with owner task:<name> (D4)', async () => {
    const rig = new Rig();
    await l5(rig);
    expect([...rig.coordinator.resetting()]).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((id) => [id, 'task:job1']));
  });

  test('HR-05 L5 success: one in-band reset of the faulty chip (D1) once processes stop, then (c) and release', async () => {
    const rig = new Rig();
    await l5(rig);
    expect(await rig.until(() => rig.state() === 'recovered', 300)).toBe(true);
    expect(resetCalls(rig)).toEqual([{ id: 3, t: 3, ch: 'inband' }]);
    expect(rig.dcmi.count('getNetworkHealth')).toBe(0);
    const docs = rig.cms.resetDocs();
    expect(docs.map(triple)).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
    const final = rig.cms.writes[1]!;
    // boot 3 → 63, handshake, 30 s WaitNpuReadyTime
    expect(final.at - T0).toBeGreaterThanOrEqual(93_000);
    expect(final.at - T0).toBeLessThanOrEqual(95_000);
    const ut = Math.floor(final.at / 1000);
    expect(final.data['reset.json']).toBe(variant('recovered', 'reset', 'reset', ut));
    expect(final.data.restartType).toBe('hotReset');
    expect(rig.coordinator.resetting().size).toBe(0);
    expect(rig.engine.healthOverrides().healthy.size).toBe(0);
  });

  test('HR-05 the recovered text is §2.9 example (c) (check code vector at UpdateTime 1748400152)', () => {
    expect(sha(variant('recovered', 'reset', 'reset', 1748400152))).toBe(
      'ab97557ed1cc113f5d53e1655da1030524ce7ed01f6479e52c1091097adafc4e',
    );
    expect(sha(variant('failed', 'isolate', 'reset', 1748400151))).toBe(
      '2187525dab2dd3bc096b4daee9dd35605ff84dab513b74562d8ec960a0e1baea',
    );
  });

  test('HR-05 the task leaves the reset state WaitProcessReadCMTime (30 s) after the recovered write', async () => {
    const rig = new Rig();
    await l5(rig);
    await rig.until(() => rig.cms.writes.length === 2, 300);
    const written = rig.t;
    await rig.until(() => rig.coordinator.resetting().size === 0, 60);
    expect(rig.t - written).toBeGreaterThanOrEqual(29);
    expect(rig.t - written).toBeLessThanOrEqual(31);
    expect(rig.state()).toBe('recovered');
  });

  test('HR-05 the task state machine runs waitingProcesses → resetting → waitingBoot → refreshing → readyWait → writingResult → recovered', async () => {
    const rig = new Rig();
    const seen: string[] = [];
    rig.engine.onChange(() => {
      const s = rig.state();
      if (s !== undefined && seen.at(-1) !== s) seen.push(s);
    });
    await l5(rig);
    await rig.until(() => rig.state() === 'recovered', 300);
    expect(seen).toEqual([
      'starting',
      'waitingProcesses',
      'resetting',
      'waitingBoot',
      'refreshing',
      'readyWait',
      'writingResult',
      'recovered',
    ]);
  });

  test('HR-05 chips of the ring are inReset, the target resetting and the ring booting in status()', async () => {
    const rig = new Rig();
    await l5(rig);
    await rig.advance(2);
    expect(rig.engine.status().chips.map((c) => c.state)).toEqual(Array(8).fill('inReset'));
    await rig.advance(10);
    const chips = rig.engine.status().chips;
    expect(chips.map((c) => c.state)).toEqual(Array(8).fill('booting'));
    expect(chips[3]).toMatchObject({ task: 'job1', resetCount: 1 });
    expect(JSON.parse(JSON.stringify(rig.engine.status()))).toEqual(rig.engine.status());
  });

  test('HR-20 health filter: Unhealthy until the informer holds write (b), then Healthy with the ring NetworkHealthy', async () => {
    const rig = new Rig();
    rig.cms.lag = true;
    await l5(rig);
    expect(rig.engine.healthOverrides().healthy.size).toBe(0); // cache still (a): empty ranks count as isolate
    rig.cms.deliver();
    await rig.advance(1);
    const o = rig.engine.healthOverrides();
    expect([...o.healthy]).toEqual([3]);
    expect([...o.networkHealthy].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  test('HR-20 onChange fires when the informer delivery changes the overrides', async () => {
    const rig = new Rig();
    rig.cms.lag = true;
    await l5(rig);
    let calls = 0;
    rig.engine.onChange(() => void (calls += 1));
    rig.cms.deliver();
    rig.cycle();
    expect(calls).toBeGreaterThanOrEqual(1);
  });

  test('HR-20 after a failed/isolate write the chip is reported with its real health again', async () => {
    const rig = new Rig({ ignoresConfigMap: true });
    await l5(rig);
    expect([...rig.engine.healthOverrides().healthy]).toEqual([3]);
    await rig.until(() => rig.cms.writes.length === 2, 120);
    expect(rig.engine.healthOverrides().healthy.size).toBe(0);
  });

  test('HR-06 distributed job waits for network health 0/6 after boot (20 s later than HR-05)', async () => {
    const rig = new Rig({ distributed: true });
    await l5(rig);
    await rig.until(() => rig.dcmi.count('setDeviceReset') === 1, 20);
    rig.dcmi.setAll([0, 1, 2, 3, 4, 5, 6, 7], { networkHealth: 5 });
    rig.clock.setTimeout(() => rig.dcmi.setAll([0, 1, 2, 3, 4, 5, 6, 7], { networkHealth: 0 }), 80_000);
    await rig.until(() => rig.cms.writes.length === 2, 300);
    const at = rig.cms.writes[1]!.at - T0;
    expect(at).toBeGreaterThanOrEqual(113_000);
    expect(at).toBeLessThanOrEqual(115_000);
    expect(triple(rig.cms.resetDocs()[1]!)).toBe('recovered/reset/reset');
    expect(rig.dcmi.count('getNetworkHealth')).toBeGreaterThan(0);
  });

  test('HR-06 network never ready: the 150-poll ring budget expires → failed/isolate/reset', async () => {
    const rig = new Rig({ distributed: true });
    await l5(rig);
    await rig.until(() => rig.dcmi.count('setDeviceReset') === 1, 20);
    rig.dcmi.setAll([0, 1, 2, 3, 4, 5, 6, 7], { networkHealth: 5 });
    expect(await rig.until(() => rig.state() === 'failed', 400)).toBe(true);
    expect(rig.dcmi.count('getBootStatus')).toBe(150);
    expect(rig.cms.resetDocs().map(triple)).toEqual(['unrecovered/reset/reset', 'failed/isolate/reset']);
  });

  test('HR-07 processes never stop: one failed/isolate/reset write at t≈60 (D6), no reset, then real health', async () => {
    const rig = new Rig({ ignoresConfigMap: true });
    await l5(rig);
    await rig.until(() => rig.cms.writes.length === 2, 120);
    expect(rig.t).toBeGreaterThanOrEqual(60);
    expect(rig.t).toBeLessThanOrEqual(62);
    const doc = rig.cms.resetDocs()[1]!;
    expect(triple(doc)).toBe('failed/isolate/reset');
    expect(doc.RankList.map((r) => r.ErrorCodeHex)).toEqual(['', '', '', '8C03A000', '', '', '', '']);
    expect(doc.RetryTime).toBe(1);
    await rig.advance(200);
    expect(rig.cms.writes).toHaveLength(2);
    expect(rig.dcmi.count('setDeviceReset')).toBe(0);
    expect(rig.state()).toBe('failed');
    expect(rig.coordinator.resetting().size).toBe(0);
    expect(rig.engine.status().chips[3]).toMatchObject({ state: 'isolated', task: 'job1' });
  });

  test('HR-07 the failed task holds the ring until WaitProcessReadCMTime after the isolate write', async () => {
    const rig = new Rig({ ignoresConfigMap: true });
    await l5(rig);
    await rig.until(() => rig.cms.writes.length === 2, 120);
    const written = rig.t;
    await rig.until(() => rig.coordinator.resetting().size === 0, 60);
    expect(rig.t - written).toBeGreaterThanOrEqual(29);
    expect(rig.t - written).toBeLessThanOrEqual(31);
  });

  test('HR-08 in-band reset fails: 4 attempts on the faulty chip (D1) at t≈3, 8, 18, 33, then example (d)', async () => {
    const rig = new Rig();
    rig.dcmi.set(3, { reset: { inband: 'fail', outband: 'ok' } });
    await l5(rig);
    await rig.until(() => rig.cms.writes.length === 2, 120);
    expect(resetCalls(rig)).toEqual([
      { id: 3, t: 3, ch: 'inband' },
      { id: 3, t: 8, ch: 'inband' },
      { id: 3, t: 18, ch: 'inband' },
      { id: 3, t: 33, ch: 'inband' },
    ]);
    const w = rig.cms.writes[1]!;
    expect(w.data['reset.json']).toBe(variant('failed', 'isolate', 'reset', Math.floor(w.at / 1000)));
    expect(rig.events.find((e) => e.reason === 'ResetChipFailed')?.message).toMatch(
      /chip 3: in-band reset of chip 3 failed 4 times/,
    );
    expect(rig.events.some((e) => e.reason === 'ResetFailed' && e.type === 'Warning')).toBe(true);
  });

  test('HR-08 the reset counter stays on the faulty chip (D1): a fifth sequence is not attempted', async () => {
    const rig = new Rig();
    rig.dcmi.set(3, { reset: { inband: 'fail', outband: 'ok' } });
    rig.world.set(3, 'RestartNPU', [CODE.restartNpu]);
    for (let episode = 0; episode < 5; episode++) {
      rig.cms.put({
        namespace: 'default',
        name: 'reset-config-job1',
        labels: { reset: 'true' },
        data: { 'reset.json': '{"RankList":[],"UpdateTime":1,"RetryTime":0}' },
      });
      rig.tasks = new Map();
      rig.cycle();
      rig.tasks.set('job1', f1Task());
      rig.cycle();
      await rig.until(() => rig.state() === 'failed', 300);
    }
    expect(rig.dcmi.count('setDeviceReset', 3)).toBe(16);
    expect(rig.dcmi.count('setDeviceReset', 0)).toBe(0);
    expect(rig.cms.resetDocs().filter((d) => triple(d) === 'failed/isolate/reset')).toHaveLength(5);
  });

  test('HR-10 fault survives the reset: failed/isolate/reset with the refreshed code, no recovered write', async () => {
    const rig = new Rig();
    rig.world.afterReset.set(3, { level: 'RestartNPU', codes: [CODE.restartNpu] });
    await l5(rig);
    expect(await rig.until(() => rig.state() === 'failed', 300)).toBe(true);
    const docs = rig.cms.resetDocs();
    expect(docs.map(triple)).toEqual(['unrecovered/reset/reset', 'failed/isolate/reset']);
    expect(docs[1]!.RankList[3]!.ErrorCodeHex).toBe('8C03A000');
    expect(rig.hooks.resyncs).toContainEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  test('HR-11 reset leaves a SeparateNPU code: failed/isolate/reset, not recovered (D2)', async () => {
    const rig = new Rig();
    rig.world.afterReset.set(3, { level: 'SeparateNPU', codes: [CODE.separate] });
    await l5(rig);
    expect(await rig.until(() => rig.state() === 'failed', 300)).toBe(true);
    const docs = rig.cms.resetDocs();
    expect(docs.map(triple)).toEqual(['unrecovered/reset/reset', 'failed/isolate/reset']);
    expect(docs[1]!.RankList[3]!.ErrorCodeHex).toBe('80E18402');
  });

  test('[F] a reset that hangs (boot never 16): failed/isolate, coordinator released, chips real health', async () => {
    const rig = new Rig();
    rig.dcmi.set(3, { reset: { inband: 'hang', outband: 'ok' } });
    await l5(rig);
    expect(await rig.until(() => rig.state() === 'failed', 400)).toBe(true);
    expect(triple(rig.cms.resetDocs()[1]!)).toBe('failed/isolate/reset');
    expect(rig.coordinator.resetting().size).toBe(0);
    expect(rig.engine.healthOverrides().healthy.size).toBe(0);
    expect(rig.engine.status().chips.every((c) => c.state !== 'booting')).toBe(true);
  });

  test('[F] a ring where one chip fails boot (chip 6 never finishes): failed/isolate after the ring budget', async () => {
    const rig = new Rig();
    rig.dcmi.set(6, { bootSeconds: 100_000 });
    await l5(rig);
    expect(await rig.until(() => rig.state() === 'failed', 400)).toBe(true);
    expect(rig.dcmi.callsOf('getBootStatus').at(-1)?.logicId).toBe(6);
    expect(rig.events.find((e) => e.reason === 'ResetChipFailed')?.message).toMatch(/chip 6 not ready/);
    expect(rig.coordinator.resetting().size).toBe(0);
  });

  test('[F] a DCMI boot-status error fails the ring check (§3.4.5) and the episode', async () => {
    const rig = new Rig();
    rig.dcmi.set(5, { errors: { getBootStatus: -8005 } });
    await l5(rig);
    expect(await rig.until(() => rig.state() === 'failed', 200)).toBe(true);
    expect(rig.events.find((e) => e.reason === 'ResetChipFailed')?.message).toMatch(/boot status of chip 5 failed/);
  });
});
