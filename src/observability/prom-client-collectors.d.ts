/**
 * prom-client 15's default-metric collectors, one module each under `lib/metrics/` (no bundled types): each registers
 * its series on the registry given. src/observability/node-metrics.ts calls them one by one so that it can leave out
 * the event-loop one, which runs a sampling timer of its own.
 */
declare module 'prom-client/lib/metrics/*.js' {
  import type { Registry } from 'prom-client';

  /** Registers the collector's series on `registry` (prom-client's `collectDefaultMetrics` config: prefix, labels). */
  const collector: ((registry: Registry | undefined, config?: object) => void) & {
    /** The names of the series it registers (without a prefix). */
    readonly metricNames: readonly string[];
  };
  export default collector;
}
