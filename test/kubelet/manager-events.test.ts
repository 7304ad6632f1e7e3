/**
 * The manager's metric events: a report that reached kubelet (spec C.1) and every Allocate with its duration
 * (spec C.3), which the agent turns into `list_and_watch_sends_total{result="ok"}` and `allocate_seconds`.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness } from './harness.js';

const R = 'huawei.com/Ascend910';
let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('C.1/C.3 manager events for metrics', () => {
  test('C.1 a health change that reached kubelet emits reportSent with the resource name', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    const sent: { resourceName: string }[] = [];
    h.manager.on('reportSent', (e: { resourceName: string }) => sent.push(e));
    h.source.updateDevice('Ascend910-2', { health: 'Unhealthy', level: 'SeparateNPU' });
    const deadline = Date.now() + 10_000;
    while (sent.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(sent[0]).toEqual(expect.objectContaining({ resourceName: R }));
  });

  test('C.3 an answered Allocate emits allocated with ok and a duration', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    const seen: { resourceName: string; ms: number; ok: boolean }[] = [];
    h.manager.on('allocated', (e: { resourceName: string; ms: number; ok: boolean }) => seen.push(e));
    await h.sim.allocate(R, [['Ascend910-1']]);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toEqual(expect.objectContaining({ resourceName: R, ok: true }));
    expect(seen[0]!.ms).toBeGreaterThanOrEqual(0);
  });

  test('C.3 a refused Allocate emits allocated with ok false', async () => {
    h = await startHarness();
    await h.sim.waitForRegistration(R);
    const seen: { ok: boolean }[] = [];
    h.manager.on('allocated', (e: { ok: boolean }) => seen.push(e));
    await h.sim.allocate(R, [['Ascend910-99']]).catch(() => undefined);
    expect(seen).toEqual([expect.objectContaining({ ok: false })]);
  });
});
