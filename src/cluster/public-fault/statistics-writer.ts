/**
 * Persistence of public faults in `statistic-fault-info` (spec cluster-faults.md §2.10): a coalescing writer (one
 * pending notification, a pause after each write) and the restore at start. A failed write is retried after the
 * pause (upstream waits for the next change); a corrupt stored value is logged, reported as a Kubernetes Event and
 * ignored — the center starts empty and keeps serving.
 */
import type { Logger } from '../../core/logger.js';
import type * as k8s from '@kubernetes/client-node';
import type { ClusterKube } from '../kube.js';
import type { PublicFaultCache } from './cache.js';
import type { PublicFaultMetrics } from './metrics.js';
import {
  KEY_PUBLIC_FAULTS,
  restoreStatistics,
  STATISTICS_LABEL,
  STATISTICS_NAME,
  statisticsContent,
  StatisticsCorruptError,
  countOnlyCreateData,
  type RestoreResult,
} from './statistics.js';
import { WholeSecondTime } from '../../core/kube-time.js';

/** Options of the writer. */
export interface StatisticsWriterOptions {
  kube: ClusterKube;
  namespace: string;
  cache: PublicFaultCache;
  logger: Logger;
  metrics: PublicFaultMetrics;
  /** ms */
  now: () => number;
  /** pause after each write (§2.10: 1 s) */
  minIntervalMs?: number;
}

function httpStatus(e: unknown): number | undefined {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === 'number' ? c : undefined;
}

/** The writer of one namespace's `statistic-fault-info`. */
export class StatisticsWriter {
  readonly #o: StatisticsWriterOptions;
  readonly #core: ClusterKube['core'];
  #dirty = false;
  #running: Promise<void> | undefined;
  #stopped = false;

  constructor(options: StatisticsWriterOptions) {
    this.#o = options;
    this.#core = options.kube.core;
  }

  /** The cache changed: write soon (coalesced). */
  notify(): void {
    if (this.#stopped) return;
    this.#dirty = true;
    this.#running ??= this.#loop().finally(() => {
      this.#running = undefined;
    });
  }

  /** Resolves when nothing is pending or being written. */
  async flush(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  /** Stops after the write in progress (pending notifications are dropped). */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.flush();
  }

  async #loop(): Promise<void> {
    while (this.#dirty && !this.#stopped) {
      this.#dirty = false;
      if (!(await this.#write())) this.#dirty = true;
      await new Promise((r) => setTimeout(r, this.#o.minIntervalMs ?? 1000).unref());
    }
  }

  /** One write; false when it failed and should be retried. */
  async #write(): Promise<boolean> {
    const { namespace, logger, metrics } = this.#o;
    const content = statisticsContent(this.#o.cache);
    if (content.kind === 'patch') {
      try {
        await this.#o.kube.mergePatchConfigMap({ name: STATISTICS_NAME, namespace, body: { data: content.data } });
        metrics.persistence('patch', 'ok');
        return true;
      } catch (e) {
        if (httpStatus(e) === 404) return this.#createCountOnly(content.data);
        metrics.persistence('patch', 'error');
        logger.error({ configMap: `${namespace}/${STATISTICS_NAME}`, err: String(e) }, 'public fault count not saved');
        return false;
      }
    }
    const body: k8s.V1ConfigMap = {
      metadata: { name: STATISTICS_NAME, namespace, labels: { [STATISTICS_LABEL]: 'true' } },
      data: content.data,
    };
    try {
      try {
        await this.#core.replaceNamespacedConfigMap({ name: STATISTICS_NAME, namespace, body });
      } catch (e) {
        if (httpStatus(e) !== 404) throw e;
        await this.#core.createNamespacedConfigMap({ namespace, body });
      }
      metrics.persistence('write', 'ok');
      return true;
    } catch (e) {
      metrics.persistence('write', 'error');
      logger.error(
        { configMap: `${namespace}/${STATISTICS_NAME}`, err: String(e) },
        'public faults not saved; retrying',
      );
      return false;
    }
  }

  /**
   * Issue [O] item 3: above 4,500 entries upstream only merge-patches the count, which fails (404) when the
   * ConfigMap was never created; it is created here with the count, the description and no detail.
   */
  async #createCountOnly(patch: Record<string, string>): Promise<boolean> {
    const { namespace, logger, metrics } = this.#o;
    const body: k8s.V1ConfigMap = {
      metadata: { name: STATISTICS_NAME, namespace, labels: { [STATISTICS_LABEL]: 'true' } },
      data: countOnlyCreateData(patch),
    };
    try {
      await this.#core.createNamespacedConfigMap({ namespace, body });
      metrics.persistence('create', 'ok');
      logger.info({ configMap: `${namespace}/${STATISTICS_NAME}` }, 'statistic-fault-info created with the count only');
      return true;
    } catch (e) {
      metrics.persistence('create', 'error');
      logger.error({ configMap: `${namespace}/${STATISTICS_NAME}`, err: String(e) }, 'public fault count not saved');
      // created by someone else meanwhile: the next attempt patches it
      return false;
    }
  }

  /**
   * §2.10 restart load. A missing ConfigMap or key loads nothing; a corrupt value is logged as an error, reported
   * as a Warning Event on the ConfigMap, and loads nothing. Never throws.
   */
  async restore(): Promise<RestoreResult & { error?: string }> {
    // a restore starts a (new) leadership term: writing is allowed again after an earlier stop()
    this.#stopped = false;
    const { namespace, logger, metrics, cache } = this.#o;
    const empty: RestoreResult = { loaded: 0, skipped: 0, capped: 0, problems: [] };
    let cm: k8s.V1ConfigMap;
    try {
      cm = await this.#core.readNamespacedConfigMap({ name: STATISTICS_NAME, namespace });
    } catch (e) {
      if (httpStatus(e) === 404) return empty;
      metrics.persistence('restore', 'error');
      logger.error({ configMap: `${namespace}/${STATISTICS_NAME}`, err: String(e) }, 'public faults not restored');
      return { ...empty, error: String(e) };
    }
    const value = cm.data?.[KEY_PUBLIC_FAULTS];
    if (value === undefined) {
      logger.warn({ configMap: `${namespace}/${STATISTICS_NAME}` }, `no ${KEY_PUBLIC_FAULTS} key: nothing restored`);
      return empty;
    }
    try {
      const r = restoreStatistics(value, cache, Math.floor(this.#o.now() / 1000));
      metrics.persistence('restore', 'ok');
      for (const p of r.problems) logger.warn({ configMap: `${namespace}/${STATISTICS_NAME}` }, p);
      logger.info(
        { loaded: r.loaded, skipped: r.skipped, capped: r.capped },
        'public faults restored from statistic-fault-info',
      );
      return r;
    } catch (e) {
      if (!(e instanceof StatisticsCorruptError)) throw e;
      metrics.persistence('restore', 'error');
      logger.error(
        { configMap: `${namespace}/${STATISTICS_NAME}`, key: KEY_PUBLIC_FAULTS, err: e.message },
        'stored public faults are corrupt: starting empty',
      );
      await this.#event(e.message);
      return { ...empty, error: e.message };
    }
  }

  async #event(message: string): Promise<void> {
    const { namespace, logger } = this.#o;
    const now = new WholeSecondTime(this.#o.now()); // metav1.Time: whole seconds, as the server stores it
    try {
      await this.#core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { generateName: `${STATISTICS_NAME}.`, namespace },
          involvedObject: { kind: 'ConfigMap', apiVersion: 'v1', name: STATISTICS_NAME, namespace },
          type: 'Warning',
          reason: 'PublicFaultRestoreFailed',
          message: `stored public faults are corrupt and were not restored: ${message}`.slice(0, 1024),
          source: { component: 'ascend-fault-center' },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (e) {
      logger.warn({ err: String(e) }, 'could not record the restore failure as an Event');
    }
  }
}
