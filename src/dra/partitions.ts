/**
 * Partitionable vNPU (issue [DRA] item 5): a chip's static vNPU templates (spec B.3, dcmi-abi §4.5,
 * src/kubelet/vnpu-core.ts) published as partition devices that consume a chip's shared counters (AI cores, HBM), so
 * that the scheduler never hands out more of a chip than it has. The whole chip is a device that consumes every
 * counter: a chip with one partition allocated cannot be allocated whole, and the other way round. Pure.
 *
 * The model (docs/dra.md "Partitions"): per chip one counter set named after the chip device (`ascend910-3`) with
 * counters `aicore` (the chip's AI cores, spec B.6) and `hbm` (its HBM, bytes); per template as many partition
 * devices as fit the chip alone (`⌊cores / template cores⌋`, and `⌊HBM / template HBM⌋` for a template that names its
 * memory, `_16g`), each consuming the template's cores and memory. A template without a memory size consumes cores
 * only. The AI CPUs and DVPP of a template are not counted (DCMI refuses a combination that does not fit when the
 * node side creates the vNPU; docs/dra.md).
 *
 * Limits (k8s.io/api v0.37.2 resource/v1): a counter set and a counter name are DNS labels; at most 32 counters per
 * set and per consumption; at most 2 consumptions per device; counter sets and devices live in different slices of
 * the pool (`sharedCounters` xor `devices`).
 */
import { DRA_COUNTER, draChipName, draPartitionName } from '../core/dra-devices.js';
import type { ChipKind } from '../core/chips.js';
import { templateCores, templatesOf } from '../kubelet/vnpu-core.js';
import type { CounterSet, DeviceCounterConsumption, QuantityValue } from './dra-types.js';

/** Spec B.6: the AI-core count lies in 8..36 when it was read (8255 and 1 are the markers of a failed read). */
export const MIN_CHIP_CORES = 8;
/** Upper end of the B.6 range. */
export const MAX_CHIP_CORES = 36;
const GIB = 1024 ** 3;

/** One partition device of a chip. */
export interface Partition {
  /** Device name (`ascend910-3-vir05-1c-16g-0`). */
  readonly name: string;
  readonly template: string;
  readonly index: number;
  readonly cores: number;
  /** Bytes; undefined when the template names no memory size. */
  readonly hbmBytes?: number;
}

/** The HBM a template names (`vir05_1c_16g` → 16 GiB), in bytes; undefined when it names none. */
export function templateHbmBytes(template: string): number | undefined {
  const m = /_(\d{1,3})g(?:_|$)/.exec(template);
  return m ? Number(m[1]) * GIB : undefined;
}

/** A quantity's canonical text for a byte count: `64Gi` when whole GiB, `512Mi` when whole MiB, else the number. */
export function bytesQuantity(bytes: number): string {
  if (bytes > 0 && bytes % GIB === 0) return `${bytes / GIB}Gi`;
  if (bytes > 0 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)}Mi`;
  return String(bytes);
}

/** Whether a chip kind has partitions with these chip facts: templates for the kind and a core count read. */
export function partitionable(kind: ChipKind, cores: number | undefined): cores is number {
  return (
    templatesOf(kind).length > 0 &&
    cores !== undefined &&
    Number.isInteger(cores) &&
    cores >= MIN_CHIP_CORES &&
    cores <= MAX_CHIP_CORES
  );
}

/**
 * The partitions of chip `phyId`: for each template of the kind (in dcmi-abi §4.5 order), as many as fit the chip.
 * Empty when the kind has no templates or `cores` is not a count read from DCMI.
 */
export function chipPartitions(
  kind: ChipKind,
  phyId: number,
  cores: number | undefined,
  hbmBytes: number | undefined,
): Partition[] {
  if (!partitionable(kind, cores)) return [];
  const out: Partition[] = [];
  for (const template of templatesOf(kind)) {
    const tc = templateCores(template);
    if (tc === undefined || tc <= 0 || tc > cores) continue;
    const th = templateHbmBytes(template);
    let count = Math.floor(cores / tc);
    if (th !== undefined) {
      if (hbmBytes === undefined) continue; // memory cannot be counted: not offered
      count = Math.min(count, Math.floor(hbmBytes / th));
    }
    for (let i = 0; i < count; i++) {
      out.push({
        name: draPartitionName(kind, phyId, template, i),
        template,
        index: i,
        cores: tc,
        ...(th !== undefined ? { hbmBytes: th } : {}),
      });
    }
  }
  return out;
}

/** Name of a chip's counter set: the chip's device name (counter-set and device names are separate namespaces). */
export function counterSetName(kind: ChipKind, phyId: number): string {
  return draChipName(kind, phyId);
}

/** The counters of a chip: its AI cores and, when known, its HBM. */
function chipCounters(cores: number, hbmBytes: number | undefined): Record<string, QuantityValue> {
  return {
    [DRA_COUNTER.aiCore]: { value: String(cores) },
    ...(hbmBytes !== undefined ? { [DRA_COUNTER.hbm]: { value: bytesQuantity(hbmBytes) } } : {}),
  };
}

/** The counter set of a chip. */
export function chipCounterSet(kind: ChipKind, phyId: number, cores: number, hbmBytes: number | undefined): CounterSet {
  return { name: counterSetName(kind, phyId), counters: chipCounters(cores, hbmBytes) };
}

/** What the whole chip consumes: every counter of its set. */
export function wholeChipConsumption(
  kind: ChipKind,
  phyId: number,
  cores: number,
  hbmBytes: number | undefined,
): DeviceCounterConsumption {
  return { counterSet: counterSetName(kind, phyId), counters: chipCounters(cores, hbmBytes) };
}

/** What a partition consumes of its chip's set (its cores; its HBM when the template names it and the chip has it). */
export function partitionConsumption(
  kind: ChipKind,
  phyId: number,
  p: Partition,
  chipHbmBytes: number | undefined,
): DeviceCounterConsumption {
  return {
    counterSet: counterSetName(kind, phyId),
    counters: {
      [DRA_COUNTER.aiCore]: { value: String(p.cores) },
      ...(p.hbmBytes !== undefined && chipHbmBytes !== undefined
        ? { [DRA_COUNTER.hbm]: { value: bytesQuantity(p.hbmBytes) } }
        : {}),
    },
  };
}
