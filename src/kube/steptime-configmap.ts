/**
 * `-enableSlowNode` (spec A.1, C.4): the `PERF_DUMP_PATH` / `PERF_DUMP_CONFIG` environment Allocate adds, from the
 * ConfigMap `kube-system/steptime-dtpgroup`. Every data value is `{"data":{"PerfDumpPath":…,"PerfDumpConfig":…}}`;
 * the last one wins (upstream iterates a Go map, in no fixed order: here the keys in byte order). No ConfigMap, or a
 * value that does not parse, gives no variables (spec C.4), the latter with a warning naming the key.
 *
 * Upstream reads the ConfigMap in each Allocate; here it is watched and Allocate reads the last version, so the
 * kubelet path never waits on the API server (architecture §2).
 */
import type * as k8s from '@kubernetes/client-node';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { ListWatch, type WatchFn } from './list-watch.js';
import type { BackoffOptions } from './write-queue.js';

export const STEPTIME_NAMESPACE = 'kube-system';
export const STEPTIME_NAME = 'steptime-dtpgroup';
/** Environment variables of spec C.4. */
export const PERF_DUMP_PATH_ENV = 'PERF_DUMP_PATH';
export const PERF_DUMP_CONFIG_ENV = 'PERF_DUMP_CONFIG';
/** Longest value read (the ConfigMap's own limit is 1 MiB in all). */
const MAX_VALUE_CHARS = 64 * 1024;

/** The variables of one ConfigMap's data (pure): `{}` when absent or when a value does not parse. */
export function perfDumpEnvOf(
  data: Readonly<Record<string, string>> | undefined,
  warn: (key: string, reason: string) => void = () => undefined,
): Record<string, string> {
  if (data === undefined) return {};
  let out: Record<string, string> = {};
  for (const key of Object.keys(data).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))) {
    const text = data[key]!;
    if (text.length > MAX_VALUE_CHARS) {
      warn(key, `longer than ${MAX_VALUE_CHARS} characters`);
      return {};
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      warn(key, `not JSON: ${(err as Error).message.slice(0, 200)}`);
      return {};
    }
    const inner = (parsed as { data?: unknown } | null)?.data;
    if (typeof inner !== 'object' || inner === null || Array.isArray(inner)) {
      warn(key, 'expected {"data":{"PerfDumpPath":…,"PerfDumpConfig":…}}');
      return {};
    }
    const { PerfDumpPath, PerfDumpConfig } = inner as { PerfDumpPath?: unknown; PerfDumpConfig?: unknown };
    const str = (v: unknown, field: string): string | undefined => {
      if (v === undefined || v === null) return ''; // Go: the zero value
      if (typeof v === 'string') return v;
      warn(key, `${field} is not a string`);
      return undefined;
    };
    const path = str(PerfDumpPath, 'PerfDumpPath');
    const config = str(PerfDumpConfig, 'PerfDumpConfig');
    if (path === undefined || config === undefined) return {};
    out = { [PERF_DUMP_PATH_ENV]: path, [PERF_DUMP_CONFIG_ENV]: config }; // the last value wins
  }
  return out;
}

/** Options of {@link StepTimeConfigSource}. */
export interface StepTimeConfigSourceOptions {
  readonly api: Pick<k8s.CoreV1Api, 'listNamespacedConfigMap'>;
  readonly watch: WatchFn | k8s.KubeConfig;
  readonly logger?: Logger;
  readonly backoff?: BackoffOptions;
}

/** The watched `steptime-dtpgroup` ConfigMap and the variables it gives. */
export class StepTimeConfigSource {
  readonly #watch: ListWatch<k8s.V1ConfigMap>;
  readonly #log: Logger;
  #env: Readonly<Record<string, string>> = {};

  constructor(o: StepTimeConfigSourceOptions) {
    this.#log = o.logger ?? NOOP_LOGGER;
    const selector = `metadata.name=${STEPTIME_NAME}`;
    this.#watch = new ListWatch<k8s.V1ConfigMap>({
      what: `configmap ${STEPTIME_NAMESPACE}/${STEPTIME_NAME}`,
      path: `/api/v1/namespaces/${STEPTIME_NAMESPACE}/configmaps`,
      fieldSelector: selector,
      watch: o.watch,
      maxItems: 1,
      logger: this.#log,
      ...(o.backoff ? { backoff: o.backoff } : {}),
      list: async () => {
        const l = await o.api.listNamespacedConfigMap({ namespace: STEPTIME_NAMESPACE, fieldSelector: selector });
        return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '' };
      },
      onSync: (items) => this.#apply(items[0]),
      onEvent: (type, cm) => this.#apply(type === 'DELETED' ? undefined : cm),
    });
  }

  /** The variables Allocate adds now. */
  env(): Readonly<Record<string, string>> {
    return this.#env;
  }

  /** Starts watching; resolves after the first list attempt. */
  start(): Promise<void> {
    return this.#watch.start();
  }

  stop(): void {
    this.#watch.stop();
  }

  #apply(cm: k8s.V1ConfigMap | undefined): void {
    this.#env = Object.freeze(
      perfDumpEnvOf(cm?.data, (key, reason) =>
        this.#log.warn({ configMap: `${STEPTIME_NAMESPACE}/${STEPTIME_NAME}`, key, reason }, 'steptime value ignored'),
      ),
    );
  }
}
