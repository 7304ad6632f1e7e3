/**
 * Device snapshots for the kubelet simulator, tests and benches: a node of N chips of one kind, named as
 * upstream names them (spec B.3), all healthy.
 */
import type { DeviceSnapshot, KubeletDevice } from '../kubelet/device-source.js';
import type { ChipKind, NodeFacts } from '../core/chips.js';
import { chipName, managerName } from '../core/device-names.js';

/** Shape of a simulated node. */
export interface SimNodeSpec {
  readonly kind: ChipKind;
  readonly chips: number;
  /** Dies per card (910A3: 2; 310P Duo: 2); default 1. */
  readonly chipsPerCard?: number;
  readonly boardId?: number;
  /** 310/310P share mode: each chip advertised this many times (spec B.3). */
  readonly shareDevCount?: number;
  /** NUMA node of chip i; default none. */
  readonly numaOf?: (logicId: number) => number | undefined;
  readonly productTypes?: readonly string[];
}

/** Builds the snapshot of a simulated node. 910A3 cards are paired as brothers (0↔1, 2↔3, …). */
export function simSnapshot(spec: SimNodeSpec): DeviceSnapshot {
  const name = managerName(spec.kind);
  const perCard = spec.chipsPerCard ?? (spec.kind === 'Ascend910A3' ? 2 : 1);
  const share = spec.shareDevCount ?? 1;
  const devices: KubeletDevice[] = [];
  for (let logicId = 0; logicId < spec.chips; logicId++) {
    const numa = spec.numaOf?.(logicId);
    const base = {
      logicId,
      phyId: logicId,
      cardId: Math.floor(logicId / perCard),
      deviceId: logicId % perCard,
      health: 'Healthy' as const,
      level: 'NormalNPU',
      manuallySeparated: false,
      ...(numa === undefined ? {} : { numaNode: numa }),
    };
    if (share > 1) {
      for (let i = 0; i < share; i++) devices.push({ ...base, id: `${name}-${logicId}-${i}` });
    } else {
      devices.push({ ...base, id: chipName(name, logicId) });
    }
  }
  const node: NodeFacts = {
    chipKind: spec.kind,
    boardId: spec.boardId ?? 0,
    ...(spec.kind === 'Ascend910A3' ? { brotherCards: brothers(Math.ceil(spec.chips / perCard)) } : {}),
    ...(spec.productTypes ? { productTypes: spec.productTypes } : {}),
  };
  return { node, deviceTypes: { [name]: devices } };
}

function brothers(cards: number): Record<number, number> {
  const out: Record<number, number> = {};
  for (let c = 0; c < cards; c++) out[c] = c % 2 === 0 ? c + 1 : c - 1;
  return out;
}
