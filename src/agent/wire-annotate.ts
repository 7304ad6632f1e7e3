/**
 * Spec I.3: the pod annotations (`huawei.com/AscendReal`, the rank table), from kubelet's pod-resources answer
 * (`-podResourcesSocket`). A pass runs on every pod-cache change and every `-listWatchPeriod`
 * (`PodAnnotationPasses`: one at a time, and only while a pod waits for its annotation).
 */
import { effectiveShareCount } from '../core/device-names.js';
import { errorMessage as message } from '../core/errors.js';
import { PodAnnotationPasses } from '../kube/pod-annotation-passes.js';
import { PodAnnotator, rankTableOf, type PodAnnotatorOptions, type RankChip } from '../kube/pod-annotator.js';
import { PodResourcesClient } from '../kubelet/podresources-client.js';
import { checkSocketPath } from '../kubelet/unix-socket.js';
import type { AgentContext } from './context.js';
import type { ApiLayer } from './wire-api.js';
import type { DcmiLayer } from './wire-dcmi.js';
import type { PodsLayer } from './wire-pods.js';

/** The annotation passes. */
export interface AnnotatorLayer {
  /** Asks for a pass (coalesced). */
  pass(): void;
  /** Called with each pod a pass has just annotated (hot-reset §2.6: a task newly placed here). */
  onAnnotated(listener: (namespace: string, name: string) => void): void;
  /** No pass starts from now on (the first step of the shutdown). */
  stop(): void;
}

/** What the annotator is built from. */
export interface AnnotatorDeps {
  readonly hw: DcmiLayer;
  readonly api: ApiLayer;
  readonly pods: PodsLayer;
  /** The chips' C.5 addresses for the rank table, as last read with the node labels. */
  readonly rankChips: () => ReadonlyMap<number, RankChip>;
  /** The real device id Allocate gave for a kubelet id (`-volcanoType`). */
  readonly realOf: (kubeletId: string) => string | undefined;
}

/**
 * What every pod annotator of this node shares, the device plugin's (below) and the DRA driver's
 * (wire-dra-api.ts): the node's host IP, super-pod facts and rank table, the refused-write counter.
 */
export function nodeAnnotatorOptions(
  ctx: AgentContext,
  hw: DcmiLayer,
  rankChips: () => ReadonlyMap<number, RankChip>,
): Omit<PodAnnotatorOptions, 'api' | 'pods' | 'volcanoType'> {
  return {
    hostIp: ctx.config.hostIp ?? '',
    superPodId: hw.superPodId,
    serverIndex: hw.serverIndex,
    ...(hw.a5 ? { rackId: hw.a5.rackId } : {}), // spec I.3 `rack_id`: A5 only
    chips: rankChips,
    rankTable: rankTableOf(hw.kind, hw.facts.productTypes ?? []),
    logger: ctx.log,
    onRefused: (status) => ctx.metrics.writeRefused('pod', status),
  };
}

export function wireAnnotator(ctx: AgentContext, d: AnnotatorDeps): AnnotatorLayer {
  const { flags, log } = ctx;
  const { hw, pods } = d;
  const listeners: ((namespace: string, name: string) => void)[] = [];
  const cache = pods.cache;
  try {
    checkSocketPath(flags.podResourcesSocket);
  } catch (err) {
    log.warn({ error: message(err) }, '-podResourcesSocket unusable: pods are not annotated');
    return { pass: () => undefined, onAnnotated: () => undefined, stop: () => undefined };
  }
  if (!cache) return { pass: () => undefined, onAnnotated: () => undefined, stop: () => undefined };
  // made at the first pass: the pod-resources proto it builds costs 15–45 ms that kubelet registration does not need
  // (issue [P] item 3)
  let podResources: PodResourcesClient | undefined;
  const client = (): PodResourcesClient => (podResources ??= new PodResourcesClient(flags.podResourcesSocket));
  // spec L.6: kubelet knows the public resource and IDs; the annotator works on inner names and writes public ones
  const names = hw.names;
  const publicResource = names.resource(hw.resourceName);
  const passes = new PodAnnotationPasses({
    annotator: new PodAnnotator({
      ...nodeAnnotatorOptions(ctx, hw, d.rankChips),
      api: d.api.core,
      pods: cache,
      volcanoType: flags.volcanoType,
      realOf: d.realOf,
      ...(effectiveShareCount(hw.kind, flags.shareDevCount) > 1 ? { shareMode: true } : {}),
      ...(names.active ? { publicName: names.name, podKey: names.podKey } : {}),
    }),
    pods: cache,
    resourceName: publicResource,
    deviceType: hw.deviceType,
    held: async () =>
      (await client().devicesInUse(new Set([publicResource]))).map((p) =>
        names.active ? { ...p, resourceName: hw.resourceName, deviceIds: p.deviceIds.map(names.inner) } : p,
      ),
    onAnnotated: (namespace, name) => {
      for (const l of listeners) l(namespace, name);
    },
    logger: log,
  });
  pods.onChange(() => void passes.request());
  return {
    pass: () => void passes.request(),
    onAnnotated: (l) => void listeners.push(l),
    stop: () => passes.stop(),
  };
}
