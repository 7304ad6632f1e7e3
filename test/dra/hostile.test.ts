/**
 * Hostile input and time for the API side (house rules: every bad input named, nothing crashes, time is hostile too):
 * what the stand-in refuses as the real server would (src/sim/kube-api-dra.ts), claims that are not what they should
 * be, a wall clock stepped back under the slice writer.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { DRA_DRIVER } from '../../src/core/dra-devices.js';
import { applyDeviceFields, desiredDeviceFields, ourDevices, reservedFor } from '../../src/dra/claim-devices.js';
import { waitsForUs } from '../../src/dra/claim-binding.js';
import { ClaimStatusWriter } from '../../src/dra/claim-status.js';
import { draApiOf } from '../../src/dra/dra-api.js';
import type { ResourceClaim, ResourceSlice } from '../../src/dra/dra-types.js';
import { poolOf, slicesOf } from '../../src/dra/resource-slices.js';
import { ResourceSliceWriter } from '../../src/dra/slice-writer.js';
import { KubeClient } from '../../src/kube/kube-client.js';
import { validateDra } from '../../src/sim/kube-api-dra.js';
import { DRA_RESOURCES, KubeApiStandIn, RESOURCE_CLAIMS, RESOURCE_SLICES } from '../../src/sim/kube-api.js';
import { FakeClock } from '../health/fake-clock.js';
import { testStore } from '../state/helpers.js';

const slice = (spec: Record<string, unknown>) => ({
  metadata: { name: 's' },
  spec: { driver: DRA_DRIVER, nodeName: 'n', pool: { name: 'n', generation: 1, resourceSliceCount: 1 }, ...spec },
});
const claimWith = (status: Record<string, unknown>) => ({ metadata: { name: 'c' }, spec: {}, status });

describe('the stand-in refuses what the real server refuses (k8s.io/kubernetes v1.37.2 validation)', () => {
  const refused: [string, unknown, RegExp][] = [
    [
      'devices and sharedCounters in one slice',
      slice({ devices: [], sharedCounters: [] }),
      /only one of `sharedCounters` or `devices`/,
    ],
    [
      '9 counter sets',
      slice({
        sharedCounters: Array.from({ length: 9 }, (_, i) => ({ name: `c${i}`, counters: { a: { value: '1' } } })),
      }),
      /sharedCounters: Too many: 9/,
    ],
    [
      '33 counters in a set',
      slice({
        sharedCounters: [
          { name: 'c', counters: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, { value: '1' }])) },
        ],
      }),
      /Too many: 33/,
    ],
    [
      '3 counter consumptions',
      slice({
        devices: [
          {
            name: 'd',
            consumesCounters: ['a', 'b', 'c'].map((c) => ({ counterSet: c, counters: { x: { value: '1' } } })),
          },
        ],
      }),
      /consumesCounters: Too many: 3/,
    ],
    [
      '33 attributes',
      slice({
        devices: [
          { name: 'd', attributes: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`a${i}`, { int: i }])) },
        ],
      }),
      /must not exceed 32/,
    ],
    [
      'an attribute with two values',
      slice({ devices: [{ name: 'd', attributes: { a: { int: 1, bool: true } } }] }),
      /exactly one value/,
    ],
    [
      'a 65-character string attribute',
      slice({ devices: [{ name: 'd', attributes: { a: { string: 'x'.repeat(65) } } }] }),
      /Too long/,
    ],
    ['an upper-case device name', slice({ devices: [{ name: 'Ascend910-3' }] }), /lowercase RFC 1123 label/],
    ['a device name twice', slice({ devices: [{ name: 'd' }, { name: 'd' }] }), /Duplicate value/],
    [
      '17 taints',
      slice({
        devices: [{ name: 'd', taints: Array.from({ length: 17 }, (_, i) => ({ key: `k${i}`, effect: 'None' })) }],
      }),
      /taints: Too many: 17/,
    ],
    [
      'the effect PreferNoSchedule',
      slice({ devices: [{ name: 'd', taints: [{ key: 'k', effect: 'PreferNoSchedule' }] }] }),
      /Unsupported value/,
    ],
    [
      'a taint value of 64 characters',
      slice({ devices: [{ name: 'd', taints: [{ key: 'k', value: 'v'.repeat(64), effect: 'None' }] }] }),
      /must be a label value/,
    ],
    [
      'binding conditions without failure conditions',
      slice({ devices: [{ name: 'd', bindingConditions: ['a'] }] }),
      /bindingFailureConditions are required/,
    ],
    [
      'overlapping binding conditions',
      slice({ devices: [{ name: 'd', bindingConditions: ['a'], bindingFailureConditions: ['a'] }] }),
      /must not overlap/,
    ],
    [
      'no node selection',
      {
        metadata: { name: 's' },
        spec: { driver: DRA_DRIVER, pool: { name: 'n', generation: 1, resourceSliceCount: 1 } },
      },
      /exactly one of `nodeName`/,
    ],
    [
      'resourceSliceCount 0',
      slice({ pool: { name: 'n', generation: 1, resourceSliceCount: 0 } }),
      /must be greater than zero/,
    ],
  ];
  test.each(refused)('%s', (_what, obj, message) => {
    expect(() => validateDra(RESOURCE_SLICES, obj as never)).toThrow(message);
  });

  test('a claim status entry for a device not allocated; IPs not in CIDR form', () => {
    const allocation = { devices: { results: [{ request: 'r', driver: DRA_DRIVER, pool: 'n', device: 'd' }] } };
    expect(() =>
      validateDra(
        RESOURCE_CLAIMS,
        claimWith({ allocation, devices: [{ driver: DRA_DRIVER, pool: 'n', device: 'e' }] }) as never,
      ),
    ).toThrow(/must be an allocated device/);
    expect(() =>
      validateDra(
        RESOURCE_CLAIMS,
        claimWith({
          allocation,
          devices: [{ driver: DRA_DRIVER, pool: 'n', device: 'd', networkData: { ips: ['10.0.0.1'] } }],
        }) as never,
      ),
    ).toThrow(/CIDR/);
    expect(() =>
      validateDra(
        RESOURCE_CLAIMS,
        claimWith({
          allocation,
          devices: [{ driver: DRA_DRIVER, pool: 'n', device: 'd', networkData: { ips: ['10.0.0.1/32'] } }],
        }) as never,
      ),
    ).not.toThrow();
  });
});

describe('claims that are not what they should be', () => {
  const garbage: ResourceClaim[] = [
    { metadata: {} },
    { metadata: {}, status: { allocation: { devices: { results: 'nope' as never } } } },
    {
      metadata: {},
      status: { allocation: { devices: { results: [null as never, 7 as never, { device: 3 } as never] } } },
    },
    { metadata: {}, status: { devices: {} as never, reservedFor: 'x' as never } },
  ];
  test.each(garbage.map((g, i): [number, ResourceClaim] => [i, g]))(
    'garbage claim %i: no devices, not reserved, nothing to wait for, no throw',
    (_i, g) => {
      expect(ourDevices(g, 'n', 'Ascend910B')).toEqual([]);
      expect(reservedFor(g, 'uid')).toBe(false);
      expect(waitsForUs(g, 'n', 'Ascend910B')).toBe(false);
      expect(desiredDeviceFields(g, 'n', 'Ascend910B', () => ({}), '2026-01-01T00:00:00Z')).toEqual([]);
      expect(applyDeviceFields([], [], 'n')).toEqual([]);
    },
  );

  test('a device of our driver and pool whose name is not ours (another kind, garbage) is ignored', () => {
    const c: ResourceClaim = {
      metadata: {},
      status: {
        allocation: {
          devices: {
            results: [
              { request: 'r', driver: DRA_DRIVER, pool: 'n', device: 'npu-1' },
              { request: 'r', driver: DRA_DRIVER, pool: 'n', device: 'ascend910-999' },
              { request: 'r', driver: DRA_DRIVER, pool: 'n', device: 'ascend910-2' },
            ],
          },
        },
      },
    };
    expect(ourDevices(c, 'n', 'Ascend910B').map((d) => d.phyId)).toEqual([2]);
  });
});

describe('the API server answers garbage or refuses', () => {
  let api: KubeApiStandIn;
  let client: KubeClient;
  beforeEach(async () => {
    api = await KubeApiStandIn.start({ extraResources: DRA_RESOURCES });
    client = new KubeClient({ server: api.url, token: 't' });
  });
  afterEach(async () => {
    client.close();
    await api.stop();
  });

  test('a claim gone between two passes: the status writer says so and does not retry', async () => {
    const w = new ClaimStatusWriter({ api: draApiOf(client), nodeName: 'n', kind: 'Ascend910B', facts: () => ({}) });
    expect(await w.sync('default', 'missing')).toBe('gone');
    expect(w.stats.failures).toBe(0);
    w.stop();
  });

  test('API server down for the claim status: failed, counted, retried with backoff until it is back', async () => {
    const clock = new FakeClock();
    api.store.create(RESOURCE_CLAIMS, 'default', {
      metadata: { name: 'c' },
      spec: {},
      status: {
        allocation: { devices: { results: [{ request: 'r', driver: DRA_DRIVER, pool: 'n', device: 'ascend910-1' }] } },
      },
    });
    const w = new ClaimStatusWriter({
      api: draApiOf(client),
      nodeName: 'n',
      kind: 'Ascend910B',
      facts: () => ({ ip: '10.0.0.1' }),
      clock,
      backoff: { initialMs: 1000, jitter: 0 },
    });
    api.setAvailable(false);
    expect(await w.sync('default', 'c')).toBe('failed');
    api.setAvailable(true);
    await clock.advance(1000);
    await new Promise((r) => setTimeout(r, 200));
    const c = api.store.get(RESOURCE_CLAIMS, 'default', 'c') as unknown as ResourceClaim;
    expect(c.status!.devices).toEqual([
      { driver: DRA_DRIVER, pool: 'n', device: 'ascend910-1', networkData: { ips: ['10.0.0.1/32'] } },
    ]);
    w.stop();
  });
});

describe('time is hostile: the wall clock stepped back under the slice writer', () => {
  test('writes go on (spacing on the monotonic clock), taint times are kept', async () => {
    const api = await KubeApiStandIn.start({ extraResources: DRA_RESOURCES });
    const client = new KubeClient({ server: api.url, token: 't' });
    const { store } = testStore({ chips: 2 });
    const clock = new FakeClock();
    store.start();
    const inv = { kind: 'Ascend910B' as const, node: { chipKind: 'Ascend910B' as const, boardId: 0x24 } };
    const w = new ResourceSliceWriter({
      api: draApiOf(client),
      nodeName: 'n',
      build: (times) => slicesOf(poolOf(store.snapshot(), inv, times), 'n'),
      clock,
      minIntervalMs: 200,
    });
    store.onChange(() => w.changed());
    try {
      await w.start();
      await w.whenIdle();
      clock.stepWall(-3_600_000);
      store.applyEvents([{ logicId: 0, code: 0x80e18402, assertion: 'occur', severity: 2 }]);
      await clock.advance(250);
      await w.whenIdle();
      const devices = (api.store.list(RESOURCE_SLICES, undefined, [], [])[0] as unknown as ResourceSlice).spec.devices!;
      expect(devices[0]!.taints).toHaveLength(1);
      expect(w.stats.poolWrites).toBe(2);
    } finally {
      w.stop();
      client.close();
      await api.stop();
    }
  });
});
