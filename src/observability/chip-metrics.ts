/**
 * Per-chip series (issue [J] item 2), a projection of the store's snapshot (docs/architecture.md: no output holds
 * the engine): kubelet health and network health, the effective level (spec E.4), manual separation (spec G.1) and
 * the fault codes each chip has now, with the level the device-info fault map shows for them (spec H.3). Every
 * series carries {@link ChipLabels}; docs/metrics.md lists them with their npu-exporter counterparts.
 *
 * Cardinality is bounded by the chips and the codes they really have: `fault_level` has exactly one series per chip
 * (the old one is removed when the level changes), `fault_code` one per code present (removed when it goes).
 */
import { Gauge, type Registry } from 'prom-client';
import type { ChipState, NodeState } from '../state/store.js';
import type { ChipLabels, ChipNames } from './chip-names.js';

type Labels = 'chip' | 'logic_id' | 'phy_id';

/** What was last exported for one chip (to remove series that no longer apply). */
interface Exported {
  readonly state: ChipState;
  readonly level: string;
  /** `code|level` → the labels of that `fault_code` series. */
  readonly codes: ReadonlyMap<string, { code: string; level: string }>;
}

/** The per-chip gauges on the agent's registry. */
export class ChipMetrics {
  /** 1 Healthy, 0 Unhealthy: the chip's health as kubelet sees it (ListAndWatch). */
  readonly health: Gauge<Labels>;
  /** 1 Healthy, 0 Unhealthy: the parameter-plane (network) health (spec D.8). */
  readonly networkHealth: Gauge<Labels>;
  /** 1 for the chip's effective level (spec E.4); one series per chip. */
  readonly faultLevel: Gauge<Labels | 'level'>;
  /** 1 while the chip is in ManuallySeparateNPU (spec G.1). */
  readonly manuallySeparated: Gauge<Labels>;
  /** 1 per fault code the chip has now, with the level the fault map shows for it (spec H.3). */
  readonly faultCode: Gauge<Labels | 'code' | 'level'>;
  readonly #exported = new Map<number, Exported>();

  constructor(
    registry: Registry,
    prefix: string,
    private readonly names: ChipNames,
  ) {
    const registers = [registry];
    const chipLabels: Labels[] = ['chip', 'logic_id', 'phy_id'];
    this.health = new Gauge({
      name: `${prefix}chip_health`,
      help: 'Chip health as kubelet sees it: 1 Healthy, 0 Unhealthy.',
      labelNames: chipLabels,
      registers,
    });
    this.networkHealth = new Gauge({
      name: `${prefix}chip_network_health`,
      help: 'Parameter-plane (network) health of the chip: 1 Healthy, 0 Unhealthy.',
      labelNames: chipLabels,
      registers,
    });
    this.faultLevel = new Gauge({
      name: `${prefix}chip_fault_level`,
      help: "1 for the chip's effective fault level (NotHandleFault ... ManuallySeparateNPU); one series per chip.",
      labelNames: [...chipLabels, 'level'],
      registers,
    });
    this.manuallySeparated = new Gauge({
      name: `${prefix}chip_manually_separated`,
      help: '1 while the chip is manually separated (ManuallySeparateNPU), else 0.',
      labelNames: chipLabels,
      registers,
    });
    this.faultCode = new Gauge({
      name: `${prefix}chip_fault_code`,
      help: '1 per fault code the chip has now (upper-case hex), with the level the device-info fault map shows.',
      labelNames: [...chipLabels, 'code', 'level'],
      registers,
    });
  }

  /** Follows one snapshot: only chips whose (frozen) state object changed are written again. */
  observe(state: NodeState): void {
    for (const c of state.chips) {
      const before = this.#exported.get(c.logicId);
      if (before?.state === c) continue;
      this.#write(c, before, this.names.labels(c.logicId));
    }
  }

  #write(c: ChipState, before: Exported | undefined, l: ChipLabels): void {
    this.health.set(l, c.health === 'Healthy' ? 1 : 0);
    this.networkHealth.set(l, c.networkHealth === 'Healthy' ? 1 : 0);
    this.manuallySeparated.set(l, c.manuallySeparated ? 1 : 0);
    if (before && before.level !== c.level) this.faultLevel.remove({ ...l, level: before.level });
    this.faultLevel.set({ ...l, level: c.level }, 1);
    const codes = new Map<string, { code: string; level: string }>();
    const add = (list: readonly string[], levels: readonly string[]): void => {
      list.forEach((code, i) => {
        const level = levels[i] ?? 'NotHandleFault';
        codes.set(`${code}|${level}`, { code, level });
      });
    };
    add(c.faultCodes, c.faultCodeLevels);
    add(c.networkFaultCodes, c.networkFaultCodeLevels);
    for (const [key, v] of before?.codes ?? []) if (!codes.has(key)) this.faultCode.remove({ ...l, ...v });
    for (const [key, v] of codes) if (!before?.codes.has(key)) this.faultCode.set({ ...l, ...v }, 1);
    this.#exported.set(c.logicId, { state: c, level: c.level, codes });
  }
}
