/**
 * The fault center's Lease on an API server that decodes MicroTimes as the real one (issue [R] item 1: on a real
 * cluster every acquisition failed with 400 because `acquireTime` / `renewTime` had three fractional digits, so the
 * fault center never led).
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { LeaseElector } from '../../src/cluster/leader-election.js';
import { KubeClient, type LeaseApi } from '../../src/kube/kube-client.js';
import { KubeApiStandIn, LEASES } from '../../src/sim/kube-api.js';

let api: KubeApiStandIn;
let elector: LeaseElector | undefined;

beforeEach(async () => {
  api = await KubeApiStandIn.start();
});
afterEach(async () => {
  await elector?.stop();
  elector = undefined;
  await api.stop();
});

const NOW = Date.UTC(2026, 11, 3, 14, 20, 45, 167);

function start(client: LeaseApi, now: () => number, errors: unknown[]): Promise<void> {
  return new Promise((resolve) => {
    elector = new LeaseElector({
      api: client,
      name: 'ascend-fault-center',
      namespace: 'cluster-system',
      identity: 'replica-a',
      leaseDurationSec: 15,
      retryPeriodMs: 20,
      renewDeadlineMs: 10_000,
      now,
      onStartedLeading: resolve,
      onStoppedLeading: () => undefined,
      onError: (e) => errors.push(e),
    });
    elector.start();
  });
}

describe('issue [R] item 1: the Lease decodes on a real API server', () => {
  test.each([
    ['KubeClient', () => new KubeClient({ server: api.url, token: 'stand-in-token' })],
    ['client-node', () => api.kubeConfig().makeApiClient(k8s.CoordinationV1Api)],
  ])('through %s: the elector leads; acquireTime and renewTime carry six digits', async (_, client) => {
    const errors: unknown[] = [];
    let t = NOW;
    await start(client(), () => t, errors);
    t += 2_001;
    await new Promise((r) => setTimeout(r, 100)); // a few renewals
    const spec = api.store.get(LEASES, 'cluster-system', 'ascend-fault-center')?.spec as Record<string, unknown>;
    expect([errors.length, spec.holderIdentity, spec.acquireTime, spec.renewTime]).toEqual([
      0,
      'replica-a',
      '2026-12-03T14:20:45.167000Z',
      '2026-12-03T14:20:47.168000Z',
    ]);
  });

  test('a Lease taken over from another holder keeps six digits in acquireTime', async () => {
    api.store.create(LEASES, 'cluster-system', {
      metadata: { name: 'ascend-fault-center' },
      spec: {
        holderIdentity: 'replica-b',
        leaseDurationSeconds: 15,
        acquireTime: '2026-12-03T14:00:00.000001Z',
        renewTime: '2026-12-03T14:00:00.000001Z',
      },
    });
    const errors: unknown[] = [];
    await start(new KubeClient({ server: api.url, token: 'stand-in-token' }), () => NOW, errors);
    const spec = api.store.get(LEASES, 'cluster-system', 'ascend-fault-center')?.spec as Record<string, unknown>;
    expect([errors.length, spec.holderIdentity, spec.acquireTime, spec.leaseTransitions]).toEqual([
      0,
      'replica-a',
      '2026-12-03T14:20:45.167000Z',
      1,
    ]);
  });
});
