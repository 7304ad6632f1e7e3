/**
 * The typed face of the DCMI binding: range checks of spec dcmi-abi.md §2.2, the per-function conventions of §4
 * (chip-info fallback, "all error codes" with the card-drop code, IP text, struct decoding) and fault events as
 * typed objects. Every failure is a {@link DcmiError} carrying the numeric code.
 */
import { inspect } from 'node:util';
import { CARD_DROP_CODE } from '../core/chips.js';
import { loadAddon, type DcmiAddon, type NativeDcmiLibrary, type NativeFaultRecord } from './bindings.js';
import { DcmiCode, DcmiError, toDcmiError } from './errors.js';

/** dcmi-abi.md §2.2 and §4 limits. */
export const DCMI_LIMITS = {
  maxCardId: 2147483647, // exclusive
  maxDeviceId: 3,
  maxLogicId: 255,
  maxCards: 64,
  maxChipsPerCard: 4,
  maxChips: 256,
  maxErrorCodes: 128,
  maxProcesses: 32,
  maxAffinityLength: 32,
  invalidHealth: 2147483647,
  invalidBoardValue: 0xffffffff,
  /** §4.5, §6: at most 32 vNPUs per chip, ids 100..1123. */
  maxVdevs: 32,
  minVdevId: 100,
  maxVdevId: 1123,
} as const;

/** §4.7: the boot status that means "started". */
export const BOOT_STATUS_STARTED = 16;
/** §4.7 reset channels. */
export const ResetChannel = { OUTBAND: 0, INBAND: 1 } as const;
/** §4.5 device-info commands the agent uses. */
export const DeviceInfoCmd = { VDEV_MNG: 52, CHIP_INFO: 12 } as const;
/** `enum dcmi_die_type` (§4.8): NDIE 0, VDIE 1. */
export const DIE_TYPE = { NDIE: 0, VDIE: 1 } as const;
/** §4.8 utilisation input types. */
export const UtilizationType = { AI_CORE: 2, HBM: 6, VECTOR_CORE: 12, OVERALL: 13, AI_CUBE: 14 } as const;

export interface ChipAddress {
  logicId: number;
  phyId: number;
  cardId: number;
  deviceId: number;
}

export interface ChipInfo {
  chipType: string;
  chipName: string;
  chipVersion: string;
  aicoreCount: number;
  npuName: string;
}

/** One vNPU of a chip (dcmi-abi.md §4.5 main 52 sub 0). */
export interface VirtualDevice {
  vdevId: number;
  /** `query_info.name`, e.g. `vir02` */
  templateName: string;
  vfgId: number;
  /** `query_info.computing.aic` */
  aicore: number;
}

/** A chip's vNPUs and AI cores (main 52 sub 1, sub 2, sub 0). */
export interface VirtualDeviceInfo {
  aicoreTotal: number;
  aicoreFree: number;
  vdevs: VirtualDevice[];
}

export interface BoardInfo {
  boardId: number;
  pcbId: number;
  bomId: number;
  slotId: number;
}

export type FaultAssertion = 'recover' | 'occur' | 'once';

/** A fault event as the agent uses it (dcmi-abi.md §5.2). */
export interface FaultEvent {
  eventId: number;
  /** the event's `deviceid`: a logic ID */
  logicId: number;
  severity: number;
  assertion: FaultAssertion;
  /** raw assertion value (0, 1, 2; anything else is passed through for the caller to reject) */
  assertionValue: number;
  nodeType: number;
  nodeId: number;
  subNodeType: number;
  subNodeId: number;
  eventName: string;
  serial: number;
  /** host time (ms) on receipt, as upstream stamps it */
  receivedAtMs: number;
  /** CLOCK_MONOTONIC ns when the library's thread handed the event over */
  trampolineNs: bigint;
  additionalInfo: Buffer;
}

/** Events that did not fit the bounded delivery queue: these chips must be re-read from DCMI. */
export interface FaultOverflow {
  logicIds: number[];
  dropped: number;
}

export interface FaultSubscription {
  onEvent(event: FaultEvent): void;
  onOverflow(notice: FaultOverflow): void;
  /** A throw from `onEvent`/`onOverflow` lands here (default: a process warning); later events keep flowing. */
  onListenerError?(err: unknown): void;
}

const ASSERTIONS: readonly FaultAssertion[] = ['recover', 'occur', 'once'];

function checkRange(fn: string, what: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new DcmiError(DcmiCode.PARAM, fn, `${what} ${value} is outside ${min}..${max}`);
  }
}

/** One opened DCMI library. Construct with {@link Dcmi.open}. */
export class Dcmi {
  private readonly cardDeviceCache = new Map<number, { cardId: number; deviceId: number }>();

  private constructor(private readonly lib: NativeDcmiLibrary) {}

  /** Opens the library at `libraryPath` (already resolved and checked, see library-path.ts). */
  static open(libraryPath: string, addon: DcmiAddon = loadAddon()): Dcmi {
    try {
      return new Dcmi(new addon.DcmiLibrary(libraryPath));
    } catch (err) {
      throw toDcmiError(err, 'dlopen');
    }
  }

  get path(): string {
    return this.lib.path;
  }

  get closed(): boolean {
    return this.lib.closed;
  }

  /** Bound functions the library lacks (each fails with -99998 when called). */
  missingSymbols(): string[] {
    return this.lib.missingSymbols();
  }

  /** Releases the subscription and unloads the library. Idempotent. */
  close(): void {
    this.lib.close();
  }

  private call<T>(fn: string, f: () => T): T {
    try {
      return f();
    } catch (err) {
      throw toDcmiError(err, fn);
    }
  }

  private async callAsync<T>(fn: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      throw toDcmiError(err, fn);
    }
  }

  private checkCardDevice(fn: string, cardId: number, deviceId: number): void {
    checkRange(fn, 'card id', cardId, 0, DCMI_LIMITS.maxCardId - 1);
    checkRange(fn, 'device id', deviceId, 0, DCMI_LIMITS.maxDeviceId);
  }

  private invalid(fn: string, detail: string): DcmiError {
    return new DcmiError(DcmiCode.INVALID_OUTPUT, fn, detail);
  }

  /** `dcmi_init` (off the JS thread). */
  init(): Promise<void> {
    return this.callAsync('dcmi_init', () => this.lib.init());
  }

  /** Mock library only: scenario and control socket for the next `init()` (see bindings.ts). */
  mockConfigure(scenarioPath: string | null, controlPath: string | null): void {
    this.call('mock_dcmi_configure', () => this.lib.mockConfigure(scenarioPath, controlPath));
  }

  /**
   * Card IDs (§4.1): error if the count is ≤ 0 or > 64; negative entries are skipped and reported in
   * `skipped`. `complete` is false when the count differs from the number of valid IDs (start-up wait, A.2).
   */
  getCardList(): { cards: number[]; skipped: number[]; cardNum: number; complete: boolean } {
    const fn = 'dcmi_get_card_list';
    const { cardNum, cards } = this.call(fn, () => this.lib.getCardList());
    if (cardNum <= 0 || cardNum > DCMI_LIMITS.maxCards) throw this.invalid(fn, `card count ${cardNum}`);
    const valid = cards.filter((c) => c >= 0 && c < DCMI_LIMITS.maxCardId);
    const skipped = cards.filter((c) => !(c >= 0 && c < DCMI_LIMITS.maxCardId));
    return { cards: valid, skipped, cardNum, complete: valid.length === cardNum };
  }

  getDeviceNumInCard(cardId: number): number {
    const fn = 'dcmi_get_device_num_in_card';
    checkRange(fn, 'card id', cardId, 0, DCMI_LIMITS.maxCardId - 1);
    const n = this.call(fn, () => this.lib.getDeviceNumInCard(cardId));
    if (n < 1 || n > DCMI_LIMITS.maxChipsPerCard) throw this.invalid(fn, `chips on card ${cardId}: ${n}`);
    return n;
  }

  getDeviceLogicId(cardId: number, deviceId: number): number {
    const fn = 'dcmi_get_device_logic_id';
    this.checkCardDevice(fn, cardId, deviceId);
    const id = this.call(fn, () => this.lib.getDeviceLogicId(cardId, deviceId));
    if (id < 0 || id > DCMI_LIMITS.maxLogicId) throw this.invalid(fn, `logic id ${id}`);
    return id;
  }

  getPhyIdFromLogicId(logicId: number): number {
    const fn = 'dcmi_get_device_phyid_from_logicid';
    checkRange(fn, 'logic id', logicId, 0, DCMI_LIMITS.maxLogicId);
    const id = this.call(fn, () => this.lib.getPhyIdFromLogicId(logicId));
    if (id < 0 || id > DCMI_LIMITS.maxLogicId) throw this.invalid(fn, `phy id ${id}`);
    return id;
  }

  getLogicIdFromPhyId(phyId: number): number {
    const fn = 'dcmi_get_device_logicid_from_phyid';
    checkRange(fn, 'phy id', phyId, 0, DCMI_LIMITS.maxLogicId);
    const id = this.call(fn, () => this.lib.getLogicIdFromPhyId(phyId));
    if (id < 0 || id > DCMI_LIMITS.maxLogicId) throw this.invalid(fn, `logic id ${id}`);
    return id;
  }

  /** logic ID → (card, device), cached for the life of this library (§4.1, B.1). */
  getCardIdDeviceId(logicId: number): { cardId: number; deviceId: number } {
    const cached = this.cardDeviceCache.get(logicId);
    if (cached) return cached;
    const fn = 'dcmi_get_card_id_device_id_from_logicid';
    checkRange(fn, 'logic id', logicId, 0, DCMI_LIMITS.maxLogicId);
    const r = this.call(fn, () => this.lib.getCardIdDeviceIdFromLogicId(logicId));
    if (r.cardId < 0 || r.cardId >= DCMI_LIMITS.maxCardId || r.deviceId < 0 || r.deviceId > DCMI_LIMITS.maxDeviceId) {
      throw this.invalid(fn, `card ${r.cardId} device ${r.deviceId} for logic id ${logicId}`);
    }
    const value = { cardId: r.cardId, deviceId: r.deviceId };
    this.cardDeviceCache.set(logicId, value);
    return value;
  }

  /**
   * Every chip: cards in list order, devices 0..n-1 (§4.1, B.1). Any error aborts the enumeration; more than
   * 256 chips is an error.
   */
  enumerate(): ChipAddress[] {
    const chips: ChipAddress[] = [];
    for (const cardId of this.getCardList().cards) {
      const n = this.getDeviceNumInCard(cardId);
      for (let deviceId = 0; deviceId < n; deviceId++) {
        const logicId = this.getDeviceLogicId(cardId, deviceId);
        chips.push({ logicId, phyId: this.getPhyIdFromLogicId(logicId), cardId, deviceId });
        if (chips.length > DCMI_LIMITS.maxChips) throw this.invalid('dcmi_get_card_list', 'more than 256 chips');
      }
    }
    return chips;
  }

  /** Chip info: v2 first, v1 on any error (§4.2); valid when any of name/type/version is non-empty. */
  getChipInfo(cardId: number, deviceId: number): ChipInfo {
    this.checkCardDevice('dcmi_get_device_chip_info_v2', cardId, deviceId);
    let raw;
    try {
      raw = this.lib.getChipInfoV2(cardId, deviceId);
    } catch (err) {
      const e = toDcmiError(err, 'dcmi_get_device_chip_info_v2');
      if (e instanceof TypeError) throw e;
      raw = this.call('dcmi_get_device_chip_info', () => this.lib.getChipInfo(cardId, deviceId));
    }
    if (raw.chipName === '' && raw.chipType === '' && raw.chipVer === '') {
      throw this.invalid('dcmi_get_device_chip_info', `empty chip info for card ${cardId} device ${deviceId}`);
    }
    return {
      chipType: raw.chipType,
      chipName: raw.chipName,
      chipVersion: raw.chipVer,
      aicoreCount: raw.aicoreCnt,
      npuName: raw.npuName ?? '',
    };
  }

  /** Board info, valid when any field differs from 0xFFFFFFFF (§4.2). */
  getBoardInfo(cardId: number, deviceId: number): BoardInfo {
    const fn = 'dcmi_get_device_board_info';
    this.checkCardDevice(fn, cardId, deviceId);
    const b = this.call(fn, () => this.lib.getBoardInfo(cardId, deviceId));
    const values = [b.boardId, b.pcbId, b.bomId, b.slotId];
    if (values.every((v) => v === DCMI_LIMITS.invalidBoardValue)) throw this.invalid(fn, 'all fields are 0xFFFFFFFF');
    return b;
  }

  /** Main-board ID, valid when ≠ 0xFFFFFFFF (§4.2). */
  getMainboardId(cardId: number, deviceId: number): number {
    const fn = 'dcmi_get_mainboard_id';
    this.checkCardDevice(fn, cardId, deviceId);
    const id = this.call(fn, () => this.lib.getMainboardId(cardId, deviceId));
    if (id === DCMI_LIMITS.invalidBoardValue) throw this.invalid(fn, 'main-board id is 0xFFFFFFFF');
    return id;
  }

  getDcmiVersion(): string {
    return this.call('dcmi_get_dcmi_version', () => this.lib.getDcmiVersion());
  }

  getProductType(cardId: number, deviceId: number): string {
    const fn = 'dcmi_get_product_type';
    this.checkCardDevice(fn, cardId, deviceId);
    return this.call(fn, () => this.lib.getProductType(cardId, deviceId));
  }

  /** Health value; ≥ 2147483647 is invalid (§4.3). -8012 (card drop) is thrown as a DcmiError. */
  getDeviceHealth(cardId: number, deviceId: number): number {
    const fn = 'dcmi_get_device_health';
    this.checkCardDevice(fn, cardId, deviceId);
    const h = this.call(fn, () => this.lib.getDeviceHealth(cardId, deviceId));
    if (h >= DCMI_LIMITS.invalidHealth) throw this.invalid(fn, `health ${h}`);
    return h;
  }

  /**
   * "All error codes" (§4.3): the code list, then always health. An error only if the list call failed and
   * health did not return -8012; with -8012 the synthetic card-drop code 0x40F84E00 is appended.
   */
  getDeviceAllErrorCodes(cardId: number, deviceId: number): { codes: number[]; cardDropped: boolean } {
    const fn = 'dcmi_get_device_errorcode_v2';
    this.checkCardDevice(fn, cardId, deviceId);
    let codes: number[] = [];
    let listError: Error | undefined;
    try {
      const r = this.lib.getDeviceErrorCodes(cardId, deviceId);
      if (r.errorCount < 0 || r.errorCount > DCMI_LIMITS.maxErrorCodes) {
        listError = this.invalid(fn, `error count ${r.errorCount}`);
      } else {
        codes = r.codes.filter((c) => c !== 0);
      }
    } catch (err) {
      listError = toDcmiError(err, fn);
      if (listError instanceof TypeError) throw listError;
    }
    let cardDropped = false;
    try {
      this.lib.getDeviceHealth(cardId, deviceId);
    } catch (err) {
      const e = toDcmiError(err, 'dcmi_get_device_health');
      cardDropped = e instanceof DcmiError && e.isCardDrop;
    }
    if (listError && !cardDropped) throw listError;
    if (cardDropped) codes = [...codes, CARD_DROP_CODE];
    return { codes, cardDropped };
  }

  /** RoCE port 0 address as text (§4.4, C.5). */
  getDeviceIp(cardId: number, deviceId: number, ipv6 = false): string {
    const fn = 'dcmi_get_device_ip';
    this.checkCardDevice(fn, cardId, deviceId);
    const { ip } = this.call(fn, () => this.lib.getDeviceIp(cardId, deviceId, 1, 0, ipv6));
    if (!ipv6) {
      const text = [...ip.bytes.subarray(0, 4)].join('.');
      if (text === '0.0.0.0') throw this.invalid(fn, 'address 0.0.0.0');
      return text;
    }
    const groups: string[] = [];
    for (let i = 0; i < 16; i += 2) groups.push(ip.bytes.readUInt16BE(i).toString(16));
    return compressIpv6(groups);
  }

  getDeviceType(cardId: number, deviceId: number): number {
    const fn = 'dcmi_get_device_type';
    this.checkCardDevice(fn, cardId, deviceId);
    return this.call(fn, () => this.lib.getDeviceType(cardId, deviceId));
  }

  /** The raw `dcmi_get_device_info` multiplexer (§4.5): `buf` is filled in place. */
  getDeviceInfo(cardId: number, deviceId: number, mainCmd: number, subCmd: number, buf: Buffer): number {
    const fn = 'dcmi_get_device_info';
    this.checkCardDevice(fn, cardId, deviceId);
    return this.call(fn, () => this.lib.getDeviceInfo(cardId, deviceId, mainCmd, subCmd, buf));
  }

  /** AI-core count of the chip: `dcmi_soc_total_resource.computing.aic` (main 52, sub 1; B.6). */
  getTotalAicore(cardId: number, deviceId: number): number {
    const buf = Buffer.alloc(360);
    this.getDeviceInfo(cardId, deviceId, DeviceInfoCmd.VDEV_MNG, 1, buf);
    const vdevNum = buf.readUInt32LE(0);
    if (vdevNum > 32) throw this.invalid('dcmi_get_device_info', `vdev_num ${vdevNum}`);
    return buf.readFloatLE(208);
  }

  /**
   * The chip's vNPUs (dcmi-abi.md §4.5 "virtual device info": main 52 sub 1 for the ids, then sub 0 per vNPU) with
   * the chip's AI cores in all and free (sub 2). vNPU ids outside 100..1123 or more than 32 are invalid output.
   */
  getVirtualDevices(cardId: number, deviceId: number): VirtualDeviceInfo {
    const fn = 'dcmi_get_device_info';
    const total = Buffer.alloc(360);
    this.getDeviceInfo(cardId, deviceId, DeviceInfoCmd.VDEV_MNG, 1, total);
    const vdevNum = total.readUInt32LE(0);
    if (vdevNum > DCMI_LIMITS.maxVdevs) throw this.invalid(fn, `vdev_num ${vdevNum}`);
    const free = Buffer.alloc(224);
    this.getDeviceInfo(cardId, deviceId, DeviceInfoCmd.VDEV_MNG, 2, free);
    const vdevs: VirtualDevice[] = [];
    for (let i = 0; i < vdevNum; i++) {
      const vdevId = total.readUInt32LE(4 + 4 * i);
      if (vdevId < DCMI_LIMITS.minVdevId || vdevId > DCMI_LIMITS.maxVdevId) throw this.invalid(fn, `vdev id ${vdevId}`);
      const q = Buffer.alloc(264);
      q.writeUInt32LE(vdevId, 0);
      this.getDeviceInfo(cardId, deviceId, DeviceInfoCmd.VDEV_MNG, 0, q);
      // dcmi_vdev_query_stru: query_info at 8; name (16 bytes) at 0, base at 40 (vfg_id at 24), computing at 104
      const nameBytes = q.subarray(8, 8 + 16);
      const end = nameBytes.indexOf(0);
      vdevs.push({
        vdevId,
        templateName: nameBytes.subarray(0, end < 0 ? 16 : end).toString('latin1'),
        vfgId: q.readUInt32LE(8 + 40 + 24),
        aicore: q.readFloatLE(8 + 104),
      });
    }
    // dcmi_soc_total_resource.computing at 208; dcmi_soc_free_resource.computing at 72 (after vfg_num, vfg_bitmap, base)
    return { aicoreTotal: total.readFloatLE(208), aicoreFree: free.readFloatLE(72), vdevs };
  }

  /** `dcmi_create_vdevice` with the driver choosing the ids (§4.6); the template name is 1..31 bytes. */
  createVirtualDevice(cardId: number, deviceId: number, templateName: string): { vdevId: number; vfgId: number } {
    const fn = 'dcmi_create_vdevice';
    this.checkCardDevice(fn, cardId, deviceId);
    if (!/^[\x21-\x7e]{1,31}$/.test(templateName)) {
      throw new DcmiError(DcmiCode.PARAM, fn, `template name ${JSON.stringify(templateName.slice(0, 40))}`);
    }
    const out = this.call(fn, () => this.lib.createVdevice(cardId, deviceId, templateName));
    if (out.vdevId < DCMI_LIMITS.minVdevId || out.vdevId > DCMI_LIMITS.maxVdevId) {
      throw this.invalid(fn, `vdev id ${out.vdevId}`);
    }
    return { vdevId: out.vdevId, vfgId: out.vfgId };
  }

  /** `dcmi_set_destroy_vdevice`, one attempt (the caller retries, §4.6). */
  destroyVirtualDevice(cardId: number, deviceId: number, vdevId: number): void {
    const fn = 'dcmi_set_destroy_vdevice';
    this.checkCardDevice(fn, cardId, deviceId);
    checkRange(fn, 'vdev id', vdevId, DCMI_LIMITS.minVdevId, DCMI_LIMITS.maxVdevId);
    this.call(fn, () => this.lib.destroyVdevice(cardId, deviceId, vdevId));
  }

  /** Super-pod info (main 12, sub 1; B.7): uint32 values reinterpreted as int32. */
  getSuperPodInfo(
    cardId: number,
    deviceId: number,
  ): {
    sdid: number;
    scaleType: number;
    superPodId: number;
    serverId: number;
    chassisId: number;
    superPodType: number;
  } {
    const buf = Buffer.alloc(48);
    this.getDeviceInfo(cardId, deviceId, DeviceInfoCmd.CHIP_INFO, 1, buf);
    return {
      sdid: buf.readUInt32LE(0),
      scaleType: buf.readInt32LE(4),
      superPodId: buf.readInt32LE(8),
      serverId: buf.readInt32LE(12),
      chassisId: buf.readInt32LE(16),
      superPodType: buf.readInt32LE(20),
    };
  }

  getNpuWorkMode(cardId: number): number {
    const fn = 'dcmi_get_npu_work_mode';
    checkRange(fn, 'card id', cardId, 0, DCMI_LIMITS.maxCardId - 1);
    return this.call(fn, () => this.lib.getNpuWorkMode(cardId));
  }

  /** Reset (§4.7), off the JS thread. */
  setDeviceReset(cardId: number, deviceId: number, channel: number = ResetChannel.INBAND): Promise<void> {
    const fn = 'dcmi_set_device_reset';
    this.checkCardDevice(fn, cardId, deviceId);
    return this.callAsync(fn, () => this.lib.setDeviceReset(cardId, deviceId, channel));
  }

  /** Boot status; 16 means started (§4.7). */
  getDeviceBootStatus(cardId: number, deviceId: number): Promise<number> {
    const fn = 'dcmi_get_device_boot_status';
    this.checkCardDevice(fn, cardId, deviceId);
    return this.callAsync(fn, () => this.lib.getDeviceBootStatus(cardId, deviceId));
  }

  getOutbandChannelState(cardId: number, deviceId: number): Promise<number> {
    const fn = 'dcmi_get_device_outband_channel_state';
    this.checkCardDevice(fn, cardId, deviceId);
    return this.callAsync(fn, () => this.lib.getOutbandChannelState(cardId, deviceId));
  }

  preResetSoc(cardId: number, deviceId: number): Promise<void> {
    const fn = 'dcmi_pre_reset_soc';
    this.checkCardDevice(fn, cardId, deviceId);
    return this.callAsync(fn, () => this.lib.preResetSoc(cardId, deviceId));
  }

  rescanSoc(cardId: number, deviceId: number): Promise<void> {
    const fn = 'dcmi_rescan_soc';
    this.checkCardDevice(fn, cardId, deviceId);
    return this.callAsync(fn, () => this.lib.rescanSoc(cardId, deviceId));
  }

  /** The other card of an A3 pair (§4.7). */
  getBrotherCardId(cardId: number, deviceId: number): number {
    const fn = 'dcmi_get_netdev_brother_device';
    this.checkCardDevice(fn, cardId, deviceId);
    const id = this.call(fn, () => this.lib.getNetdevBrotherDevice(cardId, deviceId));
    if (id < 0 || id >= DCMI_LIMITS.maxCardId) throw this.invalid(fn, `brother card ${id}`);
    return id;
  }

  /** Processes on the chip; "idle" = none (§4.8). Memory in MiB. */
  getProcesses(cardId: number, deviceId: number): { pid: number; memMiB: number }[] {
    const fn = 'dcmi_get_device_resource_info';
    this.checkCardDevice(fn, cardId, deviceId);
    const r = this.call(fn, () => this.lib.getDeviceResourceInfo(cardId, deviceId));
    if (r.procNum < 0 || r.procNum > DCMI_LIMITS.maxProcesses) throw this.invalid(fn, `process count ${r.procNum}`);
    return r.processes.map((p) => ({ pid: p.pid, memMiB: Math.floor(p.memBytes / (1024 * 1024)) }));
  }

  /** PCIe bus id `%04X:%02X:%02X.%X` (§4.8). */
  getPcieBusId(cardId: number, deviceId: number): string {
    const fn = 'dcmi_get_device_pcie_info_v2';
    this.checkCardDevice(fn, cardId, deviceId);
    const p = this.call(fn, () => this.lib.getPcieInfoV2(cardId, deviceId));
    const hex = (v: number, w: number) => (v >>> 0).toString(16).toUpperCase().padStart(w, '0');
    return `${hex(p.domain, 4)}:${hex(p.busId, 2)}:${hex(p.devId, 2)}.${hex(p.funcId, 1)}`;
  }

  /** CPU affinity list such as `0-23` (§4.8). */
  getAffinityCpu(cardId: number, deviceId: number): string {
    const fn = 'dcmi_get_affinity_cpu_info_by_device_id';
    this.checkCardDevice(fn, cardId, deviceId);
    const r = this.call(fn, () => this.lib.getAffinityCpuInfo(cardId, deviceId));
    if (r.length < 0 || r.length > DCMI_LIMITS.maxAffinityLength) throw this.invalid(fn, `length ${r.length}`);
    return r.text;
  }

  /** HBM info; a negative temperature is rejected (§4.8). */
  getHbmInfo(
    cardId: number,
    deviceId: number,
  ): { memorySizeMiB: number; freq: number; usageMiB: number; temp: number } {
    const fn = 'dcmi_get_device_hbm_info';
    this.checkCardDevice(fn, cardId, deviceId);
    const h = this.call(fn, () => this.lib.getHbmInfo(cardId, deviceId));
    if (h.temp < 0) throw this.invalid(fn, `temperature ${h.temp}`);
    return { memorySizeMiB: h.memorySize, freq: h.freq, usageMiB: h.memoryUsage, temp: h.temp };
  }

  /**
   * Die ID in its text form (§4.8, spec L.7 soft share): the five `soc_die` words as 8-digit upper-case hex joined by
   * `-`, e.g. `C281A66C-80A047F2-0A645632-CC500485-100301E3`. `dieType` NDIE (0) or VDIE (1, the soft-share one).
   */
  getDieId(cardId: number, deviceId: number, dieType: 0 | 1 = DIE_TYPE.VDIE): string {
    const fn = 'dcmi_get_device_die_v2';
    this.checkCardDevice(fn, cardId, deviceId);
    const words = this.call(fn, () => this.lib.getDeviceDie(cardId, deviceId, dieType));
    if (words.length !== 5 || words.some((w) => !Number.isInteger(w) || w < 0 || w > 0xffffffff)) {
      throw this.invalid(fn, `die id words ${JSON.stringify(words)}`);
    }
    return words.map((w) => w.toString(16).toUpperCase().padStart(8, '0')).join('-');
  }

  /** Utilisation in percent; > 100 is invalid (§4.8). */
  getUtilizationRate(cardId: number, deviceId: number, inputType: number): number {
    const fn = 'dcmi_get_device_utilization_rate';
    this.checkCardDevice(fn, cardId, deviceId);
    const u = this.call(fn, () => this.lib.getUtilizationRate(cardId, deviceId, inputType));
    if (u > 100) throw this.invalid(fn, `utilization ${u}`);
    return u;
  }

  /** 0 union, 1 independent (§4.8, 910A3 start-up). */
  setMultiDiePolicy(policy: 0 | 1): void {
    this.call('dcmi_set_multi_die_policy', () => this.lib.setMultiDiePolicy(policy));
  }

  /** Network health; result 0..127 (§4.9). */
  async getDeviceNetworkHealth(cardId: number, deviceId: number): Promise<number> {
    const fn = 'dcmi_get_device_network_health';
    this.checkCardDevice(fn, cardId, deviceId);
    const r = await this.callAsync(fn, () => this.lib.getDeviceNetworkHealth(cardId, deviceId));
    if (r < 0 || r > 127) throw this.invalid(fn, `result ${r}`);
    return r;
  }

  /**
   * Subscribes to every chip's fault events (card -1, device -1, no filter: §5.2). Events arrive on the JS
   * thread; events that did not fit the bounded queue are reported through `onOverflow`, never dropped silently.
   */
  subscribeFaultEvents(subscription: FaultSubscription, options?: { maxQueue?: number }): void {
    const report = (err: unknown): void => {
      if (subscription.onListenerError) subscription.onListenerError(err);
      else process.emitWarning(`fault listener threw: ${inspect(err)}`, 'DcmiFaultListenerWarning');
    };
    const listener = (record: NativeFaultRecord): void => {
      try {
        deliver(record);
      } catch (err) {
        report(err);
      }
    };
    const deliver = (record: NativeFaultRecord): void => {
      if (record.kind === 'overflow') {
        subscription.onOverflow({ logicIds: record.logicIds, dropped: record.dropped });
        return;
      }
      subscription.onEvent({
        eventId: record.eventId >>> 0,
        logicId: record.deviceId,
        severity: record.severity,
        assertion: ASSERTIONS[record.assertion] ?? 'once',
        assertionValue: record.assertion,
        nodeType: record.nodeType,
        nodeId: record.nodeId,
        subNodeType: record.subNodeType,
        subNodeId: record.subNodeId,
        eventName: record.eventName,
        serial: record.eventSerialNum,
        receivedAtMs: Date.now(),
        trampolineNs: record.trampolineNs,
        additionalInfo: record.additionalInfo,
      });
    };
    this.call('dcmi_subscribe_fault_event', () =>
      this.lib.subscribeFaultEvents(-1, -1, listener, undefined, options ?? {}),
    );
  }

  unsubscribeFaultEvents(): void {
    this.lib.unsubscribeFaultEvents();
  }

  faultDeliveryStats(): { delivered: number; dropped: number; inFlight: number } {
    return this.lib.faultDeliveryStats();
  }
}

/** Canonical IPv6 text (RFC 5952): the longest run of two or more zero groups becomes `::`. */
function compressIpv6(groups: string[]): string {
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < groups.length;) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === '0') j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (bestLen < 2) return groups.join(':');
  return `${groups.slice(0, bestStart).join(':')}::${groups.slice(bestStart + bestLen).join(':')}`;
}
