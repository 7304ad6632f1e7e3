/**
 * The DPU poll (docs/super-node.md "DPU faults"): every 5 s (clock-injected) the operstate of each DPU of the
 * pairing (`<root>/class/net/<if>/operstate`; an error or an empty file counts as `down`), then every NPU's DPU
 * health. A change of either is handed to the sink (the state store's DPU input); an unchanged poll is not.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Clock, TimerHandle } from '../core/clock.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { DpuPairing } from './discovery.js';
import { npuDpuHealth, type DpuHealth } from './health.js';

/** Upstream's poll period. */
export const DPU_POLL_MS = 5000;

/** What the store holds about the DPUs. */
export interface DpuState {
  readonly busType: string;
  /** Sorted by name. */
  readonly dpus: readonly { name: string; operstate: string; deviceId: string; vendorId: string }[];
  readonly npuToDpus: ReadonlyMap<number, readonly string[]>;
  /** NPU id → DPU health (every NPU of the pairing). */
  readonly health: ReadonlyMap<number, DpuHealth>;
}

export interface DpuMonitorOptions {
  readonly pairing: DpuPairing;
  readonly sysRoot: string;
  readonly clock: Clock;
  readonly sink: (state: DpuState) => void;
  readonly periodMs?: number;
  readonly logger?: Logger;
}

function readOperstate(file: string): string {
  try {
    const v = fs.readFileSync(file, { encoding: 'utf8', flag: 'r' }).slice(0, 64).trim();
    return v === '' ? 'down' : v;
  } catch {
    return 'down';
  }
}

/** One poll: the DPUs' operstates and the NPUs' DPU health. */
export function pollDpus(pairing: DpuPairing, sysRoot: string): DpuState {
  const states = new Map<string, string>();
  for (const d of pairing.dpus)
    states.set(d.name, readOperstate(path.join(sysRoot, 'class', 'net', d.name, 'operstate')));
  const health = new Map<number, DpuHealth>();
  for (const [npu, dpus] of pairing.npuToDpus) health.set(npu, npuDpuHealth(dpus, states));
  return {
    busType: pairing.busType,
    dpus: pairing.dpus.map((d) => ({
      name: d.name,
      operstate: states.get(d.name) ?? 'down',
      deviceId: d.deviceId,
      vendorId: d.vendor,
    })),
    npuToDpus: pairing.npuToDpus,
    health,
  };
}

function sameState(a: DpuState | undefined, b: DpuState): boolean {
  if (!a || a.dpus.length !== b.dpus.length) return false;
  if (a.dpus.some((d, i) => d.operstate !== b.dpus[i]!.operstate)) return false;
  for (const [npu, h] of b.health) if (a.health.get(npu) !== h) return false;
  return true;
}

/** The 5 s DPU poll. */
export class DpuMonitor {
  readonly #o: DpuMonitorOptions;
  readonly #log: Logger;
  #timer: TimerHandle | undefined;
  #last: DpuState | undefined;
  #stopped = false;

  constructor(options: DpuMonitorOptions) {
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /** Polls now, then every period. */
  start(): void {
    if (this.#stopped) return;
    this.poll();
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** One poll; hands the state to the sink when it changed. */
  poll(): void {
    const next = pollDpus(this.#o.pairing, this.#o.sysRoot);
    if (sameState(this.#last, next)) return;
    const bad = [...next.health].filter(([, h]) => h !== 'Healthy');
    this.#log.info(
      { dpus: next.dpus.map((d) => `${d.name}:${d.operstate}`), notHealthy: Object.fromEntries(bad) },
      'DPU state changed',
    );
    this.#last = next;
    this.#o.sink(next);
  }

  #schedule(): void {
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      if (this.#stopped) return;
      this.poll();
      this.#schedule();
    }, this.#o.periodMs ?? DPU_POLL_MS);
  }
}
