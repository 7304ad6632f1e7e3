/**
 * Shared vocabulary of the reset engines (spec hot-reset.md, device-plugin.md §J): the ports through which the
 * online (task-aware, hot-reset.md §3) and offline (idle ring, §J.2 / hot-reset.md §4.4) engines reach DCMI, the
 * Kubernetes API and the state store, and the plain data they exchange. Nothing here has behaviour; every engine
 * receives its ports and its clock from the composition root (architecture §2).
 */
import type { FaultLevel } from '../faults/levels.js';
import type { ChipKind } from '../core/chips.js';

/** Policy vocabulary of hot-reset.md §1.4 (also the `Policy` / `InitialPolicy` strings of `reset.json`). */
export type ResetPolicy = 'empty' | 'ignore' | 'restart_request' | 'restart' | 'free_reset' | 'reset' | 'isolate';

/** Numeric level of a policy (§1.4): empty 0, ignore 1, restart_request 2, restart 3, free_reset 4, reset 5, isolate 6. */
export type PolicyLevel = 0 | 1 | 2 | 3 | 4 | 5 | 6;

/** `deviceUsage` of §1.3. */
export type DeviceUsage = 'train' | 'infer';

/** `-hotReset` (§1.2): -1 off; 0 and 2 the offline engine; 1 the online engine plus the offline engine. */
export type HotResetMode = -1 | 0 | 1 | 2;

/** DCMI address of one chip on this node. */
export interface ResetChip {
  readonly logicId: number;
  readonly phyId: number;
  readonly cardId: number;
  readonly deviceId: number;
}

/** What the ring rules (§1.5, §J.3) need to know about the node; fixed at start-up. */
export interface RingFacts {
  readonly kind: ChipKind;
  readonly usage: DeviceUsage;
  /** Board id of logic id 0 (§J.3). */
  readonly boardId: number;
  /** Every chip of the node, in logic-id order. */
  readonly chips: readonly ResetChip[];
  /** `dcmi_get_netdev_brother_device` of a card (910A3 only); undefined when DCMI failed. */
  readonly brotherCardOf?: (cardId: number) => number | undefined;
  /** An Atlas 300I Duo card is present (310P): the reset group is the card. */
  readonly duo?: boolean;
}

/** One chip as the reset engines see it in a state-store snapshot (the engine's own result, before any reset filter). */
export interface ChipResetView {
  readonly logicId: number;
  /** Effective level after frequency/duration rules (spec E.4). */
  readonly level: FaultLevel;
  /** The chip's current chip-scope fault codes (numbers). */
  readonly codes: readonly number[];
  /** Health as the fault engine evaluated it (no reset filter applied). */
  readonly healthy: boolean;
  /** A pod's annotation lists the chip (device-plugin.md D.2 step 5, `PodUsed`). */
  readonly podUsed: boolean;
}

/** A pod of this node, as far as the reset engines read it (§1.3). */
export interface ResetPod {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly phase: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

/**
 * The DCMI calls the engines make, by logic id. Every method rejects / throws with an error carrying a numeric
 * `code` (a DCMI return code) when the call fails.
 */
export interface ResetDcmi {
  /** `dcmi_set_device_reset` (dcmi-abi.md §4.7). */
  setDeviceReset(logicId: number, channel: 'inband' | 'outband'): Promise<void>;
  /** `dcmi_get_device_boot_status`; 16 = finished. */
  getBootStatus(logicId: number): Promise<number>;
  /** Number of processes on the chip (`dcmi_get_device_resource_info`). */
  getProcessCount(logicId: number): Promise<number>;
  /** `dcmi_get_device_network_health`; 0 OK, 6 INIT count as ready (§3.4.5). */
  getNetworkHealth(logicId: number): Promise<number>;
  /** `dcmi_get_device_health` (0 = healthy). */
  getDeviceHealth(logicId: number): Promise<number>;
  /** `dcmi_get_device_errorcode_v2` ("all error codes"). */
  getErrorCodes(logicId: number): Promise<readonly number[]>;
  /** `dcmi_get_device_outband_channel_state` (1 = usable), 910A3. */
  getOutbandChannelState(logicId: number): Promise<number>;
  /** `dcmi_pre_reset_soc`, 910A3. */
  preResetSoc(logicId: number): Promise<void>;
  /** `dcmi_rescan_soc`, 910A3. */
  rescanSoc(logicId: number): Promise<void>;
}

/** A ConfigMap as the reset ConfigMap code reads and replaces it. */
export interface ConfigMapObject {
  readonly namespace: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly data: Readonly<Record<string, string>>;
  /** Optimistic-concurrency token of the object that was read. */
  readonly resourceVersion: string;
}

/** Direct API access for the reset and fault-config ConfigMaps (§2.4: GET + UPDATE with the read resourceVersion). */
export interface ConfigMapApi {
  /** undefined = NotFound; other failures reject. */
  get(namespace: string, name: string): Promise<ConfigMapObject | undefined>;
  /** Replaces labels and data; rejects on a conflict (the resourceVersion moved) or any other failure. */
  replace(object: ConfigMapObject): Promise<void>;
}

/** The informer cache of ConfigMaps labelled `reset=true` (§2.1, §2.3). */
export interface ConfigMapCache {
  get(namespace: string, name: string): ConfigMapObject | undefined;
}

/** The `ResetInfo` node annotation (§4.3, §J.7) through a patch that also creates the key. */
export interface NodeAnnotationApi {
  /** Current value of the annotation on the Node, undefined when absent. */
  read(key: string): Promise<string | undefined>;
  write(key: string, value: string): Promise<void>;
}

/** What the engines ask of the state store and health monitor. */
export interface ChipStateHooks {
  /** Spec D.5 `SetDeviceInit`: re-read these chips' codes from DCMI (the agent's re-sync path). */
  markNeedsResync(logicIds: readonly number[]): void;
  /**
   * §3.4.1 handshake: resolves true after the next engine cycle that follows the call (a re-sync has been applied),
   * false after `timeoutMs`.
   */
  waitForCycle(timeoutMs: number): Promise<boolean>;
  /** The latest snapshot's view of every chip, logic-id order. */
  chips(): readonly ChipResetView[];
}

/** An Event the engines want recorded (reason, message), on the Node unless a pod is named. */
export interface ResetEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
  readonly pod?: { readonly namespace: string; readonly name: string };
}

/** Timings of the online engine in milliseconds (§5); the composition root derives them from GraceTolerance. */
export interface OnlineTimings {
  /** GraceTolerance.WaitProcessReadCMTime (default 30 s). */
  readonly waitProcessReadCm: number;
  /** GraceTolerance.WaitDeviceResetTime (default 150 s): per-chip boot-status limit. */
  readonly waitDeviceReset: number;
  /** GraceTolerance.WaitFaultSelfHealingTime (default 15 s). */
  readonly waitFaultSelfHealing: number;
  /** Fixed 150 polls shared by one ring (`MaxResetWaitRecoverTime`). */
  readonly maxResetWaitPolls: number;
  /** Fixed 30 s L2 window (`WaitErrorCodeCleanTime`). */
  readonly waitErrorCodeClean: number;
  /** Fixed 60 s (`WaitProcessesToZeroTime`). */
  readonly waitProcessesToZero: number;
  /** Fixed 1 s (`PollingInterval`, boot-status poll). */
  readonly pollInterval: number;
  /** Fixed 30 s (`WaitNpuReadyTime`). */
  readonly waitNpuReady: number;
  /** 3 × listWatchPeriod (§3.4.1). */
  readonly cycleHandshake: number;
  /** In-band attempts and the pauses between them (4; 5 s, 10 s, 15 s). */
  readonly resetBackoff: readonly number[];
}

/** Timings of the offline engine in milliseconds (§J.2, hot-reset.md §4.4). */
export interface OfflineTimings {
  /** Idle debounce, 60 s. */
  readonly idle: number;
  /** Boot-status limit, 180 s. */
  readonly bootLimit: number;
  /** Boot-status poll, 1 s. */
  readonly pollInterval: number;
  /** Token refill period, 6 h. */
  readonly refill: number;
  /** Tokens per chip, 3. */
  readonly tokens: number;
}
