/**
 * Validation of a public-fault message (spec cluster-faults.md §2.5), pure: the configuration and the serial-number
 * lookup are passed in. Message-level rules reject the whole message; a failing fault-level rule (or any failing
 * influence) drops only that fault; no fault left rejects the message.
 */
import { levelOf, type PublicFaultConfig } from './config.js';
import type { PublicFault, PublicFaultMessage, PublicFaultLevel } from './types.js';

/** 2025-01-01T00:00:00Z in ms: no timestamp or faultTime may be earlier (§2.5 rule 2). */
export const EARLIEST_TIME_MS = 1_735_689_600_000;
const LARGEST_13_DIGITS = 9_999_999_999_999;

/** `^[a-zA-Z0-9-_.]{8,128}$` (§2.5 rule 1, also faultId). */
export const ID_PATTERN = /^[A-Za-z0-9_.-]{8,128}$/;
/** A Kubernetes node name (§2.5 influence). */
export const NODE_NAME_PATTERN = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;
/** Go RE2 `^[\S ]{0,512}$`: up to 512 code points, none of TAB, LF, FF, CR (VT is allowed: Go's `\s` lacks it). */
export const DESCRIPTION_PATTERN = /^[^\t\n\f\r]{0,512}$/u;

export const FAULT_TYPES: ReadonlySet<string> = new Set(['NPU', 'Node', 'Network', 'Storage']);
export const ASSERTIONS: ReadonlySet<string> = new Set(['occur', 'recover', 'once']);
export const MAX_FAULTS = 100;
export const MAX_INFLUENCES = 1000;
export const MAX_DEVICE_IDS = 32;
export const MAX_DEVICE_ID = 31;
export const MAX_LOCATION_ENTRIES = 10;
export const MAX_LOCATION_KEY_BYTES = 16;
export const MAX_LOCATION_VALUE_BYTES = 128;

/** Why a message was rejected (metric label) with upstream's error detail (§2.5 "error detail"). */
export const MESSAGE_REJECTIONS = {
  'invalid-id': 'invalid id',
  'invalid-timestamp': 'invalid timestamp',
  'timestamp-before-2025': 'invalid timestamp, can not before 2025/01/01T00:00:00Z',
  'invalid-version': 'invalid version',
  'invalid-resource': 'invalid resource',
  'invalid-faults-length': 'invalid faults length',
  'no-valid-fault': 'there is no valid fault',
} as const;
export type MessageRejection = keyof typeof MESSAGE_REJECTIONS;

/** Why one fault was dropped (metric label). */
export type FaultRejection =
  | 'invalid-fault-id'
  | 'invalid-fault-type'
  | 'invalid-fault-code'
  | 'unknown-fault-code'
  | 'invalid-fault-time'
  | 'fault-time-before-2025'
  | 'invalid-assertion'
  | 'invalid-fault-location'
  | 'invalid-influence-length'
  | 'no-node'
  | 'invalid-node-name'
  | 'unknown-node-sn'
  | 'invalid-device-ids-length'
  | 'device-id-out-of-range'
  | 'duplicate-device-id'
  | 'invalid-description';

/** A fault that passed, with its level and the node each influence resolved to (in influence order). */
export interface ValidFault {
  fault: PublicFault;
  level: PublicFaultLevel;
  targets: { node: string; deviceIds: number[] }[];
}

/** A fault that was dropped: its index in the message, its id as sent, why, and a sentence for the log. */
export interface DroppedFault {
  index: number;
  faultId: string;
  reason: FaultRejection;
  detail: string;
}

export type ValidationResult =
  | { ok: true; faults: ValidFault[]; dropped: DroppedFault[] }
  | { ok: false; reason: MessageRejection; detail: string; dropped: DroppedFault[] };

/** What validation needs besides the message. */
export interface ValidationContext {
  config: PublicFaultConfig;
  /** Node name of a `product-serial-number` annotation value, undefined when no node carries it. */
  nodeBySerial(sn: string): string | undefined;
}

/** §2.5 rule 2 (also faultTime): 13 decimal digits, not before 2025. */
function timeProblem(t: number): 'format' | 'early' | undefined {
  if (!Number.isInteger(t) || t < 1_000_000_000_000 || t > LARGEST_13_DIGITS) return 'format';
  return t < EARLIEST_TIME_MS ? 'early' : undefined;
}

function bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

type Check<T> = { ok: true; value: T } | { ok: false; reason: FaultRejection; detail: string };

function fail(reason: FaultRejection, detail: string): { ok: false; reason: FaultRejection; detail: string } {
  return { ok: false, reason, detail };
}

function checkInfluences(f: PublicFault, ctx: ValidationContext): Check<ValidFault['targets']> {
  if (!Array.isArray(f.influence) || f.influence.length < 1 || f.influence.length > MAX_INFLUENCES) {
    return fail('invalid-influence-length', `influence must have 1 to ${MAX_INFLUENCES} entries`);
  }
  const targets: ValidFault['targets'] = [];
  for (const [i, inf] of f.influence.entries()) {
    let node: string;
    if (inf.nodeName !== '') {
      // a non-empty nodeName wins; only its syntax is checked (§2.5, §2.12 item 6)
      if (!NODE_NAME_PATTERN.test(inf.nodeName)) return fail('invalid-node-name', `influence[${i}]: invalid nodeName`);
      node = inf.nodeName;
    } else if (inf.nodeSN === '') {
      // deviation: upstream may resolve "" to a node without the annotation (§2.5 quirk); we refuse it
      return fail('no-node', `influence[${i}]: neither nodeName nor nodeSN`);
    } else {
      const found = ctx.nodeBySerial(inf.nodeSN);
      if (found === undefined) return fail('unknown-node-sn', `influence[${i}]: no node has serial number`);
      node = found;
    }
    const ids = inf.deviceIds;
    if (!Array.isArray(ids) || ids.length < 1 || ids.length > MAX_DEVICE_IDS) {
      return fail('invalid-device-ids-length', `influence[${i}]: deviceIds must have 1 to ${MAX_DEVICE_IDS} entries`);
    }
    // ids are 0..31: one bit each (no Set per influence: a message may carry 100,000 influences)
    let seen = 0;
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id > MAX_DEVICE_ID) {
        return fail('device-id-out-of-range', `influence[${i}]: device id ${id} is not in 0..${MAX_DEVICE_ID}`);
      }
      if ((seen & (1 << id)) !== 0) {
        return fail('duplicate-device-id', `influence[${i}]: device id ${id} is listed twice`);
      }
      seen |= 1 << id;
    }
    // no copy: the cache copies what it stores (cache.ts)
    targets.push({ node, deviceIds: ids });
  }
  return { ok: true, value: targets };
}

/** The fault-level rules of §2.5, in upstream's order. */
export function validateFault(f: PublicFault, ctx: ValidationContext): Check<ValidFault> {
  if (typeof f.faultId !== 'string' || !ID_PATTERN.test(f.faultId)) return fail('invalid-fault-id', 'invalid faultId');
  if (!FAULT_TYPES.has(f.faultType)) return fail('invalid-fault-type', 'invalid faultType');
  if (typeof f.faultCode !== 'string' || bytes(f.faultCode) !== 9) {
    return fail('invalid-fault-code', 'faultCode must be 9 bytes long');
  }
  const level = levelOf(ctx.config, f.faultCode);
  if (level === '') return fail('unknown-fault-code', 'faultCode is not in the configuration');
  const time = timeProblem(f.faultTime);
  if (time === 'format') return fail('invalid-fault-time', 'invalid faultTime');
  if (time === 'early') return fail('fault-time-before-2025', 'invalid faultTime, can not before 2025/01/01T00:00:00Z');
  if (!ASSERTIONS.has(f.assertion)) return fail('invalid-assertion', 'invalid assertion');
  if (f.faultLocation !== null) {
    const entries = Object.entries(f.faultLocation);
    if (entries.length > MAX_LOCATION_ENTRIES) {
      return fail('invalid-fault-location', `faultLocation has more than ${MAX_LOCATION_ENTRIES} entries`);
    }
    for (const [k, v] of entries) {
      if (bytes(k) > MAX_LOCATION_KEY_BYTES || typeof v !== 'string' || bytes(v) > MAX_LOCATION_VALUE_BYTES) {
        return fail(
          'invalid-fault-location',
          `faultLocation keys are at most ${MAX_LOCATION_KEY_BYTES} bytes and values ${MAX_LOCATION_VALUE_BYTES}`,
        );
      }
    }
  }
  const targets = checkInfluences(f, ctx);
  if (!targets.ok) return targets;
  if (typeof f.description !== 'string' || !DESCRIPTION_PATTERN.test(f.description)) {
    return fail('invalid-description', 'description has more than 512 characters or a tab or line break');
  }
  return { ok: true, value: { fault: f, level, targets: targets.value } };
}

function reject(reason: MessageRejection, dropped: DroppedFault[] = []): ValidationResult {
  return { ok: false, reason, detail: MESSAGE_REJECTIONS[reason], dropped };
}

/** Validates a message (§2.5); never throws for any decoded message. */
export function validateMessage(msg: PublicFaultMessage, ctx: ValidationContext): ValidationResult {
  if (typeof msg.id !== 'string' || !ID_PATTERN.test(msg.id)) return reject('invalid-id');
  const ts = timeProblem(msg.timestamp);
  if (ts === 'format') return reject('invalid-timestamp');
  if (ts === 'early') return reject('timestamp-before-2025');
  if (msg.version !== '1.0') return reject('invalid-version');
  if (!ctx.config.senders.includes(msg.resource)) return reject('invalid-resource');
  // faultsSent: the decoders did not build the faults of an over-long list (request-decode.ts, message-decode.ts)
  const sent = msg.faultsSent ?? (Array.isArray(msg.faults) ? msg.faults.length : 0);
  if (!Array.isArray(msg.faults) || sent < 1 || sent > MAX_FAULTS) return reject('invalid-faults-length');
  const faults: ValidFault[] = [];
  const dropped: DroppedFault[] = [];
  for (const [index, f] of msg.faults.entries()) {
    const r = validateFault(f, ctx);
    if (r.ok) faults.push(r.value);
    else dropped.push({ index, faultId: String(f.faultId).slice(0, 128), reason: r.reason, detail: r.detail });
  }
  if (faults.length === 0) return reject('no-valid-fault', dropped);
  return { ok: true, faults, dropped };
}
