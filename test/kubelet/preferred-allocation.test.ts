/**
 * GetPreferredAllocation (docs/allocation.md): inside one topology group when it fits, best fit, must-include
 * honoured, healthy chips only — per chip kind; plus bad input and the gRPC path.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { status, type ServiceError } from '@grpc/grpc-js';
import type { DeviceSnapshot, KubeletDevice } from '../../src/kubelet/device-source.js';
import { KubeletRequestError } from '../../src/kubelet/errors.js';
import { preferredAllocation } from '../../src/kubelet/preferred-allocation.js';
import { simSnapshot, type SimNodeSpec } from '../../src/sim/kubelet-devices.js';
import { startHarness, type Harness } from './harness.js';

function node(spec: SimNodeSpec, unhealthy: number[] = []) {
  const s: DeviceSnapshot = simSnapshot(spec);
  const [type] = Object.keys(s.deviceTypes);
  const devices: KubeletDevice[] = s.deviceTypes[type!]!.map((d) =>
    unhealthy.includes(d.logicId) ? { ...d, health: 'Unhealthy', level: 'SeparateNPU' } : d,
  );
  const name = (i: number) => `${type}-${i}`;
  const prefer = (available: number[], size: number, mustInclude: number[] = []) =>
    preferredAllocation(
      { available: available.map(name), mustInclude: mustInclude.map(name), size },
      devices,
      s.node,
    ).map((id) => Number(id.split('-').pop()));
  return { prefer, all: devices.map((d) => d.logicId) };
}

const without = (all: number[], ...drop: number[]) => all.filter((i) => !drop.includes(i));

describe('910A (rings of 4)', () => {
  const { prefer, all } = node({ kind: 'Ascend910', chips: 8 });
  test('910A one chip from a fully free node comes from the first ring', () => {
    expect(prefer(all, 1)).toEqual([0]);
  });
  test('910A best fit: the ring with the fewest free chips that still fits', () => {
    expect(prefer(without(all, 3), 2)).toEqual([0, 1]);
    expect(prefer(without(all, 1, 2, 3), 2)).toEqual([4, 5]);
  });
  test('910A a request of 4 takes a whole free ring', () => {
    expect(prefer(without(all, 0), 4)).toEqual([4, 5, 6, 7]);
  });
  test('910A a request larger than a ring fills a whole ring, then best-fits the rest', () => {
    expect(prefer(without(all, 0), 5)).toEqual([1, 4, 5, 6, 7]);
  });
  test('910A must-include keeps the request in that chip’s ring', () => {
    expect(prefer(all, 2, [6])).toEqual([4, 6]);
  });
});

describe('910A unhealthy chips', () => {
  const { prefer, all } = node({ kind: 'Ascend910', chips: 8 }, [1]);
  test('910A an Unhealthy chip is never chosen and its ring counts one chip fewer', () => {
    expect(prefer(all, 3)).toEqual([0, 2, 3]);
    expect(prefer(all, 4)).toEqual([4, 5, 6, 7]);
  });
  test('910A fewer healthy chips than asked: only the healthy ones are returned', () => {
    expect(prefer([0, 1], 2)).toEqual([0]);
  });
});

describe('910B (groups of 8)', () => {
  test('910B 16-chip node: two groups of 8, best fit', () => {
    const { prefer, all } = node({ kind: 'Ascend910B', chips: 16 });
    expect(prefer(all, 8)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(prefer(without(all, 0, 1, 2), 4)).toEqual([3, 4, 5, 6]);
    expect(prefer(without(all, 0, 1, 2), 6)).toEqual([8, 9, 10, 11, 12, 13]);
  });
  test('910B standalone PCIe boards (0x33) have no groups: lowest chips first', () => {
    const { prefer, all } = node({ kind: 'Ascend910B', chips: 8, boardId: 0x33 });
    expect(prefer(without(all, 0), 2)).toEqual([1, 2]);
  });
});

describe('910A3 (two dies of a card, then its brother card)', () => {
  const { prefer, all } = node({ kind: 'Ascend910A3', chips: 16 });
  test('910A3 two chips are the two dies of one card', () => {
    expect(prefer(all, 2)).toEqual([0, 1]);
  });
  test('910A3 one chip goes to a card that is already half used', () => {
    expect(prefer(without(all, 0), 1)).toEqual([1]);
  });
  test('910A3 two chips skip the half-used card but stay with its brother', () => {
    expect(prefer(without(all, 0), 2)).toEqual([2, 3]);
  });
  test('910A3 four chips are a card and its brother card', () => {
    expect(prefer(without(all, 0), 4)).toEqual([4, 5, 6, 7]);
  });
  test('910A3 must-include pulls the request to that chip’s card', () => {
    expect(prefer(all, 2, [9])).toEqual([8, 9]);
  });
});

describe('310P (per card)', () => {
  test('310P Atlas 300I Duo: two chips come from one card', () => {
    const { prefer, all } = node({ kind: 'Ascend310P', chips: 8, chipsPerCard: 2 });
    expect(prefer(without(all, 0), 2)).toEqual([2, 3]);
    expect(prefer(without(all, 0), 1)).toEqual([1]);
  });
});

describe('bad input', () => {
  const { prefer, all } = node({ kind: 'Ascend910B', chips: 8 });
  test.each<[string, () => unknown, string]>([
    ['an unknown ID', () => prefer([...all, 42], 1), 'unknown device ID "Ascend910-42"'],
    ['a duplicate ID', () => prefer([0, 0], 1), 'duplicate device ID Ascend910-0'],
    ['a must-include ID that is not available', () => prefer([0, 1], 1, [2]), 'is not available'],
    ['a size larger than the available list', () => prefer([0, 1], 3), 'allocation_size 3 is outside [1, 2]'],
    ['a size of zero', () => prefer([0, 1], 0), 'allocation_size 0'],
    ['a size below the must-include count', () => prefer([0, 1, 2], 1, [0, 1]), 'allocation_size 1 is outside [2, 3]'],
  ])('%s is INVALID_ARGUMENT', (_what, call, message) => {
    let err: unknown;
    try {
      call();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(KubeletRequestError);
    expect((err as KubeletRequestError).code).toBe(status.INVALID_ARGUMENT);
    expect((err as Error).message).toContain(message);
  });
});

describe('GetPreferredAllocation over gRPC', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });
  const R = 'huawei.com/Ascend910';

  test('C.6 (ours) answers each container request; a bad one is INVALID_ARGUMENT and the server keeps serving', async () => {
    h = await startHarness({ snapshot: simSnapshot({ kind: 'Ascend910', chips: 8 }) });
    await h.sim.waitForRegistration(R);
    const ids = [1, 2, 3, 4, 5, 6, 7].map((i) => `Ascend910-${i}`);
    const res = await h.sim.getPreferredAllocation(R, [
      { available: ids, size: 3 },
      { available: ids, size: 4 },
    ]);
    expect(res.containerResponses.map((c) => c.deviceIDs)).toEqual([
      ['Ascend910-1', 'Ascend910-2', 'Ascend910-3'],
      ['Ascend910-4', 'Ascend910-5', 'Ascend910-6', 'Ascend910-7'],
    ]);
    const err = (await h.sim
      .getPreferredAllocation(R, [{ available: ['nope'], size: 1 }])
      .catch((e: unknown) => e)) as ServiceError;
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect((await h.sim.getPreferredAllocation(R, [{ available: ids, size: 1 }])).containerResponses).toHaveLength(1);
  });
});
