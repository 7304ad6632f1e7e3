/**
 * Online engine under bad input and interruptions (issue [F] "Bad input", deliver 6): agent restart mid-reset, a
 * task whose pod disappears, a reset ConfigMap edited into nonsense or missing (HR-04), a main cycle that stops
 * answering and a final write that fails (D5), and the 910A3 out-of-band fallback (HR-09).
 */
import { describe, expect, test } from '@jest/globals';
import { ResetCoordinator } from '../../src/reset/coordinator.js';
import { OnlineResetEngine, defaultOnlineTimings } from '../../src/reset/online-engine.js';
import { ResetConfigMapWriter } from '../../src/reset/reset-configmap.js';
import type { ResetTask } from '../../src/reset/tasks.js';
import type { RingFacts } from '../../src/reset/types.js';
import { FakeClock } from '../health/fake-clock.js';
import { FakeResetDcmi } from './fake-dcmi.js';
import { CODE, FakeHooks, FaultWorld, MemoryConfigMaps, MemoryStore, Rig, T0, triple } from './online-fakes.js';

const triples = (rig: Rig): string[] => rig.cms.resetDocs().map(triple);

async function l5(rig: Rig): Promise<void> {
  rig.world.set(3, 'RestartNPU', [CODE.restartNpu]);
  rig.cycle();
  await rig.advance(0);
}

/** Stops `old` (the agent dies) and starts a new agent on the same node, store and API. */
function restart(old: Rig, store: MemoryStore): Rig {
  old.engine.stop();
  old.stop();
  return new Rig({ shared: old, store });
}

describe('agent restart in the middle of a reset (deliver 6)', () => {
  test('[F] each state change persists the episode: task, namespace, policies, state, snapshot ranks, ring chips', async () => {
    const store = new MemoryStore();
    const rig = new Rig({ store });
    await l5(rig);
    await rig.advance(10);
    expect(store.records).toHaveLength(1);
    expect(store.records![0]).toMatchObject({
      task: 'job1',
      namespace: 'default',
      initialPolicy: 'reset',
      policy: 'reset',
      state: 'waitingBoot',
      rankChips: [0, 1, 2, 3, 4, 5, 6, 7],
      ringChips: [0, 1, 2, 3, 4, 5, 6, 7],
    });
    expect(store.records![0]!.snapshot[3]).toEqual({
      logicId: 3,
      rankId: 11,
      policy: 'reset',
      codes: [CODE.restartNpu],
    });
    await rig.until(() => rig.state() === 'recovered', 300);
    expect(store.records).toEqual([]);
  });

  test('issue [T] item 4 §3.10 until its first cycle the restarted engine trusts a resumed episode: its faulty chip is reported Healthy', async () => {
    const store = new MemoryStore();
    const first = new Rig({ store, stopSeconds: 30 });
    first.cms.lag = true; // the new agent's ConfigMap cache has not listed our write yet
    await l5(first);
    await first.until(() => first.state() === 'waitingProcesses', 10);
    const rig = restart(first, store);
    // before any cycle: no chip view of its own, no usable ConfigMap in the cache, yet the task is in reset
    expect([...rig.engine.healthOverrides().healthy]).toEqual([3]);
    expect([...rig.engine.healthOverrides().networkHealthy].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    rig.cycle();
    // from the first cycle on the cache decides (HR-20), as without a restart
    expect([...rig.engine.healthOverrides().healthy]).toEqual([]);
    rig.cms.deliver();
    expect([...rig.engine.healthOverrides().healthy]).toEqual([3]);
  });

  test('issue [T] item 4 §2.4 saved as starting but its first write reached the API: not written again (RetryTime stays 1)', async () => {
    const store = new MemoryStore();
    const first = new Rig({ store, stopSeconds: 30 });
    await l5(first);
    await first.until(() => first.cms.writes.length === 1, 5);
    // the agent died after the API applied the write and before it learned so
    store.records = store.records!.map((r) => ({ ...r, state: 'starting' }));
    const rig = restart(first, store);
    rig.dcmi.setAll([0, 1, 2, 3, 4, 5, 6, 7], { processes: 0 });
    expect(await rig.until(() => rig.state() === 'recovered', 300)).toBe(true);
    expect(triples(rig)).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
    expect(rig.cms.resetDocs().map((d) => d.RetryTime)).toEqual([1, 1]);
    expect(rig.dcmi.callsOf('setDeviceReset').map((c) => c.logicId)).toEqual([3]);
  });

  test('issue [T] item 4 saved as starting and the ConfigMap does not show the write: the first write is made (once)', async () => {
    const store = new MemoryStore();
    const first = new Rig({ store, stopSeconds: 30 });
    first.cms.failReplaces = 1; // the first write is lost with the agent
    first.world.set(3, 'RestartNPU', [CODE.restartNpu]);
    first.cycle();
    const saved = structuredClone(store.records!); // as saved when the episode was created
    expect(saved.map((r) => r.state)).toEqual(['starting']);
    await first.advance(0);
    expect(first.cms.writes).toHaveLength(0);
    store.records = saved;
    const rig = restart(first, store);
    expect(await rig.until(() => rig.state() === 'recovered', 300)).toBe(true);
    expect(triples(rig)).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
    expect(rig.cms.resetDocs()[0]!.RetryTime).toBe(1);
  });

  test('[F] restart while the ring boots with the fault gone: the ring is held at once, boot is awaited, recovered', async () => {
    const store = new MemoryStore();
    const first = new Rig({ store });
    await l5(first);
    await first.advance(10);
    const rig = restart(first, store);
    expect(rig.coordinator.resetting().size).toBe(8);
    expect(await rig.until(() => rig.state() === 'recovered', 300)).toBe(true);
    expect(rig.dcmi.callsOf('setDeviceReset').map((c) => c.logicId)).toEqual([3]); // fault gone: boot waited for
    expect(triples(rig)).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
    expect(rig.cms.writes[1]!.at - T0).toBeGreaterThanOrEqual(93_000); // boot ends at 63 s, then WaitNpuReadyTime
    expect(rig.coordinator.resetting().size).toBe(0);
    expect(store.records).toEqual([]);
  });

  test('[F] restart after the chips booted fault-free: recovered is written without another reset', async () => {
    const store = new MemoryStore();
    const first = new Rig({ store });
    await l5(first);
    await first.until(() => first.state() === 'readyWait', 200);
    const rig = restart(first, store);
    expect(await rig.until(() => rig.state() === 'recovered', 200)).toBe(true);
    expect(rig.dcmi.count('setDeviceReset')).toBe(1);
    expect(triples(rig)).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
  });

  test('[F] restart while the chip is still faulty: the reset stage runs again (process wait, reset, verify) and recovers', async () => {
    const store = new MemoryStore();
    const first = new Rig({ store });
    first.dcmi.set(3, { reset: { inband: 'fail', outband: 'ok' } });
    await l5(first);
    await first.advance(6); // inside the in-band back-off
    first.dcmi.set(3, { reset: { inband: 'ok', outband: 'ok' } });
    const rig = restart(first, store);
    expect(await rig.until(() => rig.state() === 'recovered', 300)).toBe(true);
    expect(rig.dcmi.callsOf('setDeviceReset').map((c) => c.at - T0)).toEqual([3_000, 7_000]); // the new agent's first cycle (t = 7)
    expect(triples(rig)).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
    expect(rig.coordinator.resetting().size).toBe(0);
  });

  test('[F] restart while the fault persists: the reset stage fails → failed/isolate, ring released', async () => {
    const store = new MemoryStore();
    const first = new Rig({ store });
    first.world.afterReset.set(3, { level: 'RestartNPU', codes: [CODE.restartNpu] });
    await l5(first);
    await first.advance(10);
    const rig = restart(first, store);
    expect(await rig.until(() => rig.state() === 'failed', 300)).toBe(true);
    expect(triples(rig)).toEqual(['unrecovered/reset/reset', 'failed/isolate/reset']);
    expect(rig.coordinator.resetting().size).toBe(0);
    expect(rig.engine.healthOverrides().healthy.size).toBe(0);
  });

  test('[F] restart after the pod left: the episode gives up (failed write attempted), nothing stays held', async () => {
    const store = new MemoryStore();
    const first = new Rig({ store });
    await l5(first);
    await first.advance(10);
    const rig = restart(first, store);
    rig.tasks = new Map();
    await rig.advance(3);
    expect(triples(rig)).toEqual(['unrecovered/reset/reset', 'failed/isolate/reset']);
    expect(rig.coordinator.resetting().size).toBe(0);
    expect(store.records).toEqual([]);
    expect(rig.engine.status().tasks).toEqual([]);
  });

  test('[F] restart of an L2 episode still self-healing whose fault cleared: recovered/restart_request, no reset', async () => {
    const store = new MemoryStore();
    const first = new Rig({ store });
    first.world.set(5, 'RestartRequest', [CODE.restartRequest]);
    first.cycle();
    await first.advance(5);
    first.world.clear(5);
    const rig = restart(first, store);
    expect(await rig.until(() => rig.state() === 'recovered', 60)).toBe(true);
    expect(triples(rig)).toEqual([
      'unrecovered/restart_request/restart_request',
      'recovered/restart_request/restart_request',
    ]);
    expect(rig.dcmi.count('setDeviceReset')).toBe(0);
  });

  test('[F] a corrupt persisted record is reported and ignored; the engine works on', async () => {
    const store = new MemoryStore();
    store.records = [{ task: 'job1', state: 'exploded' } as never];
    const rig = new Rig({ store });
    expect(rig.events[0]).toMatchObject({ type: 'Warning', reason: 'ResetTaskSkipped' });
    expect(rig.events[0]!.message).toMatch(/persisted reset episode #0: .*state "exploded"/);
    await l5(rig);
    expect(rig.state()).toBe('waitingProcesses');
  });
});

describe('pod disappears mid-reset (bad input)', () => {
  test('[F] the flow ends at its next step: failed write attempted, coordinator released, overrides dropped at once', async () => {
    const rig = new Rig();
    rig.world.afterReset.set(3, { level: 'RestartNPU', codes: [CODE.restartNpu] }); // codes stay until the re-sync
    await l5(rig);
    await rig.advance(20);
    expect(rig.engine.healthOverrides().healthy.size).toBe(1);
    rig.tasks = new Map();
    rig.cycle();
    expect(rig.engine.healthOverrides().healthy.size).toBe(0);
    expect(rig.engine.status().tasks[0]!.abandoned).toMatch(/no pod of task job1/);
    await rig.advance(2);
    expect(triples(rig)).toEqual(['unrecovered/reset/reset', 'failed/isolate/reset']);
    expect(rig.coordinator.resetting().size).toBe(0);
    const polls = rig.dcmi.count('getBootStatus');
    await rig.advance(100);
    expect(rig.dcmi.count('getBootStatus')).toBe(polls);
  });

  test('[F] a task whose chip list changed mid-reset is abandoned like a vanished one (§1.6 UpdateFreeTask)', async () => {
    const rig = new Rig();
    await l5(rig);
    await rig.advance(5);
    const t = rig.tasks.get('job1')!;
    rig.tasks.set('job1', { ...t, logicIds: [0, 1, 2, 3], ranks: t.ranks.slice(0, 4) });
    await rig.advance(3);
    expect(rig.coordinator.resetting().size).toBe(0);
    expect(triples(rig).at(-1)).toBe('failed/isolate/reset');
  });
});

describe('reset ConfigMap edited into nonsense or missing (bad input)', () => {
  test('[F] nonsense reset.json: task skipped, one Warning Event naming the ConfigMap, real health, no DCMI', async () => {
    const rig = new Rig({ resetJson: '{"RankList": oops' });
    rig.world.set(3, 'RestartNPU', [CODE.restartNpu]);
    await rig.advance(10);
    expect(rig.cms.writes).toHaveLength(0);
    const warnings = rig.events.filter((e) => e.reason === 'ResetTaskSkipped');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toMatch(/default\/reset-config-job1/);
    expect(warnings[0]!.pod).toEqual({ namespace: 'default', name: 'job1-w1' });
    expect(rig.engine.healthOverrides().healthy.size).toBe(0);
    expect(rig.dcmi.calls).toHaveLength(0);
  });

  test('[F] ConfigMap edited into nonsense mid-episode: real health at once, the flow ends failed and releases', async () => {
    const rig = new Rig();
    await l5(rig);
    await rig.advance(20);
    rig.cms.put({
      namespace: 'default',
      name: 'reset-config-job1',
      labels: { reset: 'true' },
      data: { 'reset.json': '[1,2' },
    });
    rig.cycle();
    expect(rig.engine.healthOverrides().healthy.size).toBe(0);
    expect(await rig.until(() => rig.state() === 'failed', 300)).toBe(true);
    expect(rig.coordinator.resetting().size).toBe(0);
    expect(rig.events.find((e) => e.reason === 'ResetFailed')?.message).toMatch(
      /recovered write failed.*invalid|recovered write failed/,
    );
  });

  test('HR-04 no reset ConfigMap: no write, no reset, one Warning Event, chip 3 keeps its real health', async () => {
    const rig = new Rig();
    rig.cms.put({ namespace: 'other', name: 'x', labels: {}, data: {} });
    const t = rig.tasks.get('job1')!;
    rig.tasks.set('job1', { ...t, name: 'job2' });
    rig.tasks = new Map([['job2', { ...t, name: 'job2' }]]);
    rig.world.set(3, 'RestartNPU', [CODE.restartNpu]);
    await rig.advance(10);
    expect(rig.cms.writes).toHaveLength(0);
    expect(rig.dcmi.calls).toHaveLength(0);
    expect(rig.events.filter((e) => e.reason === 'ResetTaskSkipped')).toHaveLength(1);
    expect(rig.engine.healthOverrides().healthy.size).toBe(0);
  });
});

describe('D5: no stuck episodes', () => {
  test('D5 the main cycle stops answering: 3 handshakes, then failed/isolate and release', async () => {
    const rig = new Rig();
    await rig.advance(0);
    rig.world.set(2, 'RestartBusiness', [CODE.restartBusiness]);
    rig.cycle();
    await rig.until(() => rig.state() === 'healingSleep', 30);
    rig.cyclesOn = false;
    expect(await rig.until(() => rig.state() === 'failed', 200)).toBe(true);
    expect(triples(rig)).toEqual(['unrecovered/restart/restart', 'failed/isolate/restart']);
    expect(rig.events.find((e) => e.reason === 'ResetFailed')?.message).toMatch(/did not answer 3 handshakes/);
    expect(rig.coordinator.resetting().size).toBe(0);
  });

  test('D5 the recovered write fails 3 times: the episode ends failed with an Event and one isolate write', async () => {
    const rig = new Rig();
    await l5(rig);
    await rig.until(() => rig.state() === 'readyWait', 200);
    rig.cms.failReplaces = 3;
    expect(await rig.until(() => rig.state() === 'failed', 200)).toBe(true);
    expect(triples(rig)).toEqual(['unrecovered/reset/reset', 'failed/isolate/reset']);
    expect(rig.events.find((e) => e.reason === 'ResetFailed')?.message).toMatch(/recovered write failed/);
    expect(rig.coordinator.resetting().size).toBe(0);
  });

  test('D5 a transient API failure of the recovered write is retried and the episode recovers', async () => {
    const rig = new Rig();
    await l5(rig);
    await rig.until(() => rig.state() === 'readyWait', 200);
    rig.cms.failReplaces = 1;
    expect(await rig.until(() => rig.state() === 'recovered', 200)).toBe(true);
    expect(triples(rig)).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
  });

  test('D4 a ring held by the offline engine is not started; the task starts once the ring is free', async () => {
    const rig = new Rig();
    rig.coordinator.tryAcquire([4, 5], 'offline');
    await l5(rig);
    await rig.advance(3);
    expect(rig.cms.writes).toHaveLength(0);
    rig.coordinator.release([4, 5], 'offline');
    await rig.advance(1);
    expect(rig.cms.writes).toHaveLength(1);
  });
});

describe('HR-09 910A3 out-of-band fallback (§3.4.6)', () => {
  function a3(outband: 'ok' | 'fail'): {
    clock: FakeClock;
    dcmi: FakeResetDcmi;
    cms: MemoryConfigMaps;
    engine: OnlineResetEngine;
    events: string[];
    world: FaultWorld;
    hooks: FakeHooks;
    task: ResetTask;
  } {
    const ids = Array.from({ length: 16 }, (_, i) => i);
    const facts: RingFacts = {
      kind: 'Ascend910A3',
      usage: 'train',
      boardId: 0,
      chips: ids.map((i) => ({ logicId: i, phyId: i, cardId: i >> 1, deviceId: i & 1 })),
      brotherCardOf: (card) => card ^ 1,
    };
    const clock = new FakeClock(T0);
    const dcmi = new FakeResetDcmi({ clock, chips: ids });
    dcmi.setAll(ids, { processes: 0, bootSeconds: 10 });
    dcmi.set(5, { reset: { inband: 'fail', outband } });
    const world = new FaultWorld(ids);
    const rescan = dcmi.rescanSoc.bind(dcmi);
    dcmi.rescanSoc = async (id) => {
      await rescan(id);
      world.clear(id); // the out-of-band reset cleared the fault
    };
    const cms = new MemoryConfigMaps(clock);
    cms.put({
      namespace: 'default',
      name: 'reset-config-job1',
      labels: { reset: 'true' },
      data: { 'reset.json': '{"status":"initializing"}' },
    });
    const hooks = new FakeHooks(clock, world);
    const events: string[] = [];
    const engine = new OnlineResetEngine({
      clock,
      timings: defaultOnlineTimings(),
      dcmi,
      facts,
      ringSize: 16,
      writer: new ResetConfigMapWriter({ api: cms, now: () => clock.now() }),
      configMaps: cms.cache,
      hooks,
      coordinator: new ResetCoordinator(),
      events: { record: (e) => void events.push(`${e.reason}: ${e.message}`) },
    });
    const task: ResetTask = {
      name: 'job1',
      namespace: 'default',
      pod: { uid: 'u', namespace: 'default', name: 'job1-w0', phase: 'Running', labels: {}, annotations: {} },
      logicIds: ids,
      ranks: ids.map((i) => ({ logicId: i, rankId: i })),
      distributed: false,
    };
    return { clock, dcmi, cms, engine, events, world, hooks, task };
  }

  async function run(r: ReturnType<typeof a3>, until: () => boolean): Promise<void> {
    for (let i = 0; i < 400 && !until(); i++) {
      r.engine.cycle(new Map([['job1', r.task]]), r.world.views());
      r.hooks.cycleDone();
      await r.clock.advance(1000);
    }
  }

  test('HR-09 in-band fails 4 times → channel state, pre-reset, out-of-band reset, 3 s, rescan, boot of all 16, 2 s, recovered', async () => {
    const r = a3('ok');
    r.world.set(5, 'RestartNPU', [CODE.restartNpu]);
    await run(r, () => r.cms.writes.length >= 2);
    const seq = r.dcmi.calls
      .filter((c) => c.fn !== 'getBootStatus' && c.fn !== 'getProcessCount')
      .map((c) => `${c.fn}(${c.logicId}${c.arg !== undefined ? `,${c.arg as string}` : ''})`);
    expect(seq).toEqual([
      'setDeviceReset(5,inband)',
      'setDeviceReset(5,inband)',
      'setDeviceReset(5,inband)',
      'setDeviceReset(5,inband)',
      'getOutbandChannelState(5)',
      'preResetSoc(5)',
      'setDeviceReset(5,outband)',
      'rescanSoc(5)',
    ]);
    const oob = r.dcmi.callsOf('setDeviceReset').at(-1)!.at;
    expect(r.dcmi.callsOf('rescanSoc')[0]!.at - oob).toBe(3000);
    expect(
      new Set(
        r.dcmi
          .callsOf('getBootStatus')
          .filter((c) => c.at > oob)
          .map((c) => c.logicId),
      ).size,
    ).toBe(16);
    expect(r.cms.resetDocs().map(triple)).toEqual(['unrecovered/reset/reset', 'recovered/reset/reset']);
  });

  test('HR-09 out-of-band fails too → Warning Event for the chip (reduced ThirdParty bookkeeping) and failed/isolate/reset', async () => {
    const r = a3('fail');
    r.world.set(5, 'RestartNPU', [CODE.restartNpu]);
    await run(r, () => r.cms.writes.length >= 2);
    expect(r.cms.resetDocs().map(triple)).toEqual(['unrecovered/reset/reset', 'failed/isolate/reset']);
    expect(
      r.events.some((e) => /^ResetChipFailed: chip 5: out-of-band reset of chip 5: dcmi_set_device_reset/.test(e)),
    ).toBe(true);
  });
});
