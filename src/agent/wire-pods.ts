/**
 * The node's pods, an input (spec I.6, D.7): the pod cache watches the API server; every change feeds the store's
 * pod-used set (`store.setPodUsed`, the D.7 PreSeparateNPU rule) and then whoever follows the pods — the pod
 * annotator (I.3) and the reset layer's task discovery. Allocate's `-volcanoType` pick reads the cache directly (the
 * one documented exception, architecture §2).
 */
import { chipName } from '../core/device-names.js';
import { errorMessage } from '../core/errors.js';
import { loadKubeAccess } from '../kube/kube-client.js';
import { KubeletPodCache, kubeletPodsUrl, type KubeletPodCacheOptions } from '../kube/kubelet-pod-source.js';
import { PodCacheWatcher } from '../kube/pod-cache-watcher.js';
import { StepTimeConfigSource } from '../kube/steptime-configmap.js';
import type { NodeStateStore } from '../state/store.js';
import type { AgentContext } from './context.js';
import { withTimeout } from './lifecycle.js';
import type { ApiLayer } from './wire-api.js';
import type { DcmiLayer } from './wire-dcmi.js';

/** The node's pod cache: the API server's watch, or the kubelet's `/pods` with `-getPodFromKubelet` (spec I.6). */
export type NodePodCache = Pick<
  PodCacheWatcher,
  'start' | 'stop' | 'synced' | 'pods' | 'listLive' | 'markAllocated' | 'devicesInUse'
>;

/** The pod input. */
export interface PodsLayer {
  /** Undefined without an API server. */
  readonly cache: NodePodCache | undefined;
  /** Called after every change of the cache, after the store has the new pod-used set (in subscription order). */
  onChange(listener: () => void): void;
  /** The first list in the background (bounded), then the pod-used set. */
  start(): void;
  /** Spec C.4 `-enableSlowNode`: the `PERF_DUMP_*` variables Allocate adds (from `kube-system/steptime-dtpgroup`). */
  readonly allocateEnvs?: () => Readonly<Record<string, string>>;
}

export function wirePods(
  ctx: AgentContext,
  hw: DcmiLayer,
  store: NodeStateStore,
  api: ApiLayer | undefined,
): PodsLayer {
  const listeners: (() => void)[] = [];
  if (!api) return { cache: undefined, onChange: () => undefined, start: () => undefined };
  const publicNames = hw.names; // spec L.6: our AscendReal values are public names
  const updatePodUsed = (): void => {
    const names = new Set([...cache.devicesInUse(hw.deviceType)].map(publicNames.inner));
    const used = new Set<number>();
    for (const c of hw.chips) if (names.has(chipName(hw.deviceType, c.phyId))) used.add(c.logicId);
    store.setPodUsed(used);
  };
  const onChange = (): void => {
    updatePodUsed();
    for (const l of listeners) l();
  };
  const cache: NodePodCache = ctx.flags.getPodFromKubelet
    ? new KubeletPodCache({
        url: podsUrl(ctx),
        token: tokenOf(ctx),
        api: api.core,
        nodeName: ctx.config.nodeName,
        logger: ctx.log,
        onChange,
      })
    : new PodCacheWatcher({
        api: api.core,
        watch: api.watch,
        nodeName: ctx.config.nodeName,
        logger: ctx.log,
        backoff: api.backoff,
        onChange,
      });
  if (ctx.flags.getPodFromKubelet)
    ctx.log.info({ url: String(podsUrl(ctx)) }, 'pods read from the kubelet (-getPodFromKubelet)');
  ctx.cleanups.push('pods', () => cache.stop());
  // spec C.4: watched, so that Allocate reads the last version without waiting on the API server
  const stepTime = ctx.flags.enableSlowNode
    ? new StepTimeConfigSource({ api: api.core, watch: api.watch, logger: ctx.log, backoff: api.backoff })
    : undefined;
  if (stepTime) ctx.cleanups.push('steptime configmap', () => stepTime.stop());
  return {
    cache,
    onChange: (l) => void listeners.push(l),
    start: () => {
      void withTimeout(
        cache.start().then(() => updatePodUsed()),
        ctx.apiTimeoutMs,
        undefined,
      );
      if (stepTime) void withTimeout(stepTime.start(), ctx.apiTimeoutMs, undefined);
    },
    ...(stepTime ? { allocateEnvs: () => stepTime.env() } : {}),
  };
}

/** Spec A.1: `HOST_IP` and `KUBELET_PORT`; a bad `HOST_IP` is the error of every poll (upstream). */
function podsUrl(ctx: AgentContext): string | Error {
  try {
    return kubeletPodsUrl(ctx.env);
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/**
 * The bearer token of the kubelet request: the service account's (in-cluster), else the token of `-kubeconfig` /
 * `$KUBECONFIG`'s user; none (the kubelet answers 401, each poll fails and is logged) when the access has no token.
 */
function tokenOf(ctx: AgentContext): KubeletPodCacheOptions['token'] {
  try {
    const source = loadKubeAccess(ctx.flags.kubeconfig, ctx.env);
    if (source?.kind === 'access') {
      if (source.access.tokenFile !== undefined) return { file: source.access.tokenFile };
      if (source.access.token !== undefined) return { value: source.access.token };
    }
  } catch (err) {
    ctx.log.warn({ error: errorMessage(err) }, 'no bearer token for the kubelet /pods');
    return undefined;
  }
  ctx.log.warn({}, 'the API access has no bearer token: the kubelet /pods is read without one');
  return undefined;
}
