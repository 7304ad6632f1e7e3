import { describe, expect, test } from '@jest/globals';
import { Registry } from 'prom-client';
import { AgentMetrics } from '../../src/observability/metrics.js';
import type { ResetStatus } from '../../src/reset/reset-runtime.js';

/** A node in the middle of an L5 episode of task job1 (chips 0-7) with chip 9 being reset by the offline engine. */
function midReset(): ResetStatus {
  return {
    mode: 1,
    online: {
      tasks: [
        {
          task: 'job1',
          namespace: 'default',
          state: 'waitingBoot',
          since: 1_767_225_600_000,
          policy: 'reset',
          initialPolicy: 'reset',
          rankChips: [0, 1, 2, 3, 4, 5, 6, 7],
        },
        { task: 'job2', namespace: 'team', state: 'idle', since: 0 },
      ],
      chips: [
        { logicId: 0, state: 'booting', task: 'job1', resetCount: 1 },
        { logicId: 1, state: 'inReset', task: 'job1' },
        { logicId: 8, state: 'normal' },
      ],
      healthOverrides: { healthy: [0], networkHealthy: [0, 1] },
    },
    offline: [
      { logicId: 0, state: 'idle', tokens: 3 },
      { logicId: 9, state: 'waitingBoot', tokens: 2, group: [8, 9] },
    ],
    resetting: { '0': 'job1', '1': 'job1', '8': 'offline', '9': 'offline' },
    tasks: ['job1', 'job2'],
    problems: [],
  };
}

/** Chips 0..9 with phy id 9 - logic id, so that the chip name (by phy id) and the logic id differ. */
const CHIPS = Array.from({ length: 10 }, (_, i) => ({ logicId: i, phyId: 9 - i }));

/** The chip labels of logic id `id` as the text format writes them (issue [J] item 2). */
function chip(id: number): string {
  const phy = CHIPS[id]!.phyId;
  return `chip="Ascend910-${phy}",logic_id="${id}",phy_id="${phy}"`;
}

function metrics(): { m: AgentMetrics; registry: Registry } {
  const registry = new Registry();
  const m = new AgentMetrics(registry, { defaultMetrics: false });
  m.attachChips('Ascend910', CHIPS);
  return { m, registry };
}

describe('reset metrics (issue [F] item 4)', () => {
  test('§3.9 task state: 1 for the current state of each task, no series for the other states', async () => {
    const { m, registry } = metrics();
    m.observeReset(midReset());
    const text = await registry.metrics();
    m.close();
    expect(text).toContain('ascend_npu_agent_reset_task_state{task="job1",namespace="default",state="waitingBoot"} 1');
    expect(text).toContain('ascend_npu_agent_reset_task_state{task="job2",namespace="team",state="idle"} 1');
    expect(text).not.toMatch(/reset_task_state\{task="job1",namespace="default",state="(?!waitingBoot)/);
  });

  test('§3.9 / §J.2 chip state per engine, the chip named as everywhere else (issue [J] item 2)', async () => {
    const { m, registry } = metrics();
    m.observeReset(midReset());
    const text = await registry.metrics();
    m.close();
    expect(text).toContain(`ascend_npu_agent_reset_chip_state{${chip(0)},engine="online",state="booting"} 1`);
    expect(text).toContain(`ascend_npu_agent_reset_chip_state{${chip(8)},engine="online",state="normal"} 1`);
    expect(text).toContain(`ascend_npu_agent_reset_chip_state{${chip(0)},engine="offline",state="idle"} 1`);
    expect(text).toContain(`ascend_npu_agent_reset_chip_state{${chip(9)},engine="offline",state="waitingBoot"} 1`);
  });

  test('issue [J] item 2 chip_reset_state: one series per chip, the online state during an episode, else the offline', async () => {
    const { m, registry } = metrics();
    m.observeReset(midReset());
    const text = await registry.metrics();
    m.close();
    const series = text.split('\n').filter((l) => l.startsWith('ascend_npu_agent_chip_reset_state{'));
    expect(series).toHaveLength(CHIPS.length);
    expect(text).toContain(`ascend_npu_agent_chip_reset_state{${chip(0)},state="booting"} 1`);
    expect(text).toContain(`ascend_npu_agent_chip_reset_state{${chip(1)},state="inReset"} 1`);
    expect(text).toContain(`ascend_npu_agent_chip_reset_state{${chip(8)},state="idle"} 1`); // online "normal"
    expect(text).toContain(`ascend_npu_agent_chip_reset_state{${chip(9)},state="waitingBoot"} 1`);
    expect(text).toContain(`ascend_npu_agent_chip_reset_state{${chip(5)},state="idle"} 1`);
  });

  test('issue [J] item 2 chip_reset_state: every chip idle before the reset layer runs; the old state goes', async () => {
    const { m, registry } = metrics();
    expect(await registry.metrics()).toContain(`ascend_npu_agent_chip_reset_state{${chip(3)},state="idle"} 1`);
    let status = midReset();
    m.followReset(() => status);
    expect(await registry.metrics()).toContain(`ascend_npu_agent_chip_reset_state{${chip(9)},state="waitingBoot"} 1`);
    status = { ...status, offline: [{ logicId: 9, state: 'idle', tokens: 2 }] };
    const text = await registry.metrics();
    m.close();
    expect(text).toContain(`ascend_npu_agent_chip_reset_state{${chip(9)},state="idle"} 1`);
    expect(text).not.toContain(`ascend_npu_agent_chip_reset_state{${chip(9)},state="waitingBoot"}`);
  });

  test('§J.2 offline tokens left per chip', async () => {
    const { m, registry } = metrics();
    m.observeReset(midReset());
    const text = await registry.metrics();
    m.close();
    expect(text).toContain(`ascend_npu_agent_reset_tokens{${chip(0)}} 3`);
    expect(text).toContain(`ascend_npu_agent_reset_tokens{${chip(9)}} 2`);
  });

  test('D4 chips held in the coordinator, by owner, and the -hotReset mode', async () => {
    const { m, registry } = metrics();
    m.observeReset(midReset());
    const text = await registry.metrics();
    m.close();
    expect(text).toContain('ascend_npu_agent_reset_chips_held{owner="job1"} 2');
    expect(text).toContain('ascend_npu_agent_reset_chips_held{owner="offline"} 2');
    expect(text).toContain('ascend_npu_agent_reset_mode{online="true"} 1');
  });

  test('a state that ended leaves no series behind', async () => {
    const { m, registry } = metrics();
    m.observeReset(midReset());
    const after: ResetStatus = {
      ...midReset(),
      online: { tasks: [], chips: [], healthOverrides: { healthy: [], networkHealthy: [] } },
      offline: [{ logicId: 9, state: 'idle', tokens: 2 }],
      resetting: {},
    };
    m.observeReset(after);
    const text = await registry.metrics();
    m.close();
    expect(text).not.toContain('reset_task_state{');
    expect(text).not.toContain('state="waitingBoot"');
    expect(text).toContain(`ascend_npu_agent_reset_chip_state{${chip(9)},engine="offline",state="idle"} 1`);
    expect(text).not.toContain('reset_chips_held{');
  });

  test('followReset: the gauges are read from the source at every scrape', async () => {
    const { m, registry } = metrics();
    let status = midReset();
    m.followReset(() => status);
    expect(await registry.metrics()).toContain(
      'reset_task_state{task="job1",namespace="default",state="waitingBoot"} 1',
    );
    status = {
      ...status,
      online: { ...status.online!, tasks: [{ task: 'job1', namespace: 'default', state: 'recovered', since: 1 }] },
    };
    const text = await registry.metrics();
    m.close();
    expect(text).toContain('reset_task_state{task="job1",namespace="default",state="recovered"} 1');
    expect(text).not.toContain('reset_task_state{task="job1",namespace="default",state="waitingBoot"}');
  });

  test('followReset: a source that throws keeps the last values and /metrics still answers', async () => {
    const { m, registry } = metrics();
    m.observeReset(midReset());
    m.followReset(() => {
      throw new Error('boom');
    });
    const text = await registry.metrics();
    m.close();
    expect(text).toContain('reset_task_state{task="job1",namespace="default",state="waitingBoot"} 1');
  });

  test('mode -1: the offline engine is still listed, online="false"', async () => {
    const { m, registry } = metrics();
    m.observeReset({
      mode: -1,
      online: null,
      offline: [{ logicId: 0, state: 'idle', tokens: 3 }],
      resetting: {},
      tasks: [],
      problems: [],
    });
    const text = await registry.metrics();
    m.close();
    expect(text).toContain('ascend_npu_agent_reset_mode{online="false"} -1');
    expect(text).toContain(`ascend_npu_agent_reset_chip_state{${chip(0)},engine="offline",state="idle"} 1`);
  });

  test('Events: offline attempts and results are counted per reset that ends', async () => {
    const { m, registry } = metrics();
    m.resetEvent({ reason: 'OfflineResetSucceeded' });
    m.resetEvent({ reason: 'OfflineResetFailed' });
    m.resetEvent({ reason: 'OfflineResetLimitReached' });
    const text = await registry.metrics();
    m.close();
    expect(text).toContain('ascend_npu_agent_reset_attempts_total{engine="offline"} 2');
    expect(text).toContain('ascend_npu_agent_reset_results_total{engine="offline",result="succeeded"} 1');
    expect(text).toContain('ascend_npu_agent_reset_results_total{engine="offline",result="failed"} 1');
    expect(text).toContain('ascend_npu_agent_reset_warnings_total{engine="offline",reason="limit_reached"} 1');
  });

  test('Events: online episodes started, their outcomes and warnings', async () => {
    const { m, registry } = metrics();
    for (const reason of ['ResetStarted', 'ResetStarted', 'ResetRecovered', 'ResetFailed', 'ResetChipFailed']) {
      m.resetEvent({ reason });
    }
    const text = await registry.metrics();
    m.close();
    expect(text).toContain('ascend_npu_agent_reset_attempts_total{engine="online"} 2');
    expect(text).toContain('ascend_npu_agent_reset_results_total{engine="online",result="recovered"} 1');
    expect(text).toContain('ascend_npu_agent_reset_results_total{engine="online",result="failed"} 1');
    expect(text).toContain('ascend_npu_agent_reset_warnings_total{engine="online",reason="chip_failed"} 1');
  });

  test('Events that are not reset Events (or inherited names) count nothing', async () => {
    const { m, registry } = metrics();
    m.resetEvent({ reason: 'FaultOccurred' });
    m.resetEvent({ reason: 'toString' });
    const text = await registry.metrics();
    m.close();
    expect(text).toContain('ascend_npu_agent_reset_attempts_total{engine="online"} 0');
    expect(text).toContain('ascend_npu_agent_reset_attempts_total{engine="offline"} 0');
    expect(text).not.toContain('reset_results_total{');
  });
});
