/**
 * Step 5: the fault engine, its durable state in `-stateDir`, and the state store that owns the engine from here on
 * (the hub: every input enters it, every output reads its snapshot; docs/architecture.md). The node's fault policy
 * is decided here — grace tolerance and the Duo cards' shared health — and the engine is restored (G.3) before any
 * output runs: from the state file and the live ConfigMap, or from the state file alone without an API server.
 */
import type { FaultConfigSource } from '../config/fault-config-source.js';
import { FaultEngine } from '../faults/index.js';
import { EngineStatePersistence } from '../kube/engine-state-persistence.js';
import type { EventSink } from '../kube/event-recorder.js';
import { isGraceToleranceSupported } from '../reset/policy.js';
import type { RestoreResult, StartupValues } from '../state/restore.js';
import { NodeStateStore } from '../state/store.js';
import type { AgentBase } from './context.js';
import { withTimeout } from './lifecycle.js';
import type { DcmiLayer } from './wire-dcmi.js';

/** The store, and the durable state's start and final save. */
export interface StateLayer {
  readonly store: NodeStateStore;
  /** The G.3 restore at start (undefined: none was possible; the publisher restores at its first read). */
  readonly restored: RestoreResult | undefined;
  /** Saves every durable change from now on, and starts the store's idle cycle. */
  start(): void;
  stop(): void;
  /** The final save at shutdown (bounded 2 s). */
  save(): Promise<void>;
}

/**
 * The outputs' quiet period (NodeStateStore `outputQuietMs`): metrics, the ConfigMap, Events and debounced saves
 * wait until no fault batch came for 2 ms (at most 50 ms), so that the DCMI events of one failure, which arrive
 * within a few ms of each other, reach kubelet without output work between them (issue [P] item 5).
 */
const OUTPUT_QUIET_MS = 2;

/** What the state layer is built from. */
export interface StateDeps {
  readonly hw: DcmiLayer;
  readonly policy: FaultConfigSource;
  /** The G.3 start-up read (undefined: it failed or there is no API server). */
  readonly live: StartupValues | undefined;
  /** Whether an API server is configured at all. */
  readonly api: boolean;
  readonly events: EventSink | undefined;
}

export function wireState(ctx: AgentBase, d: StateDeps): StateLayer {
  const { flags, log } = ctx;
  const { chips, kind, facts, runMode } = d.hw;
  // hot-reset §1.2: grace tolerance where the task-aware engine runs; D.7 post-rule: Duo cards share health (-hotReset=0)
  const graceTolerance = flags.hotReset === 1 && isGraceToleranceSupported(kind, d.hw.workModeSmp, 1);
  const duoCards = (facts.productTypes ?? []).includes('Atlas 300I Duo');
  const healthGroups =
    flags.hotReset === 0 && duoCards
      ? [...new Set(chips.map((c) => c.cardId))].map((card) =>
          chips.filter((c) => c.cardId === card).map((c) => c.logicId),
        )
      : undefined;
  const engine = new FaultEngine(d.policy.current(), {
    chips: chips.map((c) => ({ logicId: c.logicId, phyId: c.phyId })),
    runMode,
    graceTolerance,
    hyperPlane: kind === 'Ascend910A5', // D.6: hyper-plane codes and the derived UB codes
    ...(healthGroups ? { healthGroups } : {}),
  });
  const persistence = new EngineStatePersistence({
    dir: flags.stateDir,
    nodeName: ctx.config.nodeName,
    logger: log,
    clock: ctx.clock,
    ...(d.events ? { events: d.events } : {}),
    // a save due at a timer (the debounce) waits in the store's output lane (issue [P] item 5); timers fire only
    // after the store below exists
    defer: (run) => store.later(run),
  });
  const store = new NodeStateStore({
    engine,
    chips: chips.map((c) => ({ logicId: c.logicId, phyId: c.phyId, cardId: c.cardId, deviceId: c.deviceId })),
    node: facts,
    clock: ctx.clock,
    listWatchPeriodMs: flags.listWatchPeriod * 1000,
    runMode,
    loadDurable: () => persistence.load(),
    logger: log,
    outputQuietMs: OUTPUT_QUIET_MS,
  });
  ctx.cleanups.push('store', () => store.stop());
  // spec L.9: the switch level table enters the store; with an API server the kube wiring puts the fault-config
  // ConfigMap's SwitchFaultCode.json key over the file (F.8)
  const sw = d.hw.switch;
  if (sw) {
    store.setSwitchLevels(sw.codes.current().levels);
    if (!d.api) {
      const off = sw.codes.onChange(() => store.setSwitchLevels(sw.codes.current().levels));
      ctx.cleanups.push('switch levels', off);
    }
  }
  let restored: RestoreResult | undefined;
  // spec L.6: the live ConfigMap holds public names; the store and the state file keep the inner ones
  const names = d.hw.infoNames;
  const live = d.live && {
    ...d.live,
    manuallySeparateNPU: names.inner(d.live.manuallySeparateNPU),
    upgradeFaultReason: names.innerReasons(d.live.upgradeFaultReason),
  };
  if (live) restored = store.restore(live);
  else if (!d.api) {
    // No API server at all: the state file alone (the ConfigMap cannot have changed meanwhile as far as we know).
    const persisted = persistence.load();
    if (persisted?.confirmedManual != null) {
      restored = store.restore({ found: true, manuallySeparateNPU: persisted.confirmedManual, upgradeFaultReason: '' });
    }
  }
  d.policy.subscribe((report, policy) => {
    if (report.changed) store.setPolicy(policy);
  });
  const capture = (): ReturnType<EngineStatePersistence['capture']> =>
    persistence.capture(store, store.confirmedManual());
  return {
    store,
    restored,
    start: () => {
      // Escalation state is saved at once, in the turn of the cycle, after its snapshot listeners (the store calls
      // durable listeners last; outputs send asynchronously): docs/fault-engine.md "Limits and durability".
      store.onDurableChange(() => persistence.noteChange(store, () => store.confirmedManual()));
      store.start();
    },
    stop: () => store.stop(),
    save: async () => {
      persistence.scheduleSave(capture, 0);
      await withTimeout(persistence.flush(), 2000, undefined);
    },
  };
}
