/**
 * Observability (steps 2 and 10): the metrics every layer reports into — the chip gauges and cycle counters are a
 * projection of the store's snapshot — and the server of `/metrics`, `/healthz`, `/readyz` and `/status` on
 * `-metricsAddress` (`/status` is built from the latest snapshot and the reset layer's status).
 */
import { Registry } from 'prom-client';
import { errorMessage as message } from '../core/errors.js';
import type { Dcmi } from '../dcmi/dcmi.js';
import type { ServerStatus } from '../kubelet/plugin-manager.js';
import { startObservabilityServer } from '../observability/http-server.js';
import { AgentMetrics } from '../observability/metrics.js';
import { agentStatus } from '../observability/status.js';
import type { ResetStatus } from '../reset/reset-runtime.js';
import type { NodeStateStore } from '../state/store.js';
import type { AgentBase, AgentContext } from './context.js';
import { AgentStartError, EXIT } from './errors.js';

/** Creates the metrics (on `registry`, or a new one); registers their close. */
export function wireMetrics(
  ctx: AgentBase,
  o: { registry?: Registry; defaultMetrics?: boolean },
): { registry: Registry; metrics: AgentMetrics } {
  const registry = o.registry ?? new Registry();
  const metrics = new AgentMetrics(registry, { defaultMetrics: o.defaultMetrics ?? true });
  ctx.cleanups.push('metrics', () => metrics.close());
  return { registry, metrics };
}

/** The chip gauges and cycle counters follow every snapshot of the store. */
export function observeStore(metrics: AgentMetrics, store: NodeStateStore): void {
  store.onChange((state, change) => metrics.observeState(state, change));
}

/** What `/readyz` and `/status` read. */
export interface HttpDeps {
  readonly registry: Registry;
  readonly store: NodeStateStore;
  readonly dcmi: Dcmi;
  readonly kubelet: { status(): readonly ServerStatus[] };
  readonly reset: { status(): ResetStatus };
}

/** Starts the server (none with `-metricsAddress=""`); returns its port. A bad address → exit 2. */
export async function startHttp(ctx: AgentContext, d: HttpDeps): Promise<number | undefined> {
  const { flags, log } = ctx;
  if (flags.metricsAddress === '') return undefined;
  let server;
  try {
    server = await startObservabilityServer({
      address: flags.metricsAddress,
      registry: d.registry,
      status: () =>
        agentStatus({ node: ctx.config.nodeName, now: Date.now(), state: d.store.snapshot(), reset: d.reset.status() }),
      readiness: {
        dcmi: () => (d.dcmi.closed ? { ok: false, reason: 'DCMI closed' } : { ok: true }),
        kubelet: () => {
          const bad = d.kubelet
            .status()
            .filter((s) => !s.registered || s.activeStreams === 0)
            .map((s) => s.resourceName);
          return bad.length === 0 ? { ok: true } : { ok: false, reason: `not streaming: ${bad.join(', ')}` };
        },
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
  return server.port;
}
