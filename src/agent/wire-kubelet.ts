/**
 * Step 9 (spec A.2 last step): the kubelet layer, a projection of the store's snapshot. Its device source
 * subscribes to the store first (when wired, before every other projection), so kubelet sees each snapshot first; the
 * device-plugin servers are built and registered at `start()`: wait for the kubelet folder, register every resource.
 */
import { effectiveShareCount, MIXED_INSERT_TYPES, mixedInsertType } from '../core/device-names.js';
import type { Logger } from '../core/logger.js';
import { errorMessage as message } from '../core/errors.js';
import type { PodCache } from '../core/pods.js';
import { collectDefaultDeviceNodes, FsDeviceNodeProbe, ubNodes } from '../kubelet/device-nodes.js';
import { driverMounts } from '../cdi/spec.js';
import { CdiSpecDir } from '../cdi/spec-dir.js';
import { devicePluginCdiSpec, writeDevicePluginCdiSpec } from '../kubelet/cdi-spec.js';
import type { DeviceSnapshot } from '../kubelet/device-source.js';
import { DeviceNodeMissingError, KubeletWaitTimeoutError, SocketPathTooLongError } from '../kubelet/errors.js';
import { DevicePluginManager, KubeletStartAbortedError, type ServerStatus } from '../kubelet/plugin-manager.js';
import { StoreDeviceSource } from '../kubelet/store-device-source.js';
import type { SoftShareRuntime } from '../kubelet/soft-share-runtime.js';
import { softShareOf } from './wire-soft-share.js';
import type { EventSink } from '../kube/event-recorder.js';
import type { NodeStateStore } from '../state/store.js';
import type * as k8s from '@kubernetes/client-node';
import { MERGE_PATCH } from '../kube/merge-patch.js';
import { isActivePod, type CachedPod } from '../kube/pod-cache-watcher.js';
import { DynamicVnpu, type VnpuDriver } from '../kubelet/vnpu-allocate.js';
import type { Dcmi } from '../dcmi/dcmi.js';
import { NPU_CORE_TYPE } from '../kubelet/vnpu-core.js';
import { checkDynamicVnpu, CoreDeviceSource, DynamicVnpuUnsupportedError } from '../kubelet/vnpu-setup.js';
import type { AgentContext } from './context.js';
import { AgentStartError, EXIT, StartAborted } from './errors.js';
import { hcclTopoFilePath, HCCL_TOPO_FILE_PATH } from '../kubelet/hccl-topo.js';
import type { DcmiLayer } from './wire-dcmi.js';

/** The kubelet layer. */
export interface KubeletLayer {
  /** `-volcanoType`: the real device id Allocate gave for a kubelet id (undefined before `start` or when unknown). */
  realOf(kubeletId: string): string | undefined;
  /** Per-resource registration and stream state (readiness); empty before `start`. */
  status(): readonly ServerStatus[];
  /** SIGHUP: restart every plugin server and register again. */
  reregister(reason: string): void;
  /** Waits for the kubelet folder and the first registration (exit 4 past `-kubeletWaitTimeout`). */
  start(
    pods: PodCache | undefined,
    onFatal: (reason: string) => void,
    waitTimeoutMs: number,
    /** Spec C.4 `-enableSlowNode`: the variables every Allocate adds. */
    extraEnvs?: () => Readonly<Record<string, string>>,
    events?: EventSink,
    api?: Pick<k8s.CoreV1Api, 'patchNamespacedPod'>,
  ): Promise<void>;
  /** Streams ended, sockets removed. */
  stop(): Promise<void>;
  /** Soft share (spec L.7), when on. */
  readonly softShare: SoftShareRuntime | undefined;
}

/**
 * `-use310PMixedInsert` (spec A.1, B.3; upstream `CheckCardUsageMode`): the node must be 310P and every product
 * type on it one that can be mixed (`Atlas 300V Pro`, `Atlas 300V`, `Atlas 300I Pro`), else the start fails (exit
 * 2) naming what was found. Returns each chip's device type by logic id; a chip whose product type cannot be read
 * is left out with an error in the log (upstream skips it too).
 */
export function mixedInsertTypesOf(hw: DcmiLayer, log: Logger): Map<number, string> {
  const allowed = Object.keys(MIXED_INSERT_TYPES).join(', ');
  if (hw.kind !== 'Ascend310P') {
    throw new AgentStartError(
      `-use310PMixedInsert=true needs an Ascend310P node; this node is ${hw.kind}`,
      EXIT.BAD_CONFIG,
    );
  }
  const found = hw.facts.productTypes ?? [];
  const bad = found.filter((p) => mixedInsertType(p) === undefined);
  if (found.length === 0 || bad.length > 0) {
    const what =
      found.length === 0
        ? 'DCMI reports no product type'
        : `product type ${bad.map((p) => JSON.stringify(p)).join(', ')}`;
    throw new AgentStartError(
      `-use310PMixedInsert=true: ${what}; mixed insert supports only ${allowed}`,
      EXIT.BAD_CONFIG,
    );
  }
  const types = new Map<number, string>();
  for (const c of hw.chips) {
    let product: string;
    try {
      product = hw.dcmi.getProductType(c.cardId, c.deviceId);
    } catch (err) {
      log.error(
        { logicId: c.logicId, error: message(err) },
        'mixed insert: product type unreadable, chip not advertised',
      );
      continue;
    }
    const t = mixedInsertType(product);
    if (t === undefined) {
      log.error(
        { logicId: c.logicId, productType: product },
        'mixed insert: product type cannot be mixed, chip not advertised',
      );
      continue;
    }
    types.set(c.logicId, t);
  }
  return types;
}

export function wireKubelet(ctx: AgentContext, hw: DcmiLayer, store: NodeStateStore, events?: EventSink): KubeletLayer {
  const { flags, log, metrics, config } = ctx;
  const shareCount = effectiveShareCount(hw.kind, flags.shareDevCount);
  if (flags.shareDevCount > 1 && shareCount === 1) {
    // upstream ignores the flag on these kinds too (ShareDev() is 310P/310B only); said once, not silently
    log.warn(
      { shareDevCount: flags.shareDevCount, chipKind: hw.kind },
      '-shareDevCount has no effect on this chip kind (share mode is 310P/310B only, spec A.1): one device per chip',
    );
  }
  const names = hw.names; // spec L.6
  const mixedTypes = flags.use310PMixedInsert ? mixedInsertTypesOf(hw, log) : undefined;
  if (mixedTypes) log.info({ types: Object.fromEntries(mixedTypes) }, '310P mixed insert: device type by logic id');
  const softShare = softShareOf(ctx, hw, shareCount, events); // spec L.7
  // subscribed first: kubelet sees a snapshot before anyone else
  // -deviceApi=both: a chip a prepared DRA claim holds is Unhealthy to kubelet and refused by Allocate
  const draHolds = flags.deviceApi === 'both';
  const chipSource = new StoreDeviceSource(store, { ...(mixedTypes ? { mixedTypes } : { shareCount }), draHolds });
  ctx.cleanups.push('device source', () => chipSource.close());
  // dynamic vNPU (spec A.1, B.3, B.6): one npu-core server whose pseudo-devices are the chips' AI cores
  let coresPerChip = 0;
  if (!flags.presetVirtualDevice) {
    try {
      const first = hw.chips[0];
      coresPerChip = checkDynamicVnpu(
        { kind: hw.kind, ...(hw.facts.productTypes ? { productTypes: hw.facts.productTypes } : {}) },
        () => (first ? hw.dcmi.getTotalAicore(first.cardId, first.deviceId) : 0),
      );
    } catch (err) {
      if (err instanceof DynamicVnpuUnsupportedError) throw new AgentStartError(err.message, EXIT.BAD_CONFIG);
      throw err;
    }
    log.info({ coresPerChip, resource: `huawei.com/${NPU_CORE_TYPE}` }, 'dynamic vNPU');
  }
  const coreSource = coresPerChip > 0 ? new CoreDeviceSource(chipSource, hw.deviceType, coresPerChip) : undefined;
  if (coreSource) ctx.cleanups.push('core source', () => coreSource.close());
  const devices = coreSource ?? chipSource;
  let releaseTimer: NodeJS.Timeout | undefined;
  let mgr: DevicePluginManager | undefined;
  // The manager counts a server registered until it is queued for its first Register (it is queued only once the
  // kubelet folder exists): readiness must say "not registered" before the first success (issue [J] item 1).
  const everRegistered = new Set<string>();
  return {
    softShare,
    realOf: (id) => mgr?.servers.find((s) => s.deviceType === hw.deviceType)?.kubeletToReal.realOf(id),
    status: () =>
      (mgr?.status() ?? []).map((s) => ({ ...s, registered: s.registered && everRegistered.has(s.resourceName) })),
    reregister: (reason) => mgr?.triggerReregister(reason),
    start: async (pods, onFatal, waitTimeoutMs, podEnvs, events, api) => {
      const extraEnvs = withTopoFile(hw, log, podEnvs);
      const dynamic =
        coreSource && pods
          ? new DynamicVnpu({
              type: hw.deviceType,
              kind: hw.kind,
              coresPerChip,
              driver: dcmiVnpuDriver(hw.dcmi),
              podCache: pods,
              logger: log,
              // pods from the watcher carry their phase: a finished pod holds nothing (upstream: pod resources)
              // spec I.3 for npu-core pods (the annotator matches the chips' resource only)
              ...(api
                ? {
                    annotate: async (pod, annotations) => {
                      await api.patchNamespacedPod(
                        { name: pod.name, namespace: pod.namespace, body: { metadata: { annotations } } },
                        MERGE_PATCH,
                      );
                    },
                  }
                : {}),
              ready: () => !('synced' in pods) || (pods as { synced: boolean }).synced,
              isActive: (p) => ('phase' in p ? isActivePod(p as CachedPod) : !p.deleting),
              onRefused: (pod, message) =>
                events?.record({
                  type: 'Warning',
                  reason: 'AllocateRefused',
                  message: message.slice(0, 1024),
                  involvedPod: pod,
                  brief: `AllocateRefused ${pod.namespace}/${pod.name}`,
                }),
            })
          : undefined;
      // -cdiDevicePlugin (issue [DRA] item 6): the node's CDI spec first, so every CDI answer names a written device
      if (flags.cdiDevicePlugin) writeCdiSpec(ctx, hw, devices.snapshot());
      try {
        mgr = new DevicePluginManager({
          ...(dynamic ? { dynamic, deviceTypes: [NPU_CORE_TYPE] } : {}),
          kubeletDir: flags.kubeletDir,
          source: devices,
          probe: new FsDeviceNodeProbe(flags.devDir),
          ...(pods ? { podCache: pods } : {}),
          ...(extraEnvs ? { extraEnvs } : {}),
          logger: log,
          volcanoType: flags.volcanoType,
          useAscendDocker: config.ascendDockerRuntime,
          fdFlag: flags.fdFlag,
          listWatchPeriodSec: flags.listWatchPeriod,
          waitTimeoutMs,
          onFatal,
          monotonic: () => ctx.clock.monotonic(),
          ...(names.active ? { names } : {}),
          ...(softShare ? { softShare } : {}),
          ...(flags.cdiDevicePlugin ? { cdi: true } : {}),
        });
      } catch (err) {
        if (err instanceof DeviceNodeMissingError)
          throw new AgentStartError(message(err), EXIT.WAIT_TIMEOUT, { cause: err });
        if (err instanceof SocketPathTooLongError)
          throw new AgentStartError(message(err), EXIT.BAD_CONFIG, { cause: err });
        throw new AgentStartError(`kubelet plugin: ${message(err)}`, EXIT.BAD_CONFIG, { cause: err });
      }
      const m = mgr;
      ctx.cleanups.push('kubelet', () => m.stop());
      m.on('registered', (e: { resourceName: string }) => {
        everRegistered.add(e.resourceName);
        metrics.registered(e.resourceName, true);
      });
      m.on('registerFailed', (e: { resourceName?: string }) =>
        metrics.registered(e.resourceName ?? hw.resourceName, false),
      );
      m.on('sendFailed', (e: { resourceName: string }) =>
        metrics.listAndWatchSends.inc({ resource: e.resourceName, result: 'failed' }),
      );
      m.on('reportSent', (e: { resourceName: string }) =>
        metrics.listAndWatchSends.inc({ resource: e.resourceName, result: 'ok' }),
      );
      m.on('allocated', (e: { resourceName: string; ms: number }) =>
        metrics.allocateLatency.observe({ resource: e.resourceName }, e.ms / 1000),
      );
      if (dynamic) {
        // spec D.2 step 1: every cycle, vNPUs no pod uses are destroyed (deleted pods release theirs)
        const release = (): void =>
          void dynamic
            .release(devices.snapshot())
            .then(() => m.servers.forEach((s) => s.refresh()))
            .catch((err: unknown) => log.warn({ error: message(err) }, 'dynamic vNPU release'));
        release();
        releaseTimer = setInterval(release, flags.listWatchPeriod * 1000).unref();
        ctx.cleanups.push('vnpu release', () => clearInterval(releaseTimer));
      }
      try {
        await m.start(ctx.signal);
      } catch (err) {
        if (err instanceof KubeletStartAbortedError || ctx.signal?.aborted) throw new StartAborted('aborted');
        if (err instanceof KubeletWaitTimeoutError)
          throw new AgentStartError(message(err), EXIT.WAIT_TIMEOUT, { cause: err });
        throw new AgentStartError(`kubelet plugin: ${message(err)}`, EXIT.WAIT_TIMEOUT, { cause: err });
      }
    },
    stop: async () => {
      ctx.cleanups.remove('kubelet'); // stopped here, in the shutdown order: not again by the clean-ups
      clearInterval(releaseTimer);
      await mgr?.stop().catch((err: unknown) => log.warn({ error: message(err) }, 'kubelet stop'));
    },
  };
}

/**
 * Spec C.4 "A5 only", L.8: on Ascend910A5 every Allocate response (both mounting modes) carries
 * `HCCL_TOPO_FILE_PATH`, chosen once at start from the card type or super-pod type (they do not change while the
 * agent runs); the other variables (`-enableSlowNode`) follow. Other kinds: `envs` unchanged.
 */
export function withTopoFile(
  hw: Pick<DcmiLayer, 'kind' | 'a5'>,
  log: AgentContext['log'],
  envs: (() => Readonly<Record<string, string>>) | undefined,
): (() => Readonly<Record<string, string>>) | undefined {
  if (hw.kind !== 'Ascend910A5' || !hw.a5) return envs;
  const topo = hcclTopoFilePath({
    ...(hw.a5.cardType !== undefined ? { cardType: hw.a5.cardType } : {}),
    superPodType: hw.a5.answered ? hw.a5.superPodType : undefined,
  });
  if ('problem' in topo) {
    log.error({ problem: topo.problem }, `Allocate sets no ${HCCL_TOPO_FILE_PATH} on this A5 node`);
    return envs;
  }
  log.info({ [HCCL_TOPO_FILE_PATH]: topo.path }, 'A5 topology file for Allocate (spec L.8)');
  const fixed = { [HCCL_TOPO_FILE_PATH]: topo.path };
  return envs ? () => ({ ...fixed, ...envs() }) : () => fixed;
}

/**
 * `-cdiDevicePlugin`: writes `<-cdiDir>/ascend.com-npu.json` for every device node of the snapshot. A node that is
 * missing or not a character device ends the start (exit 4, like a missing mandatory node).
 */
function writeCdiSpec(ctx: AgentContext, hw: DcmiLayer, snapshot: DeviceSnapshot): void {
  const { flags, log } = ctx;
  const probe = new FsDeviceNodeProbe(flags.devDir);
  try {
    const shared = [
      ...collectDefaultDeviceNodes(probe, {
        chipKind: hw.kind,
        fdFlag: flags.fdFlag,
        ...(hw.facts.productTypes ? { productTypes: hw.facts.productTypes } : {}),
      }),
      ...ubNodes(probe),
    ];
    const spec = devicePluginCdiSpec(snapshot, flags.devDir, shared, driverMounts(hw.kind, flags.hostRoot));
    const file = writeDevicePluginCdiSpec(new CdiSpecDir(flags.cdiDir), spec);
    log.info({ file, devices: spec.devices.map((d) => d.name) }, 'CDI spec of the device plugin written');
  } catch (err) {
    throw new AgentStartError(`-cdiDevicePlugin: ${message(err)}`, EXIT.WAIT_TIMEOUT, { cause: err });
  }
}

/** The DCMI calls of dynamic vNPU over the binding; destroy is one attempt (the allocator retries, §4.6). */
function dcmiVnpuDriver(dcmi: Dcmi): VnpuDriver {
  return {
    list: (c) => dcmi.getVirtualDevices(c.cardId, c.deviceId).vdevs,
    create: (c, template) => dcmi.createVirtualDevice(c.cardId, c.deviceId, template),
    destroy: (c, vdevId) => dcmi.destroyVirtualDevice(c.cardId, c.deviceId, vdevId),
  };
}
