/**
 * The 910A3 switch library `liblingqu-dcmi.so` (spec L.9, dcmi-abi.md §8): opened like libdcmi (per-symbol
 * degradation, §1.3), initialised once, subscribed with a zero filter up to three times, queried for every current
 * fault (`listLen` 128). Typed face of the addon's `LingquLibrary`; no policy (the codes are assembled and levelled
 * in src/kube/device-info-switch.ts).
 */
import { loadAddon, type NativeLingquLibrary, type NativeSwitchEvent } from './bindings.js';

/** The library's file name (dcmi-abi.md §8). */
export const SWITCH_LIBRARY_NAME = 'liblingqu-dcmi.so';
/** Upstream's query size (dcmi-abi.md §8). */
export const SWITCH_QUERY_MAX = 128;
/** Attempts at the subscription (dcmi-abi.md §8: "subscribe up to 3 times"). */
export const SWITCH_SUBSCRIBE_TRIES = 3;

/** One switch fault event, as the library reported it. */
export type SwitchEvent = Readonly<NativeSwitchEvent>;

/** A failed switch library call: the function and its return code. */
export class SwitchLibraryError extends Error {
  constructor(
    readonly fn: string,
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'SwitchLibraryError';
  }
}

/** The opened switch library. */
export class SwitchLibrary {
  readonly #lib: NativeLingquLibrary;

  private constructor(
    readonly path: string,
    lib: NativeLingquLibrary,
  ) {
    this.#lib = lib;
  }

  /** dlopen the library (throws {@link SwitchLibraryError} with code -99999 when it cannot be opened). */
  static open(path: string): SwitchLibrary {
    try {
      return new SwitchLibrary(path, new (loadAddon().LingquLibrary)(path));
    } catch (err) {
      const e = err as { code?: unknown; message?: unknown };
      throw new SwitchLibraryError(
        'dlopen',
        typeof e.code === 'number' ? e.code : -99999,
        `${path}: ${typeof e.message === 'string' ? e.message : String(err)}`,
      );
    }
  }

  /** The functions the library lacks (each answers -99998, dcmi-abi.md §1.3). */
  missingSymbols(): string[] {
    return this.#lib.missingSymbols();
  }

  /** `lq_dcmi_init`; throws on a non-zero return code. */
  init(): void {
    const rc = this.#lib.init();
    if (rc !== 0) throw new SwitchLibraryError('lq_dcmi_init', rc, `lq_dcmi_init failed: ${rc}`);
  }

  /**
   * `lq_dcmi_subscribe_fault_event` with a zero filter, tried up to {@link SWITCH_SUBSCRIBE_TRIES} times. Returns
   * the last return code (0 = subscribed). Events reach `onEvents` in batches; `dropped` counts events that did not
   * fit the addon's queue (the caller then re-reads every fault).
   */
  subscribe(onEvents: (events: readonly SwitchEvent[], dropped: number) => void): number {
    let rc = -1;
    for (let i = 0; i < SWITCH_SUBSCRIBE_TRIES && rc !== 0; i++) rc = this.#lib.subscribe(onEvents);
    return rc;
  }

  /** Stops the delivery of events. */
  unsubscribe(): void {
    this.#lib.unsubscribe();
  }

  /** `lq_dcmi_get_fault_info`: every current fault; throws on a failed call or a count out of range (as upstream). */
  async queryFaults(): Promise<SwitchEvent[]> {
    const r = await this.#lib.queryFaults();
    if (r.rc !== 0)
      throw new SwitchLibraryError('lq_dcmi_get_fault_info', r.rc, `lq_dcmi_get_fault_info failed: ${r.rc}`);
    if (r.count > SWITCH_QUERY_MAX) {
      throw new SwitchLibraryError(
        'lq_dcmi_get_fault_info',
        0,
        `lq_dcmi_get_fault_info reported ${r.count} faults, more than the ${SWITCH_QUERY_MAX} asked for`,
      );
    }
    return r.events;
  }
}
