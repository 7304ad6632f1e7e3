/**
 * The public-fault interface of the fault center (spec cluster-faults.md §2), assembled: configuration file with
 * hot reload, Node serial numbers, persistence, the ConfigMap entry point, the gRPC entry point, the delete-queue
 * timer, and the processor the center runs first in its chain (§2.9).
 */
import { SYSTEM_CLOCK, type Clock, type TimerHandle } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import type { ClusterKube } from '../kube.js';
import type { Registry } from 'prom-client';
import type { DeviceViewProcessor } from '../device-view.js';
import { PublicFaultCache } from './cache.js';
import { PublicFaultCollector } from './collector.js';
import { PublicFaultConfigSource } from './config-source.js';
import { PublicFaultConfigMapSource } from './configmap-source.js';
import { PublicFaultGrpcServer } from './grpc-server.js';
import { createPublicFaultMetrics } from './metrics.js';
import { NodeSerialWatcher } from './node-serials.js';
import { PubFaultProcessor } from './processor.js';
import { StatisticsWriter } from './statistics-writer.js';

export { PACKAGED_PUBLIC_FAULT_CONFIG, loadPublicFaultConfigFile } from './config-source.js';
export { PublicFaultConfigError, type PublicFaultConfig } from './config.js';

/** Options of {@link createPublicFaultService}. */
export interface PublicFaultServiceOptions {
  kube: ClusterKube;
  /** `:8899`, `host:port` or `unix:///path` */
  grpcAddress: string;
  /** the level/sender file (`-publicFaultConfig`) */
  configFile: string;
  /** namespace of `statistic-fault-info` (upstream `cluster-system`) */
  stateNamespace: string;
  logger: Logger;
  registry: Registry;
  /**
   * Default: the process clock. Wall time for Event times only; the buckets, the store's times and the delete queue
   * run on its monotonic clock (issue [T] item 1).
   */
  clock?: Clock;
  /** tuning for tests (defaults are upstream's) */
  cap?: number;
  statisticsIntervalMs?: number;
  configRetryDelayMs?: number;
  maxConfigMapValueBytes?: number;
}

/** The running interface. */
export interface PublicFaultService {
  /** §2.9 `PubFaultProcessor`: first in the chain, every cycle */
  readonly processor: DeviceViewProcessor;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Called after every change of the stored faults; returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
  /** The bound gRPC address once started (port resolved when `:0` was asked for). */
  readonly grpcAddress: string | undefined;
  /** Stored entries (one per fault × influence node). */
  readonly size: number;
}

/** Builds the service; nothing runs before {@link PublicFaultService.start}. */
export function createPublicFaultService(options: PublicFaultServiceOptions): PublicFaultService {
  const clock = options.clock ?? SYSTEM_CLOCK;
  const { logger } = options;
  const cache = new PublicFaultCache(options.cap !== undefined ? { cap: options.cap } : {});
  const metrics = createPublicFaultMetrics(options.registry, () => cache.size);
  const listeners = new Set<() => void>();
  const nodes = new NodeSerialWatcher(options.kube, logger);
  const collector = new PublicFaultCollector({
    cache,
    clock,
    logger,
    metrics,
    nodeBySerial: (sn) => nodes.serials.nodeBySerial(sn),
  });
  const configSource = new PublicFaultConfigSource({
    file: options.configFile,
    logger,
    metrics,
    ...(options.configRetryDelayMs !== undefined ? { retryDelayMs: options.configRetryDelayMs } : {}),
  });
  const statistics = new StatisticsWriter({
    kube: options.kube,
    namespace: options.stateNamespace,
    cache,
    logger,
    metrics,
    clock,
    ...(options.statisticsIntervalMs !== undefined ? { minIntervalMs: options.statisticsIntervalMs } : {}),
  });

  let expiryTimer: TimerHandle | undefined;
  let running = false;
  let seenVersion = cache.version;

  const changed = (): void => {
    if (cache.version === seenVersion) return;
    seenVersion = cache.version;
    statistics.notify();
    for (const l of listeners) {
      try {
        l();
      } catch (e) {
        logger.error({ err: String(e) }, 'public fault change listener failed');
      }
    }
  };

  // §2.7 delete queue: a timer for the head of the queue instead of upstream's 500 ms poll
  const stopExpiry = (): void => {
    if (expiryTimer !== undefined) clock.clearTimeout(expiryTimer);
    expiryTimer = undefined;
  };
  const scheduleExpiry = (): void => {
    stopExpiry();
    const at = cache.nextDeleteAt();
    if (!running || at === undefined) return;
    expiryTimer = clock.setTimeout(
      () => {
        expiryTimer = undefined;
        cache.expire(Math.floor(clock.monotonic() / 1000));
        changed();
        scheduleExpiry();
      },
      Math.max(0, at * 1000 - clock.monotonic()),
    );
  };

  const collect: PublicFaultCollector['collect'] = (msg, source, origin) => {
    const r = collector.collect(msg, source, origin);
    changed();
    scheduleExpiry();
    return r;
  };

  const configMaps = new PublicFaultConfigMapSource({
    kube: options.kube,
    collect,
    logger,
    metrics,
    ...(options.maxConfigMapValueBytes !== undefined ? { maxValueBytes: options.maxConfigMapValueBytes } : {}),
  });
  const grpcServer = new PublicFaultGrpcServer({ address: options.grpcAddress, collect, clock, logger, metrics });
  let boundAddress: string | undefined;

  return {
    processor: new PubFaultProcessor(cache),
    get grpcAddress() {
      return boundAddress;
    },
    get size() {
      return cache.size;
    },
    onChange(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    async start() {
      running = true;
      // upstream loads lazily on the first message (up to ~3 s of blocking); we load before serving
      collector.setConfig(configSource.initial());
      configSource.watch((c) => collector.setConfig(c));
      // the ConfigMaps' list is fetched meanwhile and handled once the serials and the restored store are in place
      const ready = (async () => {
        await nodes.start();
        await statistics.restore();
        changed();
      })();
      await Promise.all([ready, configMaps.start(ready)]);
      boundAddress = await grpcServer.start();
      logger.info({ grpcAddress: boundAddress, entries: cache.size }, 'public fault interface serving');
    },
    async stop() {
      running = false;
      stopExpiry();
      configSource.stop();
      await grpcServer.stop();
      await configMaps.stop();
      await nodes.stop();
      await statistics.flush();
      await statistics.stop();
    },
  };
}
