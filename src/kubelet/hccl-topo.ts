/**
 * Ascend910A5 `HCCL_TOPO_FILE_PATH` (spec C.4 "A5 only", L.8): the topology file of the driver that HCCL reads,
 * chosen by the node's product — the 300I card type when the node is one (1P or 4P card), else the super-pod type
 * DCMI reports (B.7). The files ship with the driver under `/usr/local/Ascend/driver/topo/950/`; the agent only
 * names the file (the driver folder reaches the container through the runtime, as upstream). Pure.
 */
import { A5_SUPER_POD_TYPE } from '../core/chips.js';

/** The environment variable Allocate sets on A5. */
export const HCCL_TOPO_FILE_PATH = 'HCCL_TOPO_FILE_PATH';
/** Folder of the A5 topology files. */
export const A5_TOPO_DIR = '/usr/local/Ascend/driver/topo/950/';

/** Product type keys of the 300I cards (upstream numbering, after the super-pod types 0–4). */
const CARD_1P = 5;
const CARD_4P = 6;

/** Product type → file (upstream's table). */
export const A5_TOPO_FILES: Readonly<Record<number, string>> = Object.freeze({
  [A5_SUPER_POD_TYPE.server]: 'atlas_850_1.json',
  [A5_SUPER_POD_TYPE.pod1D]: 'atlas_950_1.json',
  [A5_SUPER_POD_TYPE.pod2D]: 'atlas_950_2.json',
  [A5_SUPER_POD_TYPE.server16P]: 'atlas_850_2.json',
  [A5_SUPER_POD_TYPE.server32P]: 'atlas_850_3.json',
  [CARD_1P]: 'atlas_350_1.json',
  [CARD_4P]: 'atlas_350_3.json',
});

/** What the choice is made from. */
export interface A5TopoFacts {
  /** `300I-A5`, `300I-A5-4p` or absent. */
  readonly cardType?: string;
  /** Super-pod type from DCMI; undefined when no chip answered the super-pod query. */
  readonly superPodType: number | undefined;
}

/**
 * The `HCCL_TOPO_FILE_PATH` value, or a reason why there is none (no super-pod answer, or a type without a file:
 * upstream then logs an error and sets nothing).
 */
export function hcclTopoFilePath(f: A5TopoFacts): { path: string } | { problem: string } {
  let key: number | undefined;
  if (f.cardType === '300I-A5') key = CARD_1P;
  else if (f.cardType === '300I-A5-4p') key = CARD_4P;
  else key = f.superPodType;
  if (key === undefined) return { problem: 'no chip answered the super-pod query (spec B.7): no topology file' };
  const file = Object.hasOwn(A5_TOPO_FILES, key) ? A5_TOPO_FILES[key] : undefined;
  if (file === undefined) return { problem: `super-pod type ${key} has no topology file` };
  return { path: A5_TOPO_DIR + file };
}
