/**
 * The declared surface of the native addon `build/Release/dcmi_addon.node` (native/dcmi/dcmi_addon.cc).
 *
 * This module is the only place that loads the `.node` file; everything else imports its types through
 * `src/dcmi/dcmi.ts`. The addon is deliberately thin (architecture §2): it marshals arguments, calls the
 * C function, and returns plain values or throws a {@link NativeDcmiError}. Range checks of spec
 * dcmi-abi.md §2.2 and every decision live in TypeScript.
 *
 * Error convention: every method throws (or, for the asynchronous ones, rejects with) an `Error` whose
 * `code` is the numeric DCMI return code (or -99998 when the symbol is missing from the library,
 * -99999 when the library is not open / was closed) and whose `fn` is the C function name.
 * A wrong JavaScript argument type throws a `TypeError` without calling the library.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { PROJECT_ROOT } from '../core/paths.js';

/** The error object the addon throws. */
export interface NativeDcmiError extends Error {
  code: number;
  fn: string;
}

/** `struct dcmi_chip_info` / `_v2` with the 32-byte fields cut at the first NUL (dcmi-abi.md §4.2). */
export interface NativeChipInfo {
  chipType: string;
  chipName: string;
  chipVer: string;
  aicoreCnt: number;
  /** v2 only */
  npuName?: string;
}

export interface NativeBoardInfo {
  boardId: number;
  pcbId: number;
  bomId: number;
  slotId: number;
}

/** `struct dcmi_ip_addr` as raw bytes (16 bytes, IPv4 in the first 4) plus its type. */
export interface NativeIpAddr {
  bytes: Buffer;
  ipType: number;
}

export interface NativePcieInfo {
  venderId: number;
  subVenderId: number;
  deviceId: number;
  subDeviceId: number;
  domain: number;
  busId: number;
  devId: number;
  funcId: number;
}

/** `struct dcmi_elabel_info` of `dcmiv2_get_device_elabel_info` (native/dcmi/dcmi_abi_v2.h). */
export interface NativeElabelInfo {
  productName: string;
  model: string;
  manufacturer: string;
  manufacturerDate: string;
  serialNumber: string;
}

export interface NativeHbmInfo {
  /** MiB */
  memorySize: number;
  freq: number;
  memoryUsage: number;
  temp: number;
  bandwidthUtilRate: number;
}

export interface NativeProcessInfo {
  /** `*proc_num` exactly as returned (range-checked in TS) */
  procNum: number;
  /** the first min(procNum, 32) entries */
  processes: { pid: number; memBytes: number }[];
}

/** One `struct dcmi_dms_fault_event`, copied on the library's thread (dcmi-abi.md §5.2, §5.4). */
export interface NativeFaultEvent {
  kind: 'fault';
  eventId: number;
  /** `deviceid`: the logic ID */
  deviceId: number;
  nodeType: number;
  nodeId: number;
  subNodeType: number;
  subNodeId: number;
  severity: number;
  /** 0 recovery, 1 occurrence, 2 one-off notice */
  assertion: number;
  eventSerialNum: number;
  notifySerialNum: number;
  /** seconds since the epoch, as the driver filled it */
  alarmRaisedTime: number;
  eventName: string;
  /** the 32 raw bytes of `additional_info` */
  additionalInfo: Buffer;
  /** `process.hrtime.bigint()` clock (CLOCK_MONOTONIC ns) when the trampoline ran on the library's thread */
  trampolineNs: bigint;
}

/**
 * Emitted instead of events that did not fit the bounded queue between the library's thread and JS.
 * Nothing is dropped silently: the chips named here must be re-read from DCMI (re-sync).
 */
export interface NativeOverflowNotice {
  kind: 'overflow';
  /** logic IDs (the event's `deviceid`) whose events were not delivered, ascending */
  logicIds: number[];
  /** how many events were not delivered since the previous notice */
  dropped: number;
}

export type NativeFaultRecord = NativeFaultEvent | NativeOverflowNotice;

export interface NativeSubscribeOptions {
  /** events allowed in flight between the library's thread and JS before overflow (default 65536) */
  maxQueue?: number;
}

/** One opened `libdcmi.so`. The C trampoline of the fault callback is process-wide (DCMI passes no context). */
export interface NativeDcmiLibrary {
  /** the path given to the constructor */
  readonly path: string;
  /** the §3 functions (bound rows) that `dlsym` did not find; calling one throws code -99998 */
  missingSymbols(): string[];
  /** Releases the fault subscription (if this library owns it) and `dlclose`s. Idempotent. */
  close(): void;
  readonly closed: boolean;

  init(): Promise<void>;
  /** `*card_num` as returned and the first min(card_num, 64) entries of the 64-entry buffer */
  getCardList(): { cardNum: number; cards: number[] };
  getDeviceNumInCard(cardId: number): number;
  getDeviceLogicId(cardId: number, deviceId: number): number;
  getPhyIdFromLogicId(logicId: number): number;
  getLogicIdFromPhyId(phyId: number): number;
  getCardIdDeviceIdFromLogicId(logicId: number): { cardId: number; deviceId: number };
  getChipInfoV2(cardId: number, deviceId: number): NativeChipInfo;
  getChipInfo(cardId: number, deviceId: number): NativeChipInfo;
  getBoardInfo(cardId: number, deviceId: number): NativeBoardInfo;
  getMainboardId(cardId: number, deviceId: number): number;
  getDcmiVersion(): string;
  getProductType(cardId: number, deviceId: number): string;
  getDeviceHealth(cardId: number, deviceId: number): number;
  /** `*error_count` as returned and the non-zero entries of the 128-entry list, in order */
  getDeviceErrorCodes(cardId: number, deviceId: number): { errorCount: number; codes: number[] };
  /**
   * `dcmi_subscribe_fault_event(cardId, deviceId, filter, trampoline)`; `filter` all-zero when omitted.
   * The listener runs on the JS thread; the thread-safe function is `Unref`'d. Subscribing again
   * replaces the listener (the library is called again). Throws when the library returns non-zero.
   */
  subscribeFaultEvents(
    cardId: number,
    deviceId: number,
    listener: (record: NativeFaultRecord) => void,
    filter?: { filterFlag?: number; eventId?: number; severity?: number; nodeType?: number },
    options?: NativeSubscribeOptions,
  ): void;
  /** Stops delivering events to JS (releases the thread-safe function). Idempotent. */
  unsubscribeFaultEvents(): void;
  /** counters of the JS delivery path (for metrics and the bench) */
  faultDeliveryStats(): { delivered: number; dropped: number; inFlight: number };
  getDeviceIp(
    cardId: number,
    deviceId: number,
    portType: number,
    portId: number,
    ipv6: boolean,
  ): {
    ip: NativeIpAddr;
    mask: NativeIpAddr;
  };
  getDeviceType(cardId: number, deviceId: number): number;
  /** `dcmi_get_device_info`: `buf` is passed in (its length is `*size`) and filled in place; returns `*size` out */
  getDeviceInfo(cardId: number, deviceId: number, mainCmd: number, subCmd: number, buf: Buffer): number;
  /**
   * `dcmi_create_vdevice` (dcmi-abi.md §4.6): `vdev_id` / `vfg_id` 0xFFFFFFFF (the driver chooses) unless given, the
   * template name NUL padded; returns `struct dcmi_create_vdev_out`.
   */
  createVdevice(
    cardId: number,
    deviceId: number,
    templateName: string,
    vdevId?: number,
    vfgId?: number,
  ): { vdevId: number; pcieBus: number; pcieDevice: number; pcieFunc: number; vfgId: number };
  /** `dcmi_set_destroy_vdevice` (dcmi-abi.md §4.6), one attempt. */
  destroyVdevice(cardId: number, deviceId: number, vdevId: number): void;
  getNpuWorkMode(cardId: number): number;
  setDeviceReset(cardId: number, deviceId: number, channel: number): Promise<void>;
  getOutbandChannelState(cardId: number, deviceId: number): Promise<number>;
  preResetSoc(cardId: number, deviceId: number): Promise<void>;
  rescanSoc(cardId: number, deviceId: number): Promise<void>;
  getNetdevBrotherDevice(cardId: number, deviceId: number): number;
  /** output pre-set to DCMI_BOOT_STATUS_FINISH (3) as upstream does (dcmi-abi.md §4.7) */
  getDeviceBootStatus(cardId: number, deviceId: number): Promise<number>;
  getDeviceResourceInfo(cardId: number, deviceId: number): NativeProcessInfo;
  getPcieInfoV2(cardId: number, deviceId: number): NativePcieInfo;
  /** `*length` as returned and the 33-byte buffer cut at min(length, 32) */
  getAffinityCpuInfo(cardId: number, deviceId: number): { length: number; text: string };
  getHbmInfo(cardId: number, deviceId: number): NativeHbmInfo;
  /** `soc_die[5]` of `dcmi_get_device_die_v2` (dcmi-abi.md §4.8), each word unsigned */
  getDeviceDie(cardId: number, deviceId: number, dieType: number): number[];
  getUtilizationRate(cardId: number, deviceId: number, inputType: number): number;
  setMultiDiePolicy(policy: number): void;
  getDeviceNetworkHealth(cardId: number, deviceId: number): Promise<number>;
  /**
   * Mock library only (optional symbol `mock_dcmi_configure`): the scenario file and control-socket path
   * the next `init()` uses instead of `ASCEND_MOCK_SCENARIO` / `ASCEND_MOCK_CONTROL` (`null` = use the
   * environment). Needed because jest's `process.env` does not reach native `getenv`. Throws -99998 on a
   * library without that symbol (e.g. the vendor's).
   */
  mockConfigure(scenarioPath: string | null, controlPath: string | null): void;

  // ---- The second API generation (`dcmiv2_*`, Ascend910A5; native/dcmi/dcmi_abi_v2.h). One `devId` (the chip's
  // logic ID, as upstream devmanager_v2.go passes it) replaces (cardId, deviceId); marshalling as the v1 method.
  /** the `dcmiv2_*` functions that `dlsym` did not find; calling one throws code -99998 */
  missingSymbolsV2(): string[];
  v2Init(): Promise<void>;
  /** `dcmiv2_get_device_list(list, &num, 64)`: `*device_num` as returned and the first min(num, 64) entries */
  v2GetDeviceList(): { deviceNum: number; devices: number[] };
  v2GetAllDeviceCount(): number;
  v2GetPhyIdFromDevId(devId: number): number;
  v2GetDevIdFromPhyId(phyId: number): number;
  v2GetDeviceType(devId: number): number;
  v2GetChipInfo(devId: number): NativeChipInfo;
  v2GetBoardInfo(devId: number): NativeBoardInfo;
  v2GetMainboardId(devId: number): number;
  v2GetDcmiVersion(): string;
  v2GetDeviceHealth(devId: number): number;
  v2GetDeviceErrorCodes(devId: number): { errorCount: number; codes: number[] };
  v2GetDeviceIp(
    devId: number,
    portType: number,
    portId: number,
    ipv6: boolean,
  ): {
    ip: NativeIpAddr;
    mask: NativeIpAddr;
  };
  v2GetDeviceInfo(devId: number, mainCmd: number, subCmd: number, buf: Buffer): number;
  v2ResetDevice(devId: number, channel: number): Promise<void>;
  v2GetDeviceBootStatus(devId: number): Promise<number>;
  v2GetOutbandChannelState(devId: number): Promise<number>;
  v2PreResetDevice(devId: number): Promise<void>;
  v2RescanDevice(devId: number): Promise<void>;
  v2GetProcMemInfo(devId: number): NativeProcessInfo;
  v2GetDeviceDieId(devId: number, dieType: number): number[];
  v2GetPcieInfo(devId: number): NativePcieInfo;
  v2GetHbmInfo(devId: number): NativeHbmInfo;
  v2GetUtilizationRate(devId: number, inputType: number): number;
  v2GetDeviceNetworkHealth(devId: number): Promise<number>;
  /** `struct dcmi_elabel_info`: the five 256-byte strings cut at their first NUL */
  v2GetElabelInfo(devId: number): NativeElabelInfo;
  /** `dcmiv2_get_urma_device_cnt`: the chip's URMA device count */
  v2GetUrmaDeviceCount(devId: number): number;
  /** `dcmiv2_get_eid_list_by_urma_dev_index` (list of 32): the device's EIDs as 32 lower-case hex digits each */
  v2GetUrmaEidList(devId: number, urmaIndex: number): string[];
  /** `dcmiv2_subscribe_fault_event(devId, filter, trampoline)` (devId -1 = every chip); otherwise as the v1 one */
  v2SubscribeFaultEvents(
    devId: number,
    listener: (record: NativeFaultRecord) => void,
    filter?: { filterFlag?: number; eventId?: number; severity?: number; nodeType?: number },
    options?: NativeSubscribeOptions,
  ): void;
}

/** One `LqDcmiEvent` of the 910A3 switch library (native/dcmi/lingqu_abi.h, dcmi-abi.md §8). */
export interface NativeSwitchEvent {
  /** the alarm id */
  eventType: number;
  /** the fault id; 0xFFFFFFFF = none */
  subType: number;
  peerPortDevice: number;
  peerPortId: number;
  switchChipId: number;
  switchPortId: number;
  severity: number;
  /** 0 recover, 1 occur, 2 once */
  assertion: number;
  eventSerialNum: number;
  notifySerialNum: number;
  alarmRaisedTime: number;
}

/** `liblingqu-dcmi.so` opened by the addon (native/dcmi/lingqu_addon.cc). */
export interface NativeLingquLibrary {
  /** the symbols dlsym did not find (each then answers -99998) */
  missingSymbols(): string[];
  /** `lq_dcmi_init()`'s return code */
  init(): number;
  /** `lq_dcmi_subscribe_fault_event` with a zero filter; the listener gets batches and a count of dropped events */
  subscribe(listener: (events: NativeSwitchEvent[], dropped: number) => void): number;
  /** stops delivering events (the library has no unsubscribe call) */
  unsubscribe(): void;
  /** `lq_dcmi_get_fault_info(128, …)` on the libuv pool */
  queryFaults(): Promise<{ rc: number; count: number; events: NativeSwitchEvent[] }>;
}

export interface DcmiAddon {
  /** dlopen(path, RTLD_LAZY | RTLD_GLOBAL); throws code -99999 with the dlerror text when it cannot be opened */
  DcmiLibrary: new (libraryPath: string) => NativeDcmiLibrary;
  /** the 910A3 switch library, opened the same way (spec L.9) */
  LingquLibrary: new (libraryPath: string) => NativeLingquLibrary;
  /** the bound function names, in dcmi-abi.md §3 order */
  boundFunctions: readonly string[];
  /** the bound `dcmiv2_*` function names (native/dcmi/dcmi_abi_v2.h order) */
  boundFunctionsV2: readonly string[];
}

/** Loads the addon (once per process: Node caches native modules). */
export function loadAddon(): DcmiAddon {
  const require = createRequire(import.meta.url);
  return require(path.join(PROJECT_ROOT, 'build', 'Release', 'dcmi_addon.node')) as DcmiAddon;
}
