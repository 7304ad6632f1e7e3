/**
 * DPU health of one NPU (docs/super-node.md "DPU faults"; upstream `pkg/server/dpu.go`): every one of its DPUs not
 * `up` → Unhealthy; exactly one not `up` (with more than one DPU) → DpuSubHealthy; otherwise, or without a DPU
 * entry, Healthy. The NPU of a device name is the number after its last `-`, modulo 8. Pure.
 */
import { NPU_COUNT_PER_NODE } from './discovery.js';

export type DpuHealth = 'Healthy' | 'Unhealthy' | 'DpuSubHealthy';

/** The DPU health of an NPU from its DPUs' operstates (a missing state counts as `down`). */
export function npuDpuHealth(dpus: readonly string[] | undefined, operstate: ReadonlyMap<string, string>): DpuHealth {
  if (!dpus || dpus.length === 0) return 'Healthy';
  const faulty = dpus.filter((d) => operstate.get(d) !== 'up').length;
  if (faulty === dpus.length) return 'Unhealthy';
  if (faulty === 1) return 'DpuSubHealthy';
  return 'Healthy';
}

/** The NPU id of a device name (`npu-12` → 4), or undefined. */
export function npuOfDeviceName(name: string): number | undefined {
  const i = name.lastIndexOf('-');
  if (i < 0) return undefined;
  const tail = name.slice(i + 1);
  if (!/^\d{1,9}$/.test(tail)) return undefined;
  return Number(tail) % NPU_COUNT_PER_NODE;
}
