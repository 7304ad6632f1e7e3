/**
 * Step 4: the Kubernetes API as every kube-side layer shares it — the client (the agent's own `KubeClient`, or
 * client-node when the kubeconfig needs it), the one `ApiRecovery` of the agent (issue [K] item 8: every request's
 * outcome feeds it and every retrier backs off through it; docs/agent.md "Outages"), the Event recorder, and the
 * bounded G.3 start-up read of the device-info ConfigMap. Nothing on the kubelet path waits for any of it.
 */
import type * as k8s from '@kubernetes/client-node';
import { statusOf, errorMessage as message } from '../core/errors.js';
import { readStartupValues, type StartupValues } from '../kube/device-info-publisher.js';
import { KubeEventRecorder } from '../kube/event-recorder.js';
import { clientNodeJsonRequester } from '../kube/client-node-json.js';
import { KubeClient, loadKubeAccess, type AgentCoreApi, type JsonRequester } from '../kube/kube-client.js';
import type { WatchFn } from '../kube/list-watch.js';
import { ApiRecovery, type BackoffOptions } from '../kube/write-queue.js';
import type { AgentContext, Env } from './context.js';
import { AgentStartError, EXIT } from './errors.js';
import { untilAborted, withTimeout } from './lifecycle.js';
import { observeCalls } from './observe-calls.js';

/** The API server as the kube layer uses it: the CoreV1 calls and the watch. */
export interface KubeBackend {
  readonly core: AgentCoreApi;
  readonly watch: WatchFn;
  /** Calls without a method of their own: the DRA driver's resource.k8s.io/v1 calls (issue [DRA], dra-api.ts). */
  readonly json: JsonRequester;
  /** `built-in` (KubeClient) or `client-node`, and where the access came from (for the log). */
  readonly client: 'built-in' | 'client-node';
  readonly from: string;
  /** Whether the API server serves now (`GET /readyz`, bounded, never rejects): the outage probe of ApiRecovery. */
  readonly probe?: () => Promise<boolean>;
  close(): void;
}

/** The API server as the layers share it; absent when no kubeconfig applies (ConfigMap, Events, pods are off). */
export interface ApiLayer {
  /** The CoreV1 calls, each reporting its outcome to the shared recovery. */
  readonly core: AgentCoreApi;
  readonly watch: WatchFn;
  /** The DRA driver's resource.k8s.io/v1 calls (slices, claims), reporting to the shared recovery too. */
  readonly json: JsonRequester;
  /** The backoff of every retrier (wakes at the API server's return). */
  readonly backoff: BackoffOptions;
  readonly events: KubeEventRecorder;
  /** Whether the API server has answered one request since the start (`/readyz` `api`, issue [J] item 1). */
  reached(): boolean;
  /** Spec G.3 step 1, bounded by `apiTimeoutMs` and the signal; undefined when the API server did not answer. */
  startupValues(): Promise<StartupValues | undefined>;
}

/** The client calls that write (their success wakes the retriers waiting after a conflict). */
const WRITE_CALL = /^(?:create|replace|patch|delete)/;

/** A generic request's HTTP verb as the call it is (`requestJson('PUT', …)` is a write). */
const VERB_CALL: Readonly<Record<string, string>> = {
  POST: 'create',
  PUT: 'replace',
  PATCH: 'patch',
  DELETE: 'delete',
};

/** Bound of one outage probe. */
const PROBE_TIMEOUT_MS = 2000;

/** client-node's CoreV1Api and Watch over `kc` (client-node is loaded here, not with this module). */
export async function clientNodeBackend(kc: k8s.KubeConfig, from = 'kubeconfig'): Promise<KubeBackend> {
  const m = await import('@kubernetes/client-node');
  const watcher = new m.Watch(kc);
  const health = new m.Health(kc);
  return {
    core: kc.makeApiClient(m.CoreV1Api),
    json: clientNodeJsonRequester(kc),
    watch: (p, q, cb, done) => watcher.watch(p, q, cb, done),
    client: 'client-node',
    from,
    probe: () => health.readyz({ signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) }).catch(() => false),
    close: () => undefined,
  };
}

/**
 * `-kubeconfig`, else in-cluster, else `$KUBECONFIG`; undefined when none applies. Unreadable → exit 2. The agent's
 * own client serves it unless the kubeconfig needs an authenticator only client-node has (exec, auth-provider, ...).
 */
export async function loadKube(flag: string, env: Env): Promise<KubeBackend | undefined> {
  try {
    const source = loadKubeAccess(flag, env);
    if (source === undefined) return undefined;
    if (source.kind === 'access') {
      const c = new KubeClient(source.access);
      return {
        core: c,
        json: c,
        watch: c.watch,
        client: 'built-in',
        from: source.from,
        probe: () => c.probe(PROBE_TIMEOUT_MS),
        close: () => c.close(),
      };
    }
    const m = await import('@kubernetes/client-node');
    const kc = new m.KubeConfig();
    kc.loadFromFile(source.file);
    return await clientNodeBackend(kc, `${source.file} (${source.reason})`);
  } catch (err) {
    throw new AgentStartError(`cannot load the kubeconfig: ${message(err)}`, EXIT.BAD_CONFIG, { cause: err });
  }
}

/**
 * Loads the API access (`kubeConfig`: a KubeConfig, `null` for none, absent for the agent's own lookup) and builds
 * the shared client, recovery and Event recorder; registers their clean-ups.
 */
export async function wireApi(
  ctx: AgentContext,
  kubeConfig: k8s.KubeConfig | null | undefined,
): Promise<ApiLayer | undefined> {
  const { config, log, cleanups } = ctx;
  const kube =
    kubeConfig === undefined
      ? await loadKube(ctx.flags.kubeconfig, ctx.env)
      : kubeConfig
        ? await clientNodeBackend(kubeConfig)
        : undefined;
  if (!kube) {
    log.warn('no kubeconfig (-kubeconfig, in-cluster or $KUBECONFIG): ConfigMap, Events and pods are off');
    return undefined;
  }
  log.info({ client: kube.client, from: kube.from }, 'Kubernetes API client');
  cleanups.push('kube client', () => kube.close());
  const recovery = new ApiRecovery({ ...(kube.probe ? { probe: kube.probe } : {}), clock: ctx.clock });
  cleanups.push('API recovery probe', () => recovery.close());
  const backoff: BackoffOptions = { recovery };
  let reached = false;
  // every request's outcome reports to the shared recovery: a success of any request ends every retrier's backoff
  // after an outage, a successful write also the wait of a retrier after a conflict (issue [T] item 2)
  const outcome = (ok: boolean, err?: unknown, method = ''): void => {
    const status = ok ? undefined : statusOf(err);
    if (ok || status !== undefined) reached = true; // an HTTP answer, even a 404 or 403, came from the API server
    if (ok && WRITE_CALL.test(method)) recovery.reportWriteSuccess();
    else if (ok) recovery.reportSuccess();
    else recovery.reportFailure(status);
  };
  const core = observeCalls(kube.core, outcome);
  const events = new KubeEventRecorder({
    api: core,
    nodeName: config.nodeName,
    podName: config.podName ?? `ascend-npu-agent-${config.nodeName}`,
    logger: log,
    clock: ctx.clock, // Event times on its wall clock, the bucket and the retries on its monotonic clock
    backoff, // Events refused in an outage are retried when the API is back
    onRefused: (status) => ctx.metrics.writeRefused('event', status),
  });
  cleanups.push('events', () => withTimeout(events.close(), 2000, undefined));
  return {
    core,
    json: observeCalls(kube.json, outcome, (_, args) => VERB_CALL[String(args[0])] ?? 'read'),
    watch: kube.watch,
    backoff,
    events,
    reached: () => reached,
    startupValues: () =>
      untilAborted(withTimeout(readStartupValues(core, config.nodeName, log), ctx.apiTimeoutMs, undefined), ctx.signal),
  };
}
