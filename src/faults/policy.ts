/**
 * A fault policy: the two fault files compiled together, as the engine uses them.
 */
import type { FaultCode } from './codes.js';
import {
  DEFAULT_CUSTOMIZATION,
  autofillReleaseSeconds,
  parseCustomizationJson,
  type Customization,
  type CustomizationParse,
} from './customization.js';
import {
  EMPTY_FAULT_CODE_TABLE,
  parseFaultCodeJson,
  type FaultCodeParse,
  type FaultCodeTable,
} from './fault-code-table.js';

/** Both fault files, validated. Immutable. */
export interface FaultPolicy {
  readonly codes: FaultCodeTable;
  readonly customization: Customization;
}

/** Builds a policy from already parsed parts. */
export function makePolicy(codes: FaultCodeTable, customization: Customization = DEFAULT_CUSTOMIZATION): FaultPolicy {
  return { codes, customization };
}

/** The policy with nothing configured. */
export const EMPTY_POLICY: FaultPolicy = makePolicy(EMPTY_FAULT_CODE_TABLE, DEFAULT_CUSTOMIZATION);

/** Result of compiling both documents. */
export interface PolicyParse {
  faultCode: FaultCodeParse;
  customization: CustomizationParse;
  /** Present when both documents are usable. */
  policy?: FaultPolicy;
}

/** Parses both documents (text) and compiles them when both are usable. Never throws. */
export function parsePolicy(faultCodeText: string, customizationText: string): PolicyParse {
  const faultCode = parseFaultCodeJson(faultCodeText);
  const customization = parseCustomizationJson(customizationText);
  const out: PolicyParse = { faultCode, customization };
  if (faultCode.ok && customization.ok) out.policy = makePolicy(faultCode.table, customization.customization);
  return out;
}

/** A plain-JSON view of what a policy does (the `effective` part of `npuctl config check`). */
export function describePolicy(p: FaultPolicy, hex: (c: FaultCode) => string): Record<string, unknown> {
  const c = p.customization;
  return {
    GraceTolerance: { ...c.grace },
    FaultFrequency: [...c.frequency].map(([code, r]) => ({
      EventId: hex(code),
      TimeWindow: r.timeWindowSec,
      Times: r.times,
      FaultHandling: r.handling,
      ReleaseTimeWindow: r.releaseTimeWindowSec,
      fromIndex: r.index,
    })),
    FaultDuration: [...c.duration].map(([code, r]) => ({
      EventId: hex(code),
      FaultTimeout: r.faultTimeoutSec,
      RecoverTimeout: r.recoverTimeoutSec,
      FaultHandling: r.handling,
      fromIndex: r.index,
    })),
    autofillReleaseTimeWindow: autofillReleaseSeconds(c),
    hbmAicCorrelationHold: c.duration.has(0x80e01801),
    faultCodeCounts: { chip: p.codes.chip.size, network: p.codes.network.size },
  };
}
