/**
 * Issue [J] items 2 and 3: the per-chip series (a projection of the store's snapshot), the standard process and
 * Node.js metrics, build_info, the registration timestamp and kubelet_registered.
 */
import { describe, expect, test } from '@jest/globals';
import { Registry } from 'prom-client';
import { FaultEngine } from '../../src/faults/index.js';
import { AgentMetrics } from '../../src/observability/metrics.js';
import { NodeStateStore } from '../../src/state/store.js';
import { shippedPolicy } from '../faults/helpers.js';
import { FakeClock } from '../health/fake-clock.js';

/** SeparateNPU in faultCode.json. */
const SEPARATE = 0x80e18402;
/** Two chips whose logic and phy ids differ (logic 0 = phy 4, logic 1 = phy 5). */
const CHIPS = [0, 1].map((i) => ({ logicId: i, phyId: i + 4, cardId: i, deviceId: 0 }));

function setup(): { m: AgentMetrics; registry: Registry; store: NodeStateStore } {
  const registry = new Registry();
  const m = new AgentMetrics(registry, { defaultMetrics: false });
  m.attachChips('Ascend910', CHIPS);
  const store = new NodeStateStore({
    engine: new FaultEngine(shippedPolicy(), { chips: CHIPS }),
    chips: CHIPS,
    node: { chipKind: 'Ascend910B', boardId: 0 },
    clock: new FakeClock(),
    listWatchPeriodMs: 5000,
  });
  store.onChange((state, change) => m.observeState(state, change));
  m.observeState(store.snapshot());
  return { m, registry, store };
}

/** The lines of series `name` (no HELP/TYPE). */
function series(text: string, name: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
}

const C0 = 'chip="Ascend910-4",logic_id="0",phy_id="4"';
const C1 = 'chip="Ascend910-5",logic_id="1",phy_id="5"';

describe('issue [J] item 2 per-chip series', () => {
  test('health, network health and manual separation per chip, labelled chip / logic_id / phy_id', async () => {
    const { m, registry } = setup();
    const text = await registry.metrics();
    m.close();
    expect(series(text, 'ascend_npu_agent_chip_health')).toEqual([
      `ascend_npu_agent_chip_health{${C0}} 1`,
      `ascend_npu_agent_chip_health{${C1}} 1`,
    ]);
    expect(text).toContain(`ascend_npu_agent_chip_network_health{${C1}} 1`);
    expect(text).toContain(`ascend_npu_agent_chip_manually_separated{${C0}} 0`);
  });

  test("a fault changes the chip's own series: health 0, its level, its code with the fault map level", async () => {
    const { m, registry, store } = setup();
    store.applyEvents([{ logicId: 1, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    const text = await registry.metrics();
    m.close();
    expect(text).toContain(`ascend_npu_agent_chip_health{${C1}} 0`);
    expect(text).toContain(`ascend_npu_agent_chip_health{${C0}} 1`);
    expect(text).toContain(`ascend_npu_agent_chip_fault_level{${C1},level="SeparateNPU"} 1`);
    expect(series(text, 'ascend_npu_agent_chip_fault_code')).toEqual([
      `ascend_npu_agent_chip_fault_code{${C1},code="80E18402",level="SeparateNPU"} 1`,
    ]);
  });

  test('fault_level: exactly one series per chip, the old one removed when the level changes', async () => {
    const { m, registry, store } = setup();
    expect(series(await registry.metrics(), 'ascend_npu_agent_chip_fault_level')).toEqual([
      `ascend_npu_agent_chip_fault_level{${C0},level="NormalNPU"} 1`,
      `ascend_npu_agent_chip_fault_level{${C1},level="NormalNPU"} 1`,
    ]);
    store.applyEvents([{ logicId: 0, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    const text = await registry.metrics();
    m.close();
    expect(series(text, 'ascend_npu_agent_chip_fault_level').sort()).toEqual([
      `ascend_npu_agent_chip_fault_level{${C0},level="SeparateNPU"} 1`,
      `ascend_npu_agent_chip_fault_level{${C1},level="NormalNPU"} 1`,
    ]);
  });

  test('fault_code: the series goes when the code recovers', async () => {
    const { m, registry, store } = setup();
    store.applyEvents([{ logicId: 1, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    expect(series(await registry.metrics(), 'ascend_npu_agent_chip_fault_code')).toHaveLength(1);
    store.applyEvents([{ logicId: 1, code: SEPARATE, assertion: 'recover', severity: 2 }]);
    const text = await registry.metrics();
    m.close();
    expect(series(text, 'ascend_npu_agent_chip_fault_code')).toEqual([]);
    expect(text).toContain(`ascend_npu_agent_chip_health{${C1}} 1`);
  });

  test('the aggregate series stay', async () => {
    const { m, registry, store } = setup();
    store.applyEvents([{ logicId: 1, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    const text = await registry.metrics();
    m.close();
    expect(text).toContain('ascend_npu_agent_chips{scope="chip",health="Unhealthy"} 1');
    expect(text).toContain('ascend_npu_agent_chips_by_level{level="SeparateNPU"} 1');
  });
});

describe('issue [J] item 3 process metrics, build_info, registration', () => {
  test('prom-client default metrics keep their standard names (no ascend_npu_agent_ prefix)', async () => {
    const registry = new Registry();
    const m = new AgentMetrics(registry);
    const text = await registry.metrics();
    m.close();
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds']) {
      expect(text).toMatch(new RegExp(`^${name} `, 'm'));
    }
    expect(text).not.toContain('ascend_npu_agent_process_');
    expect(text).not.toContain('ascend_npu_agent_nodejs_');
  });

  test('build_info is 1 with version, node, DCMI library and chip kind; one series when the labels change', async () => {
    const registry = new Registry();
    const m = new AgentMetrics(registry, { defaultMetrics: false });
    m.setBuildInfo({ version: '1.2.3', node: 'n1', dcmiLibrary: '', chipKind: '' });
    m.setBuildInfo({ version: '1.2.3', node: 'n1', dcmiLibrary: '/lib/libdcmi.so', chipKind: 'Ascend910B' });
    const text = await registry.metrics();
    m.close();
    expect(series(text, 'ascend_npu_agent_build_info')).toEqual([
      'ascend_npu_agent_build_info{version="1.2.3",node="n1",dcmi_library="/lib/libdcmi.so",chip_kind="Ascend910B"} 1',
    ]);
  });

  test('the last registration is a timestamp; seconds_since_last_registration is gone', async () => {
    const registry = new Registry();
    const m = new AgentMetrics(registry, { defaultMetrics: false, nowSeconds: () => 1_767_225_600 });
    m.registered('huawei.com/Ascend910', true);
    m.registered('huawei.com/Ascend910', false);
    const text = await registry.metrics();
    m.close();
    expect(text).toContain(
      'ascend_npu_agent_last_registration_timestamp_seconds{resource="huawei.com/Ascend910"} 1767225600',
    );
    expect(text).not.toContain('seconds_since_last_registration');
  });

  test('kubelet_registered is 0 before kubelet, 0 while not streaming, 1 when every resource streams', async () => {
    const registry = new Registry();
    const m = new AgentMetrics(registry, { defaultMetrics: false });
    expect(series(await registry.metrics(), 'ascend_npu_agent_kubelet_registered')).toEqual([
      'ascend_npu_agent_kubelet_registered 0',
    ]);
    let status = [{ registered: true, activeStreams: 0 }];
    m.followKubelet(() => status);
    expect(await registry.metrics()).toContain('ascend_npu_agent_kubelet_registered 0');
    status = [{ registered: true, activeStreams: 1 }];
    const text = await registry.metrics();
    m.close();
    expect(text).toContain('ascend_npu_agent_kubelet_registered 1');
  });
});
