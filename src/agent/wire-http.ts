/**
 * Observability (step 0, issue [J] item 1): the metrics every layer reports into and the server of `/metrics`,
 * `/healthz`, `/readyz` and `/status` on `-metricsAddress`, started before DCMI, the API client and kubelet, so a
 * liveness probe is answered from the first second whatever the start-up waits for (a slow kubelet, up to
 * `-kubeletWaitTimeout`, never fails liveness). Each later layer hands its source over as it comes up: DCMI (the
 * `dcmi` check, the chip names, `build_info`), the API client (the `api` check), kubelet (the `kubelet` check and
 * `kubelet_registered`), the store and the reset layer (`/status`). The chip gauges and cycle counters are a
 * projection of the store's snapshot.
 */
import { Registry } from 'prom-client';
import { packageVersion } from '../cli/common.js';
import { errorMessage as message } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { logChipChanges } from '../observability/chip-log.js';
import { StatusUnavailableError, startObservabilityServer } from '../observability/http-server.js';
import { AgentMetrics } from '../observability/metrics.js';
import { AgentReadiness, type ResourceRegistration } from '../observability/readiness.js';
import { agentStatus } from '../observability/status.js';
import type { ResetStatus } from '../reset/reset-runtime.js';
import type { NodeStateStore } from '../state/store.js';
import type { AgentBase } from './context.js';
import { AgentStartError, EXIT } from './errors.js';
import type { DcmiLayer } from './wire-dcmi.js';

/** The observability layer: metrics and probes, and where each later layer hands its source over. */
export interface ObservabilityLayer {
  readonly registry: Registry;
  readonly metrics: AgentMetrics;
  /** Port of the server; undefined with `-metricsAddress=""`. */
  readonly port: number | undefined;
  /** DCMI is open: the `dcmi` check, the chip names of every per-chip series, `build_info`'s DCMI labels. */
  dcmiOpened(hw: DcmiLayer): void;
  /** The API client is set up (`reached`: one request succeeded), or `null`: no kubeconfig applies. */
  apiReady(reached: (() => boolean) | null): void;
  /** The kubelet layer exists: `/readyz` and `kubelet_registered` read its status. */
  kubeletReady(status: () => readonly ResourceRegistration[]): void;
  /** The store and the reset layer exist: `/status` is served from them (503 before). */
  stateReady(store: NodeStateStore, reset: { status(): ResetStatus }): void;
}

/**
 * Creates the metrics (on `o.registry`, or a new one) and starts the server (none with `-metricsAddress=""`);
 * registers their close. A bad or busy address → exit 2.
 */
export async function startObservability(
  ctx: AgentBase,
  o: { registry?: Registry; defaultMetrics?: boolean },
): Promise<ObservabilityLayer> {
  const { flags, log, config } = ctx;
  const registry = o.registry ?? new Registry();
  const metrics = new AgentMetrics(registry, { defaultMetrics: o.defaultMetrics ?? true });
  ctx.cleanups.push('metrics', () => metrics.close());
  const version = packageVersion();
  metrics.setBuildInfo({ version, node: config.nodeName, dcmiLibrary: '', chipKind: '' });
  const readiness = new AgentReadiness();
  let status: (() => unknown) | undefined;
  let port: number | undefined;
  if (flags.metricsAddress !== '') {
    let server;
    try {
      server = await startObservabilityServer({
        address: flags.metricsAddress,
        registry,
        readiness: readiness.checks(),
        status: () => {
          if (status === undefined) throw new StatusUnavailableError(`the agent is starting (${ctx.steps.phase})`);
          return status();
        },
      });
    } catch (err) {
      throw new AgentStartError(`-metricsAddress ${flags.metricsAddress}: ${message(err)}`, EXIT.BAD_CONFIG, {
        cause: err,
      });
    }
    const s = server;
    ctx.cleanups.push('metrics server', () => s.close());
    log.info({ address: `${server.host}:${server.port}` }, 'metrics and probes listening');
    port = server.port;
  }
  return {
    registry,
    metrics,
    port,
    dcmiOpened: (hw) => {
      readiness.dcmiOpened(hw.dcmi);
      metrics.attachChips(hw.deviceType, hw.chips);
      metrics.setBuildInfo({ version, node: config.nodeName, dcmiLibrary: hw.libraryPath, chipKind: hw.kind });
    },
    apiReady: (reached) => readiness.followApi(reached),
    kubeletReady: (source) => {
      readiness.followKubelet(source);
      metrics.followKubelet(source);
    },
    stateReady: (store, reset) => {
      status = () =>
        agentStatus({ node: config.nodeName, now: Date.now(), state: store.snapshot(), reset: reset.status() });
    },
  };
}

/**
 * The chip gauges and cycle counters follow every snapshot of the store, and so does the operator's log of chip
 * changes (one info line per chip health or level change and per release, issue [J] item 4). Deferred: after the
 * cycle's turn, once the kubelet's frame has left (issue [P] item 5).
 */
export function observeStore(metrics: AgentMetrics, store: NodeStateStore, log: Logger): void {
  metrics.observeState(store.snapshot()); // the chips' series exist before the first change
  store.onChange(
    (state, change) => {
      metrics.observeState(state, change);
      logChipChanges(log, metrics.names, state, change);
    },
    { deferred: true },
  );
}
