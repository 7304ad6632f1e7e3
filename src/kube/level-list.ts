/**
 * Ascend910A5 `levelList` of a chip (spec I.2 `baseDeviceInfos`, I.3 rank table, L.8), as upstream's device plugin
 * builds it from the stored sources (docs/super-node.md "Ascend950 (A5)", "levelList"): one entry per rank level
 * 0–3 whose net type is not ignored for the product and whose address list is not empty. The UB / UBG / UBoE
 * addresses come from the chip's URMA EIDs (DCMI v2), selected by their FE id, with ports from the EID itself and
 * the A5 topology file's edges; the RoCE level (3) from the addresses the caller found through the NPU–NIC mapping
 * file (the DPU fallback is not built). Pure: the caller reads DCMI, the topology file and the interfaces.
 */
import { goMap, goSlice, goStruct, marshalGo, type GoValue } from '../core/go-json.js';

/** Upstream's net-type keys (ascend-common api). */
export const LEVEL_UB = 'UB';
export const LEVEL_UBG = 'UBG';
export const LEVEL_UBOE = 'UBOE';
export const LEVEL_ROCE = 'ROCE';

/** The product facts the level ids and keys depend on (upstream ProductBase). */
export interface A5LevelProduct {
  /** DCMI super-pod type (0 8P server, 1 1D pod, 2 2D pod, 3 16P server, 4 32P server). */
  readonly superPodType: number;
  readonly superPodId: number;
  readonly superPodSize: number;
  readonly serverIndex: number;
  /** Rack (chassis) id. */
  readonly rackId: number;
  /** `300I-A5` / `300I-A5-4p` on the 300I cards. */
  readonly cardType?: string;
  /** The node's InternalIP as Kubernetes reports it ("" when unknown). */
  readonly nodeInternalIp: string;
}

/** One edge of the A5 topology file (`edge_list[]`), the members used here. */
export interface A5TopoEdge {
  readonly netLayer: number;
  readonly linkType: string;
  readonly localA: number;
  readonly localAPorts: readonly string[];
}

export interface A5LevelInputs {
  readonly product: A5LevelProduct;
  readonly phyId: number;
  /** The chip's URMA devices, each its EIDs as 32 hex digits (DCMI order). */
  readonly urma: readonly (readonly string[])[];
  /** The topology file's edges; undefined when the file could not be used (then no UB/UBG/UBoE address). */
  readonly topoEdges: readonly A5TopoEdge[] | undefined;
  /** Level 3: the chip's RoCE addresses (NPU–NIC mapping file), in order; absent or empty → no level 3. */
  readonly roce?: readonly string[];
}

/** `IPV4` for a dotted IPv4 address, else `IPV6` (upstream: net.ParseIP(ip).To4() != nil; unparsable → IPv4). */
export function roceAddrType(ip: string): string {
  return ip.includes(':') && !/^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(ip) ? 'IPV6' : 'IPV4';
}

const INVALID_U32 = 0xffffffff;
const u32 = (n: number): number => n >>> 0; // upstream casts the int32 facts to uint32
const isPod = (p: A5LevelProduct): boolean => p.superPodType === 1 || p.superPodType === 2;
const isStandardCard = (p: A5LevelProduct): boolean => p.cardType === '300I-A5' || p.cardType === '300I-A5-4p';
function isSuperServer(p: A5LevelProduct): boolean {
  if (isPod(p) || p.superPodType === 3 || p.superPodType === 4) return false;
  return u32(p.superPodSize) !== INVALID_U32 && u32(p.superPodId) !== INVALID_U32;
}

/** The net-type key of each level 0–3 ("" = the level is left out), upstream's table. */
export function levelKeys(p: A5LevelProduct): readonly string[] {
  if (p.cardType === '300I-A5') return ['', '', '', LEVEL_ROCE];
  if (p.cardType === '300I-A5-4p') return [LEVEL_UB, '', '', LEVEL_ROCE];
  if (isPod(p)) return [LEVEL_UB, LEVEL_UB, LEVEL_UBG, LEVEL_ROCE];
  if (isSuperServer(p)) return [LEVEL_UB, LEVEL_UB, LEVEL_UBOE, LEVEL_ROCE];
  return [LEVEL_UB, '', LEVEL_UBOE, LEVEL_ROCE];
}

/** `net_instance_id` of a level. */
export function levelInstanceId(p: A5LevelProduct, level: number): string {
  switch (level) {
    case 0:
      if (isStandardCard(p)) return p.nodeInternalIp;
      if (isPod(p)) return `${u32(p.superPodId)}_${u32(p.rackId)}`;
      if (isSuperServer(p)) return `${u32(p.superPodId)}_${u32(p.serverIndex)}`;
      return p.nodeInternalIp;
    case 1:
      return !isPod(p) && !isSuperServer(p) ? '' : String(u32(p.superPodId));
    default:
      return 'CLUSTER1';
  }
}

/** The net type addresses are built as and the FE ids whose EIDs a level takes. */
function levelSource(p: A5LevelProduct, level: number): { netType: string; fe: readonly number[] } {
  switch (level) {
    case 0:
      return { netType: LEVEL_UB, fe: [isStandardCard(p) ? 0 : 1] };
    case 1:
      return { netType: LEVEL_UB, fe: [0] };
    case 2:
      return isPod(p) ? { netType: LEVEL_UBG, fe: [3] } : { netType: LEVEL_UBOE, fe: [8, 9] };
    default:
      return { netType: LEVEL_ROCE, fe: [] };
  }
}

const EID_RE = /^[0-9a-f]{32}$/;
const hexAt = (eid: string, from: number, to: number): number => parseInt(eid.slice(from, to), 16);
/** FE id: bits 5–9 of the EID's first eight bytes read big-endian (they sit in bytes 6–7). */
export const eidFeId = (eid: string): number => (hexAt(eid, 12, 16) >> 5) & 0x1f;
/** Level 0 takes only EIDs whose usage bit (bit 11 of the last two bytes, big-endian) is 0 (die-to-die). */
export const eidIsD2D = (eid: string): boolean => ((hexAt(eid, 28, 32) >> 11) & 1) === 0;
/** Die (bit 2 of the third-last hex digit) and port ((last byte & 0x7f) >> 3) of an EID. */
export function eidDiePort(eid: string): { die: number; port: number } {
  return { die: hexAt(eid, 29, 30) & 0x04 ? 1 : 0, port: (hexAt(eid, 30, 32) & 0x7f) >> 3 };
}
/** `plane_id` of a UB address: the die its last byte's port number belongs to. */
export function ubPlaneId(eid: string): string {
  const v = hexAt(eid, 30, 32);
  let die = 0;
  if (v <= 144) die = Math.trunc((v - 1) / 9) % 2;
  else if (v >= 181 && v <= 212) die = Math.trunc((v - 181) / 2) % 2;
  return String(Math.abs(die));
}

function portsOf(eid: string, level: number, phyId: number, edges: readonly A5TopoEdge[]): string[] {
  const ports: string[] = [];
  const seen = new Set<string>();
  if (level === 2) {
    for (const e of edges) {
      if (e.netLayer !== 2 || e.localA !== phyId) continue;
      for (const a of e.localAPorts) {
        if (seen.has(a)) continue;
        ports.push(a);
        seen.add(a);
      }
    }
    return ports;
  }
  const { die, port } = eidDiePort(eid);
  ports.push(`${die}/${port}`); // upstream does not mark this one as seen: an edge port equal to it repeats
  for (const e of edges) {
    if (e.netLayer !== level || e.localA !== phyId || e.linkType !== 'PEER2NET') continue;
    for (const a of e.localAPorts) {
      if (seen.has(a)) continue;
      const parts = a.split('/');
      if (parts.length === 2 && parts[0] === String(die)) {
        ports.push(a);
        seen.add(a);
      }
    }
  }
  return ports;
}

function addrItem(netType: string, eid: string, ports: readonly string[]): GoValue {
  if (netType === LEVEL_UBOE) {
    const ip = [24, 26, 28, 30].map((i) => hexAt(eid, i, i + 2)).join('.');
    return goStruct([
      ['addr_type', 'IPV4'],
      ['addr', ip],
      ['ports', goSlice(ports)],
      ['plane_id', 'CLUSTER'],
    ]);
  }
  return goStruct([
    ['addr_type', 'EID'],
    ['addr', eid],
    ['ports', goSlice(ports)],
    ['plane_id', netType === LEVEL_UB ? ubPlaneId(eid) : 'CLUSTER'],
  ]);
}

/**
 * The chip's `levelList` as Go's encoding/json writes upstream's `[]RankLevel` (`[]` when no level has an address;
 * the writers then leave the member out). EIDs that are not 32 hex digits are skipped (listed in `badEids`).
 */
export function buildA5LevelList(inp: A5LevelInputs): { json: string; badEids: string[] } {
  const badEids: string[] = [];
  const eids: string[][] = inp.urma.map((dev) =>
    dev.filter((e) => {
      const ok = EID_RE.test(e);
      if (!ok) badEids.push(e);
      return ok;
    }),
  );
  const keys = levelKeys(inp.product);
  const portCache = new Map<string, string[]>(); // upstream caches ports per (phy id, EID), whatever the level
  const levels: GoValue[] = [];
  for (let level = 0; level < keys.length; level++) {
    const key = keys[level]!;
    if (key === '') continue;
    const { netType, fe } = levelSource(inp.product, level);
    const addrs: GoValue[] = [];
    if (level === 3) {
      for (const ip of inp.roce ?? []) {
        addrs.push(
          goStruct([
            ['addr_type', roceAddrType(ip)],
            ['addr', ip],
            ['ports', goSlice([])],
            ['plane_id', 'CLUSTER'],
          ]),
        );
      }
    }
    for (const feId of fe) {
      for (const dev of eids) {
        for (const eid of dev) {
          if (eidFeId(eid) !== feId) continue;
          if (level === 0 && !eidIsD2D(eid)) continue;
          let ports = portCache.get(eid);
          if (ports === undefined) {
            if (inp.topoEdges === undefined) continue; // upstream: no topology file → the EID is skipped
            ports = portsOf(eid, level, inp.phyId, inp.topoEdges);
            portCache.set(eid, ports);
          }
          addrs.push(addrItem(netType, eid, ports));
        }
      }
    }
    if (addrs.length === 0) continue;
    const element = goStruct([
      ['net_layer', level],
      ['net_instance_id', levelInstanceId(inp.product, level)],
      ['net_type', level === 0 ? 'TOPO_FILE_DESC' : 'CLOS'],
      ['net_attr', ''],
      ['rank_addr_list', goSlice(addrs)],
    ]);
    levels.push(
      goStruct([
        ['level', level],
        ['info', goMap(new Map([[key, element]]))],
      ]),
    );
  }
  return { json: marshalGo(goSlice(levels)), badEids };
}

/**
 * Parses the A5 topology file (`edge_list[]` of `{net_layer, link_type, local_a, local_a_ports}`). Throws an Error
 * naming what is wrong; unknown members are ignored (upstream's json.Unmarshal).
 */
export function parseA5Topo(text: string): A5TopoEdge[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(`not JSON: ${(err as Error).message}`, { cause: err });
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('expected a JSON object');
  const list = (doc as Record<string, unknown>)['edge_list'];
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new Error('edge_list: expected an array');
  return list.map((e: unknown, i): A5TopoEdge => {
    if (typeof e !== 'object' || e === null || Array.isArray(e)) throw new Error(`edge_list[${i}]: expected an object`);
    const o = e as Record<string, unknown>;
    const int = (k: string): number => {
      const v = o[k];
      if (v === undefined || v === null) return 0;
      if (typeof v !== 'number' || !Number.isInteger(v)) throw new Error(`edge_list[${i}].${k}: expected an integer`);
      return v;
    };
    const ports = o['local_a_ports'];
    if (ports !== undefined && ports !== null && (!Array.isArray(ports) || ports.some((p) => typeof p !== 'string')))
      throw new Error(`edge_list[${i}].local_a_ports: expected an array of strings`);
    const lt = o['link_type'];
    if (lt !== undefined && lt !== null && typeof lt !== 'string')
      throw new Error(`edge_list[${i}].link_type: expected a string`);
    return {
      netLayer: int('net_layer'),
      linkType: typeof lt === 'string' ? lt : '',
      localA: int('local_a'),
      localAPorts: (ports as string[] | undefined | null) ?? [],
    };
  });
}
