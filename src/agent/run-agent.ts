/**
 * The composition root of the node agent (architecture §2, spec A.2; docs/architecture.md): the start-up order, the
 * clean-up stack and the handle. Each layer's wiring is its own `wire-*.ts`; the layers talk to each other through
 * the state store (inputs in, one snapshot out). The CLI (`src/cli/agent.ts`) maps {@link AgentStartError} to the
 * exit status; tests and `simulate` run the agent in-process.
 *
 * Signals (architecture §4 "0 stopped by a signal", issue [K] item 8): the CLI aborts `deps.signal` at SIGTERM;
 * every start-up wait (`dcmi_init` retries, API start-up reads, node set-up, the monitor's first pass, the kubelet
 * folder and first registration) ends at once, what was started is stopped in reverse order and `runAgent` rejects
 * with {@link AgentStoppedError}. `stop()` is bounded as a whole (`stopBudgetMs`); `deps.hurry` (a second signal)
 * cuts its remaining waits short.
 */
import type { Registry } from 'prom-client';
import type { AgentConfig } from '../cli/agent-flags.js';
import { SYSTEM_CLOCK } from '../core/clock.js';
import { errorMessage as message } from '../core/errors.js';
import type { NodeStateStore } from '../state/store.js';
import type { AgentBase, AgentContext, AgentDeps } from './context.js';
import { AgentStartError, AgentStoppedError, EXIT } from './errors.js';
import { CleanupStack, reasonOf, StartSteps, withTimeout } from './lifecycle.js';
import { stateDirProblem } from './state-dir.js';
import { wireApi } from './wire-api.js';
import { wireDcmi } from './wire-dcmi.js';
import { wireDra } from './wire-dra.js';
import { wireDraApi } from './wire-dra-api.js';
import { wireHealth } from './wire-health.js';
import { observeStore, startObservability } from './wire-http.js';
import { wireKube } from './wire-kube.js';
import { wireKubelet } from './wire-kubelet.js';
import { wireMounts } from './wire-mounts.js';
import { wirePods } from './wire-pods.js';
import { openFaultFiles, wirePolicy } from './wire-policy.js';
import { restoreResetOverrides, wireReset } from './wire-reset.js';
import { wireState } from './wire-state.js';

export { AgentStartError, AgentStoppedError, EXIT } from './errors.js';
export type { AgentDeps } from './context.js';
export { clientNodeBackend, loadKube, type KubeBackend } from './wire-api.js';

/** How long a kubelet that is not there yet holds back the reset layer's start (step 9). */
const RESET_AFTER_KUBELET_MS = 1000;

/** The running agent. */
export interface AgentHandle {
  /** The state store: the one snapshot every output projects. */
  readonly store: NodeStateStore;
  readonly registry: Registry;
  /** Port of the metrics/probes server (undefined when `-metricsAddress=""`). */
  readonly metricsPort: number | undefined;
  /** The kubelet resource name, e.g. `huawei.com/Ascend910`. */
  readonly resourceName: string;
  /** The health layer's fault-fetch mode (`subscribed` or `polling`). */
  healthMode(): string;
  /** Resolves when no device-info ConfigMap write waits or runs (at once without an API server). */
  configMapIdle(): Promise<void>;
  /** SIGHUP: restart every plugin server and register again. */
  reregister(reason: string): void;
  /** Orderly shutdown (idempotent): streams stopped, sockets removed, ConfigMap flushed (bounded), DCMI closed. */
  stop(): Promise<void>;
}

/** Starts the agent; rejects with {@link AgentStartError} (everything started so far is stopped again). */
export async function runAgent(config: AgentConfig, deps: AgentDeps): Promise<AgentHandle> {
  const { flags } = config;
  const log = deps.logger;
  const signal = deps.signal;
  const steps = new StartSteps(signal);
  const cleanups = new CleanupStack(log, deps.hurry);
  const stopBudgetMs = deps.stopBudgetMs ?? 4000;
  const base: AgentBase = {
    config,
    flags,
    env: deps.env ?? process.env,
    log,
    clock: deps.clock ?? SYSTEM_CLOCK,
    signal,
    apiTimeoutMs: deps.apiStartupTimeoutMs ?? 3000,
    steps,
    cleanups,
  };
  try {
    steps.step('DCMI initialisation'); // a signal before runAgent was called: nothing is started at all
    // 0. A state folder that cannot be written stops the start before anything runs (issue [I] "Bad input").
    const stateProblem = stateDirProblem(flags.stateDir);
    if (stateProblem) throw new AgentStartError(stateProblem, EXIT.BAD_CONFIG);
    // 1. Metrics and probes, before anything that reports into them and before any wait (issue [J] item 1):
    // /healthz answers from the first second, /readyz names what the start still waits for.
    const obs = await startObservability(base, deps);
    const { registry, metrics } = obs;
    // 2. DCMI (spec A.2 steps 1-4): wait up to -deviceResetTimeout for dcmi_init and the card list.
    const hw = await wireDcmi(base, deps.dcmiInitRetryMs ?? 10_000);
    obs.dcmiOpened(hw);
    steps.step('fault policy');
    // 3. The fault policy files.
    const ctx: AgentContext = { ...base, metrics };
    const files = await openFaultFiles(ctx);
    steps.step('Kubernetes API client');
    // 4. Kubernetes API (never waited on longer than apiTimeoutMs), then the fault-config ConfigMap over the files.
    const api = await wireApi(ctx, deps.kubeConfig);
    obs.apiReady(api ? () => api.reached() : null);
    const policy = await wirePolicy(ctx, files, api);
    steps.step('device-info ConfigMap read');
    const live = await api?.startupValues();
    steps.step('engine restore');
    // 5. The store, its engine restored (G.3) before kubelet sees anything.
    const state = wireState(ctx, {
      hw,
      policy,
      live,
      api: api !== undefined,
      events: api?.events,
    });
    const store = state.store;
    restoreResetOverrides(ctx, store); // issue [T] item 4: a reset the previous run left in flight, from the first snapshot
    // 6. The health layer (events into the store), then the projections. The kubelet's subscribes first and runs in
    // the cycle's turn; the metrics, the ConfigMap queue and the Event queue are deferred to the next check phase,
    // after the ListAndWatch frame has left (issue [P] item 5).
    const health = await wireHealth(ctx, hw, store);
    steps.step('outputs');
    const kubelet = wireKubelet(ctx, hw, store, api?.events);
    observeStore(metrics, store, log);
    const pods = wirePods(ctx, hw, store, api);
    const soft = kubelet.softShare; // spec L.7: vNPU files of gone pods removed (at start: what a crash left)
    if (soft) pods.onChange(() => soft.podsChanged(pods.cache));
    const kube = wireKube(ctx, {
      hw,
      store,
      api,
      pods,
      restored: state.restored,
      realOf: (id) => kubelet.realOf(id),
      ...(soft ? { softShare: soft } : {}),
    });
    // issue [DRA]: -deviceApi=dra|both (no-ops for plugin): the slices (API side), then the kubelet plugin
    const draApi = wireDraApi(ctx, { hw, store, api, pods, rankChips: () => kube.rankChips() });
    const dra = wireDra(ctx, hw, store, api, draApi.pluginHeld);
    obs.kubeletReady(() => [...kubelet.status(), ...dra.status()]);

    steps.step('health monitor first pass');
    state.start();
    // 7. Spec A.2 step 5.7: the node's labels and annotations; failing after its tries is fatal (exit 1). They need
    // nothing of the health pass, so both run at once (issue [P] item 3); the outcome is awaited below.
    const nodeSetUp = api
      ? kube.setUpNode().then(
          () => undefined,
          (err: unknown) => ({ err }),
        )
      : undefined;
    await health.start(); // before registering with kubelet: the first list is DCMI's truth
    kube.start();
    pods.start();
    draApi.start(); // in the background: the slices do not wait for the Node's labels
    if (nodeSetUp) {
      steps.step('node labels and annotations');
      const failed = await nodeSetUp;
      if (failed) throw failed.err;
    }
    steps.step('kubelet directory and registration');
    // 8. Kubelet (spec A.2 last step): wait for the directory, register every resource.
    const waitMs = deps.kubeletWaitTimeoutMs ?? flags.kubeletWaitTimeout * 1000;
    await dra.start(); // DRA first: kubelet may call NodePrepare at once, the device plugin waits for kubelet.sock
    const kubeletUp =
      flags.deviceApi === 'dra'
        ? Promise.resolve()
        : kubelet.start(
            pods.cache,
            (reason) => deps.onFatal?.(reason),
            waitMs,
            pods.allocateEnvs,
            api?.events,
            api?.core,
          );
    // 9. The reset layer, once the Node's labels are known (server-usage, hot-reset §1.3) and kubelet has the device
    // list: its start-up reads would share the event loop with the registration (issue [P] item 3). A kubelet that
    // is not there yet holds it back at most RESET_AFTER_KUBELET_MS.
    const kubeletFailed = await withTimeout(
      kubeletUp.then(
        () => false,
        () => true,
      ),
      RESET_AFTER_KUBELET_MS,
      false,
    );
    if (kubeletFailed) await kubeletUp; // its error
    const reset = wireReset(ctx, { hw, store, api, pods, kube, policy });
    obs.stateReady(store, reset);
    await kubeletUp;
    const metricsPort = obs.port;
    steps.step('running');
    log.info(
      {
        resourceName: hw.resourceName,
        chips: hw.chips.length,
        mode: health.mode(),
        separated: store.snapshot().manualSeparation,
        metricsPort,
      },
      'agent started',
    );
    kube.startPeriodic();
    wireMounts(ctx).start(); // spec A.2 step 9: the duplicate-mount detector (L.5), in the background

    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopping ??= (async () => {
        log.info('stopping');
        // One bound for the whole shutdown (a signal → exit within 5 s): each wait gets what is left of it minus a
        // reserve for the steps after it; every step's synchronous part runs even when nothing is left.
        // (monotonic: a wall-clock step during the stop neither cuts it short nor lets it overrun the exit)
        const until = performance.now() + stopBudgetMs;
        const left = (reserveMs: number): number => Math.max(0, until - reserveMs - performance.now());
        store.flushDeferred(); // the last snapshot reaches the ConfigMap queue before its flush
        kube.pause();
        draApi.stop();
        // flows stop at their next step; running episodes stay in -stateDir for the next start
        await withTimeout(reset.stop(), left(2000), undefined, deps.hurry);
        health.stop();
        state.stop();
        await withTimeout(kubelet.stop(), left(1500), undefined, deps.hurry); // streams ended, sockets removed
        await withTimeout(dra.stop(), left(1500), undefined, deps.hurry);
        await kube.flush(Math.min(deps.flushTimeoutMs ?? 5000, left(1000)), deps.hurry);
        await state.save();
        await cleanups.undo(left(0));
        log.info('stopped');
      })();
      return stopping;
    };
    return {
      store,
      registry,
      metricsPort,
      resourceName: hw.resourceName,
      healthMode: () => health.mode(),
      configMapIdle: () => kube.whenIdle(),
      reregister: (reason) => kubelet.reregister(reason),
      stop,
    };
  } catch (err) {
    // After the signal any failure is the stop's doing (a wait cut short): exit 0, never 4 (architecture §4).
    const aborted = signal?.aborted === true;
    if (aborted) log.info({ phase: steps.phase }, 'stopping during start-up');
    await cleanups.undo(aborted ? stopBudgetMs : 3000);
    if (aborted) throw new AgentStoppedError(steps.phase, reasonOf(signal));
    if (err instanceof AgentStartError) throw err;
    throw new AgentStartError(message(err), EXIT.FATAL, { cause: err });
  }
}
