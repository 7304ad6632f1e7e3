/**
 * Issue [J] item 1: `/readyz` names what the start still waits for (DCMI, kubelet registration, the ListAndWatch
 * stream, the API server), and `/status` is 503 until the store exists.
 */
import { describe, expect, test } from '@jest/globals';
import { Registry } from 'prom-client';
import { StatusUnavailableError, startObservabilityServer } from '../../src/observability/http-server.js';
import { AgentReadiness, type ResourceRegistration } from '../../src/observability/readiness.js';

/** The failing checks as `/readyz` lists them. */
function failing(r: AgentReadiness): string[] {
  const out: string[] = [];
  for (const [name, check] of Object.entries(r.checks())) {
    const v = check();
    if (!v.ok) out.push(`${name}: ${v.reason}`);
  }
  return out;
}

const RES = 'huawei.com/Ascend910';

describe('issue [J] item 1 readiness reasons', () => {
  test('at the first second: DCMI not open, not registered with kubelet, API server never reached', () => {
    expect(failing(new AgentReadiness())).toEqual([
      'dcmi: DCMI not open',
      'kubelet: not registered with kubelet',
      'api: API server never reached',
    ]);
  });

  test('DCMI open, no kubeconfig: only kubelet is waited for; then not streaming; then ready', () => {
    const r = new AgentReadiness();
    r.dcmiOpened({ closed: false });
    r.followApi(null);
    let status: ResourceRegistration[] = [];
    r.followKubelet(() => status);
    expect(failing(r)).toEqual(['kubelet: not registered with kubelet']);
    status = [{ resourceName: RES, registered: false, activeStreams: 0 }];
    expect(failing(r)).toEqual([`kubelet: not registered with kubelet: ${RES}`]);
    status = [{ resourceName: RES, registered: true, activeStreams: 0 }];
    expect(failing(r)).toEqual([`kubelet: not streaming (no ListAndWatch): ${RES}`]);
    status = [{ resourceName: RES, registered: true, activeStreams: 1 }];
    expect(failing(r)).toEqual([]);
  });

  test('the API check passes once the API server answered, and DCMI closed at shutdown fails', () => {
    const r = new AgentReadiness();
    const dcmi = { closed: false };
    r.dcmiOpened(dcmi);
    r.followKubelet(() => [{ resourceName: RES, registered: true, activeStreams: 1 }]);
    let reached = false;
    r.followApi(() => reached);
    expect(failing(r)).toEqual(['api: API server never reached']);
    reached = true;
    expect(failing(r)).toEqual([]);
    dcmi.closed = true;
    expect(failing(r)).toEqual(['dcmi: DCMI closed']);
  });

  test('/readyz answers 503 with every reason; /status is 503 while its source is unavailable', async () => {
    const server = await startObservabilityServer({
      address: '127.0.0.1:0',
      registry: new Registry(),
      readiness: new AgentReadiness().checks(),
      status: () => {
        throw new StatusUnavailableError('the agent is starting (DCMI initialisation)');
      },
    });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const ready = await fetch(`${base}/readyz`);
      expect([ready.status, await ready.text()]).toEqual([
        503,
        'dcmi: DCMI not open\nkubelet: not registered with kubelet\napi: API server never reached\n',
      ]);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const status = await fetch(`${base}/status`);
      expect([status.status, await status.text()]).toEqual([
        503,
        'status unavailable: the agent is starting (DCMI initialisation)\n',
      ]);
    } finally {
      await server.close();
    }
  });
});
