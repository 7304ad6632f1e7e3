/**
 * Step 6: the health layer, the store's hardware input — the health monitor (subscription or polling, compensation,
 * card drop, link status through `-hccnTool`) and the D.9 hang detector. Both hand their event batches to
 * `store.applyEvents`; the store hands re-sync requests back (`store.attachResync`).
 */
import { errorMessage } from '../core/errors.js';
import { hccnToolProblem, queryLinkStatus, queryPortTable, queryRoceStats } from '../dcmi/hccn.js';
import { SwitchMonitor } from '../dcmi/switch-monitor.js';
import { assembleSwitchCode } from '../kube/device-info-switch.js';
import { hasParameterPlane } from '../core/chips.js';
import { loadHangDetectionConfig } from '../health/hang-config.js';
import { uboeMainBoard } from '../health/a5-planes.js';
import { loadDpuConfig } from '../dpu/config.js';
import { discoverPcie, discoverUb } from '../dpu/discovery.js';
import { DpuMonitor } from '../dpu/monitor.js';
import { DEFAULT_CLOCK_TICKS, HangDetector, readClockTicksPerSecond } from '../health/hang-detector.js';
import { HealthMonitor, type HealthMode } from '../health/monitor.js';
import type { NodeStateStore } from '../state/store.js';
import type { AgentContext } from './context.js';
import { untilAborted } from './lifecycle.js';
import type { DcmiLayer } from './wire-dcmi.js';

/** The running health layer. */
export interface HealthLayer {
  mode(): HealthMode;
  /** The monitor's first pass (before kubelet registers: its first list is DCMI's truth), then the hang detector. */
  start(): Promise<void>;
  stop(): void;
}

export async function wireHealth(ctx: AgentContext, hw: DcmiLayer, store: NodeStateStore): Promise<HealthLayer> {
  const { flags, log, clock, metrics } = ctx;
  const { dcmi, chips, kind } = hw;
  const hccnEnv = { ...ctx.env } as Record<string, string | undefined>;
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
  const monitor = new HealthMonitor({
    dcmi,
    chips,
    chipKind: kind,
    state: store,
    clock,
    sink: (batch) => store.applyEvents(batch),
    onQueued: () => store.inputComing(),
    listWatchPeriodMs: flags.listWatchPeriod * 1000,
    ...(hccnUsable
      ? { linkStatus: async (phy: number) => (await queryLinkStatus({ toolPath: hccnTool, env: hccnEnv }, phy)).status }
      : {}),
    // D.5/D.8 A5: the port table (UB hyper plane; UBoE parameter plane on UBoE main boards only, B.5)
    ...(hccnUsable && kind === 'Ascend910A5'
      ? {
          portTable: (logicId: number) => queryPortTable({ toolPath: hccnTool, env: hccnEnv }, logicId),
          uboePlane: uboeMainBoard(hw.dcmi, chips, log),
        }
      : {}),
    linkQueryIntervalMs: flags.linkQueryInterval * 1000,
    observer: metrics.healthObserver(),
    logger: log,
  });
  ctx.cleanups.push('monitor', () => monitor.stop());
  // D.9: hang events take the same path as the monitor's (recoveries are held 1 s by the detector).
  const hangConfig = await loadHangDetectionConfig(flags.hangDetectionConfigFile, { logger: log });
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
  ctx.cleanups.push('hang detector', () => hang.stop());
  const switchMonitor = hw.switch ? wireSwitch(ctx, hw, store) : undefined;
  const dpu = kind === 'Ascend910A5' ? await wireDpu(ctx, hw, store) : undefined;
  store.attachResync({
    markResync: (ids, why) => monitor.markResync(ids, why),
    applied: () => resyncSettled(monitor),
  });
  return {
    mode: () => monitor.mode(),
    start: async () => {
      await untilAborted(monitor.start(), ctx.signal);
      hang.start();
      // spec L.9: the switch's start-up query and subscription, in the background (never delays registration)
      void switchMonitor?.start();
      dpu?.start();
    },
    stop: () => {
      monitor.stop();
      hang.stop();
      switchMonitor?.stop();
      dpu?.stop();
    },
  };
}

/**
 * A5 DPU health (docs/super-node.md "DPU faults"): `-dpuConfigFile` read once, the DPUs discovered once under
 * `-sysDir`, then the 5 s operstate poll feeding the store. Any problem leaves the feature off (logged once).
 */
async function wireDpu(ctx: AgentContext, hw: DcmiLayer, store: NodeStateStore): Promise<DpuMonitor | undefined> {
  const { flags, log } = ctx;
  const cfg = await loadDpuConfig(flags.dpuConfigFile);
  if (!cfg.ok) {
    if (cfg.missing) log.info({ file: flags.dpuConfigFile }, 'no DPU config file: DPU health is off');
    else log.error({ reason: cfg.reason }, `DPU config unusable: ${cfg.reason}; DPU health is off`);
    return undefined;
  }
  let found;
  if (cfg.config.busType === 'ub') found = discoverUb(cfg.config, flags.sysDir);
  else {
    const cards: { cardId: number; busId: string }[] = [];
    for (const c of hw.chips) {
      if (cards.some((k) => k.cardId === c.cardId)) continue;
      try {
        cards.push({ cardId: c.cardId, busId: hw.dcmi.getPcieBusId(c.cardId, c.deviceId) });
      } catch (err) {
        log.warn(
          { cardId: c.cardId, error: errorMessage(err) },
          'PCIe bus id unreadable: card left out of DPU pairing',
        );
      }
    }
    found = discoverPcie(cfg.config, flags.sysDir, cards);
  }
  if (!found.ok) {
    log.error({ reason: found.reason }, `DPU discovery: ${found.reason}`);
    return undefined;
  }
  log.info(
    { busType: found.pairing.busType, npuToDpus: Object.fromEntries(found.pairing.npuToDpus) },
    'DPU health is on',
  );
  const m = new DpuMonitor({
    pairing: found.pairing,
    sysRoot: flags.sysDir,
    clock: ctx.clock,
    sink: (s) => store.setDpuState(s),
    logger: log,
  });
  ctx.cleanups.push('dpu monitor', () => m.stop());
  return m;
}

const MAX_LOGGED_CODES = 32;

/**
 * Spec L.9: the switch monitor feeding the store's switch state (which the device-info ConfigMap projects):
 * subscription events in order, every query's answer as the whole list, a query each cycle while unsubscribed.
 */
function wireSwitch(ctx: AgentContext, hw: DcmiLayer, store: NodeStateStore): SwitchMonitor {
  const { log, flags } = ctx;
  const sw = hw.switch!;
  const codesOf = (events: readonly { eventType: number; subType: number; peerPortDevice: number }[]): string[] =>
    events.slice(0, MAX_LOGGED_CODES).map((e) => assembleSwitchCode(e));
  const monitor = new SwitchMonitor({
    lib: sw.lib,
    onEvents: (events) => {
      log.warn({ codes: codesOf(events), count: events.length }, 'switch subscribe got fault');
      store.applySwitchEvents(events);
    },
    onQuery: (events) => {
      const current = events.filter((e) => e.assertion !== 0);
      // spec L.1: upstream's message, "do not edit"
      if (current.length > 0) {
        log.warn({ count: current.length }, `switch of 910A3 get fault codes: ${JSON.stringify(codesOf(current))}`);
      }
      store.replaceSwitchFaults(events);
    },
    onError: (what, err) => log.warn({ call: what, error: errorMessage(err) }, 'switch library call failed'),
  });
  ctx.cleanups.push('switch monitor', () => monitor.stop());
  const cycle = setInterval(() => monitor.cycle(), flags.listWatchPeriod * 1000);
  cycle.unref();
  ctx.cleanups.push('switch cycle', () => clearInterval(cycle));
  return monitor;
}

/**
 * Resolves once the re-sync reads requested so far are in the store (hot-reset §3.4.1, the reset layer's "re-sync
 * applied"). The one place that knows the monitor's timing: `markResync` starts its compensation run from a 0 ms
 * timer (so one timer turn first), `idle()` waits for that run, and the events it read are handed to the store from
 * the monitor's `setImmediate` flush — two more turns of the event loop cover that flush and the store cycle it runs.
 */
async function resyncSettled(monitor: HealthMonitor): Promise<void> {
  await new Promise((r) => setTimeout(r, 0));
  await monitor.idle();
  for (let i = 0; i < 2; i++) await new Promise((r) => setImmediate(r));
}
