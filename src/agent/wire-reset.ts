/**
 * Step 8b: the chip-reset layer (docs/hot-reset.md) — the offline engine in every mode, the task-aware engine with
 * `-hotReset=1`, the reset-file landing on 910-family nodes. It reads the store's snapshot (the engine's own health,
 * before its filter) and sends back through the store: its health filter and the chips an offline reset reboots
 * (`store.setResetOverrides`, one snapshot for every output) and re-sync requests (`store.requestResync`).
 */
import { errorMessage as message } from '../core/errors.js';
import { boundedText } from '../core/text.js';
import { deviceUsageOf } from '../reset/rings.js';
import { resetDcmiOf } from '../reset/dcmi-adapter.js';
import { nodeAnnotationApi, resetConfigMapApi, ResetConfigMapWatcher } from '../reset/reset-kube.js';
import { restartOverrides } from '../reset/restart-overrides.js';
import { ResetRuntime, type ResetStatus } from '../reset/reset-runtime.js';
import { resetStorePort } from '../reset/store-port.js';
import type { ConfigMapApi, NodeAnnotationApi } from '../reset/types.js';
import type { FaultConfigSource } from '../config/fault-config-source.js';
import type { NodeStateStore } from '../state/store.js';
import type { AgentBase, AgentContext } from './context.js';
import { withTimeout } from './lifecycle.js';
import type { ApiLayer } from './wire-api.js';
import type { DcmiLayer } from './wire-dcmi.js';
import type { KubeLayer } from './wire-kube.js';
import type { PodsLayer } from './wire-pods.js';

/** The running reset layer. */
export interface ResetLayer {
  status(): ResetStatus;
  stop(): Promise<void>;
}

/** What the reset layer is built from (after the node set-up: server usage comes from the Node's labels). */
export interface ResetDeps {
  readonly hw: DcmiLayer;
  readonly store: NodeStateStore;
  readonly api: ApiLayer | undefined;
  readonly pods: PodsLayer;
  readonly kube: KubeLayer;
  readonly policy: FaultConfigSource;
}

/** Bound of the Event message quoted in a reset-step log line (spec A.3: lines up to 1024 characters). */
const MAX_RESET_LOG_BYTES = 768;

/** Builds and starts the reset layer. */
export function wireReset(ctx: AgentContext, d: ResetDeps): ResetLayer {
  const { config, flags, log, clock, metrics } = ctx;
  const { hw, api } = d;
  const noApi = (what: string): Error => new Error(`${what}: no API server configured`);
  const configMapPort: ConfigMapApi = api
    ? resetConfigMapApi(api.core)
    : {
        get: () => Promise.reject(noApi('reset ConfigMap')),
        replace: () => Promise.reject(noApi('reset ConfigMap')),
      };
  const annotationPort: NodeAnnotationApi = api
    ? nodeAnnotationApi(api.core, config.nodeName)
    : { read: () => Promise.resolve(undefined), write: () => Promise.reject(noApi('ResetInfo annotation')) };
  let cms: ResetConfigMapWatcher | undefined;
  if (api && hw.runMode === 'Ascend910') {
    cms = new ResetConfigMapWatcher({
      api: api.core,
      watch: api.watch,
      logger: log,
      backoff: api.backoff,
      onChange: (cm, deleted) => runtime.configMapChanged(cm, deleted), // started after the runtime
    });
    const w = cms;
    ctx.cleanups.push('reset ConfigMaps', () => w.stop());
  }
  const logicOfPhy = new Map(hw.chips.map((c) => [c.phyId, c.logicId]));
  const { facts } = hw;
  const runtime = new ResetRuntime({
    mode: flags.hotReset as -1 | 0 | 1 | 2,
    clock,
    logger: log,
    facts: {
      kind: hw.kind,
      usage: deviceUsageOf(hw.kind, facts.boardId, d.kube.nodeLabels()),
      boardId: facts.boardId,
      chips: hw.chips.map((c) => ({ logicId: c.logicId, phyId: c.phyId, cardId: c.cardId, deviceId: c.deviceId })),
      ...(facts.brotherCards ? { brotherCardOf: (card: number) => facts.brotherCards?.[card] } : {}),
      duo: (facts.productTypes ?? []).includes('Atlas 300I Duo'),
    },
    workModeSmp: hw.workModeSmp,
    listWatchPeriodMs: flags.listWatchPeriod * 1000,
    timeScale: flags.resetTimePercent / 100,
    grace: () => d.policy.current().customization.grace,
    dcmi: resetDcmiOf(hw.dcmi, hw.chips),
    configMapApi: configMapPort,
    configMapCache: cms ?? { get: () => undefined },
    nodeAnnotations: annotationPort,
    events: (e) => {
      metrics.resetEvent(e);
      const where = e.pod ? ` (pod ${e.pod.namespace}/${e.pod.name})` : '';
      // issue [J] item 4: every reset step (attempt, chip failure, outcome) is an info line, not only an Event
      log.info(
        { reason: e.reason, type: e.type, ...(e.pod ? { pod: `${e.pod.namespace}/${e.pod.name}` } : {}) },
        `reset step ${e.reason}: ${boundedText(e.message, MAX_RESET_LOG_BYTES)}`,
      );
      api?.events.record({ type: e.type, reason: e.reason, message: `${e.message}${where}`, brief: e.reason });
    },
    store: resetStorePort(d.store),
    pods: () => d.pods.cache?.pods() ?? [],
    podsSynced: () => d.pods.cache?.synced ?? true,
    configMapsSynced: () => cms?.synced ?? true,
    logicIdOfPhy: (phy) => logicOfPhy.get(phy),
    stateDir: flags.stateDir,
    hostRoot: flags.hostRoot,
  });
  d.pods.onChange(() => runtime.podsChanged());
  d.kube.onPodAnnotated((namespace, name) => runtime.podAnnotated(namespace, name));
  metrics.followReset(() => runtime.status());
  ctx.cleanups.push('reset', () => runtime.stop());
  if (cms) void withTimeout(cms.start(), ctx.apiTimeoutMs, undefined);
  runtime.start();
  return {
    status: () => runtime.status(),
    stop: () => runtime.stop().catch((err: unknown) => log.warn({ error: message(err) }, 'reset stop')),
  };
}

/**
 * Agent restart (issue [T] item 4, docs/hot-reset.md "Agent restart"): before the store's first snapshot reaches any
 * output, the chips a reset of the previous run still holds get the overrides that run gave them (the reset layer,
 * built later, replaces them with its own at its start).
 */
export function restoreResetOverrides(ctx: AgentBase, store: NodeStateStore): void {
  const { flags, log } = ctx;
  const o = restartOverrides(flags.stateDir, flags.hotReset === 1, log);
  if (o.healthy.size === 0 && o.networkHealthy.size === 0 && o.recovering.size === 0) return;
  const ids = (set: ReadonlySet<number>): number[] => [...set].sort((a, b) => a - b);
  log.info(
    { healthy: ids(o.healthy), recovering: ids(o.recovering) },
    'resets of the previous run still hold chips: reported as they were until the reset layer resumes them',
  );
  store.setResetOverrides(o.healthy, o.networkHealthy, o.recovering);
}
