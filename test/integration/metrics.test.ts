/**
 * Issue [J] items 2-4 on the real agent (mock library, kubelet simulator, API stand-in): after a fault the chip's
 * own series change and an info log line names it; the process metrics have their standard names; build_info and
 * the registration timestamp are there. Before the fix no series named a chip and the fault wrote no info line.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { AgentSandbox, SEPARATE_CODE } from '../helpers/agent-process.js';

/** Jest bound of one test (start-up, a fault through the mock). */
const METRICS_TEST_MS = 60_000;

let sb: AgentSandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

const CHIP3 = 'chip="Ascend910-3",logic_id="3",phy_id="3"';
/** RestartNPU (faultCode.json): the offline engine resets the chip once it is idle (spec J.2). */
const RESTART_NPU = '8C03A000';

describe('issue [J] per-chip series and fault log on the real agent', () => {
  test(
    'a fault on Ascend910-3: its health, level and code series change, and an info line names it',
    async () => {
      sb = await AgentSandbox.create();
      const s = sb;
      await s.start();
      expect(await s.metrics()).toContain(`ascend_npu_agent_chip_health{${CHIP3}} 1`);
      await s.mock({ op: 'fault', logicId: 3, eventId: SEPARATE_CODE, assertion: 'occur' });
      const text = await s.untilAsync(async () => {
        const t = await s.metrics();
        return t.includes(`ascend_npu_agent_chip_health{${CHIP3}} 0`) ? t : undefined;
      }, 'chip_health of Ascend910-3 at 0');
      expect(text).toContain(`ascend_npu_agent_chip_fault_level{${CHIP3},level="SeparateNPU"} 1`);
      expect(text).toContain(
        `ascend_npu_agent_chip_fault_code{${CHIP3},code="${SEPARATE_CODE}",level="SeparateNPU"} 1`,
      );
      expect(text).toContain('ascend_npu_agent_chip_health{chip="Ascend910-2",logic_id="2",phy_id="2"} 1');
      const line = await s.until(
        () => s.agent!.logs().find((l) => l.level === 'info' && l.chip === 'Ascend910-3' && l.health === 'Unhealthy'),
        'the info line of Ascend910-3',
      );
      expect(line).toEqual(
        expect.objectContaining({ faultLevel: 'SeparateNPU', codes: [SEPARATE_CODE], rule: 'code level' }),
      );
    },
    METRICS_TEST_MS,
  );

  test(
    'standard process metrics, build_info, registration timestamp and kubelet_registered',
    async () => {
      sb = await AgentSandbox.create();
      const s = sb;
      await s.start();
      const text = await s.untilAsync(async () => {
        const t = await s.metrics();
        return /^ascend_npu_agent_kubelet_registered 1$/m.test(t) ? t : undefined;
      }, 'kubelet_registered 1');
      for (const name of [
        'process_cpu_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_eventloop_lag_seconds',
      ]) {
        expect(text).toMatch(new RegExp(`^${name} `, 'm'));
      }
      expect(text).not.toContain('ascend_npu_agent_process_');
      expect(text).toMatch(
        /^ascend_npu_agent_build_info\{version="[^"]+",node="it-node",dcmi_library="[^"]+",chip_kind="Ascend910B"\} 1$/m,
      );
      const m =
        /^ascend_npu_agent_last_registration_timestamp_seconds\{resource="huawei.com\/Ascend910"\} (\S+)$/m.exec(text);
      expect(Math.abs(Number(m?.[1]) - Date.now() / 1000)).toBeLessThan(600);
    },
    METRICS_TEST_MS,
  );

  test(
    'J.2 an offline reset: every step is an info line, and chip_reset_state follows the chip (issue [J] item 4)',
    async () => {
      sb = await AgentSandbox.create();
      const s = sb;
      await s.start(['-hotReset=2', '-resetTimePercent=5']); // the 60 s idle rule takes 3 s
      expect(await s.metrics()).toContain(`ascend_npu_agent_chip_reset_state{${CHIP3},state="idle"} 1`);
      await s.mock({ op: 'resetResult', logicId: 3, result: 'ok', bootSeconds: 0.5 });
      await s.mock({ op: 'health', logicId: 3, value: 2 }); // as the driver reports RestartNPU (J.2 confirms it)
      await s.mock({ op: 'fault', logicId: 3, eventId: RESTART_NPU, assertion: 'occur' });
      await s.untilAsync(async () => {
        const t = await s.metrics();
        return t.includes(`ascend_npu_agent_chip_reset_state{${CHIP3},state="debouncing"} 1`) ? t : undefined;
      }, 'Ascend910-3 debouncing before its reset');
      const step = await s.until(
        () => s.agent!.logs().find((l) => l.level === 'info' && l.reason === 'OfflineResetSucceeded'),
        'the reset step line',
        20_000,
      );
      expect(String(step.msg)).toMatch(/^reset step OfflineResetSucceeded: /);
      await s.until(
        () => s.agent!.logs().find((l) => l.chip === 'Ascend910-3' && l.health === 'Healthy'),
        'Ascend910-3 Healthy again in the log',
        20_000,
      );
      expect(await s.metrics()).toContain(`ascend_npu_agent_chip_reset_state{${CHIP3},state="idle"} 1`);
    },
    METRICS_TEST_MS,
  );
});
