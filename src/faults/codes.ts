/**
 * Fault codes as numbers: hex parsing the way upstream parses configuration (Go `strconv.ParseInt(s, 16, 64)`),
 * canonical text (spec E.3) and the parameter-plane / hyper-plane classification (spec D.6).
 */

/** A fault code (DCMI event id, or a wider synthetic code). Always an integer within ±2^53. */
export type FaultCode = number;

/** RoCE link down (spec F.6). */
export const LINK_DOWN_CODE: FaultCode = 0x81078603;
/** UBoE port down (A5). */
export const UBOE_PORT_DOWN_CODE: FaultCode = 0x81078607;
/** HBM double-bit fault; drives the AIC/AIV correlation hold of spec D.6. */
export const HBM_DOUBLE_BIT_CODE: FaultCode = 0x80e01801;
/** AIC bus fault held by the correlation filter (spec D.6). */
export const AIC_BUS_CODE: FaultCode = 0x80c98009;
/** AIV bus fault held by the correlation filter (spec D.6). */
export const AIV_BUS_CODE: FaultCode = 0x80cb8009;
/** Chip reset finished: never a fault, marks the chip for re-sync (spec D.4). */
export const RESET_FINISHED_CODE: FaultCode = 0x8c2fa009;
// Card drop (spec D.5) is src/core/chips.ts's CARD_DROP_CODE: the DCMI layer synthesises it.

/** A5 UBoE derived code: one bonding port down (upstream `UBOESubHealFaultCode`, SubHealthFaultCodes by default). */
export const UBOE_SUBHEALTH_CODE: FaultCode = 0x110000002;
/** A5 UBoE derived code: both bonding ports down (upstream `UBOEPreSeparateFaultCode`, PreSeparateNPUCodes). */
export const UBOE_PRESEPARATE_CODE: FaultCode = 0x110001024;
/** A5 UB (hyper-plane) port down (upstream `UBPortDownCode`). */
export const UB_PORT_DOWN_CODE: FaultCode = 0x81b18603;
/** A5 UB derived code: some, not all, chips of the node have a UB port down (upstream `UBSeparateFaultCode`). */
export const UB_SEPARATE_CODE: FaultCode = 0x020001002;
/** A5 UB derived code: every chip of the node has a UB port down (upstream `UBSubHealFaultCode`). */
export const UB_SUBHEALTH_CODE: FaultCode = 0x020000002;

/** Parameter-plane (network) codes (spec D.6). */
export const PARAMETER_PLANE_CODES: ReadonlySet<FaultCode> = new Set([
  LINK_DOWN_CODE,
  UBOE_PORT_DOWN_CODE,
  UBOE_SUBHEALTH_CODE,
  UBOE_PRESEPARATE_CODE,
]);

/** The A5 UBoE codes the health layer derives from the bonding-port down count (D.5: left out of the DCMI diff). */
export const UBOE_DERIVED_CODES: ReadonlySet<FaultCode> = new Set([UBOE_SUBHEALTH_CODE, UBOE_PRESEPARATE_CODE]);

/** Hyper-plane codes (A5 only, spec D.6). */
export const HYPER_PLANE_CODES: ReadonlySet<FaultCode> = new Set([
  UB_PORT_DOWN_CODE,
  UB_SEPARATE_CODE,
  UB_SUBHEALTH_CODE,
]);

/** The A5 UB codes the fault engine derives across the node's chips (never read from DCMI). */
export const UB_DERIVED_CODES: ReadonlySet<FaultCode> = new Set([UB_SEPARATE_CODE, UB_SUBHEALTH_CODE]);

/** True for a parameter-plane (network) code: it only affects NetworkHealth (spec D.6, F.6). */
export function isNetworkCode(code: FaultCode): boolean {
  return PARAMETER_PLANE_CODES.has(code);
}

/** Result of parsing configured hex text. */
export type HexParse = { ok: true; value: FaultCode } | { ok: false; reason: string };

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/**
 * Parses configured fault-code text like Go's `strconv.ParseInt(s, 16, 64)`: optional sign, hex digits, no `0x`
 * prefix, no underscores. Values beyond ±2^53 are valid for upstream but cannot be held exactly here; they are
 * refused with their own reason (no DCMI code comes near: event ids are 32-bit, synthetic codes ≤ 0x200001002).
 */
export function parseHexCode(text: string): HexParse {
  const m = /^([+-]?)([0-9a-fA-F]+)$/.exec(text);
  if (!m) return { ok: false, reason: `"${text}" is not a hexadecimal number (E.1: hex digits, no 0x prefix)` };
  const big = BigInt(`0x${m[2]}`) * (m[1] === '-' ? -1n : 1n);
  if (big > INT64_MAX || big < INT64_MIN) return { ok: false, reason: `"${text}" is out of the int64 range` };
  if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < BigInt(Number.MIN_SAFE_INTEGER)) {
    return { ok: false, reason: `"${text}" exceeds 2^53 and cannot be a fault code of this agent` };
  }
  return { ok: true, value: Number(big) };
}

/** Go's `%x` of an int64: lower-case hex without leading zeros, `-` for negatives. */
export function goHex(code: FaultCode): string {
  return code < 0 ? `-${(-code).toString(16)}` : code.toString(16);
}

/**
 * The canonical text of codes (spec E.3): the first configured spelling of a value, lower-cased; `%x` otherwise.
 * Instances are immutable; {@link FormatTable.extend} and {@link FormatTable.reconfigure} return a new table.
 */
export class FormatTable {
  private constructor(
    private readonly byCode: ReadonlyMap<FaultCode, string>,
    /** Entries the current configuration would not give (kept for codes in use): what a state export needs. */
    private readonly extra: ReadonlyMap<FaultCode, string> = new Map(),
  ) {}

  /** An empty table. */
  static empty(): FormatTable {
    return new FormatTable(new Map());
  }

  /** Rebuilds a table from exported pairs (values already lower-case); every pair counts as an extra. */
  static fromEntries(entries: Iterable<readonly [FaultCode, string]>): FormatTable {
    const m = new Map(entries);
    return new FormatTable(m, m);
  }

  /** A new table with `spellings` registered in order; an already registered value keeps its spelling (E.3). */
  extend(spellings: Iterable<string>): FormatTable {
    const next = new Map(this.byCode);
    for (const s of spellings) {
      const p = parseHexCode(s);
      if (p.ok && !next.has(p.value)) next.set(p.value, s.toLowerCase());
    }
    return new FormatTable(next, this.extra);
  }

  /**
   * The table of a new configuration: `spellings` registered in order (E.3: within one configuration the first
   * spelling of a value wins), and for the values in `keep` (codes chips carry, codes upgrade reasons reference)
   * the spelling registered so far, if any; nothing else. A deliberate deviation from E.3, where a registration
   * is never cleared or replaced for the life of the process: there a table loaded once and reverted kept every
   * spelling, and here the table never holds more than the current configuration plus the codes in use, so a
   * revert gives the memory back. A value no longer in use takes the current configuration's spelling.
   */
  reconfigure(spellings: Iterable<string>, keep: ReadonlySet<FaultCode>): FormatTable {
    const next = new Map<FaultCode, string>();
    for (const s of spellings) {
      const p = parseHexCode(s);
      if (p.ok && !next.has(p.value)) next.set(p.value, s.toLowerCase());
    }
    const extra = new Map<FaultCode, string>();
    for (const code of keep) {
      const old = this.byCode.get(code);
      if (old === undefined || (next.get(code) ?? goHex(code)) === old) continue; // the same text without it
      next.set(code, old);
      extra.set(code, old);
    }
    return new FormatTable(next, extra);
  }

  /** Number of registered values. */
  get size(): number {
    return this.byCode.size;
  }

  /** Lower-case canonical text (the key form of upstream caches and of `fault_code` in upgrade reasons). */
  lower(code: FaultCode): string {
    return this.byCode.get(code) ?? goHex(code);
  }

  /** Upper-case canonical text, used on every external surface (spec E.3). */
  upper(code: FaultCode): string {
    return this.lower(code).toUpperCase();
  }

  /** All registered pairs. */
  entries(): [FaultCode, string][] {
    return [...this.byCode];
  }

  /**
   * The pairs the configuration in use does not give (spellings kept for codes in use), for export: with the
   * configuration they rebuild the whole table, so a state does not grow with the configuration.
   */
  extras(): [FaultCode, string][] {
    return [...this.extra];
  }
}
