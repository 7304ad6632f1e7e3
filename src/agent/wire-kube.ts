/**
 * Steps 7-8: the kube layer's projections of the store's snapshot — the device-info ConfigMap (spec G.2, H), the
 * Events (K.1 from the store's applied fault events, ours from each change's transitions), the node labels and
 * annotations (I.1, I.2) — and the pod annotations (I.3). The publisher's inputs go back into the store: an
 * operator's release (`store.release`), what the ConfigMap holds (`store.confirmWritten`), the deferred G.3 restore
 * (`store.restore`).
 */
import { a5PublishesRackId } from '../core/chips.js';
import { a5LevelLists } from './a5-levels.js';
import { chipName, effectiveShareCount } from '../core/device-names.js';
import { faultEvent, transitionEvents } from '../kube/agent-events.js';
import { DeviceInfoPublisher, storeSeparationHost } from '../kube/device-info-publisher.js';
import { deviceInfoViewOf } from '../kube/device-info-view.js';
import { carriesSwitchInfo, EMPTY_SWITCH_INFO_CFG, switchInfoOf } from '../kube/device-info-switch.js';
import { SwitchCodeConfigMapOverlay } from '../kube/device-info-switch-codes.js';
import { removeObsoleteResource } from '../kube/node-capacity.js';
import { NodeLabeler, type BaseDeviceInfo } from '../kube/node-labeler.js';
import type { RankChip } from '../kube/pod-annotator.js';
import type { RestoreResult } from '../state/restore.js';
import type { NodeState, NodeStateStore } from '../state/store.js';
import type { AgentContext } from './context.js';
import { untilAborted, withTimeout } from './lifecycle.js';
import { nodeLabelFactsOf, readChipAddresses } from './node-facts.js';
import { observeCalls } from './observe-calls.js';
import type { ApiLayer } from './wire-api.js';
import type { DcmiLayer } from './wire-dcmi.js';
import { wireAnnotator } from './wire-annotate.js';
import { mixedInsertTypesOf } from './wire-kubelet.js';
import type { PodsLayer } from './wire-pods.js';

/** The kube layer's outputs. */
export interface KubeLayer {
  /** The Node's labels as last read (reset: server usage, hot-reset §1.3); empty without an API server. */
  nodeLabels(): Readonly<Record<string, string>>;
  /** The chips' C.5 addresses and B.7 super-device ids as last read with the node labels (the DRA API side's). */
  rankChips(): ReadonlyMap<number, RankChip>;
  /** Called with each pod the annotator has just annotated (hot-reset §2.6). */
  onPodAnnotated(listener: (namespace: string, name: string) => void): void;
  /** The publisher's watch and first write, in the background (bounded). */
  start(): void;
  /**
   * Spec A.2 step 5.7: the Node's labels and annotations. Not fatal (issue [R] item 1): still refused after its
   * tries, or no answer within the bound, the labeler goes on retrying in the background and start-up goes on.
   */
  setUpNode(): Promise<void>;
  /** Every `-listWatchPeriod`: the Recover labels, pod annotations, queue gauges. */
  startPeriodic(): void;
  /** The first step of the shutdown: no periodic work and no annotation pass from now on. */
  pause(): void;
  /** Shutdown: a change still waiting in the 1 s spacing (H.4) is written now; bounded by `boundMs`. */
  flush(boundMs: number, hurry: AbortSignal | undefined): Promise<void>;
  /** Resolves when no device-info write waits or runs. */
  whenIdle(): Promise<void>;
  stop(): void;
}

/** What the kube layer is built from. */
export interface KubeDeps {
  readonly hw: DcmiLayer;
  readonly store: NodeStateStore;
  readonly api: ApiLayer | undefined;
  readonly pods: PodsLayer;
  /** The start-up restore's result (undefined: the publisher restores at its first read). */
  readonly restored: RestoreResult | undefined;
  /** The real device id Allocate gave for a kubelet id (`-volcanoType`, the kubelet layer's). */
  readonly realOf: (kubeletId: string) => string | undefined;
  /** Soft share (spec L.7): the copies of full chips leave the schedulable list too. */
  readonly softShare?: { fullCopyNames(): ReadonlySet<string>; onChange(listener: () => void): () => void };
}

export function wireKube(ctx: AgentContext, d: KubeDeps): KubeLayer {
  const { config, flags, log, metrics } = ctx;
  const { hw, store, api } = d;
  const nameOf = (logicId: number): string => chipName(hw.deviceType, store.chip(logicId)?.phyId ?? logicId);
  if (!api) {
    return {
      nodeLabels: () => ({}),
      rankChips: () => new Map(),
      onPodAnnotated: () => undefined,
      start: () => undefined,
      setUpNode: () => Promise.resolve(),
      startPeriodic: () => undefined,
      pause: () => undefined,
      flush: () => Promise.resolve(),
      whenIdle: () => Promise.resolve(),
      stop: () => undefined,
    };
  }
  const events = api.events;
  // spec L.6: the ConfigMap, the node annotation and the pod annotations carry public names; the store keeps inner
  const names = hw.names;
  // the ConfigMap's lists name chips by run mode (`Ascend910-<phy>`); on A5 upstream writes `npu-<phy>` (L.6)
  const infoNames = hw.infoNames;
  // the C.5 addresses of the rank table, read with the node labels (at start and at every refresh)
  let rankChips: ReadonlyMap<number, RankChip> = new Map();
  // spec I.2, I.3: the A5 levelList of every chip (URMA EIDs + topology file, docs/super-node.md "levelList")
  const levelOf =
    hw.kind === 'Ascend910A5' && hw.a5
      ? a5LevelLists({
          dcmi: hw.dcmi,
          a5: hw.a5,
          superPodId: hw.superPodId,
          serverIndex: hw.serverIndex,
          nodeInternalIp: config.hostIp ?? '',
          topoDir: flags.a5TopoDir,
          npuNicMappingFile: flags.npuNicMappingFile,
          logger: log,
        })
      : undefined;
  const chipAddresses = (): readonly BaseDeviceInfo[] => {
    const a = readChipAddresses(hw.dcmi, hw.chips, hw.kind, hw.deviceType, levelOf);
    rankChips = a.rank;
    return names.active ? a.base.map((b) => ({ ...b, name: names.name(b.name) })) : a.base;
  };
  const labeler = new NodeLabeler({
    api: api.core,
    nodeName: config.nodeName,
    facts: nodeLabelFactsOf(hw.dcmi, hw.chips, {
      facts: hw.facts,
      chipName: hw.chipName,
      superPodId: hw.superPodId,
      serverIndex: hw.serverIndex,
      ...(hw.a5 ? { a5: hw.a5 } : {}),
      logger: log,
    }),
    baseDeviceInfos: chipAddresses,
    autoStowing: flags.autoStowing,
    watch: api.watch,
    logger: log,
    backoff: api.backoff,
    onRefused: (status) => metrics.writeRefused('node', status),
  });
  ctx.cleanups.push('node labeler', () => labeler.stop());
  const annotator = wireAnnotator(ctx, { ...d, api, rankChips: () => rankChips });
  let cmFailuresSeen = 0;
  const syncConfigMapMetrics = (): void => {
    const st = publisher.stats;
    const failed = st.failures + st.rejected;
    if (failed > cmFailuresSeen) metrics.configMapWrites.inc({ result: 'failed' }, failed - cmFailuresSeen);
    cmFailuresSeen = Math.max(cmFailuresSeen, failed);
    metrics.configMapQueueDepth.set(st.pendingSinceMs !== undefined ? 1 : 0);
  };
  const shareCount = effectiveShareCount(hw.kind, flags.shareDevCount);
  const viewOptions = {
    runMode: hw.runMode,
    resourceName: names.resource(hw.resourceName),
    superPodId: hw.superPodId,
    serverIndex: hw.serverIndex,
    // spec H.3: `RackID` after `CheckCode` on A5 1D/2D pods only
    ...(hw.a5 && a5PublishesRackId(hw.a5) ? { rackId: hw.a5.rackId } : {}),
    ...(infoNames.active ? { publicName: infoNames.name } : {}),
    // spec B.3 share mode: every copy listed, only the copies a pod holds left out of the schedulable list
    ...(shareCount > 1
      ? {
          shareCount,
          namesInUse: () => {
            const held = d.pods.cache?.devicesInUse(hw.deviceType) ?? new Set<string>();
            return d.softShare ? new Set([...held, ...d.softShare.fullCopyNames()]) : held;
          },
        }
      : {}),
    // A5 DPU health (docs/super-node.md "DPU faults"): `-DPUUnhealthy` while the DPU feature is on
    dpuHealth: () => d.store.snapshot().dpu?.health,
    // spec B.3 mixed insert: the per-type names (the kubelet layer checked the node and refused a bad one first)
    ...(flags.use310PMixedInsert ? { mixedTypes: mixedInsertTypesOf(hw, log) } : {}),
    // spec H.2, L.9: 910A3/A5 always carry SwitchInfoCfg (the Go zero value while switch faults are off)
    ...(carriesSwitchInfo(hw.kind)
      ? {
          switchInfoCfg: () => {
            if (!hw.switch) return EMPTY_SWITCH_INFO_CFG;
            const sw = store.snapshot().switch;
            const nowSec = Math.floor(ctx.clock.now() / 1000);
            return switchInfoOf({ faults: sw.faults, levelOf: (c) => sw.levels.get(c), nowSec }).text;
          },
        }
      : {}),
  };
  const publisher: DeviceInfoPublisher = new DeviceInfoPublisher({
    // the queue's counters are read after each API call of the publisher, once its awaiting callers ran
    api: observeCalls(api.core, () => void setImmediate(syncConfigMapMetrics)),
    watch: api.watch,
    defer: (run) => store.later(run), // a write due at its timer waits for a fault batch of that turn

    nodeName: config.nodeName,
    runMode: hw.runMode,
    logger: log,
    clock: ctx.clock,
    backoff: api.backoff,
    events,
    view: (now) => labeler.applyToView(deviceInfoViewOf(store.snapshot().chips, viewOptions, now)),
    separation: storeSeparationHost(store, hw.runMode),
    ...(d.restored ? { confirmedManual: d.restored.confirmedManual } : {}),
    lateStartup: (v) => store.restore(v), // its confirmedManual is what counts as live (not the separations)
    ...(infoNames.active ? { innerNames: infoNames } : {}),
    onWritten: () => {
      metrics.configMapWrites.inc({ result: 'ok' });
      void labeler.onDeviceInfoWritten();
    },
  });
  ctx.cleanups.push('publisher', () => publisher.stop());
  // share mode: which copies pods hold is not chip state (no store change follows a pod change), so a pod change
  // is itself a change of the view (spec H.3)
  if (shareCount > 1) d.pods.onChange(() => publisher.changed());
  if (hw.switch) wireSwitchCodes(ctx, hw.switch, store, api); // a switch change is a store change: a write follows
  d.softShare?.onChange(() => publisher.changed()); // an Allocate or a clean-up changed a chip's room (L.7)
  // -autoStowing=false: the Recover labels follow every cycle; a changed label changes the device-info view.
  const stowCycle = (state: NodeState): void => {
    if (flags.autoStowing) return;
    void labeler.cycle(state.chips).then(() => publisher.changed());
  };
  // Every output is a projection of the same snapshot (architecture §2); these after the cycle's turn, once the
  // kubelet's frame has left (issue [P] item 5: the ConfigMap and the Events wait a second and a token anyway), and
  // each Event in a turn of its own (`store.later`): a fault arriving meanwhile waits for one of them at most.
  store.onChange(
    (state, change) => {
      publisher.noteTransitions(change.transitions);
      publisher.changed();
      syncConfigMapMetrics();
      stowCycle(state);
      for (const e of transitionEvents(change.transitions, nameOf)) store.later(() => events.record(e));
    },
    { deferred: true },
  );
  store.onFaultEvents(
    (applied) => {
      // spec K.1; A5 names the chip by logic id (`logicID:<id>`)
      const a5 = hw.kind === 'Ascend910A5';
      for (const e of applied) {
        store.later(() => events.record(faultEvent(config.nodeName, a5 ? { ...e, a5 } : e, e.time)));
      }
    },
    { deferred: true },
  );
  let periodic: NodeJS.Timeout | undefined;
  return {
    nodeLabels: () => labeler.nodeLabels(),
    rankChips: () => rankChips,
    onPodAnnotated: (l) => annotator.onAnnotated(l),
    start: () => void withTimeout(publisher.start(), ctx.apiTimeoutMs, undefined),
    setUpNode: async () => {
      const bound = 3 * ctx.apiTimeoutMs + 3000;
      let timer: NodeJS.Timeout | undefined;
      const written = await untilAborted(
        Promise.race([
          labeler.start(),
          new Promise<false>((resolve) => {
            timer = setTimeout(() => resolve(false), bound);
          }),
        ]),
        ctx.signal,
      ).finally(() => clearTimeout(timer));
      if (!written && !labeler.stats.setUp) {
        log.warn({ node: config.nodeName, boundMs: bound }, 'starting without the node labels and annotations');
      }
      labeler.startRefresher();
      // spec A.2 step 8: A5 drops the 910 resource a former plugin left in the node's capacity
      if (hw.kind === 'Ascend910A5') await removeObsoleteResource(api.core, config.nodeName, log);
    },
    startPeriodic: () => {
      // an operator's edit of a Recover label counts within one period even when no chip changes
      periodic = setInterval(() => {
        stowCycle(store.snapshot());
        annotator.pass();
        syncConfigMapMetrics();
      }, flags.listWatchPeriod * 1000);
      periodic.unref();
      ctx.cleanups.push('periodic', () => clearInterval(periodic));
    },
    pause: () => {
      clearInterval(periodic);
      annotator.stop();
    },
    flush: async (boundMs, hurry) => {
      // flush, not whenIdle: a change still inside the 1 s write spacing (H.4) is written now, not lost
      const idle = await withTimeout(
        publisher.flush().then(() => true),
        boundMs,
        false,
        hurry,
      );
      if (!idle) log.warn({ boundMs }, 'device-info ConfigMap not flushed before the bound');
    },
    whenIdle: () => publisher.whenIdle(),
    stop: () => publisher.stop(),
  };
}

/** Spec F.8: the fault-config ConfigMap's `SwitchFaultCode.json` key over the file (docs/super-node.md). */
function wireSwitchCodes(
  ctx: AgentContext,
  sw: NonNullable<DcmiLayer['switch']>,
  store: NodeStateStore,
  api: ApiLayer,
): void {
  const overlay = new SwitchCodeConfigMapOverlay({
    api: api.core,
    watch: api.watch,
    files: sw.codes,
    logger: ctx.log,
    backoff: api.backoff,
  });
  const levels = (): void => store.setSwitchLevels(overlay.current().levels);
  levels();
  ctx.cleanups.push('switch codes configmap', () => overlay.stop());
  overlay.onChange(levels); // the overlay also follows the file (its current() falls back to it)
  void withTimeout(overlay.start(), ctx.apiTimeoutMs, undefined);
}
