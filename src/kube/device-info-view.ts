/**
 * The device-info {@link DeviceInfoView} (spec H.3) as a projection of the store's snapshot: levels, per-code levels
 * of the fault map (`GetFaultType([code])` = the code's own level raised by the scope's frequency/duration/reason
 * level), the reset layer's filter and `-Recovering` all come from the snapshot; this only maps them and adds the
 * scope of each upgrade reason.
 */
import { isNetworkCode, parseHexCode, type FaultLevel } from '../faults/index.js';
import type { RunMode } from '../core/chips.js';
import type { ChipState } from '../state/store.js';
import type {
  DeviceInfoChip,
  DeviceInfoView,
  FaultScopeView,
  ShareCopyView,
  UpgradeReasonView,
} from './device-info.js';

/** Node-wide facts and extra inputs of the view. */
export interface DeviceInfoViewOptions {
  readonly runMode: RunMode;
  readonly resourceName: string;
  readonly faultKey?: string;
  readonly superPodId: number;
  readonly serverIndex: number;
  readonly rackId?: number;
  /** Public-name replacement (spec L.6); identity by default. */
  readonly publicName?: (name: string) => string;
  /** Chip is in an active pod's device annotation (spec H.3); default: the snapshot's `podUsed`. */
  readonly podUsed?: (logicId: number) => boolean;
  /** Other H.3 exclusions (autoStowing `-Recover` label, vNPU, soft share). */
  readonly withheld?: (logicId: number) => boolean;
  /** 910A3/A5 switch faults (L.9). */
  readonly switchInfoCfg?: () => string | undefined;
  /** 310P/310B share mode (spec B.3): copies per chip; 1 or absent = no copies. */
  readonly shareCount?: number;
  /** Share mode: the device names active pods hold (their device annotations), inner or public spelling. */
  readonly namesInUse?: () => ReadonlySet<string>;
  /**
   * 310P mixed insert (spec B.3): each chip's device type by logic id. As upstream, the health and fault lists name
   * the chip `<type>-<phy>` (`Ascend310P-V-0`) and the schedulable list `huawei.com/Ascend310P` stays empty (upstream
   * fills it from the `Ascend310P` device type, which a mixed node does not have; Volcano is off in this mode).
   */
  readonly mixedTypes?: ReadonlyMap<number, string>;
  /** A5 DPU health by NPU id (docs/super-node.md "DPU faults"); absent or undefined: the feature is off. */
  readonly dpuHealth?: () => ReadonlyMap<number, string> | undefined;
}

function copiesOf(chipName: string, o: DeviceInfoViewOptions, inUse: ReadonlySet<string>): ShareCopyView[] {
  const pub = o.publicName ?? ((n: string) => n);
  const out: ShareCopyView[] = [];
  for (let i = 0; i < (o.shareCount ?? 1); i++) {
    const inner = `${chipName}-${i}`; // shareName(type, phy, i) of the chip's own name
    const name = pub(inner);
    out.push({ name, podUsed: inUse.has(inner) || inUse.has(name) });
  }
  return out;
}

function codeOf(text: string): number | undefined {
  const p = parseHexCode(text);
  return p.ok ? p.value : undefined;
}

/** One scope's fault map: each current code with its first occurrence and its per-code level from the snapshot. */
function faultsOf(
  v: ChipState,
  level: FaultLevel,
  codes: readonly string[],
  levels: readonly FaultLevel[],
  raised: FaultLevel,
): FaultScopeView {
  return {
    level,
    codes: codes.map((code, i) => ({ code, firstSeenMs: v.faultTimes[code] ?? 0, level: levels[i] ?? raised })),
  };
}

/** Mixed insert: the chip listed under its per-type name only, off the schedulable list. */
function mixedOf(v: ChipState, o: DeviceInfoViewOptions): Partial<DeviceInfoChip> {
  const type = o.mixedTypes?.get(v.logicId);
  if (!o.mixedTypes) return {};
  const pub = o.publicName ?? ((n: string) => n);
  return { withheld: true, copies: type === undefined ? [] : [{ name: pub(`${type}-${v.phyId}`), podUsed: false }] };
}

/** The view of the snapshot's chips at `nowMs` (without `previousDeviceList`, which the publisher adds). */
export function deviceInfoViewOf(
  chips: readonly ChipState[],
  o: DeviceInfoViewOptions,
  nowMs: number,
): Omit<DeviceInfoView, 'previousDeviceList'> {
  const pub = o.publicName ?? ((n: string) => n);
  const shared = (o.shareCount ?? 1) > 1;
  const inUse = shared ? (o.namesInUse?.() ?? new Set<string>()) : new Set<string>();
  const out: DeviceInfoChip[] = chips.map((v) => {
    const reasons: UpgradeReasonView[] = v.reasons.map((r) => {
      const c = codeOf(r.fault_code);
      return { ...r, scope: c !== undefined && isNetworkCode(c) ? 'network' : 'chip' };
    });
    const withheld = o.withheld?.(v.logicId) ?? false;
    return {
      logicId: v.logicId,
      name: pub(v.name),
      health: v.health,
      networkHealth: v.networkHealth,
      podUsed: o.podUsed ? o.podUsed(v.logicId) : v.podUsed,
      ...(withheld ? { withheld } : {}),
      // spec H.3 `resetting`: an offline reset is rebooting the chip (listed in `<resource>-Recovering`)
      ...(v.recovering ? { resetting: true } : {}),
      chipFaults: faultsOf(v, v.level, v.faultCodes, v.faultCodeLevels, v.chipRaisedLevel),
      networkFaults: faultsOf(v, v.networkLevel, v.networkFaultCodes, v.networkFaultCodeLevels, v.networkRaisedLevel),
      reasons,
      manuallySeparated: v.manuallySeparated,
      ...(shared ? { copies: copiesOf(v.name, o, inUse) } : {}),
      ...mixedOf(v, o),
    };
  });
  const switchInfo = o.switchInfoCfg?.();
  const dpu = o.dpuHealth?.();
  // the NPU of a device name is the number after its last '-', modulo 8 (upstream's isNpuMatched)
  const dpuUnhealthy = dpu
    ? out.filter((c) => dpu.get(Number(/-(\d+)$/.exec(c.name)?.[1] ?? NaN) % 8) === 'Unhealthy').map((c) => c.name)
    : undefined;
  return {
    runMode: o.runMode,
    resourceName: o.resourceName,
    ...(o.faultKey !== undefined ? { faultKey: o.faultKey } : {}),
    chips: out,
    superPodId: o.superPodId,
    serverIndex: o.serverIndex,
    ...(o.rackId !== undefined ? { rackId: o.rackId } : {}),
    updateTimeSec: Math.floor(nowMs / 1000),
    ...(switchInfo !== undefined ? { switchInfoCfg: switchInfo } : {}),
    ...(dpuUnhealthy !== undefined ? { dpuUnhealthy } : {}),
  };
}
