/**
 * `-volcanoType` (spec C.1 ID mapping, C.3 pickFromPodAnnotation, I.4 annotations): the pod Volcano placed is
 * found through the pod cache, its devices are used, it is marked consumed, and ListAndWatch advertises the
 * kubelet IDs with the health of the devices the pod actually got.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { status, type ServiceError } from '@grpc/grpc-js';
import { InMemoryPodCache, volcanoPod } from '../../src/kubelet/pod-cache.js';
import { PREDICATE_TIME_USED, type PodView } from '../../src/core/pods.js';
import { chooseCandidate, isCandidate, pickFromPodAnnotation } from '../../src/kubelet/volcano-pick.js';
import { startHarness, type Harness } from './harness.js';

const R = 'huawei.com/Ascend910';
let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function volcano(pods: PodView[]): Promise<{ h: Harness; cache: InMemoryPodCache }> {
  const cache = new InMemoryPodCache(pods);
  h = await startHarness({
    manager: { volcanoType: true, useAscendDocker: true, podCache: cache, pick: { retryDelayMs: 1 } },
  });
  await h.sim.waitForRegistration(R);
  return { h, cache };
}

describe('C.3 volcano pick', () => {
  test('C.3 the devices of the pod with the smallest predicate-time are used and the pod is marked', async () => {
    const { h, cache } = await volcano([
      volcanoPod({ uid: 'late', resource: R, devices: ['Ascend910-6', 'Ascend910-7'], predicateTime: '200' }),
      volcanoPod({ uid: 'early', resource: R, devices: ['Ascend910-4', 'Ascend910-5'], predicateTime: '100' }),
    ]);
    const c = (await h.sim.allocate(R, [['Ascend910-0', 'Ascend910-1']])).containerResponses[0]!;
    expect(c.envs.ASCEND_VISIBLE_DEVICES).toBe('4,5');
    expect(cache.get('early')!.annotations['predicate-time']).toBe(PREDICATE_TIME_USED);
    const next = (await h.sim.allocate(R, [['Ascend910-2', 'Ascend910-3']])).containerResponses[0]!;
    expect(next.envs.ASCEND_VISIBLE_DEVICES).toBe('6,7');
  });

  test('C.1 after a pick the kubelet ID carries the health of the real device', async () => {
    const { h } = await volcano([volcanoPod({ uid: 'p', resource: R, devices: ['Ascend910-4'], predicateTime: '1' })]);
    await h.sim.allocate(R, [['Ascend910-0']]);
    h.source.updateDevice('Ascend910-4', { health: 'Unhealthy', level: 'SeparateNPU' });
    const list = await h.sim.waitForDevices(R, (d) => d.some((x) => x.health === 'Unhealthy'), 'one Unhealthy');
    expect(list.filter((d) => d.health === 'Unhealthy').map((d) => d.ID)).toEqual(['Ascend910-0']);
    expect(list.map((d) => d.ID).sort()).toEqual([...Array(8).keys()].map((i) => `Ascend910-${i}`));
  });

  test('C.3 a request for every chip of the node uses the kubelet IDs without a pick', async () => {
    const { h } = await volcano([]);
    const all = [...Array(8).keys()].map((i) => `Ascend910-${i}`);
    const c = (await h.sim.allocate(R, [all])).containerResponses[0]!;
    expect(c.envs.ASCEND_VISIBLE_DEVICES).toBe('0,1,2,3,4,5,6,7');
  });

  test('C.3 no matching pod: FAILED_PRECONDITION after the attempts, server keeps serving', async () => {
    const { h } = await volcano([volcanoPod({ uid: 'p', resource: R, devices: ['Ascend910-4'], predicateTime: '1' })]);
    const err = (await h.sim.allocate(R, [['Ascend910-0', 'Ascend910-1']]).catch((e: unknown) => e)) as ServiceError;
    expect(err.code).toBe(status.FAILED_PRECONDITION);
    expect(err.details).toContain('no pending pod');
    expect((await h.sim.allocate(R, [['Ascend910-0']])).containerResponses[0]!.envs.ASCEND_VISIBLE_DEVICES).toBe('4');
  });

  test('C.3 a pod whose annotation names an unknown device is refused', async () => {
    const { h } = await volcano([volcanoPod({ uid: 'p', resource: R, devices: ['Ascend910-42'], predicateTime: '1' })]);
    const err = (await h.sim.allocate(R, [['Ascend910-0']]).catch((e: unknown) => e)) as ServiceError;
    expect(err.code).toBe(status.FAILED_PRECONDITION);
    expect(err.details).toContain('names unknown device Ascend910-42');
  });

  test('C.3 (ours) a picked chip that is Unhealthy is refused', async () => {
    const { h } = await volcano([volcanoPod({ uid: 'p', resource: R, devices: ['Ascend910-4'], predicateTime: '1' })]);
    h.source.updateDevice('Ascend910-4', { health: 'Unhealthy', level: 'SeparateNPU' });
    const err = (await h.sim.allocate(R, [['Ascend910-0']]).catch((e: unknown) => e)) as ServiceError;
    expect(err.code).toBe(status.FAILED_PRECONDITION);
    expect(err.details).toContain('Ascend910-4 is Unhealthy (level SeparateNPU)');
  });

  test('C.3 a failed patch of predicate-time fails the Allocate', async () => {
    const { h, cache } = await volcano([
      volcanoPod({ uid: 'p', resource: R, devices: ['Ascend910-4'], predicateTime: '1' }),
    ]);
    cache.failMarkWith = new Error('apiserver said 500');
    const err = (await h.sim.allocate(R, [['Ascend910-0']]).catch((e: unknown) => e)) as ServiceError;
    expect(err.code).toBe(status.INTERNAL);
    expect(err.details).toContain('apiserver said 500');
  });
});

describe('C.3 candidate pods', () => {
  const base = volcanoPod({ uid: 'p', resource: R, devices: ['Ascend910-1', 'Ascend910-2'], predicateTime: '5' });
  test.each<[string, PodView, boolean]>([
    ['a pending Volcano pod', base, true],
    ['a pod being deleted', { ...base, deleting: true }, false],
    [
      'a pod whose PreStartContainer check failed',
      { ...base, waitingMessages: ['PreStartContainer check failed: x'] },
      false,
    ],
    ['a pod refused at admission', { ...base, statusReason: 'UnexpectedAdmissionError' }, false],
    [
      'a pod already consumed',
      { ...base, annotations: { ...base.annotations, 'predicate-time': PREDICATE_TIME_USED } },
      false,
    ],
    ['a pod without the annotation', { ...base, annotations: {} }, false],
    ['a pod that requests no NPU', { ...base, containerLimits: [{}] }, false],
    ['a pod with a limit over 3600', { ...base, containerLimits: [{ [R]: 3601 }] }, false],
  ])('C.3 %s', (_what, pod, expected) => {
    expect(isCandidate(pod, R, 2)).toBe(expected);
  });

  test('C.3 the annotation must list as many devices as requested', () => {
    expect(isCandidate(base, R, 3)).toBe(false);
  });

  test('C.3 a missing or invalid predicate-time counts as 2^64-1', () => {
    const a = volcanoPod({ uid: 'a', resource: R, devices: ['Ascend910-1'], predicateTime: 'garbage' });
    const b = volcanoPod({ uid: 'b', resource: R, devices: ['Ascend910-2'], predicateTime: '18446744073709551614' });
    expect(chooseCandidate([a, b], R, 1)!.uid).toBe('b');
  });

  test('C.3 the last attempt lists pods live', async () => {
    const cache = new InMemoryPodCache();
    cache.livePods = [volcanoPod({ uid: 'live', resource: R, devices: ['Ascend910-7'], predicateTime: '3' })];
    const res = await pickFromPodAnnotation(cache, R, 1, { retryDelayMs: 1 });
    expect(res.devices).toEqual(['Ascend910-7']);
    expect(res.pod.uid).toBe('live');
  });
});
