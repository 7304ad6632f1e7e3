/**
 * What the pieces of the health layer share (monitor, intake queue, compensation, card drop, link limiter): the
 * DCMI calls they make, what they read from the store, the observer hooks, and two small helpers.
 */
import type { FaultSubscription } from '../dcmi/dcmi.js';
import { goHex, type FaultCode } from '../faults/codes.js';
import type { Assertion, ChipView } from '../faults/engine-types.js';
import type { Logger } from '../core/logger.js';

/** The DCMI calls the health layer makes (a subset of `Dcmi`, so tests may stub it). */
export interface HealthDcmi {
  subscribeFaultEvents(subscription: FaultSubscription, options?: { maxQueue?: number }): void;
  unsubscribeFaultEvents(): void;
  getDeviceAllErrorCodes(cardId: number, deviceId: number): { codes: number[]; cardDropped: boolean };
  /**
   * The code list without the health read (`Dcmi.getDeviceErrorCodes`): used where the card-drop check has just
   * asked `dcmi_get_device_health` itself. A stub without it is read through `getDeviceAllErrorCodes`.
   */
  getDeviceErrorCodes?(cardId: number, deviceId: number): number[];
  getDeviceHealth(cardId: number, deviceId: number): number;
}

/** One chip as the health layer reads it from the store, to diff against DCMI. */
export type ChipStateView = Pick<
  ChipView,
  'health' | 'networkHealth' | 'alarmRaisedTime' | 'networkAlarmRaisedTime'
> & {
  readonly faultCodes: readonly string[];
  readonly networkFaultCodes: readonly string[];
};

/** What the monitor reads from the store to diff against (the store's `chip(logicId)` fits). */
export interface ChipStateReader {
  chip(logicId: number): ChipStateView | undefined;
}

export type HealthMode = 'starting' | 'subscribed' | 'polling';

/** Why a chip's codes were read back from DCMI. */
export type CompensationReason =
  'first-start' | 're-sync' | 'polling' | 'long-unhealthy' | 'network-long-unhealthy' | 'periodic' | 'card-drop';

/** Hooks for metrics (every method optional). */
export interface HealthObserver {
  /** A DCMI fault event was received. */
  faultEvent?(code: string, assertion: Assertion): void;
  /** Events that could not be queued (`intake`) or that the binding could not deliver (`binding`). */
  droppedResynced?(logicIds: readonly number[], count: number, where: 'intake' | 'binding'): void;
  /** A DCMI call failed (not counting -8012 card-drop answers, which are information). */
  dcmiError?(fn: string, code: number): void;
  /** A synthetic event was sent (compensation). */
  synthesized?(logicId: number, code: string, assertion: Assertion, reason: CompensationReason): void;
  modeChanged?(mode: HealthMode, reason: string): void;
}

/** The DCMI return code an error carries (`DcmiError.code`), if any. */
export function dcmiErrorCode(err: unknown): number | undefined {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'number' ? c : undefined;
}

/** Counts and logs a failed DCMI call (`fn` when the error does not name its function). */
export function reportDcmiError(err: unknown, fn: string, observer: HealthObserver | undefined, log: Logger): void {
  const name = (err as { fn?: unknown } | null)?.fn;
  observer?.dcmiError?.(typeof name === 'string' ? name : fn, dcmiErrorCode(err) ?? -1);
  log.warn({ err, fn }, 'DCMI call failed');
}

/** Upper-case hex text of a code, as the ConfigMap and logs write it. */
export function codeText(code: FaultCode): string {
  return goHex(code).toUpperCase();
}
