import { Writable } from 'node:stream';
import { describe, expect, test } from '@jest/globals';
import { Registry } from 'prom-client';
import { FaultEngine } from '../../src/faults/index.js';
import { startObservabilityServer } from '../../src/observability/http-server.js';
import { createLogger, pinoLevel } from '../../src/observability/logger.js';
import { AgentMetrics } from '../../src/observability/metrics.js';
import { NodeStateStore } from '../../src/state/store.js';
import { shippedPolicy } from '../faults/helpers.js';
import { FakeClock } from '../health/fake-clock.js';

function store(): NodeStateStore {
  const chips = [0, 1].map((i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
  return new NodeStateStore({
    engine: new FaultEngine(shippedPolicy(), { chips }),
    chips,
    node: { chipKind: 'Ascend910B', boardId: 0 },
    clock: new FakeClock(),
    listWatchPeriodMs: 5000,
  });
}

/** A destination that keeps every line written. */
function capture(): { lines: string[]; destination: Writable } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  return { lines, destination };
}

describe('A.3 logging', () => {
  test('-logLevel maps -1..3 to debug, info, warn, error, fatal', () => {
    expect([-1, 0, 1, 2, 3].map(pinoLevel)).toEqual(['debug', 'info', 'warn', 'error', 'fatal']);
  });

  test('lines are JSON with the level name and respect the level', () => {
    const { lines, destination } = capture();
    const log = createLogger({ logLevel: 1, logFile: '', destination });
    log.info('hidden');
    log.warn({ logicId: 3 }, 'shown');
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ level: 'warn', msg: 'shown', logicId: 3, name: 'ascend-npu-agent' }),
    ]);
  });

  test('issue [H] item 5 the fault center logs in the same format: its -logLevel name, its program name', () => {
    const { lines, destination } = capture();
    const log = createLogger({ logLevel: 'warn', logFile: '', name: 'ascend-fault-center', destination });
    log.info('hidden');
    log.child({ feature: 'public-fault' }).warn({ reason: 'x' }, 'shown');
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed).toEqual([
      {
        level: 'warn',
        time: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
        pid: process.pid,
        name: 'ascend-fault-center',
        feature: 'public-fault',
        reason: 'x',
        msg: 'shown',
      },
    ]);
    expect(Object.keys(parsed[0]!).slice(0, 4)).toEqual(['level', 'time', 'pid', 'name']);
  });

  test('issue [H] item 5 a level name is taken as is: trace shows everything', () => {
    const { lines, destination } = capture();
    createLogger({ logLevel: 'trace', logFile: '', destination }).trace('shown');
    expect(lines.map((l) => (JSON.parse(l) as { level: string }).level)).toEqual(['trace']);
  });
});

describe('observability metrics', () => {
  test('chips by health and level follow the store; fault events, drops and DCMI errors are counted', async () => {
    const registry = new Registry();
    const m = new AgentMetrics(registry, { defaultMetrics: false });
    const s = store();
    s.onChange((state, change) => m.observeState(state, change));
    m.observeState(s.snapshot());
    s.applyEvents([{ logicId: 1, code: 0x80e18402, assertion: 'occur', severity: 2 }]);
    const obs = m.healthObserver();
    obs.faultEvent!('80E18402', 'occur');
    obs.droppedResynced!([1], 7, 'binding');
    obs.dcmiError!('dcmi_get_device_health', -8005);
    obs.modeChanged!('polling', 'test');
    m.registered('huawei.com/Ascend910', true);
    const text = await registry.metrics();
    m.close();
    expect(text).toContain('ascend_npu_agent_chips{scope="chip",health="Unhealthy"} 1');
    expect(text).toContain('ascend_npu_agent_chips{scope="chip",health="Healthy"} 1');
    expect(text).toContain('ascend_npu_agent_chips_by_level{level="SeparateNPU"} 1');
    expect(text).toContain('ascend_npu_agent_fault_events_total{code="80E18402",assertion="occur"} 1');
    expect(text).toContain('ascend_npu_agent_events_dropped_resynced_total{where="binding"} 7');
    expect(text).toContain('ascend_npu_agent_dcmi_call_errors_total{function="dcmi_get_device_health"} 1');
    expect(text).toContain('ascend_npu_agent_fault_fetch_mode{mode="polling"} 1');
    expect(text).toContain(
      'ascend_npu_agent_kubelet_registrations_total{resource="huawei.com/Ascend910",result="ok"} 1',
    );
    expect(text).toContain('ascend_npu_agent_event_loop_lag_p99_seconds');
  });
});

describe('L.2 / architecture §4 /metrics /healthz /readyz', () => {
  test('serves the three paths; /readyz lists failing checks; a bad chip fails no probe', async () => {
    const registry = new Registry();
    const m = new AgentMetrics(registry, { defaultMetrics: false });
    const s = store();
    s.applyEvents([
      { logicId: 0, code: 0x80e18402, assertion: 'occur', severity: 2 },
      { logicId: 1, code: 0x80e18402, assertion: 'occur', severity: 2 },
    ]);
    m.observeState(s.snapshot());
    let registered = false;
    const server = await startObservabilityServer({
      address: '127.0.0.1:0',
      registry,
      readiness: {
        dcmi: () => ({ ok: true }),
        kubelet: () => (registered ? { ok: true } : { ok: false, reason: 'Ascend910 not registered' }),
      },
    });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const health = await fetch(`${base}/healthz`);
      expect([health.status, await health.text()]).toEqual([200, 'ok\n']);
      const notReady = await fetch(`${base}/readyz`);
      expect([notReady.status, await notReady.text()]).toEqual([503, 'kubelet: Ascend910 not registered\n']);
      registered = true;
      expect((await fetch(`${base}/readyz`)).status).toBe(200); // every chip Unhealthy, still ready
      const metrics = await fetch(`${base}/metrics`);
      expect(await metrics.text()).toContain('ascend_npu_agent_chips{scope="chip",health="Unhealthy"} 2');
      expect((await fetch(`${base}/nope`)).status).toBe(404);
      expect((await fetch(`${base}/healthz`, { method: 'POST' })).status).toBe(405);
    } finally {
      await server.close();
      m.close();
    }
  });

  test('a malformed address is refused', async () => {
    await expect(startObservabilityServer({ address: 'nonsense', registry: new Registry() })).rejects.toThrow(
      /bad listen address/,
    );
  });
});
