/**
 * cluster-faults §1.7 worked example, end to end through the pure core on an injected clock: device-info
 * ConfigMaps in, job detector, counter, cache, published marker and the 15 s step out.
 */
import { beforeEach, describe, expect, test } from '@jest/globals';
import { FaultCenterCore } from '../../src/cluster/processing-center.js';
import { parsePolicy } from '../../src/cluster/policy.js';
import { deviceInfoCm, faultObject, jobPod, podGroup, policyText } from './helpers.js';

const T1 = 1772359200000; // 2026-03-01 10:00:00
const T4 = 1772395200000; // 20:00:00
const T5 = 1772445599000; // 2026-03-02 09:59:59
const H = 3_600_000;

let core: FaultCenterCore;

function setFaults(t: number, devs: string[]): void {
  const objs = devs.map((d) => faultObject(d, '80E01801', 'RestartNPU', t));
  core.intake.offer({ type: 'update', old: undefined, cm: deviceInfoCm('node-1', objs) });
  core.cycle(t);
}
const tick = (t: number) => core.cycle(t);
const counter = () => core.manual.counter.times('node-1', 'Ascend910-3', '80E01801');

/** One hardware occurrence of Ascend910-3 at t, decided at t + 30 s, cleared afterwards. */
function alone(t: number): void {
  setFaults(t, ['Ascend910-3']);
  tick(t + 30_000);
  setFaults(t + 60_000, []);
}

function setup(threshold = '3'): void {
  core = new FaultCenterCore();
  core.manual.setPolicy(parsePolicy(policyText({ threshold })));
  core.jobIndex.upsertPod(jobPod('p0', 'node-1', 'uid-J', [3, 5]));
  core.jobIndex.upsertPodGroup(podGroup('pg', 'uid-J'));
  setFaults(T1 - 1000, []);
}

describe('1.7 worked example', () => {
  beforeEach(() => setup());

  test('1.7 10:00 a new fault is queued for job J', () => {
    setFaults(T1, ['Ascend910-3']);
    expect(core.manual.jobs.faultsOf('uid-J').map((f) => f.receivedTime)).toEqual([T1]);
  });

  test('1.7 10:00:30 decided as hardware: counter holds T1, no separation', () => {
    alone(T1);
    expect([counter(), core.manual.cache.isEmpty]).toEqual([[T1], true]);
  });

  test('1.7 14:00 same code on Ascend910-5 within the window is software: counter unchanged', () => {
    alone(T1);
    setFaults(1772373600000, ['Ascend910-3']);
    setFaults(1772373610000, ['Ascend910-3', 'Ascend910-5']);
    tick(1772373630000);
    expect([counter(), core.manual.jobs.faultsOf('uid-J')]).toEqual([[T1], []]);
  });

  test('1.7 third hardware occurrence within 24 h separates with LastSeparateTime = its receive time', () => {
    alone(T1);
    alone(T4);
    alone(T5);
    expect(core.manual.cache.toConfigMapData()).toEqual({
      'node-1': `{"Total":["Ascend910-3"],"Detail":{"Ascend910-3":[{"FaultCode":"80E01801","FaultLevel":"ManuallySeparateNPU","LastSeparateTime":${T5}}]}}`,
    });
  });

  test('1.7 the next cycle publishes the ManuallySeparateNPU marker and moves the NPU to -Unhealthy', () => {
    alone(T1);
    alone(T4);
    alone(T5);
    tick(T5 + 61_000);
    const list = core.processed.get('node-1')!.deviceList;
    expect([list['huawei.com/Ascend910']!.includes('Ascend910-3'), list['huawei.com/Ascend910-Unhealthy']]).toEqual([
      false,
      'Ascend910-3',
    ]);
  });

  test('1.7 variant boundary: a span of exactly 24 h does not separate', () => {
    alone(T1);
    alone(T4);
    alone(1772445600000);
    expect([core.manual.cache.isEmpty, counter()]).toEqual([true, [T1, T4, 1772445600000]]);
  });

  test('1.7 variant boundary: a fourth occurrence separates on the last three', () => {
    alone(T1);
    alone(T4);
    alone(1772445600000);
    alone(1772449200000);
    expect(core.manual.cache.snapshot().get('node-1')?.Detail.get('Ascend910-3')?.[0]?.LastSeparateTime).toBe(
      1772449200000,
    );
  });

  test('1.7 variant A: operator empties Total, the marker disappears', () => {
    alone(T1);
    alone(T4);
    alone(T5);
    const first = core.manual.releaseTick(T5 + 70_000, { kind: 'missing' });
    core.manual.written(first.action);
    const r = core.manual.releaseTick(T5 + 2 * H, { kind: 'data', data: { 'node-1': '{"Total":[],"Detail":{}}' } });
    tick(T5 + 2 * H + 1000);
    expect([r.action.kind, core.processed.get('node-1')!.deviceList['huawei.com/Ascend910-Unhealthy']]).toEqual([
      'delete',
      '',
    ]);
  });

  test('1.7 variant B: auto-release at LastSeparateTime + 48 h', () => {
    alone(T1);
    alone(T4);
    alone(T5);
    expect(core.manual.releaseTick(1772618399000, { kind: 'missing' }).action.kind).toBe('delete');
  });

  test('1.7 variant C: three more occurrences refresh LastSeparateTime', () => {
    alone(T1);
    alone(T4);
    alone(T5);
    for (const t of [T5 + H, T5 + 2 * H, T5 + 3 * H]) alone(t);
    expect(core.manual.cache.snapshot().get('node-1')?.Detail.get('Ascend910-3')?.[0]?.LastSeparateTime).toBe(
      T5 + 3 * H,
    );
  });

  test('1.7 variant threshold 1: the first hardware occurrence separates', () => {
    setup('1');
    alone(T1);
    expect(core.manual.cache.has('node-1', 'Ascend910-3')).toBe(true);
  });

  test('1.9 deviation: after a restart from persisted state a present fault is not counted again', () => {
    setFaults(T1, ['Ascend910-3']);
    tick(T1 + 30_000);
    const state = JSON.parse(JSON.stringify(core.exportState()));
    const next = new FaultCenterCore();
    next.manual.setPolicy(parsePolicy(policyText()));
    next.jobIndex.upsertPod(jobPod('p0', 'node-1', 'uid-J', [3, 5]));
    next.jobIndex.upsertPodGroup(podGroup('pg', 'uid-J'));
    next.restoreState(state);
    next.intake.offer({
      type: 'add',
      cm: deviceInfoCm('node-1', [faultObject('Ascend910-3', '80E01801', 'RestartNPU', T1)]),
    });
    next.cycle(T1 + 100_000);
    next.cycle(T1 + 200_000);
    expect(next.manual.counter.times('node-1', 'Ascend910-3', '80E01801')).toEqual([T1]);
  });
});

describe('1.3 intake', () => {
  beforeEach(() => setup());

  test('1.3 a persistently present fault is counted once per appearance', () => {
    setFaults(T1, ['Ascend910-3']);
    tick(T1 + 1000);
    tick(T1 + 2000);
    expect(core.manual.jobs.faultsOf('uid-J')).toHaveLength(1);
  });

  test('1.3 NotHandleFault and SubHealthFault are never counted', () => {
    const objs = [faultObject('Ascend910-3', 'A', 'NotHandleFault'), faultObject('Ascend910-5', 'B', 'SubHealthFault')];
    core.intake.offer({ type: 'update', old: undefined, cm: deviceInfoCm('node-1', objs) });
    tick(T1);
    expect(core.manual.jobs.jobIds).toEqual([]);
  });

  test('1.3 a level change of the same code is an increment', () => {
    setFaults(T1, ['Ascend910-3']);
    core.intake.offer({
      type: 'update',
      old: undefined,
      cm: deviceInfoCm('node-1', [faultObject('Ascend910-3', '80E01801', 'SeparateNPU')]),
    });
    tick(T1 + 1000);
    expect(core.manual.jobs.faultsOf('uid-J')).toHaveLength(2);
  });

  test('1.3 a fault on an NPU without a job is not queued', () => {
    core.intake.offer({
      type: 'update',
      old: undefined,
      cm: deviceInfoCm('node-1', [faultObject('Ascend910-0', 'A', 'RestartNPU')]),
    });
    tick(T1);
    expect(core.manual.jobs.jobIds).toEqual([]);
  });

  test('1.3 the device plugin pseudo-code ManuallySeparateNPU is skipped', () => {
    core.intake.offer({
      type: 'update',
      old: undefined,
      cm: deviceInfoCm('node-1', [faultObject('Ascend910-3', '', 'ManuallySeparateNPU')]),
    });
    tick(T1);
    expect(core.manual.jobs.jobIds).toEqual([]);
  });

  test('1.3 a real code at level ManuallySeparateNPU is counted', () => {
    core.intake.offer({
      type: 'update',
      old: undefined,
      cm: deviceInfoCm('node-1', [faultObject('Ascend910-3', 'A', 'ManuallySeparateNPU')]),
    });
    tick(T1);
    expect(core.manual.jobs.faultsOf('uid-J')).toHaveLength(1);
  });

  test('1.8 disabled: no marker is surfaced', () => {
    core.manual.cache.addSeparateDev('node-1', 'Ascend910-3', 'c', T1);
    core.manual.setPolicy(parsePolicy(policyText({ enabled: 'false' })));
    core.manual.cache.addSeparateDev('node-1', 'Ascend910-3', 'c', T1);
    tick(T1);
    expect(core.processed.get('node-1')!.deviceList['huawei.com/Ascend910-Unhealthy']).toBe('');
  });

  test('1.8 a separated device on a node without device info is not surfaced', () => {
    core.manual.cache.addSeparateDev('node-9', 'Ascend910-3', 'c', T1);
    tick(T1);
    expect(core.processed.has('node-9')).toBe(false);
  });

  test('1.10 an extra processor runs before the intake', () => {
    const order: string[] = [];
    const c = new FaultCenterCore({ extraProcessors: [{ name: 'pub', process: () => void order.push('pub') }] });
    expect(c.chain.map((p) => p.name)).toEqual(['pub', 'IncrementFaultProcessor', 'ManualFaultProcessor']);
  });
});
