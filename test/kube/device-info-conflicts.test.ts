/**
 * The device-info publisher's API traffic and conflicts against the stand-in, on the harness's fake clock:
 * - issue [P] item 4: no read before each write — the write carries the resourceVersion of the last answer or of the
 *   watch; the object is read (GET) only when no copy is known or a write answered 409;
 * - issue [T] item 2: every PUT answered 409 for a while (GET and watch fine): bounded requests meanwhile, the
 *   ConfigMap right within the conflict wait's cap (1 s here, no jitter) after the storm, and an operator's release
 *   (spec G.2) made during the storm never undone.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { CONFIGMAPS, KubeApiStandIn } from '../../src/sim/kube-api.js';
import { CM, HBM, KubeHarness, SEP, tick, until } from './harness.js';

let api: KubeApiStandIn;
let h: KubeHarness;
/** Calls of the publisher's API client not yet settled. */
let inFlight = 0;

beforeEach(async () => {
  api = await KubeApiStandIn.start();
  h = new KubeHarness(api);
  inFlight = 0;
});

afterEach(async () => {
  h.publisher?.stop();
  await api.stop();
});

/** `core` whose calls are counted in {@link inFlight} until they settle. */
function tracked(core: k8s.CoreV1Api): k8s.CoreV1Api {
  return new Proxy(core, {
    get(t, prop, receiver) {
      const v: unknown = Reflect.get(t, prop, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]): unknown => {
        const r: unknown = (v as (...a: unknown[]) => unknown).apply(t, args);
        if (r instanceof Promise) {
          inFlight++;
          void r.finally(() => inFlight--).catch(() => undefined);
        }
        return r;
      };
    },
  });
}

async function started(o: { watch?: boolean } = {}): Promise<void> {
  h.makePublisher({ ...o, api: tracked(h.core) });
  await h.publisher.start();
  await drain();
}

/** Lets every call of the publisher in flight finish (real time), and what they start. */
async function drain(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await tick();
    await until(() => inFlight === 0);
  }
}

/** `ms` of fake time in steps of `stepMs`, the publisher's calls finishing after each step. */
async function run(ms: number, stepMs = 50): Promise<void> {
  for (let t = 0; t < ms; t += stepMs) {
    h.clock.advance(stepMs);
    await drain();
  }
}

/** The stored object (no HTTP request: the log counts only the publisher's). */
function stored(): Record<string, string> {
  return (api.store.get(CONFIGMAPS, 'kube-system', CM)?.data ?? {}) as Record<string, string>;
}

function unhealthy(): string[] {
  const cfg = JSON.parse(stored().DeviceInfoCfg ?? '{}') as { DeviceInfo?: { DeviceList?: Record<string, string> } };
  return (cfg.DeviceInfo?.DeviceList?.['huawei.com/Ascend910-Unhealthy'] ?? '').split(',').filter((s) => s !== '');
}

const gets = (): number => api.requests({ verb: 'get', name: CM }).length;
const puts = (): number => api.requests({ verb: 'update', name: CM }).length;

/** Separates chip `id` by two HBM occurrences (shipped rule: 2 in 24 h → ManuallySeparateNPU). */
async function separate(id: number): Promise<void> {
  h.cycle([{ logicId: id, code: HBM }]);
  await run(1000);
  h.cycle([{ logicId: id, code: HBM }]);
  await run(1000);
}

/** An operator's edit that went through (a write that won the race: made in the store, no HTTP request). */
function operatorWrites(key: string, value: string): void {
  const old = api.store.get(CONFIGMAPS, 'kube-system', CM)!;
  const data = { ...(old.data as Record<string, string>), [key]: value };
  api.store.update(CONFIGMAPS, 'kube-system', CM, { ...old, data });
}

/** The same, and the publisher's watch has seen it. */
async function operatorEdits(key: string, value: string): Promise<void> {
  const edits = h.publisher.stats.foreignEdits;
  operatorWrites(key, value);
  await until(() => h.publisher.stats.foreignEdits > edits);
}

describe('issue [P] item 4: no read before each write', () => {
  test('[P] 4 steady state: a change a second for 20 s, every one written by a PUT, no GET (resourceVersion of the last answer)', async () => {
    await started();
    api.clearLog();
    for (let i = 0; i < 20; i++) {
      h.cycle([{ logicId: i % 8, code: SEP, assertion: i % 16 < 8 ? 'occur' : 'recover' }]);
      await run(1000);
    }
    const ok = api.requests({ verb: 'update', name: CM, succeeded: true }).length;
    expect([puts(), ok, gets()]).toEqual([20, 20, 0]);
  });

  test('[P] 4 the first write takes its copy from the watch: no GET at start either', async () => {
    await started();
    expect([api.writeCount({ resource: 'configmaps', name: CM }), gets()]).toEqual([1, 0]);
  });

  test('[P] 4 without a watch only the first write reads (no copy known yet); the next ones use the answers', async () => {
    await started({ watch: false });
    await separate(3);
    h.cycle([{ logicId: 1, code: SEP }]);
    await run(1000);
    expect([puts(), gets()]).toEqual([3, 1]);
  });

  test('[P] 4 an edit the publisher has not seen: its PUT answers 409, the one GET follows, and G.2 holds (released, not written back)', async () => {
    await started({ watch: false });
    await separate(3);
    const before = gets();
    operatorWrites('ManuallySeparateNPU', ''); // no watch: the publisher's copy is stale
    h.cycle([{ logicId: 1, code: SEP }]);
    await run(1000);
    expect([gets() - before, h.publisher.stats.conflicts, stored().ManuallySeparateNPU, h.separated()]).toEqual([
      1,
      1,
      '',
      [],
    ]);
  });

  for (const order of ['watch-first', 'response-first'] as const) {
    test(`[P] 4 idle for 60 s with the API server delivering the ${order}: one write, no GET`, async () => {
      api.setWatchOrder(order);
      await started();
      for (let s = 0; s < 60; s++) {
        await new Promise((r) => setTimeout(r, 15)); // the watch events of the write arrive
        await run(1000, 1000);
      }
      expect([api.writeCount({ resource: 'configmaps', name: CM }), gets(), h.publisher.stats.foreignEdits]).toEqual([
        1, 0, 0,
      ]);
    });
  }
});

describe('issue [T] item 2: a conflict storm (every PUT answered 409, GET and watch fine)', () => {
  test('[T] 2 a fault during a 30 s storm is in the ConfigMap within 1 s after it, with ≈ 1 PUT and 1 GET a second meanwhile', async () => {
    await started();
    api.setConflicts(Infinity, { resource: 'configmaps' });
    api.clearLog();
    h.cycle([{ logicId: 2, code: SEP }]);
    await run(30_000);
    const during = { puts: puts(), gets: gets(), shown: unhealthy() };
    api.setConflicts(0);
    await run(1000);
    // waits of 250, 500, then 1000 ms: 3 PUTs, then one PUT (after one GET) per wait
    expect([during, unhealthy()]).toEqual([{ puts: 3 + 30, gets: 2 + 30, shown: [] }, ['Ascend910-2']]);
  });

  test('[T] 2 G.2 an operator release made during a storm is taken and never undone by the retries', async () => {
    await started();
    await separate(3);
    expect(stored().ManuallySeparateNPU).toBe('Ascend910-3');
    api.setConflicts(Infinity, { resource: 'configmaps' });
    await operatorEdits('ManuallySeparateNPU', '');
    const shown: string[] = [];
    for (let s = 0; s < 10; s++) {
      await run(1000);
      shown.push(stored().ManuallySeparateNPU ?? '');
    }
    const released = h.separated();
    api.setConflicts(0);
    await run(3000);
    h.cycle([{ logicId: 1, code: SEP }]); // a later change is written too
    await run(2000);
    expect([released, shown.every((v) => v === ''), stored().ManuallySeparateNPU, h.separated()]).toEqual([
      [],
      true,
      '',
      [],
    ]);
  });
});
