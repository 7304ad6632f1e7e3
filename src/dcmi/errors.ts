/**
 * DCMI return codes (spec dcmi-abi.md §2.1) and the typed error every `src/dcmi` call throws.
 */
import { inspect } from 'node:util';

/** Meaning of each DCMI / wrapper return code, as dcmi-abi.md §2.1 lists them. */
export const DCMI_CODE_MEANINGS: ReadonlyMap<number, string> = new Map([
  [-8001, 'input parameter incorrect'],
  [-8002, 'permission error'],
  [-8003, 'memory interface operation failed'],
  [-8004, 'security function failed'],
  [-8005, 'internal error'],
  [-8006, 'response timed out'],
  [-8007, 'invalid device ID'],
  [-8008, 'device does not exist'],
  [-8009, 'ioctl failed'],
  [-8010, 'message send failed'],
  [-8011, 'message receive failed'],
  [-8012, 'not ready yet, try again (card dropped)'],
  [-8013, 'API not supported in containers'],
  [-8014, 'file operation failed'],
  [-8015, 'reset failed'],
  [-8016, 'reset cancelled'],
  [-8017, 'upgrading'],
  [-8020, 'device resources occupied'],
  [-8022, 'partition consistency check found inconsistent partitions'],
  [-8023, 'configuration does not exist'],
  [-8255, 'device ID / function not supported'],
  [-99997, 'dlclose failed'],
  [-99998, 'function symbol missing: upgrade the driver'],
  [-99999, 'libdcmi.so failed to load'],
]);

/** Well-known codes the rest of the agent tests for. */
export const DcmiCode = {
  PARAM: -8001,
  INTERNAL: -8005,
  INVALID_DEVICE: -8007,
  NOT_READY: -8012,
  RESET_FAILED: -8015,
  NOT_SUPPORTED: -8255,
  DLCLOSE_FAILED: -99997,
  SYMBOL_MISSING: -99998,
  LOAD_FAILED: -99999,
  /** not a DCMI code: a value DCMI returned is outside the ranges of dcmi-abi.md §2.2 */
  INVALID_OUTPUT: -1,
} as const;

/** Text for a code; unknown codes say so rather than guessing. */
export function describeDcmiCode(code: number): string {
  if (code === DcmiCode.INVALID_OUTPUT) return 'DCMI returned a value outside the valid range';
  return DCMI_CODE_MEANINGS.get(code) ?? 'unknown DCMI error code';
}

/** A failed DCMI call: `code` is the numeric return code, `fn` the C function. */
export class DcmiError extends Error {
  override readonly name = 'DcmiError';
  readonly meaning: string;

  constructor(
    readonly code: number,
    readonly fn: string,
    detail?: string,
    options?: { cause?: unknown },
  ) {
    const meaning = describeDcmiCode(code);
    super(`${fn} failed with ${code} (${meaning})${detail ? `: ${detail}` : ''}`, options);
    this.meaning = meaning;
  }

  /** -8012: the card dropped off the bus (device-plugin.md D.5). */
  get isCardDrop(): boolean {
    return this.code === DcmiCode.NOT_READY;
  }

  /** -8255 or a missing symbol: this driver lacks the feature. */
  get isUnsupported(): boolean {
    return this.code === DcmiCode.NOT_SUPPORTED || this.code === DcmiCode.SYMBOL_MISSING;
  }
}

/**
 * Converts whatever the addon threw into a DcmiError; TypeErrors from argument checks pass through.
 * Duck-typed rather than `instanceof`: the addon creates its errors in the main realm, which differs from the
 * realm of code run inside a `vm` context (jest).
 */
export function toDcmiError(err: unknown, fallbackFn: string): Error {
  if (err instanceof DcmiError) return err;
  if (typeof err !== 'object' || err === null) return new Error(String(err));
  const e = err as { name?: unknown; message?: unknown; code?: unknown; fn?: unknown };
  const message = typeof e.message === 'string' ? e.message : inspect(err);
  if (e.name === 'TypeError') return err instanceof TypeError ? err : new TypeError(message, { cause: err });
  if (typeof e.code === 'number') {
    const fn = typeof e.fn === 'string' ? e.fn : fallbackFn;
    return new DcmiError(e.code, fn, message, { cause: err });
  }
  return err instanceof Error ? err : new Error(message, { cause: err });
}
