/**
 * Issue [DRA] item 3: a chip under reset and the binding conditions — a claim allocated to it waits (the scheduler's
 * PreBind) until the agent writes ChipReady (reset over, chip healthy) or ChipFailed (still faulty) into the claim's
 * device status; the claims are watched only while a reset runs and for the binding timeout after.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { CHIP_FAILED_CONDITION, CHIP_READY_CONDITION, DRA_DRIVER } from '../../src/core/dra-devices.js';
import { ClaimBindingWatcher, waitsForUs } from '../../src/dra/claim-binding.js';
import { bindingVerdict } from '../../src/dra/claim-devices.js';
import { ClaimStatusWriter } from '../../src/dra/claim-status.js';
import { isResetting } from '../../src/dra/device-taints.js';
import { draApiOf } from '../../src/dra/dra-api.js';
import type { ResourceClaim } from '../../src/dra/dra-types.js';
import { KubeClient } from '../../src/kube/kube-client.js';
import { DRA_RESOURCES, KubeApiStandIn, RESOURCE_CLAIMS } from '../../src/sim/kube-api.js';
import type { NodeStateStore } from '../../src/state/store.js';
import { FakeClock } from '../health/fake-clock.js';
import { testStore } from '../state/helpers.js';

const NODE = 'node-a';
const SEP = 0x80e18402;

let api: KubeApiStandIn;
let client: KubeClient;
let store: NodeStateStore;
let clock: FakeClock;
let status: ClaimStatusWriter;
let watcher: ClaimBindingWatcher;

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

beforeEach(async () => {
  api = await KubeApiStandIn.start({ extraResources: DRA_RESOURCES });
  client = new KubeClient({ server: api.url, token: 't' });
  const dra = draApiOf(client);
  ({ store, clock } = testStore({ chips: 4 }));
  store.start();
  const chipOf = (phy: number) => store.snapshot().chips.find((c) => c.phyId === phy);
  status = new ClaimStatusWriter({
    api: dra,
    nodeName: NODE,
    kind: 'Ascend910B',
    facts: (phy) => ({ ...(chipOf(phy) ? { chip: chipOf(phy)! } : {}) }),
    clock,
  });
  watcher = new ClaimBindingWatcher({
    api: dra,
    watch: client.watch,
    nodeName: NODE,
    kind: 'Ascend910B',
    status,
    resetting: () => store.snapshot().chips.some(isResetting),
    clock,
    lingerMs: 60_000,
  });
  store.onChange(() => watcher.changed());
});

afterEach(async () => {
  watcher.stop();
  status.stop();
  client.close();
  await api.stop();
});

/** A claim the scheduler allocated to `device` with our binding conditions (as it copies them from the slice). */
function allocated(name: string, device: string, binding = true): void {
  api.store.create(RESOURCE_CLAIMS, 'default', {
    metadata: { name },
    spec: { devices: { requests: [{ name: 'npu', exactly: { deviceClassName: 'npu.huawei.com' } }] } },
    status: {
      allocation: {
        devices: {
          results: [
            {
              request: 'npu',
              driver: DRA_DRIVER,
              pool: NODE,
              device,
              ...(binding
                ? { bindingConditions: [CHIP_READY_CONDITION], bindingFailureConditions: [CHIP_FAILED_CONDITION] }
                : {}),
            },
          ],
        },
      },
    },
  });
}
const claimOf = (name: string): ResourceClaim =>
  api.store.get(RESOURCE_CLAIMS, 'default', name) as unknown as ResourceClaim;
const conditionsOf = (name: string): [string, string][] =>
  (claimOf(name).status?.devices ?? []).flatMap((d) =>
    (d.conditions ?? []).map((c): [string, string] => [c.type, c.status]),
  );

describe('issue [DRA] 3 binding verdicts', () => {
  test('pending while the chip is reset; ready once it is over and healthy; failed when still faulty', () => {
    const base = {
      level: 'NormalNPU' as const,
      faultCodes: [],
      faultCodeLevels: [],
      manuallySeparated: false,
      health: 'Healthy' as const,
      faultHealth: 'Healthy' as const,
      recovering: false,
    };
    expect(bindingVerdict({ ...base, recovering: true })).toBe('pending');
    expect(bindingVerdict(base)).toBe('ready');
    expect(
      bindingVerdict({
        ...base,
        level: 'SeparateNPU',
        faultCodes: ['80E18402'],
        faultCodeLevels: ['SeparateNPU'],
        health: 'Unhealthy',
        faultHealth: 'Unhealthy',
      }),
    ).toBe('failed');
    expect(bindingVerdict(undefined)).toBe('failed');
  });

  test('a claim waits for us only with our binding condition on our device and no verdict yet', () => {
    allocated('w1', 'ascend910-1');
    allocated('w2', 'ascend910-2', false);
    expect(waitsForUs(claimOf('w1'), NODE, 'Ascend910B')).toBe(true);
    expect(waitsForUs(claimOf('w2'), NODE, 'Ascend910B')).toBe(false);
    expect(waitsForUs(claimOf('w1'), 'node-b', 'Ascend910B')).toBe(false);
  });
});

describe('issue [DRA] 3 a claim allocated to a chip under reset is bound only after the reset', () => {
  test('no reset: the claims are not watched at all', () => {
    watcher.changed();
    expect(watcher.active).toBe(false);
    expect(api.requests({ resource: 'resourceclaims' })).toEqual([]);
  });

  test('reset running: no verdict; reset over, chip healthy: ChipReady True', async () => {
    store.setResetOverrides(new Set(), new Set(), new Set([1]));
    expect(watcher.active).toBe(true);
    allocated('c1', 'ascend910-1');
    await until(() => watcher.pending === 1);
    expect(conditionsOf('c1')).toEqual([]);
    store.setResetOverrides(new Set(), new Set(), new Set());
    await until(() => conditionsOf('c1').length > 0);
    expect(conditionsOf('c1')).toEqual([[CHIP_READY_CONDITION, 'True']]);
  });

  test('reset over but the chip still faulty: ChipFailed True (the scheduler tries elsewhere)', async () => {
    store.setResetOverrides(new Set(), new Set(), new Set([2]));
    allocated('c2', 'ascend910-2');
    await until(() => watcher.pending === 1);
    store.applyEvents([{ logicId: 2, code: SEP, assertion: 'occur', severity: 2 }]);
    store.setResetOverrides(new Set(), new Set(), new Set());
    await until(() => conditionsOf('c2').length > 0);
    expect(conditionsOf('c2')).toEqual([[CHIP_FAILED_CONDITION, 'True']]);
  });

  test('a verdict once given is not taken back (the scheduler acted on it)', async () => {
    store.setResetOverrides(new Set(), new Set(), new Set([1]));
    allocated('c3', 'ascend910-1');
    await until(() => watcher.pending === 1);
    store.setResetOverrides(new Set(), new Set(), new Set());
    await until(() => conditionsOf('c3').length > 0);
    store.applyEvents([{ logicId: 1, code: SEP, assertion: 'occur', severity: 2 }]);
    await status.sync('default', 'c3');
    expect(conditionsOf('c3')).toEqual([[CHIP_READY_CONDITION, 'True']]);
  });

  test('the watch stops the binding timeout after the last reset ended', async () => {
    store.setResetOverrides(new Set(), new Set(), new Set([1]));
    expect(watcher.active).toBe(true);
    store.setResetOverrides(new Set(), new Set(), new Set());
    await clock.advance(59_000);
    expect(watcher.active).toBe(true);
    await clock.advance(2_000);
    expect(watcher.active).toBe(false);
  });
});
