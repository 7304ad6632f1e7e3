/**
 * DPU discovery over a sysfs root (docs/super-node.md "DPU faults"; upstream `dpucontrol`): once, at start. The root
 * is the agent's `-sysDir` (default `/sys`), so tests point it at a tree of links and files in a temp dir.
 *
 * - A candidate is a link `<root>/class/net/<if>`; its `device/vendor` and `device/device` must read non-empty
 *   (trimmed) and be in the selectors' `vendor` / `deviceIds` (an empty list takes any value), and `<if>` must be in
 *   `devices` when that list is given.
 * - `ub`: every interface is a candidate; a DPU's slot is `device/slot_id`; NPUs 0–3 are paired with the DPUs in slots
 *   1 and 9, NPUs 4–7 with slots 2 and 10; an NPU that does not get exactly two turns the whole feature off.
 * - `pcie`: for each card (its PCIe bus id from DCMI), the link `<root>/bus/pci/devices/<bdf>` resolved and cut to
 *   its first four path components names the card's PCIe switch; the candidates are the interfaces whose resolved
 *   link contains it. The first card seen under a switch gets the switch's first DPU, the next card the second; with
 *   one DPU under the switch every card gets it. The NPU id is the card id.
 * - No NPU with a DPU: the feature is off.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { DpuConfig, DpuBusType } from './config.js';

/** One DPU interface as discovered. */
export interface DpuInterface {
  readonly name: string;
  readonly vendor: string;
  readonly deviceId: string;
}

/** The pairing the feature runs with. */
export interface DpuPairing {
  readonly busType: DpuBusType;
  /** Every distinct DPU of the pairing, sorted by name. */
  readonly dpus: readonly DpuInterface[];
  /** NPU id → its DPUs' interface names. */
  readonly npuToDpus: ReadonlyMap<number, readonly string[]>;
}

export type DpuDiscovery = { ok: true; pairing: DpuPairing } | { ok: false; reason: string };

/** NPUs per node in upstream's pairing (`api.NpuCountPerNode`). */
export const NPU_COUNT_PER_NODE = 8;
/** Most interfaces looked at (a node has a few dozen); more are ignored. */
const MAX_INTERFACES = 4096;
const MAX_FILE = 4096;

function readSmall(file: string): string | undefined {
  try {
    const st = fs.statSync(file);
    if (!st.isFile() || st.size > MAX_FILE) return undefined;
    const v = fs.readFileSync(file, 'utf8').trim();
    return v === '' ? undefined : v;
  } catch {
    return undefined;
  }
}

/** The interface's resolved sysfs folder (the link `<root>/class/net/<if>` resolved against its folder). */
function interfaceDir(netDir: string, name: string): string | undefined {
  try {
    const target = fs.readlinkSync(path.join(netDir, name));
    return path.resolve(netDir, target);
  } catch {
    return undefined;
  }
}

function select(config: DpuConfig, netDir: string, names: readonly string[]): (DpuInterface & { dir: string })[] {
  const out: (DpuInterface & { dir: string })[] = [];
  for (const name of names) {
    const dir = interfaceDir(netDir, name);
    if (dir === undefined) continue;
    const vendor = readSmall(path.join(dir, 'device', 'vendor'));
    const deviceId = readSmall(path.join(dir, 'device', 'device'));
    if (vendor === undefined || deviceId === undefined) continue;
    if (config.vendor.length > 0 && !config.vendor.includes(vendor)) continue;
    if (config.deviceIds.length > 0 && !config.deviceIds.includes(deviceId)) continue;
    if (config.devices.length > 0 && !config.devices.includes(name)) continue;
    out.push({ name, vendor, deviceId, dir });
  }
  return out;
}

function listNet(netDir: string): string[] {
  try {
    return fs.readdirSync(netDir).sort().slice(0, MAX_INTERFACES);
  } catch {
    return [];
  }
}

function pairing(busType: DpuBusType, map: Map<number, string[]>, all: DpuInterface[]): DpuDiscovery {
  if (map.size === 0) return { ok: false, reason: 'no NPU has a DPU: DPU health is off' };
  const used = new Set([...map.values()].flat());
  const dpus = all
    .filter((d) => used.has(d.name))
    .map((d) => ({ name: d.name, vendor: d.vendor, deviceId: d.deviceId }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { ok: true, pairing: { busType, dpus, npuToDpus: map } };
}

/** `ub` discovery. */
export function discoverUb(config: DpuConfig, sysRoot: string): DpuDiscovery {
  const netDir = path.join(sysRoot, 'class', 'net');
  const found = select(config, netDir, listNet(netDir));
  const slotOf = new Map(found.map((d) => [d.name, readSmall(path.join(d.dir, 'device', 'slot_id'))]));
  const inSlots = (a: string, b: string): string[] =>
    found.filter((d) => slotOf.get(d.name) === a || slotOf.get(d.name) === b).map((d) => d.name);
  const low = inSlots('1', '9');
  const high = inSlots('2', '10');
  const map = new Map<number, string[]>();
  for (let npu = 0; npu < NPU_COUNT_PER_NODE; npu++) {
    const dpus = npu < NPU_COUNT_PER_NODE / 2 ? low : high;
    if (dpus.length !== 2) {
      return {
        ok: false,
        reason: `NPU ${npu} has ${dpus.length} DPUs in its slots (exactly 2 needed): DPU health is off`,
      };
    }
    map.set(npu, dpus);
  }
  return pairing('ub', map, found);
}

/** `pcie` discovery: `cards` are the node's cards with their PCIe bus ids (`0000:3b:00.0`), in DCMI's order. */
export function discoverPcie(
  config: DpuConfig,
  sysRoot: string,
  cards: readonly { cardId: number; busId: string }[],
): DpuDiscovery {
  const netDir = path.join(sysRoot, 'class', 'net');
  const names = listNet(netDir);
  const map = new Map<number, string[]>();
  const all: DpuInterface[] = [];
  const seenPerSwitch = new Map<string, number>();
  for (const card of cards) {
    if (!/^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$/.test(card.busId)) continue;
    let sw: string;
    try {
      const link = path.join(sysRoot, 'bus', 'pci', 'devices', card.busId);
      const resolved = path.resolve(path.dirname(link), fs.readlinkSync(link));
      const rel = path.relative(sysRoot, resolved);
      const parts = path.join('/sys', rel).split('/');
      if (parts.length < 4) continue;
      sw = parts.slice(0, 4).join('/');
    } catch {
      continue;
    }
    // the interfaces whose resolved link (in /sys terms) contains the switch's path
    const under = names.filter((n) => {
      const dir = interfaceDir(netDir, n);
      return dir !== undefined && path.join('/sys', path.relative(sysRoot, dir)).includes(sw);
    });
    const dpus = select(config, netDir, under);
    if (dpus.length === 0) continue;
    const index = seenPerSwitch.get(sw) ?? 0;
    seenPerSwitch.set(sw, index + 1);
    const pick = dpus.length === 1 ? dpus[0] : dpus[index];
    if (!pick) continue;
    map.set(card.cardId, [pick.name]);
    if (!all.some((d) => d.name === pick.name)) all.push(pick);
  }
  return pairing('pcie', map, all);
}
