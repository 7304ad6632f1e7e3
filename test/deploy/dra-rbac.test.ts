/**
 * The shipped RBAC of the DRA driver (deploy/overlays/dra; docs/rbac.md "DRA"): the API stand-in enforces what
 * `kubectl apply -k deploy/overlays/dra` creates, and the API side of the driver — the slice writer with its watch,
 * the claim reads of the pod annotations, the claims' device status, the claim watch of a reset — runs with the
 * agent's service-account token: nothing it does is denied, and every DRA grant is used. The node scoping of the
 * slices is the admission policy's (not enforced by the stand-in: the real-cluster suite proves it, test/k8s/dra).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CHIP_FAILED_CONDITION, CHIP_READY_CONDITION, DRA_DRIVER } from '../../src/core/dra-devices.js';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { ClaimBindingWatcher } from '../../src/dra/claim-binding.js';
import { ClaimStatusWriter } from '../../src/dra/claim-status.js';
import { isResetting } from '../../src/dra/device-taints.js';
import { draApiOf } from '../../src/dra/dra-api.js';
import { poolOf, slicesOf } from '../../src/dra/resource-slices.js';
import { ResourceSliceWriter } from '../../src/dra/slice-writer.js';
import { KubeClient } from '../../src/kube/kube-client.js';
import { DRA_RESOURCES, KubeApiStandIn, RESOURCE_CLAIMS } from '../../src/sim/kube-api.js';
import { ADMIN_USER, RbacGate, loadRbacFiles, serviceAccountUser } from '../../src/sim/kube-api-rbac.js';
import { testStore } from '../state/helpers.js';
import { RBAC_RENDERED_DRA } from './deploy-files.js';

const NODE = 'node-a';
const AGENT_TOKEN = 'agent-dra-token';
const ADMIN_TOKEN = 'admin-token';
const AGENT = serviceAccountUser('kube-system', 'ascend-npu-agent', {
  'authentication.kubernetes.io/node-name': [NODE],
});
const gate = new RbacGate({
  policy: loadRbacFiles(RBAC_RENDERED_DRA.map((f) => path.join(PROJECT_ROOT, f))),
  users: { [ADMIN_TOKEN]: ADMIN_USER, [AGENT_TOKEN]: AGENT },
});
let api: KubeApiStandIn;
let client: KubeClient;

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

beforeAll(async () => {
  api = await KubeApiStandIn.start({ extraResources: DRA_RESOURCES, gate });
  client = new KubeClient({ server: api.url, token: AGENT_TOKEN });
  const dra = draApiOf(client);
  const { store } = testStore({ chips: 4 });
  store.start();
  const inv = { kind: 'Ascend910B' as const, node: { chipKind: 'Ascend910B' as const, boardId: 0x24 } };
  const writer = new ResourceSliceWriter({
    api: dra,
    watch: client.watch,
    nodeName: NODE,
    build: (times) => slicesOf(poolOf(store.snapshot(), inv, times), NODE),
    minIntervalMs: 0,
  });
  const chipOf = (phy: number) => store.snapshot().chips.find((c) => c.phyId === phy);
  const status = new ClaimStatusWriter({
    api: dra,
    nodeName: NODE,
    kind: 'Ascend910B',
    facts: (phy) => ({ ...(chipOf(phy) ? { chip: chipOf(phy)! } : {}), ip: `10.0.0.${phy}` }),
  });
  const binding = new ClaimBindingWatcher({
    api: dra,
    watch: client.watch,
    nodeName: NODE,
    kind: 'Ascend910B',
    status,
    resetting: () => store.snapshot().chips.some(isResetting),
  });
  store.onChange(() => {
    writer.changed();
    binding.changed();
  });
  await writer.start();
  await writer.whenIdle();
  // a reset: the claims are watched, a claim allocated to the chip gets its verdict
  store.setResetOverrides(new Set(), new Set(), new Set([1]));
  api.store.create(RESOURCE_CLAIMS, 'default', {
    metadata: { name: 'c' },
    spec: { devices: { requests: [{ name: 'npu', exactly: { deviceClassName: DRA_DRIVER } }] } },
    status: {
      allocation: {
        devices: {
          results: [
            {
              request: 'npu',
              driver: DRA_DRIVER,
              pool: NODE,
              device: 'ascend910-1',
              bindingConditions: [CHIP_READY_CONDITION],
              bindingFailureConditions: [CHIP_FAILED_CONDITION],
            },
          ],
        },
      },
    },
  });
  await until(() => binding.pending === 1);
  store.setResetOverrides(new Set(), new Set(), new Set());
  // the device's facts are written while the chip resets, its ChipReady condition once the reset is over
  await until(() => chipReady(api.store.get(RESOURCE_CLAIMS, 'default', 'c')) !== undefined);
  await writer.whenIdle();
  writer.stop();
  binding.stop();
  status.stop();
}, 30_000);

/** The ChipReady condition's status and the IPs of the claim's device entry, once it has that condition. */
function chipReady(claim: unknown): { status: string; ips: unknown } | undefined {
  type Device = { networkData?: { ips?: unknown }; conditions?: { type: string; status: string }[] };
  const d = (claim as { status?: { devices?: Device[] } } | undefined)?.status?.devices?.[0];
  const c = d?.conditions?.find((x) => x.type === 'npu.huawei.com/ChipReady');
  return c === undefined ? undefined : { status: c.status, ips: d?.networkData?.ips };
}

afterAll(async () => {
  client.close();
  await api.stop();
});

describe('deploy/overlays/dra: the RBAC of the DRA driver (API side)', () => {
  test('nothing the agent did was denied, and it ran as its service account', () => {
    const denied = gate.denied().filter((r) => r.attributes.user.username === AGENT.username);
    expect(denied.map((r) => `${r.method} ${r.url}`)).toEqual([]);
    expect(gate.decisions(AGENT.username).length).toBeGreaterThan(5);
  });

  test('it wrote its slices and the claim status with the shipped RBAC', () => {
    expect(api.writeCount({ resource: 'resourceslices' })).toBeGreaterThan(0);
    // one write of the facts while the chip reset and one of the condition after it (or one of both, when the reset
    // ended before the first was sent): never more
    const writes = api.writeCount({ resource: 'resourceclaims', name: 'c' });
    expect([writes >= 1 && writes <= 2, chipReady(api.store.get(RESOURCE_CLAIMS, 'default', 'c'))]).toEqual([
      true,
      { status: 'True', ips: ['10.0.0.1/32'] },
    ]);
  });

  test('the grants the API side needs were used: slices list/watch/create/update, claims list/watch, claims/status', () => {
    const dra = gate.authorizer.grantsOf(AGENT).filter((g) => g.role === 'ClusterRole ascend-npu-agent-dra');
    const used = new Set(gate.usage().keys());
    const usedOnes = dra.filter((g) => used.has(g.key)).map((g) => `${g.verb} ${g.resource}`);
    expect(usedOnes).toEqual(
      expect.arrayContaining([
        'list resourceslices',
        'watch resourceslices',
        'create resourceslices',
        'update resourceslices',
        'list resourceclaims',
        'watch resourceclaims',
        'update resourceclaims/status',
      ]),
    );
    // the others are needed elsewhere: get (the claims of the pod annotations and NodePrepare), delete (a pool that
    // shrinks: test/dra/slice-writer.test.ts), the synthetic resourceclaims/driver check (not made by the stand-in;
    // the real-cluster suite makes it)
    const unused = dra.filter((g) => !used.has(g.key)).map((g) => `${g.verb} ${g.resource}`);
    for (const u of unused) {
      expect([
        'get resourceslices',
        'delete resourceslices',
        'get resourceclaims',
        'associated-node:update resourceclaims/driver',
      ]).toContain(u);
    }
  });

  test('an agent without the DRA role is refused the slice write (so the check does check)', () => {
    const without = new RbacGate({
      policy: loadRbacFiles([path.join(PROJECT_ROOT, 'deploy/rendered/910.yaml')]),
      users: { [AGENT_TOKEN]: AGENT },
    });
    expect(() =>
      without.admit('POST', new URL('http://x/apis/resource.k8s.io/v1/resourceslices'), `Bearer ${AGENT_TOKEN}`),
    ).toThrow(/resourceslices.resource.k8s.io is forbidden/);
  });
});
