import { describe, expect, test } from '@jest/globals';
import { Registry } from 'prom-client';
import { MAX_STATUS_BYTES, startObservabilityServer } from '../../src/observability/http-server.js';
import { agentStatus, STATUS_VERSION } from '../../src/observability/status.js';
import type { ChipState } from '../../src/state/store.js';

async function withServer<T>(status: (() => unknown) | undefined, fn: (base: string) => Promise<T>): Promise<T> {
  const server = await startObservabilityServer({
    address: '127.0.0.1:0',
    registry: new Registry(),
    ...(status ? { status } : {}),
  });
  try {
    return await fn(`http://127.0.0.1:${server.port}`);
  } finally {
    await server.close();
  }
}

describe('/status endpoint (issue [F] item 4)', () => {
  test('answers the document as JSON', async () => {
    await withServer(
      () => ({ hello: 'world' }),
      async (base) => {
        const res = await fetch(`${base}/status`);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(await res.json()).toEqual({ hello: 'world' });
      },
    );
  });

  test('404 when the agent gives no status source', async () => {
    await withServer(undefined, async (base) => {
      expect((await fetch(`${base}/status`)).status).toBe(404);
    });
  });

  test('a document over the size limit is refused with 500 naming the size', async () => {
    await withServer(
      () => ({ big: 'x'.repeat(MAX_STATUS_BYTES) }),
      async (base) => {
        const res = await fetch(`${base}/status`);
        expect(res.status).toBe(500);
        expect(await res.text()).toContain(`over the limit of ${MAX_STATUS_BYTES}`);
      },
    );
  });

  test('a status source that throws gives 500 with its message', async () => {
    await withServer(
      () => {
        throw new Error('store closed');
      },
      async (base) => {
        const res = await fetch(`${base}/status`);
        expect(res.status).toBe(500);
        expect(await res.text()).toContain('store closed');
      },
    );
  });

  test('agentStatus: version, node, ISO time, chips as the snapshot has them, reset null when absent', () => {
    const chip = {
      logicId: 2,
      phyId: 3,
      name: 'Ascend910-3',
      health: 'Unhealthy',
      networkHealth: 'Healthy',
      level: 'RestartNPU',
    } as unknown as ChipState;
    expect(agentStatus({ node: 'n1', now: 0, state: { chips: [chip] } })).toEqual({
      version: STATUS_VERSION,
      node: 'n1',
      time: '1970-01-01T00:00:00.000Z',
      chips: [
        {
          logicId: 2,
          phyId: 3,
          name: 'Ascend910-3',
          health: 'Unhealthy',
          networkHealth: 'Healthy',
          level: 'RestartNPU',
        },
      ],
      reset: null,
    });
  });
});
