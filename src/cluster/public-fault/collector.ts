/**
 * `PubFaultCollector` (spec cluster-faults.md §2.2): the one path of both entry points. Rate limit per sender first
 * (a refused or invalid request still costs a token), then validation (§2.5), then one cache operation per (fault ×
 * influence) (§2.7). Answers with the codes of §2.6; every rejection is logged and counted by reason.
 */
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import { faultKey, type PublicFaultCache } from './cache.js';
import { EMPTY_PUBLIC_FAULT_CONFIG, type PublicFaultConfig } from './config.js';
import type { PublicFaultMetrics } from './metrics.js';
import { SenderLimiter } from './token-bucket.js';
import type { PublicFaultMessage, PublicFaultSource, Assertion } from './types.js';
import { validateMessage } from './validator.js';

/** §2.6 codes. */
export const RESP_OK = 0;
export const RESP_INVALID = 409;
export const RESP_LIMITED = 410;
export const INFO_OK = 'public fault send successfully';
export const INFO_NIL = 'req is nil';
export const INFO_LIMITED = 'limiter work by resource failed';
export const INFO_CHECK_PREFIX = 'check public fault info failed, error: ';

/** The answer of one message (`RespStatus`), plus the reason label of a rejection. */
export interface CollectResult {
  code: number;
  info: string;
  reason?: string;
}

/** Options of a collector. */
export interface PublicFaultCollectorOptions {
  cache: PublicFaultCache;
  /** monotonic: the sender buckets and the store's times (intervals only) */
  clock: Pick<Clock, 'monotonic'>;
  logger: Logger;
  metrics: PublicFaultMetrics;
  /** node name by `product-serial-number` (§2.5) */
  nodeBySerial: (sn: string) => string | undefined;
  config?: PublicFaultConfig;
  /** per-sender bucket (§2.4); defaults 100 and 1/s */
  senderBurst?: number;
  senderRatePerSec?: number;
}

function clip(s: unknown, n = 128): string {
  return typeof s === 'string' ? s.slice(0, n) : String(s);
}

/** The collector; owns the per-sender limiter and the current configuration. */
export class PublicFaultCollector {
  readonly #o: PublicFaultCollectorOptions;
  readonly #limiter: SenderLimiter;
  #config: PublicFaultConfig;

  constructor(options: PublicFaultCollectorOptions) {
    this.#o = options;
    this.#config = options.config ?? EMPTY_PUBLIC_FAULT_CONFIG;
    this.#limiter = new SenderLimiter(
      this.#config.senders,
      () => options.clock.monotonic(),
      options.senderBurst ?? 100,
      options.senderRatePerSec ?? 1,
    );
  }

  get config(): PublicFaultConfig {
    return this.#config;
  }

  /** Swaps the configuration and recreates every sender bucket, full (§2.3 "After any such event"). */
  setConfig(config: PublicFaultConfig): void {
    this.#config = config;
    this.#limiter.reset(config.senders);
  }

  #senderLabel(resource: unknown): string {
    return typeof resource === 'string' && this.#config.senders.includes(resource) ? resource : 'unknown';
  }

  #reject(
    source: PublicFaultSource,
    origin: string | undefined,
    msg: PublicFaultMessage | null,
    result: CollectResult,
  ): CollectResult {
    this.#o.metrics.request(source, this.#senderLabel(msg?.resource), 'rejected');
    this.#o.metrics.rejection(source, result.reason ?? 'unknown');
    this.#o.logger.warn(
      { source, origin, id: clip(msg?.id), resource: clip(msg?.resource), reason: result.reason, code: result.code },
      `public fault message rejected: ${result.info}`,
    );
    return result;
  }

  /** §2.2 for one message; `origin` (e.g. the ConfigMap) only goes to the logs. Never throws. */
  collect(msg: PublicFaultMessage | null | undefined, source: PublicFaultSource, origin?: string): CollectResult {
    if (msg === null || msg === undefined) {
      return this.#reject(source, origin, null, { code: RESP_INVALID, info: INFO_NIL, reason: 'nil-request' });
    }
    const refusal = this.#limiter.take(msg.resource);
    if (refusal !== undefined) {
      return this.#reject(source, origin, msg, { code: RESP_LIMITED, info: INFO_LIMITED, reason: refusal });
    }
    const result = validateMessage(msg, { config: this.#config, nodeBySerial: this.#o.nodeBySerial });
    for (const d of result.dropped) {
      this.#o.metrics.droppedFault(d.reason);
      this.#o.logger.warn(
        {
          source,
          origin,
          id: clip(msg.id),
          resource: msg.resource,
          faultIndex: d.index,
          faultId: d.faultId,
          reason: d.reason,
        },
        `public fault dropped: ${d.detail}`,
      );
    }
    if (!result.ok) {
      return this.#reject(source, origin, msg, {
        code: RESP_INVALID,
        info: INFO_CHECK_PREFIX + result.detail,
        reason: result.reason,
      });
    }
    const nowS = Math.floor(this.#o.clock.monotonic() / 1000);
    let capped = 0;
    for (const { fault, level, targets } of result.faults) {
      const key = faultKey(msg.resource, fault.faultId);
      const faultTime = Math.floor(fault.faultTime / 1000);
      for (const t of targets) {
        // one literal per target, not a spread of a per-fault record (the cache copies what it stores)
        const record = {
          resource: msg.resource,
          faultId: fault.faultId,
          faultType: fault.faultType,
          faultCode: fault.faultCode,
          level,
          devIds: t.deviceIds,
          faultTime,
        };
        const r = this.#o.cache.apply(fault.assertion as Assertion, t.node, key, record, nowS);
        if (r === 'capped') capped++;
      }
    }
    if (capped > 0) {
      // §2.8 / §2.12 item 4: still answered 0, but counted and logged here
      this.#o.metrics.droppedFault('cap', capped);
      this.#o.logger.warn(
        { source, origin, id: clip(msg.id), resource: msg.resource, entries: capped, cap: this.#o.cache.cap },
        'public fault entries dropped: the store is full',
      );
    }
    this.#o.metrics.request(source, msg.resource, 'accepted');
    this.#o.logger.debug(
      {
        source,
        origin,
        id: clip(msg.id),
        resource: msg.resource,
        faults: result.faults.length,
        dropped: result.dropped.length,
      },
      'public fault message accepted',
    );
    return { code: RESP_OK, info: INFO_OK };
  }
}
