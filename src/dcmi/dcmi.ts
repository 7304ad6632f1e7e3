/**
 * The typed face of the DCMI binding: range checks of spec dcmi-abi.md §2.2, the per-function conventions of §4
 * (chip-info fallback, "all error codes" with the card-drop code, IP text, struct decoding) and fault events as
 * typed objects. Every failure is a {@link DcmiError} carrying the numeric code.
 *
 * Two API generations (dcmi-abi.md §1.3): `init()` tries v1 `dcmi_init`, then v2 `dcmiv2_init` (Ascend910A5), and
 * every method then calls the generation that answered, with unchanged signatures. Under v2 a chip is addressed by
 * one `dev_id`, its logic ID (as upstream devmanager_v2.go passes it); it appears as the only chip of a card whose
 * card ID is that dev_id (`{logicId: d, phyId, cardId: d, deviceId: 0}`), so every `(cardId, deviceId)` method calls
 * the v2 function with `dev_id = cardId`. docs/dcmi.md lists the v2 function behind each method.
 */
import { inspect } from 'node:util';
import { CARD_DROP_CODE } from '../core/chips.js';
import {
  loadAddon,
  type DcmiAddon,
  type NativeChipInfo,
  type NativeDcmiLibrary,
  type NativeElabelInfo,
  type NativeFaultRecord,
} from './bindings.js';
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

/** The DCMI API generation a library answered `init()` with (dcmi-abi.md §1.3). */
export type DcmiApiVersion = 1 | 2;

/** Each v1 function the class calls → its `dcmiv2_*` counterpart (native/dcmi/dcmi_abi_v2.h); absent = none. */
export const V2_FUNCTION: Readonly<Record<string, string>> = {
  dcmi_init: 'dcmiv2_init',
  dcmi_get_card_list: 'dcmiv2_get_device_list',
  dcmi_get_device_phyid_from_logicid: 'dcmiv2_get_chip_phy_id_by_dev_id',
  dcmi_get_device_logicid_from_phyid: 'dcmiv2_get_dev_id_by_chip_phy_id',
  dcmi_get_device_chip_info_v2: 'dcmiv2_get_device_chip_info',
  dcmi_get_device_chip_info: 'dcmiv2_get_device_chip_info',
  dcmi_get_device_board_info: 'dcmiv2_get_device_board_info',
  dcmi_get_mainboard_id: 'dcmiv2_get_mainboard_id',
  dcmi_get_dcmi_version: 'dcmiv2_get_dcmi_version',
  dcmi_get_device_health: 'dcmiv2_get_device_health',
  dcmi_get_device_errorcode_v2: 'dcmiv2_get_device_error_code_list',
  dcmi_subscribe_fault_event: 'dcmiv2_subscribe_fault_event',
  dcmi_get_device_ip: 'dcmiv2_get_device_ip',
  dcmi_get_device_type: 'dcmiv2_get_device_type',
  dcmi_get_device_info: 'dcmiv2_get_device_info',
  dcmi_set_device_reset: 'dcmiv2_reset_device',
  dcmi_get_device_outband_channel_state: 'dcmiv2_get_device_outband_channel_state',
  dcmi_pre_reset_soc: 'dcmiv2_pre_reset_device',
  dcmi_rescan_soc: 'dcmiv2_rescan_device',
  dcmi_get_device_boot_status: 'dcmiv2_get_device_boot_status',
  dcmi_get_device_resource_info: 'dcmiv2_get_device_proc_mem_info',
  dcmi_get_device_die_v2: 'dcmiv2_get_device_die_id',
  dcmi_get_device_pcie_info_v2: 'dcmiv2_get_device_pcie_info',
  dcmi_get_device_hbm_info: 'dcmiv2_get_device_hbm_info',
  dcmi_get_device_utilization_rate: 'dcmiv2_get_device_utilization_rate',
  dcmi_get_device_network_health: 'dcmiv2_get_device_network_health',
};

function checkRange(fn: string, what: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new DcmiError(DcmiCode.PARAM, fn, `${what} ${value} is outside ${min}..${max}`);
  }
}

/** One opened DCMI library. Construct with {@link Dcmi.open}. */
export class Dcmi {
  private readonly cardDeviceCache = new Map<number, { cardId: number; deviceId: number }>();
  private generation: DcmiApiVersion = 1;

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

  /**
   * Bound functions the library lacks (each fails with -99998 when called): those of the generation `init()`
   * detected, v1 before a v2 `init()`.
   */
  missingSymbols(): string[] {
    return this.generation === 2 ? this.lib.missingSymbolsV2() : this.lib.missingSymbols();
  }

  /** The `dcmiv2_*` functions the library lacks. */
  missingSymbolsV2(): string[] {
    return this.lib.missingSymbolsV2();
  }

  /** The API generation the last successful `init()` found: 1 (`dcmi_*`), 2 (`dcmiv2_*`, Ascend910A5). 1 before. */
  apiVersion(): DcmiApiVersion {
    return this.generation;
  }

  private get v2(): boolean {
    return this.generation === 2;
  }

  /** The C function a v1-named call reaches in the current generation (for checks and error texts). */
  private fnName(v1: string): string {
    return this.v2 ? (V2_FUNCTION[v1] ?? v1) : v1;
  }

  /**
   * Under v2: the dev_id of `(cardId, deviceId)`: the card ID, which must be a logic ID (0..255), device 0 (the
   * addressing of the class comment).
   */
  private devId(fn: string, cardId: number, deviceId: number): number {
    checkRange(fn, 'dev id (the card id under DCMI v2)', cardId, 0, DCMI_LIMITS.maxLogicId);
    if (deviceId !== 0) {
      throw new DcmiError(
        DcmiCode.PARAM,
        fn,
        `device id ${deviceId}: under DCMI v2 every chip is card <dev_id>, device 0 (dev_id = logic id)`,
      );
    }
    return cardId;
  }

  /**
   * Checks `(cardId, deviceId)` for the current generation. v1: the v1 function name; v2: its `dcmiv2_*` name and
   * the dev_id (a method without a v2 counterpart throws -8255 naming it).
   */
  private at(v1: string, cardId: number, deviceId: number): { fn: string; dev?: number } {
    if (!this.v2) {
      this.checkCardDevice(v1, cardId, deviceId);
      return { fn: v1 };
    }
    const fn = V2_FUNCTION[v1];
    if (fn === undefined) throw this.noV2(v1);
    return { fn, dev: this.devId(fn, cardId, deviceId) };
  }

  /** A method with no `dcmiv2_*` counterpart, called on a v2 library. */
  private noV2(fn: string): DcmiError {
    return new DcmiError(
      DcmiCode.NOT_SUPPORTED,
      fn,
      `${fn} has no dcmiv2_* counterpart: not available on this DCMI v2 (Ascend910A5) driver`,
    );
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

  /**
   * API-version detection and initialisation (dcmi-abi.md §1.3, device-plugin.md A.2 step 4): v1 `dcmi_init`; if it
   * fails (for any reason, a missing symbol included), v2 `dcmiv2_init`. The first that succeeds fixes
   * {@link apiVersion}. When both fail the error is v1's (`fn` dcmi_init, its code) and names v2's result too.
   * Both run off the JS thread.
   */
  async init(): Promise<void> {
    let v1: Error;
    try {
      await this.lib.init();
      this.setGeneration(1);
      return;
    } catch (err) {
      v1 = toDcmiError(err, 'dcmi_init');
      if (v1 instanceof TypeError) throw v1;
    }
    try {
      await this.lib.v2Init();
      this.setGeneration(2);
      return;
    } catch (err) {
      const v2 = toDcmiError(err, 'dcmiv2_init');
      if (!(v1 instanceof DcmiError)) throw v1;
      const v2Text = v2 instanceof DcmiError ? `${v2.code} (${v2.meaning})` : v2.message;
      throw new DcmiError(v1.code, 'dcmi_init', `${v1.message}; then dcmiv2_init failed with ${v2Text}`, {
        cause: v1,
      });
    }
  }

  private setGeneration(g: DcmiApiVersion): void {
    if (g !== this.generation) this.cardDeviceCache.clear();
    this.generation = g;
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
    if (this.v2) return this.getDeviceListV2();
    const fn = 'dcmi_get_card_list';
    const { cardNum, cards } = this.call(fn, () => this.lib.getCardList());
    if (cardNum <= 0 || cardNum > DCMI_LIMITS.maxCards) throw this.invalid(fn, `card count ${cardNum}`);
    const valid = cards.filter((c) => c >= 0 && c < DCMI_LIMITS.maxCardId);
    const skipped = cards.filter((c) => !(c >= 0 && c < DCMI_LIMITS.maxCardId));
    return { cards: valid, skipped, cardNum, complete: valid.length === cardNum };
  }

  /**
   * v2 (upstream DcGetDeviceList + WaitDeviceOnline): the dev_ids of `dcmiv2_get_device_list` as the "cards" (count
   * ≤ 0 or > 64 is an error; entries outside 0..255 are skipped); `complete` also needs
   * `dcmiv2_get_all_device_count` to answer and to equal the number of valid IDs.
   */
  private getDeviceListV2(): { cards: number[]; skipped: number[]; cardNum: number; complete: boolean } {
    const fn = 'dcmiv2_get_device_list';
    const { deviceNum, devices } = this.call(fn, () => this.lib.v2GetDeviceList());
    if (deviceNum <= 0 || deviceNum > DCMI_LIMITS.maxCards) throw this.invalid(fn, `device count ${deviceNum}`);
    const ok = (d: number) => d >= 0 && d <= DCMI_LIMITS.maxLogicId;
    const valid = devices.filter(ok);
    const skipped = devices.filter((d) => !ok(d));
    let all: number | undefined;
    try {
      all = this.lib.v2GetAllDeviceCount();
    } catch (err) {
      const e = toDcmiError(err, 'dcmiv2_get_all_device_count');
      if (e instanceof TypeError) throw e;
    }
    return { cards: valid, skipped, cardNum: deviceNum, complete: valid.length === deviceNum && all === valid.length };
  }

  /** v2: always 1, without a DCMI call (each chip is its own "card"). */
  getDeviceNumInCard(cardId: number): number {
    const fn = 'dcmi_get_device_num_in_card';
    if (this.v2) {
      checkRange(fn, 'card id (dev id under DCMI v2)', cardId, 0, DCMI_LIMITS.maxLogicId);
      return 1;
    }
    checkRange(fn, 'card id', cardId, 0, DCMI_LIMITS.maxCardId - 1);
    const n = this.call(fn, () => this.lib.getDeviceNumInCard(cardId));
    if (n < 1 || n > DCMI_LIMITS.maxChipsPerCard) throw this.invalid(fn, `chips on card ${cardId}: ${n}`);
    return n;
  }

  /** v2: the dev_id itself (= the logic ID), without a DCMI call. */
  getDeviceLogicId(cardId: number, deviceId: number): number {
    const fn = 'dcmi_get_device_logic_id';
    if (this.v2) return this.devId(fn, cardId, deviceId);
    this.checkCardDevice(fn, cardId, deviceId);
    const id = this.call(fn, () => this.lib.getDeviceLogicId(cardId, deviceId));
    if (id < 0 || id > DCMI_LIMITS.maxLogicId) throw this.invalid(fn, `logic id ${id}`);
    return id;
  }

  getPhyIdFromLogicId(logicId: number): number {
    const fn = this.fnName('dcmi_get_device_phyid_from_logicid');
    checkRange(fn, 'logic id', logicId, 0, DCMI_LIMITS.maxLogicId);
    const id = this.call(fn, () =>
      this.v2 ? this.lib.v2GetPhyIdFromDevId(logicId) : this.lib.getPhyIdFromLogicId(logicId),
    );
    if (id < 0 || id > DCMI_LIMITS.maxLogicId) throw this.invalid(fn, `phy id ${id}`);
    return id;
  }

  getLogicIdFromPhyId(phyId: number): number {
    const fn = this.fnName('dcmi_get_device_logicid_from_phyid');
    checkRange(fn, 'phy id', phyId, 0, DCMI_LIMITS.maxLogicId);
    const id = this.call(fn, () =>
      this.v2 ? this.lib.v2GetDevIdFromPhyId(phyId) : this.lib.getLogicIdFromPhyId(phyId),
    );
    if (id < 0 || id > DCMI_LIMITS.maxLogicId) throw this.invalid(fn, `logic id ${id}`);
    return id;
  }

  /** logic ID → (card, device), cached for the life of this library (§4.1, B.1). v2: (logicId, 0), no call. */
  getCardIdDeviceId(logicId: number): { cardId: number; deviceId: number } {
    const cached = this.cardDeviceCache.get(logicId);
    if (cached) return cached;
    const fn = 'dcmi_get_card_id_device_id_from_logicid';
    checkRange(fn, 'logic id', logicId, 0, DCMI_LIMITS.maxLogicId);
    if (this.v2) return { cardId: logicId, deviceId: 0 };
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
    if (this.v2) {
      for (const devId of this.getCardList().cards) {
        chips.push({ logicId: devId, phyId: this.getPhyIdFromLogicId(devId), cardId: devId, deviceId: 0 });
      }
      return chips;
    }
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
    let raw;
    if (this.v2) {
      const fn = 'dcmiv2_get_device_chip_info'; // no v1-style fallback: there is one chip-info call
      const dev = this.devId(fn, cardId, deviceId);
      raw = this.call(fn, () => this.lib.v2GetChipInfo(dev));
      if (raw.chipName === '' && raw.chipType === '' && raw.chipVer === '') {
        throw this.invalid(fn, `empty chip info for dev id ${dev}`);
      }
      return this.chipInfoOf(raw);
    }
    this.checkCardDevice('dcmi_get_device_chip_info_v2', cardId, deviceId);
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
    return this.chipInfoOf(raw);
  }

  private chipInfoOf(raw: NativeChipInfo): ChipInfo {
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
    const { fn, dev } = this.at('dcmi_get_device_board_info', cardId, deviceId);
    const b = this.call(fn, () =>
      dev === undefined ? this.lib.getBoardInfo(cardId, deviceId) : this.lib.v2GetBoardInfo(dev),
    );
    const values = [b.boardId, b.pcbId, b.bomId, b.slotId];
    if (values.every((v) => v === DCMI_LIMITS.invalidBoardValue)) throw this.invalid(fn, 'all fields are 0xFFFFFFFF');
    return b;
  }

  /** Main-board ID, valid when ≠ 0xFFFFFFFF (§4.2). */
  getMainboardId(cardId: number, deviceId: number): number {
    const { fn, dev } = this.at('dcmi_get_mainboard_id', cardId, deviceId);
    const id = this.call(fn, () =>
      dev === undefined ? this.lib.getMainboardId(cardId, deviceId) : this.lib.v2GetMainboardId(dev),
    );
    if (id === DCMI_LIMITS.invalidBoardValue) throw this.invalid(fn, 'main-board id is 0xFFFFFFFF');
    return id;
  }

  getDcmiVersion(): string {
    return this.call(this.fnName('dcmi_get_dcmi_version'), () =>
      this.v2 ? this.lib.v2GetDcmiVersion() : this.lib.getDcmiVersion(),
    );
  }

  /** v2: no counterpart (upstream devmanager_v2.go reports no product types): -8255. */
  getProductType(cardId: number, deviceId: number): string {
    const { fn } = this.at('dcmi_get_product_type', cardId, deviceId);
    return this.call(fn, () => this.lib.getProductType(cardId, deviceId));
  }

  /** Health value; ≥ 2147483647 is invalid (§4.3). -8012 (card drop) is thrown as a DcmiError. */
  getDeviceHealth(cardId: number, deviceId: number): number {
    const { fn, dev } = this.at('dcmi_get_device_health', cardId, deviceId);
    const h = this.call(fn, () =>
      dev === undefined ? this.lib.getDeviceHealth(cardId, deviceId) : this.lib.v2GetDeviceHealth(dev),
    );
    if (h >= DCMI_LIMITS.invalidHealth) throw this.invalid(fn, `health ${h}`);
    return h;
  }

  /**
   * The chip's code list alone (`dcmi_get_device_errorcode_v2`, §4.3: zero entries dropped), without the health
   * read of {@link getDeviceAllErrorCodes}: for a caller that has just asked `dcmi_get_device_health` itself (the
   * subscribed health layer's card-drop check, spec D.5), so a chip costs one call less per period.
   */
  getDeviceErrorCodes(cardId: number, deviceId: number): number[] {
    const { fn, dev } = this.at('dcmi_get_device_errorcode_v2', cardId, deviceId);
    let r;
    try {
      r = dev === undefined ? this.lib.getDeviceErrorCodes(cardId, deviceId) : this.lib.v2GetDeviceErrorCodes(dev);
    } catch (err) {
      throw toDcmiError(err, fn);
    }
    if (r.errorCount < 0 || r.errorCount > DCMI_LIMITS.maxErrorCodes)
      throw this.invalid(fn, `error count ${r.errorCount}`);
    return r.codes.filter((c) => c !== 0);
  }

  /**
   * "All error codes" (§4.3): the code list, then always health. An error only if the list call failed and
   * health did not return -8012; with -8012 the synthetic card-drop code 0x40F84E00 is appended.
   */
  getDeviceAllErrorCodes(cardId: number, deviceId: number): { codes: number[]; cardDropped: boolean } {
    const { dev } = this.at('dcmi_get_device_errorcode_v2', cardId, deviceId);
    let codes: number[] = [];
    let listError: Error | undefined;
    try {
      codes = this.getDeviceErrorCodes(cardId, deviceId);
    } catch (err) {
      if (err instanceof TypeError) throw err;
      listError = err as Error;
    }
    let cardDropped = false;
    try {
      if (dev === undefined) this.lib.getDeviceHealth(cardId, deviceId);
      else this.lib.v2GetDeviceHealth(dev);
    } catch (err) {
      const e = toDcmiError(err, this.fnName('dcmi_get_device_health'));
      cardDropped = e instanceof DcmiError && e.isCardDrop;
    }
    if (listError && !cardDropped) throw listError;
    if (cardDropped) codes = [...codes, CARD_DROP_CODE];
    return { codes, cardDropped };
  }

  /** RoCE port 0 address as text (§4.4, C.5). */
  getDeviceIp(cardId: number, deviceId: number, ipv6 = false): string {
    const { fn, dev } = this.at('dcmi_get_device_ip', cardId, deviceId);
    const { ip } = this.call(fn, () =>
      dev === undefined ? this.lib.getDeviceIp(cardId, deviceId, 1, 0, ipv6) : this.lib.v2GetDeviceIp(dev, 1, 0, ipv6),
    );
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
    const { fn, dev } = this.at('dcmi_get_device_type', cardId, deviceId);
    return this.call(fn, () =>
      dev === undefined ? this.lib.getDeviceType(cardId, deviceId) : this.lib.v2GetDeviceType(dev),
    );
  }

  /** The raw `dcmi_get_device_info` multiplexer (§4.5): `buf` is filled in place. */
  getDeviceInfo(cardId: number, deviceId: number, mainCmd: number, subCmd: number, buf: Buffer): number {
    const { fn, dev } = this.at('dcmi_get_device_info', cardId, deviceId);
    return this.call(fn, () =>
      dev === undefined
        ? this.lib.getDeviceInfo(cardId, deviceId, mainCmd, subCmd, buf)
        : this.lib.v2GetDeviceInfo(dev, mainCmd, subCmd, buf),
    );
  }

  /** AI-core count of the chip: `dcmi_soc_total_resource.computing.aic` (main 52, sub 1; B.6). */
  getTotalAicore(cardId: number, deviceId: number): number {
    const buf = Buffer.alloc(360);
    this.getDeviceInfo(cardId, deviceId, DeviceInfoCmd.VDEV_MNG, 1, buf);
    const vdevNum = buf.readUInt32LE(0);
    if (vdevNum > 32) throw this.invalid(this.fnName('dcmi_get_device_info'), `vdev_num ${vdevNum}`);
    return buf.readFloatLE(208);
  }

  /**
   * The chip's vNPUs (dcmi-abi.md §4.5 "virtual device info": main 52 sub 1 for the ids, then sub 0 per vNPU) with
   * the chip's AI cores in all and free (sub 2). vNPU ids outside 100..1123 or more than 32 are invalid output.
   */
  getVirtualDevices(cardId: number, deviceId: number): VirtualDeviceInfo {
    const fn = this.fnName('dcmi_get_device_info');
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
    const { fn } = this.at('dcmi_create_vdevice', cardId, deviceId); // v2: none (upstream: not supported)
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
    const { fn } = this.at('dcmi_set_destroy_vdevice', cardId, deviceId); // v2: none (upstream: not supported)
    checkRange(fn, 'vdev id', vdevId, DCMI_LIMITS.minVdevId, DCMI_LIMITS.maxVdevId);
    this.call(fn, () => this.lib.destroyVdevice(cardId, deviceId, vdevId));
  }

  /**
   * Super-pod info (main 12, sub 1; B.7): uint32 values reinterpreted as int32 (`sdid` unsigned). For Ascend910A5
   * upstream reads `chassis_id` as the rack ID and `scale_type` as the super-pod size: `rackId` and `superPodSize`
   * repeat them under those names.
   */
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
    rackId: number;
    superPodSize: number;
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
      rackId: buf.readInt32LE(16),
      superPodSize: buf.readInt32LE(4),
    };
  }

  /** v2: 0 (AMP) without a call, as upstream devmanager_v2.go (only AMP exists on A5). */
  getNpuWorkMode(cardId: number): number {
    const fn = 'dcmi_get_npu_work_mode';
    if (this.v2) {
      checkRange(fn, 'card id (dev id under DCMI v2)', cardId, 0, DCMI_LIMITS.maxLogicId);
      return 0;
    }
    checkRange(fn, 'card id', cardId, 0, DCMI_LIMITS.maxCardId - 1);
    return this.call(fn, () => this.lib.getNpuWorkMode(cardId));
  }

  /** Reset (§4.7), off the JS thread. */
  setDeviceReset(cardId: number, deviceId: number, channel: number = ResetChannel.INBAND): Promise<void> {
    const { fn, dev } = this.at('dcmi_set_device_reset', cardId, deviceId);
    return this.callAsync(fn, () =>
      dev === undefined ? this.lib.setDeviceReset(cardId, deviceId, channel) : this.lib.v2ResetDevice(dev, channel),
    );
  }

  /** Boot status; 16 means started (§4.7). */
  getDeviceBootStatus(cardId: number, deviceId: number): Promise<number> {
    const { fn, dev } = this.at('dcmi_get_device_boot_status', cardId, deviceId);
    return this.callAsync(fn, () =>
      dev === undefined ? this.lib.getDeviceBootStatus(cardId, deviceId) : this.lib.v2GetDeviceBootStatus(dev),
    );
  }

  getOutbandChannelState(cardId: number, deviceId: number): Promise<number> {
    const { fn, dev } = this.at('dcmi_get_device_outband_channel_state', cardId, deviceId);
    return this.callAsync(fn, () =>
      dev === undefined ? this.lib.getOutbandChannelState(cardId, deviceId) : this.lib.v2GetOutbandChannelState(dev),
    );
  }

  preResetSoc(cardId: number, deviceId: number): Promise<void> {
    const { fn, dev } = this.at('dcmi_pre_reset_soc', cardId, deviceId);
    return this.callAsync(fn, () =>
      dev === undefined ? this.lib.preResetSoc(cardId, deviceId) : this.lib.v2PreResetDevice(dev),
    );
  }

  rescanSoc(cardId: number, deviceId: number): Promise<void> {
    const { fn, dev } = this.at('dcmi_rescan_soc', cardId, deviceId);
    return this.callAsync(fn, () =>
      dev === undefined ? this.lib.rescanSoc(cardId, deviceId) : this.lib.v2RescanDevice(dev),
    );
  }

  /** The other card of an A3 pair (§4.7). */
  getBrotherCardId(cardId: number, deviceId: number): number {
    const { fn } = this.at('dcmi_get_netdev_brother_device', cardId, deviceId); // v2: none (upstream: not supported)
    const id = this.call(fn, () => this.lib.getNetdevBrotherDevice(cardId, deviceId));
    if (id < 0 || id >= DCMI_LIMITS.maxCardId) throw this.invalid(fn, `brother card ${id}`);
    return id;
  }

  /** Processes on the chip; "idle" = none (§4.8). Memory in MiB. */
  getProcesses(cardId: number, deviceId: number): { pid: number; memMiB: number }[] {
    const { fn, dev } = this.at('dcmi_get_device_resource_info', cardId, deviceId);
    const r = this.call(fn, () =>
      dev === undefined ? this.lib.getDeviceResourceInfo(cardId, deviceId) : this.lib.v2GetProcMemInfo(dev),
    );
    if (r.procNum < 0 || r.procNum > DCMI_LIMITS.maxProcesses) throw this.invalid(fn, `process count ${r.procNum}`);
    return r.processes.map((p) => ({ pid: p.pid, memMiB: Math.floor(p.memBytes / (1024 * 1024)) }));
  }

  /** PCIe bus id `%04X:%02X:%02X.%X` (§4.8). */
  getPcieBusId(cardId: number, deviceId: number): string {
    const { fn, dev } = this.at('dcmi_get_device_pcie_info_v2', cardId, deviceId);
    const p = this.call(fn, () =>
      dev === undefined ? this.lib.getPcieInfoV2(cardId, deviceId) : this.lib.v2GetPcieInfo(dev),
    );
    const hex = (v: number, w: number) => (v >>> 0).toString(16).toUpperCase().padStart(w, '0');
    return `${hex(p.domain, 4)}:${hex(p.busId, 2)}:${hex(p.devId, 2)}.${hex(p.funcId, 1)}`;
  }

  /** CPU affinity list such as `0-23` (§4.8). */
  getAffinityCpu(cardId: number, deviceId: number): string {
    // v2: none in the upstream v2 header (the NUMA code falls back to the PCIe bus id)
    const { fn } = this.at('dcmi_get_affinity_cpu_info_by_device_id', cardId, deviceId);
    const r = this.call(fn, () => this.lib.getAffinityCpuInfo(cardId, deviceId));
    if (r.length < 0 || r.length > DCMI_LIMITS.maxAffinityLength) throw this.invalid(fn, `length ${r.length}`);
    return r.text;
  }

  /** HBM info; a negative temperature is rejected (§4.8). */
  getHbmInfo(
    cardId: number,
    deviceId: number,
  ): { memorySizeMiB: number; freq: number; usageMiB: number; temp: number } {
    const { fn, dev } = this.at('dcmi_get_device_hbm_info', cardId, deviceId);
    const h = this.call(fn, () =>
      dev === undefined ? this.lib.getHbmInfo(cardId, deviceId) : this.lib.v2GetHbmInfo(dev),
    );
    if (h.temp < 0) throw this.invalid(fn, `temperature ${h.temp}`);
    return { memorySizeMiB: h.memorySize, freq: h.freq, usageMiB: h.memoryUsage, temp: h.temp };
  }

  /**
   * Die ID in its text form (§4.8, spec L.7 soft share): the five `soc_die` words as 8-digit upper-case hex joined by
   * `-`, e.g. `C281A66C-80A047F2-0A645632-CC500485-100301E3`. `dieType` NDIE (0) or VDIE (1, the soft-share one).
   */
  getDieId(cardId: number, deviceId: number, dieType: 0 | 1 = DIE_TYPE.VDIE): string {
    const { fn, dev } = this.at('dcmi_get_device_die_v2', cardId, deviceId);
    const words = this.call(fn, () =>
      dev === undefined ? this.lib.getDeviceDie(cardId, deviceId, dieType) : this.lib.v2GetDeviceDieId(dev, dieType),
    );
    if (words.length !== 5 || words.some((w) => !Number.isInteger(w) || w < 0 || w > 0xffffffff)) {
      throw this.invalid(fn, `die id words ${JSON.stringify(words)}`);
    }
    return words.map((w) => w.toString(16).toUpperCase().padStart(8, '0')).join('-');
  }

  /** Utilisation in percent; > 100 is invalid (§4.8). */
  getUtilizationRate(cardId: number, deviceId: number, inputType: number): number {
    const { fn, dev } = this.at('dcmi_get_device_utilization_rate', cardId, deviceId);
    const u = this.call(fn, () =>
      dev === undefined
        ? this.lib.getUtilizationRate(cardId, deviceId, inputType)
        : this.lib.v2GetUtilizationRate(dev, inputType),
    );
    if (u > 100) throw this.invalid(fn, `utilization ${u}`);
    return u;
  }

  /** 0 union, 1 independent (§4.8, 910A3 start-up). */
  setMultiDiePolicy(policy: 0 | 1): void {
    if (this.v2) throw this.noV2('dcmi_set_multi_die_policy'); // 910A3 only
    this.call('dcmi_set_multi_die_policy', () => this.lib.setMultiDiePolicy(policy));
  }

  /**
   * The chip's electronic label (upstream DcGetCardElabel of dcmi_v2.go): DCMI v2 only. The v1 counterpart
   * (`dcmi_get_card_elabel_v2`) is not bound (dcmi-abi.md §3: never called by the plugin), so a v1 library throws
   * -8255 naming `dcmiv2_get_device_elabel_info`.
   */
  getElabel(cardId: number, deviceId: number): NativeElabelInfo {
    const fn = 'dcmiv2_get_device_elabel_info';
    if (!this.v2) {
      throw new DcmiError(DcmiCode.NOT_SUPPORTED, fn, `${fn} is DCMI v2 only; this library answered dcmi_init (v1)`);
    }
    const dev = this.devId(fn, cardId, deviceId);
    return this.call(fn, () => this.lib.v2GetElabelInfo(dev));
  }

  /**
   * The chip's URMA devices and their EIDs (upstream GetUrmaDevEidListAll: `dcmiv2_get_urma_device_cnt`, then
   * `dcmiv2_get_eid_list_by_urma_dev_index` per device), each EID as 32 lower-case hex digits. DCMI v2 only (a v1
   * library throws -8255); a library without the symbols throws SYMBOL_MISSING.
   */
  getUrmaEids(cardId: number, deviceId: number): string[][] {
    const cnt = 'dcmiv2_get_urma_device_cnt';
    const list = 'dcmiv2_get_eid_list_by_urma_dev_index';
    if (!this.v2) {
      throw new DcmiError(DcmiCode.NOT_SUPPORTED, cnt, `${cnt} is DCMI v2 only; this library answered dcmi_init (v1)`);
    }
    const dev = this.devId(cnt, cardId, deviceId);
    const n = this.call(cnt, () => this.lib.v2GetUrmaDeviceCount(dev));
    if (n > 64) throw this.invalid(cnt, `URMA device count ${n}`);
    const out: string[][] = [];
    for (let i = 0; i < n; i++) out.push(this.call(list, () => this.lib.v2GetUrmaEidList(dev, i)));
    return out;
  }

  /** Network health; result 0..127 (§4.9). */
  async getDeviceNetworkHealth(cardId: number, deviceId: number): Promise<number> {
    const { fn, dev } = this.at('dcmi_get_device_network_health', cardId, deviceId);
    const r = await this.callAsync(fn, () =>
      dev === undefined ? this.lib.getDeviceNetworkHealth(cardId, deviceId) : this.lib.v2GetDeviceNetworkHealth(dev),
    );
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
    if (this.v2) {
      // dev_id -1: every chip, the v2 form of §5.2's (-1, -1); events arrive through the same trampoline
      this.call('dcmiv2_subscribe_fault_event', () =>
        this.lib.v2SubscribeFaultEvents(-1, listener, undefined, options ?? {}),
      );
      return;
    }
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
