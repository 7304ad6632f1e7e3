/**
 * Device health for kubelet (`DRAResourceHealth` v1 `NodeWatchResources`, KEP-4680; issue [DRA] item 3): every
 * device of this node's pool with its chip's health, computed from the store's snapshot. The devices are the whole
 * chips (`ascend910-3`) and every other device a prepared claim holds (a vNPU partition carries the health of its
 * chip), so whatever a pod got shows in its status. A device is HEALTHY when its chip is Healthy and not being
 * reset; the message names the level, the chip's fault codes and the network health (bounded to kubelet's 1024).
 */
import { draChipName } from '../core/dra-devices.js';
import type { ChipState, NodeState } from '../state/store.js';

/** Kubelet's limit on a health message (longer ones it truncates). */
export const MAX_HEALTH_MESSAGE = 1024;

/** dra-health v1 `HealthStatus`. */
export type HealthStatusName = 'HEALTHY' | 'UNHEALTHY' | 'UNKNOWN';

/** One device's health as it goes on the wire (without the time). */
export interface DeviceHealthReport {
  readonly poolName: string;
  readonly deviceName: string;
  readonly health: HealthStatusName;
  readonly message: string;
}

function messageOf(chip: ChipState): string {
  const parts = [`level ${chip.level}`];
  if (chip.recovering) parts.push('being reset');
  if (chip.manuallySeparated) parts.push('manually separated');
  if (chip.faultCodes.length > 0) parts.push(`codes ${chip.faultCodes.join(',')}`);
  parts.push(`network ${chip.networkHealth}`);
  const text = parts.join('; ');
  return text.length > MAX_HEALTH_MESSAGE ? `${text.slice(0, MAX_HEALTH_MESSAGE - 3)}...` : text;
}

/** The health of one chip's devices. */
function statusOf(chip: ChipState): HealthStatusName {
  return chip.health === 'Healthy' && !chip.recovering ? 'HEALTHY' : 'UNHEALTHY';
}

/** Every device's health in `state` (whole chips in chip order, then claimed devices by name), each once. */
export function healthReport(state: NodeState, poolName: string): DeviceHealthReport[] {
  const byLogic = new Map(state.chips.map((c) => [c.logicId, c]));
  const out: DeviceHealthReport[] = [];
  const seen = new Set<string>();
  const add = (deviceName: string, chip: ChipState): void => {
    if (seen.has(deviceName)) return;
    seen.add(deviceName);
    out.push({ poolName, deviceName, health: statusOf(chip), message: messageOf(chip) });
  };
  for (const c of state.chips) add(draChipName(state.node.chipKind, c.phyId), c);
  const claimed = state.draClaims
    .flatMap((h) => h.devices)
    .sort((a, b) => (a.device < b.device ? -1 : a.device > b.device ? 1 : 0));
  for (const d of claimed) {
    const chip = byLogic.get(d.logicId);
    if (chip) add(d.device, chip);
  }
  return out;
}

/** A compact key of a report: a new one is sent only when it differs (on change only). */
export function reportKey(report: readonly DeviceHealthReport[]): string {
  return report.map((r) => `${r.deviceName}\t${r.health}\t${r.message}`).join('\n');
}
