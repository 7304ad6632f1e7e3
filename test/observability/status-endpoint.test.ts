import { describe, expect, test } from '@jest/globals';
import { Registry } from 'prom-client';
import { MAX_STATUS_BYTES, startObservabilityServer } from '../../src/observability/http-server.js';
import { parseStatus } from '../../src/cli/npuctl/status.js';
import { agentStatus, STATUS_VERSION, type AgentStatusDocument } from '../../src/observability/status.js';
import type { ResetStatus } from '../../src/reset/reset-runtime.js';
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

describe('/status stays under its limit whatever one section holds (issue 12 loose end 3)', () => {
  const chip = {
    logicId: 0,
    phyId: 0,
    name: 'Ascend910-0',
    health: 'Healthy',
    networkHealth: 'Healthy',
    level: 'NormalNPU',
  } as unknown as ChipState;
  /** A reset section as a node with thousands of broken pods would give it without the bounds of discoverTasks. */
  const hugeReset = (): ResetStatus => ({
    mode: 1,
    online: { tasks: [], chips: [], healthOverrides: { healthy: [], networkHealthy: [] } },
    offline: [{ logicId: 0, state: 'idle', tokens: 3 }],
    resetting: {},
    tasks: Array.from({ length: 20_000 }, (_, i) => `task-${i}-${'t'.repeat(40)}`),
    problems: Array.from({ length: 8 }, (_, i) => `pod default/w${i}: hccl/rankIndex "${'9'.repeat(256 * 1024)}"`),
  });

  test('a reset section of 3 MB is served cut down (200), with the lists it shortened and the texts it cut counted', async () => {
    const doc = agentStatus({ node: 'n1', now: 0, state: { chips: [chip] }, reset: hugeReset() });
    await withServer(
      () => doc,
      async (base) => {
        const res = await fetch(`${base}/status`);
        const body = (await res.json()) as AgentStatusDocument;
        expect([
          res.status,
          body.chips.length,
          body.reset?.offline,
          body.reset!.problems.length,
          body.truncated?.['$.reset.tasks'] !== undefined,
          (body.truncated?.strings ?? 0) >= 8,
        ]).toEqual([200, 1, [{ logicId: 0, state: 'idle', tokens: 3 }], 8, true, true]);
      },
    );
  });

  test('the cut-down document is within the limit and npuctl status reads it', () => {
    const doc = agentStatus({ node: 'n1', now: 0, state: { chips: [chip] }, reset: hugeReset() });
    const v = parseStatus(JSON.parse(JSON.stringify(doc)), 'http://x/status');
    expect([
      Buffer.byteLength(JSON.stringify(doc)) <= MAX_STATUS_BYTES,
      v.chips.length,
      v.reset?.problems.length,
    ]).toEqual([true, 1, 8]);
  });

  test('a document within the limits is served unchanged, without a truncated field', () => {
    const reset = { ...hugeReset(), tasks: ['a'], problems: ['p'] };
    const doc = agentStatus({ node: 'n1', now: 0, state: { chips: [chip] }, reset });
    expect([doc.reset, 'truncated' in doc]).toEqual([reset, false]);
  });
});
