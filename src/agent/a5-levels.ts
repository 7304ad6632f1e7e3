/**
 * Ascend910A5 `levelList` per chip (spec I.2, I.3, L.8; docs/super-node.md "levelList"): the chip's URMA EIDs from
 * DCMI v2, read once per chip (a failed read is retried at the next refresh; a library without the v2 URMA calls
 * gives no EIDs, warned once), and the A5 topology file of the node's product under `-a5TopoDir`, read once (at
 * most 50 MiB, as upstream; an unusable file is logged once and gives no UB/UBG/UBoE addresses). The agent keeps
 * running on every failure.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ChipAddress, Dcmi } from '../dcmi/dcmi.js';
import { DcmiError } from '../dcmi/errors.js';
import type { Logger } from '../core/logger.js';
import type { A5Facts } from '../core/chips.js';
import { hcclTopoFilePath } from '../kubelet/hccl-topo.js';
import { buildA5LevelList, parseA5Topo, type A5LevelProduct, type A5TopoEdge } from '../kube/level-list.js';

/** Upstream's limit on the topology file. */
export const A5_TOPO_MAX_BYTES = 50 * 1024 * 1024;

/** Reads and parses a topology file; throws an Error naming the file and what is wrong. */
export function readA5Topo(file: string, maxBytes = A5_TOPO_MAX_BYTES): A5TopoEdge[] {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch (err) {
    throw new Error(`topology file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
      cause: err,
    });
  }
  if (!st.isFile()) throw new Error(`topology file ${file}: not a regular file`);
  if (st.size > maxBytes) throw new Error(`topology file ${file}: ${st.size} bytes, at most ${maxBytes} read`);
  try {
    return parseA5Topo(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`topology file ${file}: ${(err as Error).message}`, { cause: err });
  }
}

export interface A5LevelsOptions {
  readonly dcmi: Pick<Dcmi, 'getUrmaEids'>;
  readonly a5: A5Facts;
  readonly superPodId: number;
  readonly serverIndex: number;
  readonly nodeInternalIp: string;
  /** Folder of the topology files (upstream `/usr/local/Ascend/driver/topo/950/`). */
  readonly topoDir: string;
  readonly logger: Logger;
}

/** Returns `levelOf(chip)`: the chip's `levelList` JSON (`[]` when nothing is known). */
export function a5LevelLists(o: A5LevelsOptions): (chip: ChipAddress) => string {
  const product: A5LevelProduct = {
    superPodType: o.a5.superPodType,
    superPodId: o.superPodId,
    superPodSize: o.a5.superPodSize,
    serverIndex: o.serverIndex,
    rackId: o.a5.rackId,
    ...(o.a5.cardType !== undefined ? { cardType: o.a5.cardType } : {}),
    nodeInternalIp: o.nodeInternalIp,
  };
  let topo: A5TopoEdge[] | undefined;
  let topoRead = false;
  const topoEdges = (): A5TopoEdge[] | undefined => {
    if (topoRead) return topo;
    topoRead = true;
    const chosen = hcclTopoFilePath({
      ...(o.a5.cardType !== undefined ? { cardType: o.a5.cardType } : {}),
      superPodType: o.a5.superPodType,
    });
    if ('problem' in chosen) {
      o.logger.warn({ problem: chosen.problem }, 'A5 levelList: no topology file, no UB/UBG/UBoE addresses');
      return undefined;
    }
    const file = path.join(o.topoDir, path.basename(chosen.path));
    try {
      topo = readA5Topo(file);
      o.logger.info({ file, edges: topo.length }, 'A5 levelList: topology file read');
    } catch (err) {
      o.logger.warn(
        { error: (err as Error).message },
        'A5 levelList: topology file unusable, no UB/UBG/UBoE addresses',
      );
    }
    return topo;
  };
  const eids = new Map<number, string[][]>();
  let unsupported = false;
  const warned = new Set<number>();
  return (chip) => {
    let urma = eids.get(chip.phyId);
    if (urma === undefined && !unsupported) {
      try {
        urma = o.dcmi.getUrmaEids(chip.cardId, chip.deviceId);
        eids.set(chip.phyId, urma);
      } catch (err) {
        if (err instanceof DcmiError && err.isUnsupported) {
          unsupported = true;
          o.logger.warn(
            { error: err.message },
            'A5 levelList: the DCMI library gives no URMA EIDs; levelList left out',
          );
        } else if (!warned.has(chip.phyId)) {
          warned.add(chip.phyId);
          o.logger.warn({ phyId: chip.phyId, error: String(err) }, 'A5 levelList: URMA EID read failed (retried)');
        }
      }
    }
    if (urma === undefined || urma.length === 0) return '[]';
    const built = buildA5LevelList({ product, phyId: chip.phyId, urma, topoEdges: topoEdges() });
    if (built.badEids.length > 0 && !warned.has(chip.phyId)) {
      warned.add(chip.phyId);
      o.logger.warn(
        { phyId: chip.phyId, eids: built.badEids },
        'A5 levelList: EIDs that are not 32 hex digits skipped',
      );
    }
    return built.json;
  };
}
