/**
 * Allocate over gRPC (spec C.3, C.4): both mounting modes, virtual devices, input limits, our health refusal,
 * and the server staying up after every refused request.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { status, type ServiceError } from '@grpc/grpc-js';
import { InMemoryDeviceNodeProbe } from '../../src/kubelet/device-nodes.js';
import { simSnapshot } from '../../src/sim/kubelet-devices.js';
import { startHarness, type Harness } from './harness.js';

const R = 'huawei.com/Ascend910';
let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function refused(p: Promise<unknown>): Promise<ServiceError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e as ServiceError,
  );
  if (!err) throw new Error('expected the call to be refused');
  return err;
}

async function native(extra: string[] = []): Promise<Harness> {
  const names = ['davinci_manager', 'hisi_hdc', 'devmm_svm', ...extra];
  for (let i = 0; i < 8; i++) names.push(`davinci${i}`);
  h = await startHarness({ manager: { probe: new InMemoryDeviceNodeProbe(names, '/host/dev') } });
  await h.sim.waitForRegistration(R);
  return h;
}

describe('C.4 native mode', () => {
  test('C.4 default nodes then /dev/davinci<phy> per chip, all rw, no environment', async () => {
    const { sim } = await native();
    const res = await sim.allocate(R, [['Ascend910-0', 'Ascend910-3']]);
    expect(res.containerResponses).toHaveLength(1);
    const c = res.containerResponses[0]!;
    expect(c.devices).toEqual([
      { containerPath: '/dev/davinci_manager', hostPath: '/host/dev/davinci_manager', permissions: 'rw' },
      { containerPath: '/dev/hisi_hdc', hostPath: '/host/dev/hisi_hdc', permissions: 'rw' },
      { containerPath: '/dev/devmm_svm', hostPath: '/host/dev/devmm_svm', permissions: 'rw' },
      { containerPath: '/dev/davinci0', hostPath: '/host/dev/davinci0', permissions: 'rw' },
      { containerPath: '/dev/davinci3', hostPath: '/host/dev/davinci3', permissions: 'rw' },
    ]);
    expect(c.envs).toEqual({});
  });

  test('C.4 entries of /dev/uburma and /dev/ummu are added when a chip is mounted', async () => {
    const { sim } = await native(['uburma/uburma0', 'ummu/ummu0']);
    const c = (await sim.allocate(R, [['Ascend910-1']])).containerResponses[0]!;
    expect(c.devices.slice(-2).map((d) => d.containerPath)).toEqual(['/dev/uburma/uburma0', '/dev/ummu/ummu0']);
  });

  test('C.4 one response per container request', async () => {
    const { sim } = await native();
    const res = await sim.allocate(R, [['Ascend910-0'], ['Ascend910-1', 'Ascend910-2']]);
    expect(
      res.containerResponses.map((c) => c.devices.filter((d) => /davinci\d/.test(d.containerPath)).length),
    ).toEqual([1, 2]);
  });
});

describe('C.4 ascend-docker mode', () => {
  test('C.4 only ASCEND_VISIBLE_DEVICES and ASCEND_RUNTIME_OPTIONS, no device specs', async () => {
    h = await startHarness({ manager: { useAscendDocker: true } });
    await h.sim.waitForRegistration(R);
    const c = (await h.sim.allocate(R, [['Ascend910-2', 'Ascend910-6']])).containerResponses[0]!;
    expect(c.envs).toEqual({ ASCEND_VISIBLE_DEVICES: '2,6', ASCEND_RUNTIME_OPTIONS: '' });
    expect(c.devices).toEqual([]);
    expect(c.mounts).toEqual([]);
  });

  test('C.3 a virtual device sets ASCEND_RUNTIME_OPTIONS=VIRTUAL and exposes its vNPU id', async () => {
    const base = simSnapshot({ kind: 'Ascend910B', chips: 2 });
    const vnpu = base.deviceTypes.Ascend910!.map((d) => ({
      ...d,
      id: `Ascend910-4c-${100 + d.phyId}-${d.phyId}`,
      vdevId: 100 + d.phyId,
    }));
    h = await startHarness({
      snapshot: { node: base.node, deviceTypes: { 'Ascend910-4c': vnpu } },
      manager: { useAscendDocker: true },
    });
    const RV = 'huawei.com/Ascend910-4c';
    await h.sim.waitForRegistration(RV);
    const c = (await h.sim.allocate(RV, [['Ascend910-4c-101-1']])).containerResponses[0]!;
    expect(c.envs).toEqual({ ASCEND_VISIBLE_DEVICES: '101', ASCEND_RUNTIME_OPTIONS: 'VIRTUAL' });
    const err = await refused(h.sim.allocate(RV, [['Ascend910-4c-100-0', 'Ascend910-4c-101-1']]));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toContain('virtual device may name only one device');
  });
});

describe('C.3 bad input is refused and the server keeps serving', () => {
  test.each<[string, () => string[][], number, string]>([
    ['an unknown ID', () => [['Ascend910-99']], status.INVALID_ARGUMENT, 'unknown device ID "Ascend910-99"'],
    [
      'a duplicate ID',
      () => [['Ascend910-1', 'Ascend910-1']],
      status.INVALID_ARGUMENT,
      'duplicate device ID Ascend910-1',
    ],
    [
      'the same ID in two containers',
      () => [['Ascend910-1'], ['Ascend910-1']],
      status.INVALID_ARGUMENT,
      'duplicate device ID Ascend910-1',
    ],
    [
      'more chips than exist',
      () => [[...Array(9).keys()].map((i) => `Ascend910-${i}`)],
      status.INVALID_ARGUMENT,
      'asks for 9 devices, Ascend910 has 8',
    ],
    [
      'more than 800 IDs',
      () => [[...Array(801).keys()].map((i) => `Ascend910-${i}`)],
      status.INVALID_ARGUMENT,
      'has 801 device IDs, the limit is 800',
    ],
    ['an ID longer than 50 characters', () => [['A'.repeat(51)]], status.INVALID_ARGUMENT, 'longer than 50'],
    ['an empty container request', () => [[]], status.INVALID_ARGUMENT, 'container request 0 has no device IDs'],
    ['no container requests', () => [], status.INVALID_ARGUMENT, 'no container requests'],
  ])('C.3 %s', async (_what, request, code, message) => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    const err = await refused(h.sim.allocate(R, request()));
    expect(err.code).toBe(code);
    expect(err.details).toContain(message);
    expect((await h.sim.allocate(R, [['Ascend910-0']])).containerResponses).toHaveLength(1);
  });

  test('C.3 (ours) an Unhealthy chip is refused with FAILED_PRECONDITION naming the chip and its level', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    h.source.updateDevice('Ascend910-3', { health: 'Unhealthy', level: 'SeparateNPU' });
    const err = await refused(h.sim.allocate(R, [['Ascend910-2', 'Ascend910-3']]));
    expect(err.code).toBe(status.FAILED_PRECONDITION);
    expect(err.details).toContain('Ascend910-3 is Unhealthy (level SeparateNPU)');
    expect((await h.sim.allocate(R, [['Ascend910-2']])).containerResponses).toHaveLength(1);
  });

  test('C.3 (ours) a manually separated chip is refused with FAILED_PRECONDITION', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    h.source.updateDevice('Ascend910-4', {
      health: 'Unhealthy',
      level: 'ManuallySeparateNPU',
      manuallySeparated: true,
    });
    const err = await refused(h.sim.allocate(R, [['Ascend910-4']]));
    expect(err.code).toBe(status.FAILED_PRECONDITION);
    expect(err.details).toContain('Ascend910-4 is manually separated (level ManuallySeparateNPU)');
  });
});

describe('C.6 other RPCs', () => {
  test('C.6 PreStartContainer answers an empty response', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    expect(await h.sim.preStartContainer(R, ['Ascend910-0'])).toEqual({});
  });
});
