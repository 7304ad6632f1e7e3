import { afterEach, describe, expect, test } from '@jest/globals';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { AgentMetrics } from '../../src/observability/metrics.js';
import { collectNodeMetrics, EVENT_LOOP_SERIES, EventLoopDelay } from '../../src/observability/node-metrics.js';

/** Keeps the event loop busy for `ms` (a stall the delay monitor must see). */
function stall(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));
/** After a stall: the monitor's overdue tick (a libuv timer due before this one) records the delay first. */
const afterTick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

/** The value of an unlabelled gauge in a registry. */
async function value(registry: Registry, name: string): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  if (!m) throw new Error(`no series ${name}`);
  return m.values[0]?.value ?? Number.NaN;
}

describe('Node.js process metrics with one event-loop monitor (issue [P] item 2, issue [J] item 3)', () => {
  const loops: EventLoopDelay[] = [];
  afterEach(() => loops.splice(0).forEach((l) => l.stop()));

  test('issue [J] item 3: the same series names as prom-client collectDefaultMetrics', () => {
    const theirs = new Registry();
    collectDefaultMetrics({ register: theirs });
    const ours = new Registry();
    const loop = new EventLoopDelay();
    loops.push(loop);
    collectNodeMetrics(ours, loop);
    const names = (r: Registry): string[] =>
      r
        .getMetricsAsArray()
        .map((m) => m.name)
        .sort();
    expect(names(ours)).toEqual(names(theirs));
    expect(names(ours)).toEqual(expect.arrayContaining([...EVENT_LOOP_SERIES]));
  });

  test('issue [P] item 2: a stall shows in the lag series of the scrape after it, and the next scrape starts over', async () => {
    const registry = new Registry();
    const loop = new EventLoopDelay(10);
    loops.push(loop);
    collectNodeMetrics(registry, loop);
    await new Promise((r) => setTimeout(r, 50)); // the monitor's first tick only starts its clock
    stall(200);
    await afterTick();
    await registry.metrics();
    expect(await value(registry, 'nodejs_eventloop_lag_max_seconds')).toBeGreaterThanOrEqual(0.15);
    await nextTurn();
    await new Promise((r) => setTimeout(r, 50));
    await registry.metrics();
    expect(await value(registry, 'nodejs_eventloop_lag_max_seconds')).toBeLessThan(0.15);
  });

  test("issue [P] item 2: the agent's p99 gauge and nodejs_eventloop_lag_p99_seconds read one histogram in a scrape", async () => {
    const registry = new Registry();
    const m = new AgentMetrics(registry);
    try {
      await new Promise((r) => setTimeout(r, 600)); // the monitor's first tick only starts its clock
      stall(1_200); // longer than the 500 ms sampling period: always sampled
      await afterTick();
      const text = await registry.metrics();
      const series = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
      const ours = series('ascend_npu_agent_event_loop_lag_p99_seconds');
      expect(ours).toBeGreaterThanOrEqual(0.6);
      expect(series('nodejs_eventloop_lag_p99_seconds')).toBe(ours);
    } finally {
      m.close();
    }
  });
});
