/**
 * The composition root of the node agent (architecture §2, spec A.2): DCMI → health monitor → state store →
 * kubelet / device-info ConfigMap / Events / metrics. `runAgent` starts everything in the start-up order of
 * docs/agent.md and returns a handle whose `stop()` is the orderly shutdown; the CLI (`src/cli/agent.ts`) maps
 * {@link AgentStartError} to the exit status, and tests and `simulate` can run the agent in-process.
 *
 * Signals (architecture §4 "0 stopped by a signal", issue [K] item 8): the CLI aborts `deps.signal` at SIGTERM;
 * every start-up wait (`dcmi_init` retries, API start-up reads, node set-up, the monitor's first pass, the kubelet
 * folder and first registration) ends at once, what was started is stopped in reverse order and `runAgent` rejects
 * with {@link AgentStoppedError}. `stop()` is bounded as a whole (`stopBudgetMs`); `deps.hurry` (a second signal)
 * cuts its remaining waits short.
 */
import path from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { PROJECT_ROOT } from '../core/paths.js';
import { Dcmi, type ChipAddress } from '../dcmi/dcmi.js';
import { hccnToolProblem, queryLinkStatus, queryRoceStats } from '../dcmi/hccn.js';
import { resolveDcmiLibrary } from '../dcmi/library-path.js';
import { FileFaultConfigSource, type FaultConfigSource } from '../config/fault-config-source.js';
import { FaultEngine } from '../faults/index.js';
import type { AgentConfig } from '../cli/agent-flags.js';
import { discoverNode } from '../health/discovery.js';
import { loadHangDetectionConfig } from '../health/hang-config.js';
import { DEFAULT_CLOCK_TICKS, HangDetector, readClockTicksPerSecond } from '../health/hang-detector.js';
import { HealthMonitor } from '../health/monitor.js';
import { faultEvent, transitionEvents } from '../kube/agent-events.js';
import {
  DeviceInfoPublisher,
  readStartupValues,
  storeSeparationHost,
  type StartupValues,
} from '../kube/device-info-publisher.js';
import type { RestoreResult } from '../state/restore.js';
import { EngineStatePersistence } from '../kube/engine-state-persistence.js';
import { deviceInfoViewOf } from '../kube/device-info-view.js';
import { KubeEventRecorder } from '../kube/event-recorder.js';
import { KubeClient, loadKubeAccess, type AgentCoreApi } from '../kube/kube-client.js';
import type { WatchFn } from '../kube/list-watch.js';
import { ApiRecovery, type BackoffOptions } from '../kube/write-queue.js';
import { statusOf, errorMessage as message } from '../core/errors.js';
import { FaultConfigConfigMapSource } from '../kube/fault-config-configmap.js';
import { NodeLabeler, NodeSetupError, type BaseDeviceInfo } from '../kube/node-labeler.js';
import { ANNOTATION_ASCEND_REAL, PodAnnotator, type RankChip } from '../kube/pod-annotator.js';
import { PodCacheWatcher } from '../kube/pod-cache-watcher.js';
import { nodeAnnotationApi, resetConfigMapApi, ResetConfigMapWatcher } from '../reset/reset-kube.js';
import { FsDeviceNodeProbe } from '../kubelet/device-nodes.js';
import { DeviceNodeMissingError, KubeletWaitTimeoutError, SocketPathTooLongError } from '../kubelet/errors.js';
import type { Logger } from '../core/logger.js';
import { DevicePluginManager, KubeletStartAbortedError } from '../kubelet/plugin-manager.js';
import { PodResourcesClient } from '../kubelet/podresources-client.js';
import { startObservabilityServer, type ObservabilityServer } from '../observability/http-server.js';
import { AgentMetrics } from '../observability/metrics.js';
import { agentStatus } from '../observability/status.js';
import { resetDcmiOf } from '../reset/dcmi-adapter.js';
import { ResetRuntime } from '../reset/reset-runtime.js';
import { isGraceToleranceSupported } from '../reset/policy.js';
import { deviceUsageOf } from '../reset/rings.js';
import type { ChipResetView, ConfigMapApi, NodeAnnotationApi } from '../reset/types.js';
import { hasParameterPlane, runModeOf } from '../core/chips.js';
import { chipName, managerName } from '../core/device-names.js';
import { SYSTEM_CLOCK, type Clock } from '../core/clock.js';
import { StoreDeviceSource } from '../kubelet/store-device-source.js';
import { NodeStateStore, type NodeState, type StoreChip } from '../state/store.js';
import { nodeLabelFactsOf, readChipAddresses } from './node-facts.js';
import { stateDirProblem } from './state-dir.js';

/** Exit statuses of architecture §4. */
export const EXIT = { OK: 0, FATAL: 1, BAD_CONFIG: 2, DCMI_UNUSABLE: 3, WAIT_TIMEOUT: 4 } as const;

/** A start-up failure with the exit status the CLI must use. */
export class AgentStartError extends Error {
  override readonly name = 'AgentStartError';
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/**
 * The agent was asked to stop (its `deps.signal` aborted) before start-up completed: everything started was stopped
 * again. Not a failure: the CLI exits {@link EXIT}.OK (architecture §4).
 */
export class AgentStoppedError extends Error {
  override readonly name = 'AgentStoppedError';
  readonly exitCode = EXIT.OK;
  constructor(
    /** The start-up step that was running, e.g. `kubelet directory and registration`. */
    readonly phase: string,
    /** The abort reason (the CLI passes the signal's name). */
    readonly reason: string | undefined,
  ) {
    super(`stopped${reason !== undefined ? ` by ${reason}` : ''} during start-up (${phase})`);
  }
}

/** What the composition root takes from its environment (all optional; tests shorten the waits). */
export interface AgentDeps {
  /** The process environment (`LD_LIBRARY_PATH`, `KUBECONFIG`, in-cluster variables, `hccn_tool`'s env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Required: the pino logger created from `-logLevel`/`-logFile`. */
  readonly logger: Logger;
  readonly registry?: Registry;
  readonly clock?: Clock;
  /**
   * API server access through client-node: a KubeConfig, `null` for none; absent = the agent's own client
   * (`KubeClient`) on `-kubeconfig`, else in-cluster, else `$KUBECONFIG` (see {@link loadKube}).
   */
  readonly kubeConfig?: k8s.KubeConfig | null;
  /** Called when the kubelet layer gives up (15 consecutive failed sends). */
  readonly onFatal?: (reason: string) => void;
  /** Interval between `dcmi_init` attempts (default 10 s; upstream). */
  readonly dcmiInitRetryMs?: number;
  /** Deadline of the kubelet-directory wait and first registration (default `-kubeletWaitTimeout`, 300 s). */
  readonly kubeletWaitTimeoutMs?: number;
  /** Bound of each start-up read from the API server (default 3 s): the kubelet path never waits longer. */
  readonly apiStartupTimeoutMs?: number;
  /** Bound of the ConfigMap flush at shutdown (default 5 s). */
  readonly flushTimeoutMs?: number;
  /** Metrics from Node.js (process CPU, memory); default true. */
  readonly defaultMetrics?: boolean;
  /**
   * Aborted when the agent must stop (the CLI: SIGTERM/SIGINT). During start-up every wait ends at once and
   * `runAgent` rejects with {@link AgentStoppedError}; afterwards the caller calls `stop()`.
   */
  readonly signal?: AbortSignal;
  /** Aborted to stop without waiting any longer (the CLI: a second signal): the shutdown's waits end at once. */
  readonly hurry?: AbortSignal;
  /**
   * Bound of the whole `stop()` (default 4 s: the CLI exits within 5 s of a signal); the ConfigMap flush gets what is
   * left of it after a reserve for the rest, at most `flushTimeoutMs`.
   */
  readonly stopBudgetMs?: number;
}

/** The running agent. */
export interface AgentHandle {
  readonly dcmi: Dcmi;
  readonly chips: readonly ChipAddress[];
  readonly store: NodeStateStore;
  readonly monitor: HealthMonitor;
  readonly manager: DevicePluginManager;
  readonly devices: StoreDeviceSource;
  readonly publisher: DeviceInfoPublisher | undefined;
  readonly events: KubeEventRecorder | undefined;
  /** Node labels/annotations (I.1, I.2); undefined without an API server. */
  readonly labeler: NodeLabeler | undefined;
  readonly metrics: AgentMetrics;
  readonly registry: Registry;
  /** Port of the metrics/probes server (undefined when `-metricsAddress=""`). */
  readonly metricsPort: number | undefined;
  /** The kubelet resource name, e.g. `huawei.com/Ascend910`. */
  readonly resourceName: string;
  /** The chip-reset layer (docs/hot-reset.md). */
  readonly reset: ResetRuntime;
  /** SIGHUP: restart every plugin server and register again. */
  reregister(reason: string): void;
  /** Orderly shutdown (idempotent): streams stopped, sockets removed, ConfigMap flushed (bounded), DCMI closed. */
  stop(): Promise<void>;
}

type Cleanup = { what: string; run: () => unknown };

/** `p`'s value, or `fallback` when it rejects, takes longer than `ms` or `signal` is aborted first. */
function withTimeout<T>(p: Promise<T>, ms: number, fallback: T, signal?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve) => {
    const done = (v: T): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(v);
    };
    const onAbort = (): void => done(fallback);
    const timer = setTimeout(onAbort, ms);
    timer.unref();
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    p.then(done, onAbort);
  });
}

/** Thrown by {@link untilAborted} and {@link pause}; `runAgent` turns it into {@link AgentStoppedError}. */
class StartAborted extends Error {
  override readonly name = 'StartAborted';
}

/**
 * `p`, or a {@link StartAborted} rejection as soon as `signal` is aborted. `p` keeps running: whoever started it
 * registered a clean-up that stops it.
 */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new StartAborted('aborted'));
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

/**
 * Sleeps `ms` (a timer that keeps the process alive: nothing else may run during start-up); rejects with
 * {@link StartAborted} as soon as `signal` is aborted, and the timer is cleared then.
 */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const slept = new Promise<void>((r) => (timer = setTimeout(r, ms)));
  return untilAborted(slept, signal).finally(() => clearTimeout(timer));
}

function reasonOf(signal: AbortSignal): string | undefined {
  const r: unknown = signal.reason;
  return typeof r === 'string' ? r : r instanceof Error && r.name !== 'AbortError' ? r.message : undefined;
}

/**
 * `api` with the outcome of every call reported to the shared {@link ApiRecovery}: a success of any request ends
 * every retrier's backoff after an outage (issue [K] item 8).
 */
function reportingTo<T extends object>(api: T, recovery: ApiRecovery): T {
  return new Proxy(api, {
    get(t, prop, receiver) {
      const v: unknown = Reflect.get(t, prop, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]): unknown => {
        const r: unknown = (v as (...a: unknown[]) => unknown).apply(t, args);
        if (r instanceof Promise) {
          r.then(
            () => recovery.reportSuccess(),
            (err: unknown) => recovery.reportFailure(statusOf(err)),
          );
        }
        return r;
      };
    },
  });
}

/**
 * `target` with every method call observed: `after` runs once the returned promise settled and its awaiting
 * callers ran (used to read the write queue's counters after each API call of the publisher).
 */
function observed<T extends object>(target: T, after: () => void): T {
  return new Proxy(target, {
    get(t, prop, receiver) {
      const v: unknown = Reflect.get(t, prop, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]): unknown => {
        const r: unknown = (v as (...a: unknown[]) => unknown).apply(t, args);
        if (r instanceof Promise) {
          const later = (): void => void setImmediate(after);
          r.then(later, later);
        }
        return r;
      };
    },
  });
}

/** The API server as the kube layer uses it: the CoreV1 calls and the watch. */
export interface KubeBackend {
  readonly core: AgentCoreApi;
  readonly watch: WatchFn;
  /** `built-in` (KubeClient) or `client-node`, and where the access came from (for the log). */
  readonly client: 'built-in' | 'client-node';
  readonly from: string;
  /** Whether the API server serves now (`GET /readyz`, bounded, never rejects): the outage probe of ApiRecovery. */
  readonly probe?: () => Promise<boolean>;
  close(): void;
}

/** Bound of one outage probe. */
const PROBE_TIMEOUT_MS = 2000;

/** client-node's CoreV1Api and Watch over `kc` (client-node is loaded here, not with this module). */
export async function clientNodeBackend(kc: k8s.KubeConfig, from = 'kubeconfig'): Promise<KubeBackend> {
  const m = await import('@kubernetes/client-node');
  const watcher = new m.Watch(kc);
  const health = new m.Health(kc);
  return {
    core: kc.makeApiClient(m.CoreV1Api),
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
export async function loadKube(
  flag: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<KubeBackend | undefined> {
  try {
    const source = loadKubeAccess(flag, env);
    if (source === undefined) return undefined;
    if (source.kind === 'access') {
      const c = new KubeClient(source.access);
      return {
        core: c,
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
    throw new AgentStartError(`cannot load the kubeconfig: ${message(err)}`, EXIT.BAD_CONFIG);
  }
}

/**
 * Resolves, opens and initialises DCMI (exit 3 when unusable), enumerates the chips. An aborted `signal` ends the
 * retries at once ({@link StartAborted}; DCMI is closed, after an `dcmi_init` in flight returned).
 */
async function openDcmi(
  config: AgentConfig,
  env: Readonly<Record<string, string | undefined>>,
  log: Logger,
  retryMs: number,
  signal: AbortSignal | undefined,
): Promise<{ dcmi: Dcmi; chips: ChipAddress[] }> {
  const explicit = config.flags.dcmiLibrary;
  let lib;
  try {
    lib = await resolveDcmiLibrary({
      ...(explicit !== '' ? { explicitPath: explicit } : {}),
      env,
      ownUid: process.getuid?.() ?? 0,
    });
  } catch (err) {
    throw new AgentStartError(`DCMI library unusable: ${message(err)}`, EXIT.DCMI_UNUSABLE);
  }
  let dcmi: Dcmi;
  try {
    dcmi = Dcmi.open(lib.path);
  } catch (err) {
    throw new AgentStartError(`DCMI library unusable: ${lib.path}: ${message(err)}`, EXIT.DCMI_UNUSABLE);
  }
  const missing = dcmi.missingSymbols();
  if (missing.includes('dcmi_init') || missing.includes('dcmi_get_card_num_list')) {
    dcmi.close();
    throw new AgentStartError(
      `DCMI library unusable: ${lib.path} lacks ${missing.slice(0, 5).join(', ')} (wrong ABI?)`,
      EXIT.DCMI_UNUSABLE,
    );
  }
  if (missing.length > 0) log.warn({ library: lib.path, missing }, 'DCMI library lacks some functions');
  log.info({ library: lib.path, source: lib.source, rejected: lib.rejected }, 'DCMI library');
  const deadline = Date.now() + config.flags.deviceResetTimeout * 1000;
  for (let attempt = 1; ; attempt++) {
    const init = dcmi.init();
    try {
      await untilAborted(init, signal);
      const chips = dcmi.enumerate();
      if (chips.length === 0) throw new Error('DCMI reports no chips');
      return { dcmi, chips };
    } catch (err) {
      if (err instanceof StartAborted) {
        // dcmi_init runs off the JS thread: the library is closed once it has returned
        void init.then(
          () => dcmi.close(),
          () => dcmi.close(),
        );
        throw err;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        dcmi.close();
        throw new AgentStartError(
          `DCMI unusable: ${lib.path}: dcmi_init/enumeration still failing after ${config.flags.deviceResetTimeout} s ` +
            `(-deviceResetTimeout): ${message(err)}`,
          EXIT.DCMI_UNUSABLE,
        );
      }
      log.warn({ attempt, error: message(err), retryInMs: Math.min(retryMs, left) }, 'DCMI not ready; retrying');
      try {
        await pause(Math.min(retryMs, left), signal);
      } catch (abort) {
        dcmi.close();
        throw abort;
      }
    }
  }
}

/** Starts the agent; rejects with {@link AgentStartError} (everything started so far is stopped again). */
export async function runAgent(config: AgentConfig, deps: AgentDeps): Promise<AgentHandle> {
  const env = deps.env ?? process.env;
  const log = deps.logger;
  const flags = config.flags;
  const clock = deps.clock ?? SYSTEM_CLOCK;
  const apiTimeout = deps.apiStartupTimeoutMs ?? 3000;
  const signal = deps.signal;
  const cleanups: Cleanup[] = [];
  /**
   * Runs the clean-ups in reverse order. Each one's synchronous part always runs; waiting for its promise is bounded
   * by what is left of `budgetMs` (and ends at `deps.hurry`), so a clean-up that hangs cannot hold the exit.
   */
  const undo = async (budgetMs: number): Promise<void> => {
    const until = Date.now() + budgetMs;
    for (const c of cleanups.reverse()) {
      const failed = (err: unknown): void => log.warn({ what: c.what, error: message(err) }, 'clean-up step failed');
      try {
        const r = c.run();
        if (r instanceof Promise) {
          await withTimeout(
            r.then(() => undefined, failed),
            Math.max(0, until - Date.now()),
            undefined,
            deps.hurry,
          );
        }
      } catch (err) {
        failed(err);
      }
    }
    cleanups.length = 0;
  };
  /** The start-up step running now (named in {@link AgentStoppedError}). */
  let phase = 'DCMI initialisation';
  /** Between two steps: stop here when the signal came meanwhile. */
  const step = (next: string): void => {
    if (signal?.aborted) throw new StartAborted('aborted');
    phase = next;
  };
  try {
    step('DCMI initialisation'); // a signal before runAgent was called: nothing is started at all
    // 0. A state folder that cannot be written stops the start before anything runs (issue [I] "Bad input").
    const stateProblem = stateDirProblem(flags.stateDir);
    if (stateProblem) throw new AgentStartError(stateProblem, EXIT.BAD_CONFIG);
    // 1. DCMI (spec A.2 steps 1-4): wait up to -deviceResetTimeout for dcmi_init and the card list.
    const { dcmi, chips } = await openDcmi(config, env, log, deps.dcmiInitRetryMs ?? 10_000, signal);
    cleanups.push({
      what: 'dcmi',
      run: () => {
        dcmi.unsubscribeFaultEvents();
        dcmi.close();
      },
    });
    let discovery;
    try {
      discovery = discoverNode(dcmi, chips);
    } catch (err) {
      throw new AgentStartError(`DCMI unusable: ${message(err)}`, EXIT.DCMI_UNUSABLE);
    }
    for (const w of discovery.warnings) log.warn({ warning: w }, 'discovery');
    const facts = discovery.facts;
    const kind = facts.chipKind;
    const runMode = runModeOf(kind);
    const deviceType = managerName(kind);
    const resourceName = `huawei.com/${deviceType}`;
    if (kind === 'Ascend910A3') {
      try {
        dcmi.setMultiDiePolicy(flags.useSingleDieMode ? 1 : 0);
      } catch (err) {
        log.warn({ error: message(err) }, 'dcmi_set_multi_die_policy failed');
      }
    }
    let superPodId = -2;
    let serverIndex = -2;
    if (kind === 'Ascend910A3') {
      try {
        const sp = dcmi.getSuperPodInfo(chips[0]!.cardId, chips[0]!.deviceId);
        superPodId = sp.superPodId;
        serverIndex = sp.serverId;
      } catch (err) {
        log.warn({ error: message(err) }, 'super pod info unavailable');
      }
    }
    log.info(
      { chipKind: kind, chipName: discovery.chipName, chips: chips.length, boardId: facts.boardId },
      'DCMI ready',
    );

    step('metrics and fault policy');
    // 2. Metrics (before anything that reports into them).
    const registry = deps.registry ?? new Registry();
    const metrics = new AgentMetrics(registry, { defaultMetrics: deps.defaultMetrics ?? true });
    cleanups.push({ what: 'metrics', run: () => metrics.close() });

    // 3. Fault policy: the files (packaged copies when unusable), then the fault-config ConfigMap over them.
    const files = await FileFaultConfigSource.open({
      faultCodeFile: flags.faultCodeFile,
      customizationFile: flags.faultCustomizationFile,
      fallbackFaultCodeFile: path.join(PROJECT_ROOT, 'faultCode.json'),
      fallbackCustomizationFile: path.join(PROJECT_ROOT, 'faultCustomization.json'),
      log: (level, line) => log[level]({ source: 'fault-config' }, line),
    });
    cleanups.push({ what: 'fault-config files', run: () => files.close() });
    step('Kubernetes API client');

    // 4. Kubernetes API (never waited on longer than apiTimeout; the kubelet path does not depend on it).
    const kube =
      deps.kubeConfig === undefined
        ? await loadKube(flags.kubeconfig, env)
        : deps.kubeConfig
          ? await clientNodeBackend(deps.kubeConfig)
          : undefined;
    if (!kube) log.warn('no kubeconfig (-kubeconfig, in-cluster or $KUBECONFIG): ConfigMap, Events and pods are off');
    else {
      log.info({ client: kube.client, from: kube.from }, 'Kubernetes API client');
      cleanups.push({ what: 'kube client', run: () => kube.close() });
    }
    // The one "API server back" signal of this agent: every request's outcome feeds it, and every retrier of the
    // kube layer (write queues, list-watches) backs off through it (issue [K] item 8; docs/agent.md "Outages").
    const recovery = kube ? new ApiRecovery(kube.probe ? { probe: kube.probe } : {}) : undefined;
    if (recovery) cleanups.push({ what: 'API recovery probe', run: () => recovery.close() });
    const backoff: BackoffOptions | undefined = recovery ? { recovery } : undefined;
    const core = kube && recovery ? reportingTo(kube.core, recovery) : undefined;
    const events = core
      ? new KubeEventRecorder({
          api: core,
          nodeName: config.nodeName,
          podName: config.podName ?? `ascend-npu-agent-${config.nodeName}`,
          logger: log,
          ...(backoff ? { backoff } : {}), // Events refused in an outage are retried when the API is back
        })
      : undefined;
    if (events) cleanups.push({ what: 'events', run: () => withTimeout(events.close(), 2000, undefined) });
    let policySource: FaultConfigSource = files;
    if (core && kube) {
      const cmSource = new FaultConfigConfigMapSource({
        api: core,
        watch: kube.watch,
        files,
        logger: log,
        ...(events ? { events } : {}),
        ...(backoff ? { backoff } : {}),
      });
      cleanups.push({ what: 'fault-config configmap', run: () => cmSource.close() });
      step('fault-config ConfigMap read');
      await untilAborted(withTimeout(cmSource.start(), apiTimeout, undefined), signal);
      policySource = cmSource;
    }
    step('device-info ConfigMap read');
    const live: StartupValues | undefined = core
      ? await untilAborted(withTimeout(readStartupValues(core, config.nodeName, log), apiTimeout, undefined), signal)
      : undefined;
    step('engine restore');

    // 5. Engine, restored from -stateDir / the live ConfigMap (G.3) before kubelet sees anything.
    let workModeSmp = false;
    if (kind === 'Ascend910') {
      try {
        workModeSmp = dcmi.getNpuWorkMode(chips[0]!.cardId) !== 0; // dcmi-abi §4: 0 = AMP, other = SMP
      } catch (err) {
        log.warn({ error: message(err) }, 'dcmi_get_npu_work_mode failed: 910A taken as AMP (no task-aware reset)');
      }
    }
    // hot-reset §1.2: grace tolerance where the task-aware engine runs; D.7 post-rule: Duo cards share health (-hotReset=0)
    const graceTolerance = flags.hotReset === 1 && isGraceToleranceSupported(kind, workModeSmp, 1);
    const duoCards = (facts.productTypes ?? []).includes('Atlas 300I Duo');
    const healthGroups =
      flags.hotReset === 0 && duoCards
        ? [...new Set(chips.map((c) => c.cardId))].map((card) =>
            chips.filter((c) => c.cardId === card).map((c) => c.logicId),
          )
        : undefined;
    const engine = new FaultEngine(policySource.current(), {
      chips: chips.map((c) => ({ logicId: c.logicId, phyId: c.phyId })),
      runMode,
      graceTolerance,
      ...(healthGroups ? { healthGroups } : {}),
    });
    const persistence = new EngineStatePersistence({
      dir: flags.stateDir,
      nodeName: config.nodeName,
      logger: log,
      ...(events ? { events } : {}),
    });
    // 6. The store, the health monitor and the kubelet view.
    const storeChips: StoreChip[] = chips.map((c) => ({
      logicId: c.logicId,
      phyId: c.phyId,
      cardId: c.cardId,
      deviceId: c.deviceId,
    }));
    const byLogic = new Map(chips.map((c) => [c.logicId, c]));
    const store = new NodeStateStore({
      engine,
      chips: storeChips,
      node: facts,
      clock,
      listWatchPeriodMs: flags.listWatchPeriod * 1000,
      liveCodes: (id) => monitor.liveCodes(id),
      runMode,
      loadDurable: () => persistence.load(),
      logger: log,
    });
    cleanups.push({ what: 'store', run: () => store.stop() });
    let restored: RestoreResult | undefined;
    if (live) restored = store.restore(live);
    else if (!kube) {
      // No API server at all: the state file alone (the ConfigMap cannot have changed meanwhile as far as we know).
      const persisted = persistence.load();
      if (persisted?.confirmedManual != null) {
        restored = store.restore({
          found: true,
          manuallySeparateNPU: persisted.confirmedManual,
          upgradeFaultReason: '',
        });
      }
    }
    const hccnEnv = { ...env } as Record<string, string | undefined>;
    const hccnTool = flags.hccnTool;
    // Issue [K] 9: a tool failing the DCMI library's file checks is never run; link status and RoCE sampling are
    // then off for this run (a missing tool is not a check failure: queries report Abnormal, as upstream).
    const hccnProblem = hccnToolProblem(hccnTool);
    const hccnUsable = hccnProblem === undefined || hccnProblem.missing;
    if (!hccnUsable) {
      log.error(
        { hccnTool, reason: hccnProblem.reason },
        `-hccnTool refused: ${hccnProblem.reason}; link-status checks and RoCE hang sampling are off for this run`,
      );
    }
    const monitor: HealthMonitor = new HealthMonitor({
      dcmi,
      chips,
      chipKind: kind,
      state: store,
      clock,
      sink: (batch) => store.applyEvents(batch),
      listWatchPeriodMs: flags.listWatchPeriod * 1000,
      ...(hccnUsable
        ? {
            linkStatus: async (phy: number) =>
              (await queryLinkStatus({ toolPath: hccnTool, env: hccnEnv }, phy)).status,
          }
        : {}),
      linkQueryIntervalMs: flags.linkQueryInterval * 1000,
      observer: metrics.healthObserver(),
      logger: log,
    });
    cleanups.push({ what: 'monitor', run: () => monitor.stop() });
    // D.9: hang events take the same path as the monitor's (recoveries are held 1 s by the detector).
    const hangConfig = await loadHangDetectionConfig(flags.hangDetectionConfigFile, { logger: log });
    step('outputs');
    const hang = new HangDetector({
      dcmi,
      chips,
      config: hangConfig,
      sink: (batch) => store.applyEvents(batch),
      clock,
      ...(hasParameterPlane(kind) && hccnUsable
        ? { roceStats: (phy: number) => queryRoceStats({ toolPath: hccnTool, env: hccnEnv }, phy) }
        : {}),
      clockTicksPerSecond: readClockTicksPerSecond() ?? DEFAULT_CLOCK_TICKS,
      state: store,
      logger: log,
    });
    cleanups.push({ what: 'hang detector', run: () => hang.stop() });
    const devices = new StoreDeviceSource(store); // subscribed first: kubelet sees a snapshot before anyone else
    cleanups.push({ what: 'device source', run: () => devices.close() });
    const nameOf = (logicId: number): string => chipName(deviceType, byLogic.get(logicId)?.phyId ?? logicId);

    // 7. Node labels/annotations (I.1, I.2), the device-info ConfigMap (H.4), pods (D.7, I.6), pod annotations (I.3).
    let publisher: DeviceInfoPublisher | undefined;
    let pods: PodCacheWatcher | undefined;
    let labeler: NodeLabeler | undefined;
    let annotator: PodAnnotator | undefined;
    // created after the kube layer: the kubelet layer and the reset layer
    const late: { manager?: DevicePluginManager; reset?: ResetRuntime } = {};
    let rankChips: ReadonlyMap<number, RankChip> = new Map();
    const chipAddresses = (): readonly BaseDeviceInfo[] => {
      const a = readChipAddresses(dcmi, chips, kind, deviceType);
      rankChips = a.rank;
      return a.base;
    };
    let cmFailuresSeen = 0;
    const syncConfigMapMetrics = (): void => {
      if (!publisher) return;
      const st = publisher.stats;
      const failed = st.failures + st.rejected;
      if (failed > cmFailuresSeen) metrics.configMapWrites.inc({ result: 'failed' }, failed - cmFailuresSeen);
      cmFailuresSeen = Math.max(cmFailuresSeen, failed);
      metrics.configMapQueueDepth.set(st.pendingSinceMs !== undefined ? 1 : 0);
    };
    if (core && kube) {
      labeler = new NodeLabeler({
        api: core,
        nodeName: config.nodeName,
        facts: nodeLabelFactsOf(dcmi, chips, {
          facts,
          chipName: discovery.chipName,
          superPodId,
          serverIndex,
          logger: log,
        }),
        baseDeviceInfos: chipAddresses,
        autoStowing: flags.autoStowing,
        watch: kube.watch,
        logger: log,
        ...(backoff ? { backoff } : {}),
      });
      const lab = labeler;
      cleanups.push({ what: 'node labeler', run: () => lab.stop() });
      const productTypes = facts.productTypes ?? [];
      const allDuo = productTypes.length > 0 && productTypes.every((p) => p === 'Atlas 300I Duo');
      const podsOf = (): PodCacheWatcher | undefined => pods;
      annotator = new PodAnnotator({
        api: core,
        pods: { pods: () => podsOf()?.pods() ?? [] },
        hostIp: config.hostIp ?? '',
        superPodId,
        serverIndex,
        chips: () => rankChips,
        rankTable: runMode === 'Ascend910' ? (kind === 'Ascend910A5' ? 'npu' : '910') : allDuo ? '910' : 'none',
        volcanoType: flags.volcanoType,
        realOf: (id) => late.manager?.servers.find((s) => s.deviceType === deviceType)?.kubeletToReal.realOf(id),
        logger: log,
      });
      const pub: DeviceInfoPublisher = new DeviceInfoPublisher({
        api: observed(core, () => syncConfigMapMetrics()),
        watch: kube.watch,
        nodeName: config.nodeName,
        runMode,
        logger: log,
        ...(backoff ? { backoff } : {}),
        ...(events ? { events } : {}),
        view: (now) =>
          lab.applyToView(
            deviceInfoViewOf(store.snapshot().chips, { runMode, resourceName, superPodId, serverIndex }, now),
          ),
        separation: storeSeparationHost(store, runMode),
        ...(restored ? { confirmedManual: restored.confirmedManual } : {}),
        lateStartup: (v) => store.restore(v), // its confirmedManual is what counts as live (not the separations)
        onWritten: () => {
          metrics.configMapWrites.inc({ result: 'ok' });
          void lab.onDeviceInfoWritten();
        },
      });
      publisher = pub;
      cleanups.push({ what: 'publisher', run: () => pub.stop() });
      pods = new PodCacheWatcher({
        api: core,
        watch: kube.watch,
        nodeName: config.nodeName,
        logger: log,
        ...(backoff ? { backoff } : {}),
        onChange: () => {
          updatePodUsed();
          void annotatePass();
          late.reset?.podsChanged();
        },
      });
      const podWatcher = pods;
      cleanups.push({ what: 'pods', run: () => podWatcher.stop() });
    }
    const updatePodUsed = (): void => {
      if (!pods) return;
      const names = pods.devicesInUse(deviceType);
      const used = new Set<number>();
      for (const c of chips) if (names.has(chipName(deviceType, c.phyId))) used.add(c.logicId);
      store.setPodUsed(used);
    };
    // -autoStowing=false: the Recover labels follow every cycle; a changed label changes the device-info view.
    const stowCycle = (state: NodeState): void => {
      if (!labeler || flags.autoStowing) return;
      void labeler.cycle(state.chips).then(() => publisher?.changed());
    };
    // Spec I.3: pod annotations from kubelet's pod-resources answer; one pass at a time, a request meanwhile → one more.
    let podResources: PodResourcesClient | undefined;
    try {
      if (annotator) podResources = new PodResourcesClient(flags.podResourcesSocket);
    } catch (err) {
      log.warn({ error: message(err) }, '-podResourcesSocket unusable: pods are not annotated');
    }
    let annotating = false;
    let annotateAgain = false;
    let annotateFailedLogged = false;
    let stopped = false;
    const annotatePass = async (): Promise<void> => {
      if (!annotator || !podResources || !pods || stopped) return;
      if (annotating) {
        annotateAgain = true;
        return;
      }
      annotating = true;
      try {
        do {
          annotateAgain = false;
          // Nothing to ask kubelet while no pod that asks for our resource lacks huawei.com/AscendReal (idle case).
          const waiting = pods
            .pods()
            .some(
              (p) =>
                p.annotations[ANNOTATION_ASCEND_REAL] === undefined &&
                p.containerLimits.some((l) => (l[resourceName] ?? 0) > 0),
            );
          if (!waiting) break;
          const held = await podResources.devicesInUse(new Set([resourceName]));
          const r = await annotator.annotate(deviceType, held);
          annotateFailedLogged = false;
          if (r.patched.length > 0) log.info({ pods: r.patched }, 'pod annotations written (I.3)');
          for (const key of r.patched) {
            const slash = key.indexOf('/');
            late.reset?.podAnnotated(key.slice(0, slash), key.slice(slash + 1)); // hot-reset §2.6
          }
          if (r.failed.length > 0) log.warn({ pods: r.failed }, 'pod annotations not written; next cycle');
        } while (annotateAgain && !stopped);
      } catch (err) {
        if (!annotateFailedLogged) log.warn({ error: message(err) }, 'pod-resources unavailable: pods not annotated');
        annotateFailedLogged = true;
      } finally {
        annotating = false;
      }
    };
    // Every output is a projection of the same snapshot (architecture §2).
    store.onChange((state, change) => {
      metrics.observeState(state, change);
      if (publisher) {
        publisher.noteTransitions(change.transitions);
        publisher.changed();
        syncConfigMapMetrics();
      }
      stowCycle(state);
      if (events) for (const e of transitionEvents(change.transitions, nameOf)) events.record(e);
    });
    if (events) {
      const ev = events;
      store.onFaultEvents((applied) => {
        for (const e of applied) ev.record(faultEvent(config.nodeName, e, e.time));
      });
    }
    // escalation state: saved at once, in the same turn, after the snapshot listeners (docs/fault-engine.md)
    store.onDurableChange(() => persistence.noteChange(store, () => store.confirmedManual()));
    policySource.subscribe((report, policy) => {
      if (report.changed) store.setPolicy(policy);
    });
    store.attachResync({
      markResync: (ids, why) => monitor.markResync(ids, why),
      // hot-reset §3.4.1 "re-sync applied": markResync starts its read in a 0 ms timer, idle() waits for the read,
      // and its events reach the store from the monitor's setImmediate flush (twice: a batch may flush in two).
      applied: async () => {
        await new Promise((r) => setTimeout(r, 0));
        await monitor.idle();
        for (let i = 0; i < 2; i++) await new Promise((r) => setImmediate(r));
      },
    });

    // 7b. Chip reset (docs/hot-reset.md): the offline engine in every mode, the task-aware engine with -hotReset=1,
    // the reset-file landing on 910-family nodes. Its health filter is a store input (one snapshot for all outputs).
    const noApi = (what: string): Error => new Error(`${what}: no API server configured`);
    const configMapPort: ConfigMapApi = core
      ? resetConfigMapApi(core)
      : {
          get: () => Promise.reject(noApi('reset ConfigMap')),
          replace: () => Promise.reject(noApi('reset ConfigMap')),
        };
    const annotationPort: NodeAnnotationApi = core
      ? nodeAnnotationApi(core, config.nodeName)
      : { read: () => Promise.resolve(undefined), write: () => Promise.reject(noApi('ResetInfo annotation')) };
    let resetCms: ResetConfigMapWatcher | undefined;
    if (core && kube && runMode === 'Ascend910') {
      resetCms = new ResetConfigMapWatcher({
        api: core,
        watch: kube.watch,
        logger: log,
        ...(backoff ? { backoff } : {}),
        onChange: (cm, deleted) => late.reset?.configMapChanged(cm, deleted),
      });
      const w = resetCms;
      cleanups.push({ what: 'reset ConfigMaps', run: () => w.stop() });
    }
    const logicOfPhy = new Map(chips.map((c) => [c.phyId, c.logicId]));
    const resetChipsView = (): readonly ChipResetView[] =>
      store.snapshot().chips.map((v) => ({
        logicId: v.logicId,
        level: v.level,
        codes: v.faultCodes.map((t) => Number.parseInt(t, 16)).filter((n) => Number.isFinite(n)),
        healthy: v.faultHealth === 'Healthy',
        podUsed: v.podUsed,
      }));

    step('health monitor first pass');
    store.start();
    await untilAborted(monitor.start(), signal); // before registering with kubelet: the first list is DCMI's truth
    hang.start();
    if (publisher) void withTimeout(publisher.start(), apiTimeout, undefined);
    if (pods) {
      const p = pods;
      void withTimeout(
        p.start().then(() => updatePodUsed()),
        apiTimeout,
        undefined,
      );
    }

    // Spec A.2 step 5.7: the node's labels and annotations; failing after its tries is fatal (exit 1).
    if (labeler) {
      step('node labels and annotations');
      const lab = labeler;
      const bound = 3 * apiTimeout + 3000;
      let timer: NodeJS.Timeout | undefined;
      try {
        await untilAborted(
          Promise.race([
            lab.start(),
            new Promise<never>((_, reject) => {
              timer = setTimeout(
                () =>
                  reject(
                    new NodeSetupError(`node ${config.nodeName}: no answer from the API server within ${bound} ms`, 0),
                  ),
                bound,
              );
            }),
          ]),
          signal,
        );
      } catch (err) {
        if (err instanceof NodeSetupError) throw new AgentStartError(err.message, err.exitStatus);
        throw err;
      } finally {
        clearTimeout(timer);
      }
      lab.startRefresher();
    }

    // The reset layer, once the Node's labels are known (server-usage, hot-reset §1.3).
    const reset = new ResetRuntime({
      mode: flags.hotReset as -1 | 0 | 1 | 2,
      clock,
      logger: log,
      facts: {
        kind,
        usage: deviceUsageOf(kind, facts.boardId, labeler?.nodeLabels() ?? {}),
        boardId: facts.boardId,
        chips: chips.map((c) => ({ logicId: c.logicId, phyId: c.phyId, cardId: c.cardId, deviceId: c.deviceId })),
        ...(facts.brotherCards ? { brotherCardOf: (card: number) => facts.brotherCards?.[card] } : {}),
        duo: (facts.productTypes ?? []).includes('Atlas 300I Duo'),
      },
      workModeSmp,
      listWatchPeriodMs: flags.listWatchPeriod * 1000,
      timeScale: flags.resetTimePercent / 100,
      grace: () => policySource.current().customization.grace,
      dcmi: resetDcmiOf(dcmi, chips),
      configMapApi: configMapPort,
      configMapCache: resetCms ?? { get: () => undefined },
      nodeAnnotations: annotationPort,
      events: (e) => {
        metrics.resetEvent(e);
        const where = e.pod ? ` (pod ${e.pod.namespace}/${e.pod.name})` : '';
        events?.record({ type: e.type, reason: e.reason, message: `${e.message}${where}`, brief: e.reason });
      },
      store: {
        chips: resetChipsView,
        onChange: (listener) => store.onChange(() => listener()),
        setResetOverrides: (healthy, networkHealthy, recovering) =>
          store.setResetOverrides(healthy, networkHealthy, recovering),
        markResync: (ids, why) => store.requestResync(ids, why),
        resyncApplied: () => store.resyncApplied(),
      },
      pods: () => pods?.pods() ?? [],
      podsSynced: () => pods?.synced ?? true,
      configMapsSynced: () => resetCms?.synced ?? true,
      logicIdOfPhy: (phy) => logicOfPhy.get(phy),
      stateDir: flags.stateDir,
      hostRoot: flags.hostRoot,
    });
    late.reset = reset;
    metrics.followReset(() => reset.status());
    cleanups.push({ what: 'reset', run: () => reset.stop() });
    if (resetCms) void withTimeout(resetCms.start(), apiTimeout, undefined);
    reset.start();

    // 8. Kubelet (spec A.2 last step): wait for the directory, register every resource.
    step('kubelet directory and registration');
    let mgr: DevicePluginManager;
    try {
      mgr = new DevicePluginManager({
        kubeletDir: flags.kubeletDir,
        source: devices,
        probe: new FsDeviceNodeProbe(flags.devDir),
        ...(pods ? { podCache: pods } : {}),
        logger: log,
        volcanoType: flags.volcanoType,
        useAscendDocker: config.ascendDockerRuntime,
        fdFlag: flags.fdFlag,
        listWatchPeriodSec: flags.listWatchPeriod,
        waitTimeoutMs: deps.kubeletWaitTimeoutMs ?? flags.kubeletWaitTimeout * 1000,
        onFatal: (reason) => deps.onFatal?.(reason),
      });
    } catch (err) {
      if (err instanceof DeviceNodeMissingError) throw new AgentStartError(message(err), EXIT.WAIT_TIMEOUT);
      if (err instanceof SocketPathTooLongError) throw new AgentStartError(message(err), EXIT.BAD_CONFIG);
      throw new AgentStartError(`kubelet plugin: ${message(err)}`, EXIT.BAD_CONFIG);
    }
    late.manager = mgr;
    cleanups.push({ what: 'kubelet', run: () => mgr.stop() });
    mgr.on('registered', (e: { resourceName: string }) => metrics.registered(e.resourceName, true));
    mgr.on('registerFailed', (e: { resourceName?: string }) =>
      metrics.registered(e.resourceName ?? resourceName, false),
    );
    mgr.on('sendFailed', (e: { resourceName: string }) =>
      metrics.listAndWatchSends.inc({ resource: e.resourceName, result: 'failed' }),
    );
    mgr.on('reportSent', (e: { resourceName: string }) =>
      metrics.listAndWatchSends.inc({ resource: e.resourceName, result: 'ok' }),
    );
    mgr.on('allocated', (e: { resourceName: string; ms: number }) =>
      metrics.allocateLatency.observe({ resource: e.resourceName }, e.ms / 1000),
    );
    try {
      await mgr.start(signal);
    } catch (err) {
      if (err instanceof KubeletStartAbortedError || signal?.aborted) throw new StartAborted('aborted');
      if (err instanceof KubeletWaitTimeoutError) throw new AgentStartError(message(err), EXIT.WAIT_TIMEOUT);
      throw new AgentStartError(`kubelet plugin: ${message(err)}`, EXIT.WAIT_TIMEOUT);
    }

    // 9. Metrics and probes.
    step('metrics server');
    let server: ObservabilityServer | undefined;
    if (flags.metricsAddress !== '') {
      try {
        server = await startObservabilityServer({
          address: flags.metricsAddress,
          registry,
          status: () =>
            agentStatus({ node: config.nodeName, now: Date.now(), state: store.snapshot(), reset: reset.status() }),
          readiness: {
            dcmi: () => (dcmi.closed ? { ok: false, reason: 'DCMI closed' } : { ok: true }),
            kubelet: () => {
              const bad = mgr
                .status()
                .filter((s) => !s.registered || s.activeStreams === 0)
                .map((s) => s.resourceName);
              return bad.length === 0 ? { ok: true } : { ok: false, reason: `not streaming: ${bad.join(', ')}` };
            },
          },
        });
      } catch (err) {
        throw new AgentStartError(`-metricsAddress ${flags.metricsAddress}: ${message(err)}`, EXIT.BAD_CONFIG);
      }
      const s = server;
      cleanups.push({ what: 'metrics server', run: () => s.close() });
      log.info({ address: `${server.host}:${server.port}` }, 'metrics and probes listening');
    }
    step('running');

    log.info(
      {
        resourceName,
        chips: chips.length,
        mode: monitor.mode(),
        separated: store.snapshot().manualSeparation,
        metricsPort: server?.port,
      },
      'agent started',
    );

    // Every -listWatchPeriod: the Recover labels (an operator's label edit counts), pod annotations, queue gauges.
    const periodic = setInterval(() => {
      stowCycle(store.snapshot());
      void annotatePass();
      syncConfigMapMetrics();
    }, flags.listWatchPeriod * 1000);
    periodic.unref();
    cleanups.push({ what: 'periodic', run: () => clearInterval(periodic) });

    let stopping: Promise<void> | undefined;
    const flushMs = deps.flushTimeoutMs ?? 5000;
    const stopBudgetMs = deps.stopBudgetMs ?? 4000;
    const stop = (): Promise<void> => {
      stopping ??= (async () => {
        log.info('stopping');
        // One bound for the whole shutdown (a signal → exit within 5 s): each wait gets what is left of it minus a
        // reserve for the steps after it; every step's synchronous part runs even when nothing is left.
        const until = Date.now() + stopBudgetMs;
        const left = (reserveMs: number): number => Math.max(0, until - reserveMs - Date.now());
        const hurry = deps.hurry;
        stopped = true;
        clearInterval(periodic);
        // flows stop at their next step; running episodes stay in -stateDir for the next start
        await withTimeout(reset.stop(), left(2000), undefined, hurry);
        monitor.stop();
        hang.stop();
        store.stop();
        const kubeletStop = mgr.stop().catch((err: unknown) => log.warn({ error: message(err) }, 'kubelet stop'));
        await withTimeout(kubeletStop, left(1500), undefined, hurry); // streams ended, sockets removed
        if (publisher) {
          const boundMs = Math.min(flushMs, left(1000));
          // flush, not whenIdle: a change still inside the 1 s write spacing (H.4) is written now, not lost
          const idle = await withTimeout(
            publisher.flush().then(() => true),
            boundMs,
            false,
            hurry,
          );
          if (!idle) log.warn({ boundMs }, 'device-info ConfigMap not flushed before the bound');
        }
        persistence.scheduleSave(() => persistence.capture(store, store.confirmedManual()), 0);
        await withTimeout(persistence.flush(), 2000, undefined);
        cleanups.splice(
          cleanups.findIndex((c) => c.what === 'kubelet'),
          1,
        );
        await undo(left(0));
        log.info('stopped');
      })();
      return stopping;
    };

    return {
      dcmi,
      chips,
      store,
      monitor,
      manager: mgr,
      labeler,
      devices,
      publisher,
      events,
      metrics,
      registry,
      metricsPort: server?.port,
      resourceName,
      reset,
      reregister: (reason) => mgr.triggerReregister(reason),
      stop,
    };
  } catch (err) {
    // After the signal any failure is the stop's doing (a wait cut short): exit 0, never 4 (architecture §4).
    const aborted = signal?.aborted === true;
    if (aborted) log.info({ phase }, 'stopping during start-up');
    await undo(aborted ? stopBudgetDuringStartMs(deps) : 3000);
    if (aborted) throw new AgentStoppedError(phase, reasonOf(signal));
    if (err instanceof AgentStartError) throw err;
    throw new AgentStartError(message(err), EXIT.FATAL);
  }
}

/** Bound of the clean-ups when start-up is cut short by the signal (the same budget as `stop()`). */
function stopBudgetDuringStartMs(deps: AgentDeps): number {
  return deps.stopBudgetMs ?? 4000;
}
