/**
 * Spec I.3: the pod annotations (`huawei.com/AscendReal`, the rank table), from kubelet's pod-resources answer. A
 * pass runs on every pod-cache change and every `-listWatchPeriod`, one at a time (a request meanwhile → one more
 * pass), and only while a cached pod that asks for the resource has no `huawei.com/AscendReal` yet: an idle node
 * never calls kubelet.
 */
import { errorMessage as message } from '../core/errors.js';
import { ANNOTATION_ASCEND_REAL, PodAnnotator, type RankChip } from '../kube/pod-annotator.js';
import { PodResourcesClient } from '../kubelet/podresources-client.js';
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

export function wireAnnotator(ctx: AgentContext, d: AnnotatorDeps): AnnotatorLayer {
  const { config, flags, log } = ctx;
  const { hw, pods } = d;
  const listeners: ((namespace: string, name: string) => void)[] = [];
  const productTypes = hw.facts.productTypes ?? [];
  const allDuo = productTypes.length > 0 && productTypes.every((p) => p === 'Atlas 300I Duo');
  const annotator = new PodAnnotator({
    api: d.api.core,
    pods: { pods: () => pods.cache?.pods() ?? [] },
    hostIp: config.hostIp ?? '',
    superPodId: hw.superPodId,
    serverIndex: hw.serverIndex,
    chips: d.rankChips,
    rankTable: hw.runMode === 'Ascend910' ? (hw.kind === 'Ascend910A5' ? 'npu' : '910') : allDuo ? '910' : 'none',
    volcanoType: flags.volcanoType,
    realOf: d.realOf,
    logger: log,
  });
  let podResources: PodResourcesClient | undefined;
  try {
    podResources = new PodResourcesClient(flags.podResourcesSocket);
  } catch (err) {
    log.warn({ error: message(err) }, '-podResourcesSocket unusable: pods are not annotated');
  }
  let annotating = false;
  let again = false;
  let failedLogged = false;
  let stopped = false;
  const pass = async (): Promise<void> => {
    const cache = pods.cache;
    if (!podResources || !cache || stopped) return;
    if (annotating) {
      again = true;
      return;
    }
    annotating = true;
    try {
      do {
        again = false;
        // Nothing to ask kubelet while no pod that asks for our resource lacks huawei.com/AscendReal (idle case).
        const waiting = cache
          .pods()
          .some(
            (p) =>
              p.annotations[ANNOTATION_ASCEND_REAL] === undefined &&
              p.containerLimits.some((l) => (l[hw.resourceName] ?? 0) > 0),
          );
        if (!waiting) break;
        const held = await podResources.devicesInUse(new Set([hw.resourceName]));
        const r = await annotator.annotate(hw.deviceType, held);
        failedLogged = false;
        if (r.patched.length > 0) log.info({ pods: r.patched }, 'pod annotations written (I.3)');
        for (const key of r.patched) {
          const slash = key.indexOf('/');
          for (const l of listeners) l(key.slice(0, slash), key.slice(slash + 1)); // hot-reset §2.6
        }
        if (r.failed.length > 0) log.warn({ pods: r.failed }, 'pod annotations not written; next cycle');
      } while (again && !stopped);
    } catch (err) {
      if (!failedLogged) log.warn({ error: message(err) }, 'pod-resources unavailable: pods are not annotated');
      failedLogged = true;
    } finally {
      annotating = false;
    }
  };
  pods.onChange(() => void pass());
  return {
    pass: () => void pass(),
    onAnnotated: (l) => void listeners.push(l),
    stop: () => {
      stopped = true;
    },
  };
}
