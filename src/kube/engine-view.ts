/**
 * Adapter from the fault engine's published chip views to the device-info {@link DeviceInfoView} (spec H.3): levels
 * come from the engine; this only maps them, adds the per-code level of the fault map
 * (`GetFaultType([code])` = the code's own level raised by the scope's frequency/duration/reason level) and the
 * scope of each upgrade reason.
 */
import {
  isNetworkCode,
  mostSevere,
  parseHexCode,
  type ChipView,
  type FaultEngine,
  type FaultLevel,
} from '../faults/index.js';
import type { RunMode } from '../core/chips.js';
import type { DeviceInfoChip, DeviceInfoView, UpgradeReasonView } from './device-info.js';

/** Node-wide facts and extra inputs of the view. */
export interface EngineViewOptions {
  readonly runMode: RunMode;
  readonly resourceName: string;
  readonly faultKey?: string;
  readonly superPodId: number;
  readonly serverIndex: number;
  readonly rackId?: number;
  /** Public-name replacement (spec L.6); identity by default. */
  readonly publicName?: (name: string) => string;
  /** Chip is in an active pod's device annotation (spec H.3); default: the engine view's `podUsed`. */
  readonly podUsed?: (logicId: number) => boolean;
  /** Other H.3 exclusions (autoStowing `-Recover` label, vNPU, soft share). */
  readonly withheld?: (logicId: number) => boolean;
  /** 910A3/A5 switch faults (L.9). */
  readonly switchInfoCfg?: () => string | undefined;
}

type Levels = Pick<FaultEngine, 'codeLevel' | 'networkCodeLevel'>;

function codeOf(text: string): number | undefined {
  const p = parseHexCode(text);
  return p.ok ? p.value : undefined;
}

/** The view of all chips at `nowMs` (without `previousDeviceList`, which the publisher adds). */
export function deviceInfoViewOf(
  chips: readonly ChipView[],
  levels: Levels,
  o: EngineViewOptions,
  nowMs: number,
): Omit<DeviceInfoView, 'previousDeviceList'> {
  const pub = o.publicName ?? ((n: string) => n);
  const perCode = (text: string, network: boolean, raised: FaultLevel): FaultLevel => {
    const c = codeOf(text);
    if (c === undefined) return raised;
    return mostSevere([network ? levels.networkCodeLevel([c]) : levels.codeLevel([c]), raised]);
  };
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
      chipFaults: {
        level: v.level,
        codes: v.faultCodes.map((code) => ({
          code,
          firstSeenMs: v.faultTimes[code] ?? 0,
          level: perCode(code, false, v.chipRaisedLevel),
        })),
      },
      networkFaults: {
        level: v.networkLevel,
        codes: v.networkFaultCodes.map((code) => ({
          code,
          firstSeenMs: v.faultTimes[code] ?? 0,
          level: perCode(code, true, v.networkRaisedLevel),
        })),
      },
      reasons,
      manuallySeparated: v.manuallySeparated,
    };
  });
  const switchInfo = o.switchInfoCfg?.();
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
  };
}
