/**
 * The DRA driver `npu.huawei.com`, API side (issue [DRA] items 2-5; docs/dra.md), wired when `-deviceApi` is `dra`
 * or `both`: the node's ResourceSlices projected from the store's snapshot (fault taints, binding conditions of a
 * reset, vNPU partitions with `-draPartitions`), the claims' device status (device IPs) and the spec I.3 pod
 * annotations of DRA allocations (`huawei.com/AscendReal`, the rank table). In `both` the chips kubelet has handed
 * out through the device plugin (its pod-resources answer) are withdrawn from the slices and refused by
 * NodePrepare ({@link DraApiLayer.pluginHeld}), so the same chip is never offered twice.
 * Started in the background: the slice writer retries on its own while the API server does not answer.
 */
import { deviceApiOf } from '../cli/agent-flags.js';
import { effectiveShareCount, phyIdOfName } from '../core/device-names.js';
import { errorMessage as message } from '../core/errors.js';
import { createDraApiSide, type DraApiSide } from '../dra/api-side.js';
import { DevicePluginHolds } from '../dra/plugin-holds.js';
import type { DraInventory } from '../dra/resource-slices.js';
import { PodAnnotator, type RankChip } from '../kube/pod-annotator.js';
import { nodeAnnotatorOptions } from './wire-annotate.js';
import { PodResourcesClient } from '../kubelet/podresources-client.js';
import type { NodeStateStore } from '../state/store.js';
import type { AgentContext } from './context.js';
import type { ApiLayer } from './wire-api.js';
import type { DcmiLayer } from './wire-dcmi.js';
import type { PodsLayer } from './wire-pods.js';

/** The API side as the agent runs it. */
export interface DraApiLayer {
  /** Whether `-deviceApi` serves DRA (and a kubeconfig applies). */
  readonly enabled: boolean;
  /** The assembled side (undefined when off): tests and metrics read its writers' stats. */
  readonly side: DraApiSide | undefined;
  /** `-deviceApi=both`: asks kubelet which chips the device plugin holds (NodePrepare's check); else undefined. */
  readonly pluginHeld: (() => Promise<ReadonlySet<number>>) | undefined;
  /**
   * Lists the node's slices and writes what differs, in the background; then follows the store and the pods, and
   * every `-listWatchPeriod` runs an annotation pass and asks for the device plugin's holds again.
   */
  start(): void;
  stop(): void;
}

const OFF: DraApiLayer = Object.freeze({
  enabled: false,
  side: undefined,
  pluginHeld: undefined,
  start: () => undefined,
  stop: () => undefined,
});

/** What the API side is built from. */
export interface DraApiDeps {
  readonly hw: DcmiLayer;
  readonly store: NodeStateStore;
  readonly api: ApiLayer | undefined;
  readonly pods: PodsLayer;
  /** The chips' C.5 addresses and B.7 super-device ids as last read with the node labels (the kube layer's). */
  readonly rankChips: () => ReadonlyMap<number, RankChip>;
}

/** AI cores (spec B.6) and HBM of the first chip that answers; each left out when none does. */
function capacityOf(hw: DcmiLayer): Pick<DraInventory, 'aiCores' | 'hbmBytes'> {
  let aiCores: number | undefined;
  let hbmBytes: number | undefined;
  for (const c of hw.chips) {
    try {
      aiCores ??= hw.dcmi.getChipInfo(c.cardId, c.deviceId).aicoreCount;
    } catch {
      // the next chip
    }
    try {
      const mib = hw.dcmi.getHbmInfo(c.cardId, c.deviceId).memorySizeMiB;
      if (mib > 0) hbmBytes ??= mib * 1024 * 1024;
    } catch {
      // the next chip (310P has no HBM query)
    }
    if (aiCores !== undefined && hbmBytes !== undefined) break;
  }
  return { ...(aiCores !== undefined ? { aiCores } : {}), ...(hbmBytes !== undefined ? { hbmBytes } : {}) };
}

/** Builds the API side (the no-op one for `-deviceApi=plugin` or without an API server). */
export function wireDraApi(ctx: AgentContext, d: DraApiDeps): DraApiLayer {
  const { config, flags, log, clock } = ctx;
  const { hw, store, api, pods } = d;
  const mode = deviceApiOf(flags);
  if (mode === 'plugin' || !api) return OFF; // wireDra refuses dra/both without an API server
  const inventory: DraInventory = {
    kind: hw.kind,
    node: hw.facts,
    chipName: hw.chipName,
    ...capacityOf(hw),
    superPodId: hw.superPodId,
    serverIndex: hw.serverIndex,
    ...(hw.a5 ? { rackId: hw.a5.rackId } : {}),
    chips: d.rankChips,
  };
  let holds: DevicePluginHolds | undefined;
  if (mode === 'both') {
    try {
      const client = new PodResourcesClient(flags.podResourcesSocket);
      // spec L.6: kubelet knows the public resource name and ids
      const resource = hw.names.resource(hw.resourceName);
      holds = new DevicePluginHolds({
        query: () => client.devicesInUse(new Set([resource])),
        phyOf: (id) =>
          phyIdOfName(hw.names.active ? hw.names.inner(id) : id, effectiveShareCount(hw.kind, flags.shareDevCount) > 1),
        onChange: () => side.withdrawnChanged(),
        logger: log,
      });
    } catch (err) {
      log.warn({ error: message(err) }, '-podResourcesSocket unusable: -deviceApi=both cannot see the plugin holds');
    }
  }
  const cache = pods.cache;
  const annotator = cache
    ? new PodAnnotator({
        ...nodeAnnotatorOptions(ctx, hw, d.rankChips),
        api: api.core,
        pods: cache,
        volcanoType: false, // DRA's devices are the real ones
      })
    : undefined;
  const side: DraApiSide = createDraApiSide({
    store,
    client: { requestJson: (m, p, o) => api.json.requestJson(m, p, o), watch: api.watch },
    nodeName: config.nodeName,
    inventory,
    deviceType: hw.deviceType,
    partitions: flags.draPartitions,
    ...(holds ? { withdrawn: () => holds.current() } : {}),
    ipOf: (phyId) => d.rankChips().get(phyId)?.ip,
    ...(cache && annotator ? { pods: cache, annotator } : {}),
    clock,
    backoff: api.backoff,
    logger: log,
  });
  // docs/metrics.md "DRA series": read at each scrape; an idle node's counters stand still
  ctx.metrics.dra.follow(() => {
    const w = side.writer.stats;
    const st = side.status.stats;
    return {
      poolWrites: w.poolWrites,
      sliceWrites: w.sliceWrites,
      sliceFailures: w.failures,
      sliceRejected: w.rejected,
      slicesRepublished: w.foreignChanges,
      generation: side.writer.generation,
      claimStatusWrites: st.writes,
      claimStatusConflicts: st.conflicts,
      claimStatusFailures: st.failures,
      preparedClaims: store.snapshot().draClaims.length,
    };
  });
  let running = false;
  let periodic: NodeJS.Timeout | undefined;
  const pass = (): void => {
    if (!running) return;
    side.podsChanged();
    void holds?.refresh();
  };
  pods.onChange(pass);
  log.info(
    { driver: 'npu.huawei.com', pool: config.nodeName, partitions: flags.draPartitions, both: mode === 'both' },
    'DRA ResourceSlices',
  );
  const stop = (): void => {
    if (!running) return;
    running = false;
    clearInterval(periodic);
    side.stop();
  };
  return {
    enabled: true,
    side,
    pluginHeld: holds ? () => holds.refresh() : undefined,
    start: () => {
      running = true;
      ctx.cleanups.push('DRA API side', stop);
      void holds?.refresh();
      side.start().catch((err: unknown) => log.warn({ error: message(err) }, 'DRA ResourceSlices: first write'));
      periodic = setInterval(pass, flags.listWatchPeriod * 1000);
      periodic.unref();
    },
    stop: () => {
      if (running) ctx.cleanups.remove('DRA API side');
      stop();
    },
  };
}
