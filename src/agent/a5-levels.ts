/**
 * Ascend910A5 `levelList` per chip (spec I.2, I.3, L.8; docs/super-node.md "levelList"): the chip's URMA EIDs from
 * DCMI v2, read once per chip (a failed read is retried at the next refresh; a library without the v2 URMA calls
 * gives no EIDs, warned once), and the A5 topology file of the node's product under `-a5TopoDir`, read once (at
 * most 50 MiB, as upstream; an unusable file is logged once and gives no UB/UBG/UBoE addresses), and for the RoCE
 * level the NPU–NIC mapping file, read once (absent or unusable: no RoCE level; upstream's DPU-address fallback is
 * not built). The agent keeps running on every failure.
 */
import fs from 'node:fs';
import os from 'node:os';
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

/** Bound on the NPU–NIC mapping file. */
export const NPU_NIC_MAPPING_MAX_BYTES = 1024 * 1024;

/**
 * Reads `npu-nic-mapping.json` (`{"npuNics":[{"npuId":n,"nicNames":[…]}]}`): undefined when the file does not
 * exist; throws an Error naming the file and what is wrong. Entries without `nicNames` keep `null` (upstream: nil).
 */
export function readNpuNicMapping(
  file: string,
  maxBytes = NPU_NIC_MAPPING_MAX_BYTES,
): Map<number, readonly string[] | null> | undefined {
  let text: string;
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) throw new Error('not a regular file');
    if (st.size > maxBytes) throw new Error(`${st.size} bytes, at most ${maxBytes} read`);
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`NPU-NIC mapping file ${file}: ${(err as Error).message}`, { cause: err });
  }
  const bad = (why: string): Error => new Error(`NPU-NIC mapping file ${file}: ${why}`);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(`NPU-NIC mapping file ${file}: not JSON: ${(err as Error).message}`, { cause: err });
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw bad('expected a JSON object');
  const list = (doc as Record<string, unknown>)['npuNics'] ?? [];
  if (!Array.isArray(list)) throw bad('npuNics: expected an array');
  const out = new Map<number, readonly string[] | null>();
  list.forEach((e: unknown, i) => {
    if (typeof e !== 'object' || e === null || Array.isArray(e)) throw bad(`npuNics[${i}]: expected an object`);
    const o = e as Record<string, unknown>;
    const id = o['npuId'] ?? 0;
    if (typeof id !== 'number' || !Number.isInteger(id)) throw bad(`npuNics[${i}].npuId: expected an integer`);
    const names = o['nicNames'];
    if (names !== undefined && names !== null && (!Array.isArray(names) || names.some((n) => typeof n !== 'string')))
      throw bad(`npuNics[${i}].nicNames: expected an array of strings`);
    if (!out.has(id)) out.set(id, (names as string[] | null | undefined) ?? null); // upstream takes the first entry
  });
  return out;
}

/** Upstream skips loopback and link-local addresses (IPv4 169.254/16, IPv6 fe80::/10). */
function usableIp(a: os.NetworkInterfaceInfo): boolean {
  if (a.internal) return false;
  const ip = a.address.toLowerCase();
  if (a.family === 'IPv4') return !ip.startsWith('127.') && !ip.startsWith('169.254.');
  return ip !== '::1' && !/^fe[89ab]/.test(ip) && !ip.startsWith('ff02:');
}

export interface A5LevelsOptions {
  readonly dcmi: Pick<Dcmi, 'getUrmaEids'>;
  readonly a5: A5Facts;
  readonly superPodId: number;
  readonly serverIndex: number;
  readonly nodeInternalIp: string;
  /** Folder of the topology files (upstream `/usr/local/Ascend/driver/topo/950/`). */
  readonly topoDir: string;
  /** The NPU–NIC mapping file (upstream `/user/mindx-dl/npu/npu-nic-mapping.json`) for the RoCE level. */
  readonly npuNicMappingFile: string;
  /** The host's interfaces (tests inject them). */
  readonly interfaces?: () => NodeJS.Dict<os.NetworkInterfaceInfo[]>;
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
  const warned = new Set<number>();
  let mapping: Map<number, readonly string[] | null> | undefined;
  let mappingRead = false;
  const nics = o.interfaces ?? os.networkInterfaces;
  /** Level 3: the first usable address of the first mapped interface that has one (upstream getROCEAddrList). */
  const roceOf = (phyId: number): string[] => {
    if (!mappingRead) {
      mappingRead = true;
      try {
        mapping = readNpuNicMapping(o.npuNicMappingFile);
        if (mapping === undefined)
          o.logger.info({ file: o.npuNicMappingFile }, 'A5 levelList: no NPU-NIC mapping file');
      } catch (err) {
        o.logger.warn({ error: (err as Error).message }, 'A5 levelList: NPU-NIC mapping file unusable');
      }
    }
    const names = mapping?.get(phyId % 8);
    if (names === undefined || names === null) return []; // upstream would take the DPU addresses: not built
    const all = nics();
    for (const n of names) {
      const ip = (all[n] ?? []).find(usableIp);
      if (ip) return [ip.address];
    }
    if (!warned.has(-1 - phyId)) {
      warned.add(-1 - phyId);
      o.logger.warn({ phyId, interfaces: names }, 'A5 levelList: no usable address on the mapped interfaces');
    }
    return [];
  };
  const eids = new Map<number, string[][]>();
  let unsupported = false;
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
    const built = buildA5LevelList({
      product,
      phyId: chip.phyId,
      urma: urma ?? [],
      topoEdges: urma !== undefined && urma.length > 0 ? topoEdges() : undefined,
      roce: roceOf(chip.phyId),
    });
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
