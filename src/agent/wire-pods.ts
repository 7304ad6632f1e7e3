/**
 * The node's pods, an input (spec I.6, D.7): the pod cache watches the API server; every change feeds the store's
 * pod-used set (`store.setPodUsed`, the D.7 PreSeparateNPU rule) and then whoever follows the pods — the pod
 * annotator (I.3) and the reset layer's task discovery. Allocate's `-volcanoType` pick reads the cache directly (the
 * one documented exception, architecture §2).
 */
import { chipName } from '../core/device-names.js';
import { PodCacheWatcher } from '../kube/pod-cache-watcher.js';
import type { NodeStateStore } from '../state/store.js';
import type { AgentContext } from './context.js';
import { withTimeout } from './lifecycle.js';
import type { ApiLayer } from './wire-api.js';
import type { DcmiLayer } from './wire-dcmi.js';

/** The pod input. */
export interface PodsLayer {
  /** Undefined without an API server. */
  readonly cache: PodCacheWatcher | undefined;
  /** Called after every change of the cache, after the store has the new pod-used set (in subscription order). */
  onChange(listener: () => void): void;
  /** The first list in the background (bounded), then the pod-used set. */
  start(): void;
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
  const cache: PodCacheWatcher = new PodCacheWatcher({
    api: api.core,
    watch: api.watch,
    nodeName: ctx.config.nodeName,
    logger: ctx.log,
    backoff: api.backoff,
    onChange: () => {
      updatePodUsed();
      for (const l of listeners) l();
    },
  });
  ctx.cleanups.push('pods', () => cache.stop());
  return {
    cache,
    onChange: (l) => void listeners.push(l),
    start: () =>
      void withTimeout(
        cache.start().then(() => updatePodUsed()),
        ctx.apiTimeoutMs,
        undefined,
      ),
  };
}
