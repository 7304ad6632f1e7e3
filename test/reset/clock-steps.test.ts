/**
 * Issue [T] item 1 for the online engine (hot-reset.md §3.4, §3.5, §5): the L2 window, the process wait and the boot
 * wait are timed on the monotonic clock, so a wall clock stepped back (NTP, a resumed VM) does not stretch them by
 * the size of the step, and one stepped forward does not cut them short. Fixture F1 with the fake DCMI; times are
 * measured in monotonic seconds since the fault.
 */
import { describe, expect, test } from '@jest/globals';
import { CODE, Rig, triple } from './online-fakes.js';

const H = 3_600_000;

/** Monotonic seconds of every reset ConfigMap write, recorded when it happens (the write log keeps wall times). */
function recordWrites(rig: Rig): number[] {
  const at: number[] = [];
  rig.cms.onWrite(() => at.push(rig.clock.monotonic() / 1000));
  return at;
}

async function fault(rig: Rig, chip: number, level: 'RestartRequest' | 'RestartNPU', code: number): Promise<number> {
  rig.world.set(chip, level, [code]);
  const t0 = rig.clock.monotonic() / 1000;
  rig.cycle();
  await rig.advance(0);
  return t0;
}

describe('online engine intervals on the monotonic clock (issue [T] item 1)', () => {
  test('HR-13 §3.5 the 30 s L2 window ends after 30 s although the wall clock went back one hour at t=10', async () => {
    const rig = new Rig();
    const writes = recordWrites(rig);
    const t0 = await fault(rig, 5, 'RestartRequest', CODE.restartRequest);
    await rig.advance(10);
    rig.clock.stepWall(-H);
    await rig.until(() => rig.cms.writes.length >= 2, 60);
    expect(triple(rig.cms.resetDocs()[1]!)).toBe('unrecovered/reset/restart_request');
    expect(writes[1]! - t0).toBeGreaterThanOrEqual(30);
    expect(writes[1]! - t0).toBeLessThanOrEqual(32);
  });

  test('HR-13 §3.5 the L2 window is not cut short by the wall clock stepped forward one hour at t=5', async () => {
    const rig = new Rig();
    const writes = recordWrites(rig);
    const t0 = await fault(rig, 5, 'RestartRequest', CODE.restartRequest);
    await rig.advance(5);
    rig.clock.stepWall(H);
    await rig.until(() => rig.cms.writes.length >= 2, 60);
    expect(writes[1]! - t0).toBeGreaterThanOrEqual(30);
  });

  test('HR-07 §3.4.2 the 60 s process wait ends after 60 s although the wall clock went back one hour', async () => {
    const rig = new Rig({ ignoresConfigMap: true });
    const writes = recordWrites(rig);
    const t0 = await fault(rig, 3, 'RestartNPU', CODE.restartNpu);
    await rig.advance(20);
    rig.clock.stepWall(-H);
    expect(await rig.until(() => rig.cms.writes.length >= 2, 120)).toBe(true);
    expect(triple(rig.cms.resetDocs()[1]!)).toBe('failed/isolate/reset');
    expect(writes[1]! - t0).toBeGreaterThanOrEqual(60);
    expect(writes[1]! - t0).toBeLessThanOrEqual(62);
  });

  test('HR-05 §3.4.5 a 60 s boot is waited for although the wall clock jumped forward one hour after the reset', async () => {
    const rig = new Rig();
    await fault(rig, 3, 'RestartNPU', CODE.restartNpu);
    await rig.until(() => rig.dcmi.count('setDeviceReset') === 1, 30);
    rig.clock.stepWall(H);
    expect(await rig.until(() => rig.state() === 'recovered', 300)).toBe(true);
    expect(rig.cms.resetDocs().map(triple)).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
  });

  test('HR-05 the whole L5 episode runs with the wall clock frozen', async () => {
    const rig = new Rig();
    rig.clock.freezeWall();
    await fault(rig, 3, 'RestartNPU', CODE.restartNpu);
    expect(await rig.until(() => rig.state() === 'recovered', 300)).toBe(true);
    expect(rig.cms.resetDocs().map(triple)).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
    expect(rig.dcmi.callsOf('setDeviceReset').map((c) => c.logicId)).toEqual([3]);
  });
});
