/**
 * The agent's A5 `levelList` source (device-plugin.md I.2, I.3, L.8; docs/super-node.md "levelList"): URMA EIDs
 * read once per chip, the topology file of the product under `-a5TopoDir` read once and bounded, every failure
 * logged and survived.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from '@jest/globals';
import { a5LevelLists, readA5Topo } from '../../src/agent/a5-levels.js';
import type { A5Facts } from '../../src/core/chips.js';
import type { ChipAddress } from '../../src/dcmi/dcmi.js';
import { DcmiCode, DcmiError } from '../../src/dcmi/errors.js';

const POD: A5Facts = { rackId: 3, superPodType: 1, superPodSize: 64, answered: true };
const CHIP: ChipAddress = { logicId: 1, phyId: 1, cardId: 1, deviceId: 0 };
const FE1 = '00000000000000200000000001000009';

function recorder(): { logger: never; lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = [];
  const at =
    (level: string) =>
    (_o: unknown, msg?: string): void => {
      lines.push({ level, msg: msg ?? '' });
    };
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as never, lines };
}

const made: string[] = [];
afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

function topoDir(text?: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'a5topo-'));
  made.push(dir);
  if (text !== undefined) fs.writeFileSync(path.join(dir, 'atlas_950_1.json'), text);
  return dir;
}
function withMapping(dir: string, text: string): string {
  fs.writeFileSync(path.join(dir, 'npu-nic-mapping.json'), text);
  return dir;
}
const TOPO = '{"edge_list":[{"net_layer":0,"link_type":"PEER2NET","local_a":1,"local_a_ports":["0/2"]}]}';

type Nics = NodeJS.Dict<os.NetworkInterfaceInfo[]>;
const nic = (address: string, family: 'IPv4' | 'IPv6' = 'IPv4', internal = false): os.NetworkInterfaceInfo =>
  ({ address, family, internal, netmask: '', mac: '', cidr: null }) as os.NetworkInterfaceInfo;

function levels(o: { eids: () => string[][]; dir: string; mapping?: string; nics?: Nics }) {
  const rec = recorder();
  let reads = 0;
  const levelOf = a5LevelLists({
    dcmi: {
      getUrmaEids: () => {
        reads++;
        return o.eids();
      },
    },
    a5: POD,
    superPodId: 7,
    serverIndex: 2,
    nodeInternalIp: '10.0.0.5',
    topoDir: o.dir,
    npuNicMappingFile: path.join(o.dir, 'npu-nic-mapping.json'),
    interfaces: () => o.nics ?? {},
    logger: rec.logger,
  });
  return { levelOf, rec, reads: () => reads };
}

describe('spec I.2 the agent levelList source', () => {
  test('I.2 the EIDs and the 1D topology file give the level-0 UB entry', () => {
    const l = levels({ eids: () => [[FE1]], dir: topoDir(TOPO) });
    const list = JSON.parse(l.levelOf(CHIP)) as { info: { UB: { rank_addr_list: { ports: string[] }[] } } }[];
    expect(list[0]!.info.UB.rank_addr_list[0]!.ports).toEqual(['0/1', '0/2']);
  });

  test('I.2 the EIDs of a chip are read once, at the first refresh', () => {
    const l = levels({ eids: () => [[FE1]], dir: topoDir(TOPO) });
    l.levelOf(CHIP);
    l.levelOf(CHIP);
    expect(l.reads()).toBe(1);
  });

  test('L.8 a library without the URMA calls: no levelList, one warning, no further read', () => {
    const l = levels({
      eids: () => {
        throw new DcmiError(DcmiCode.SYMBOL_MISSING, 'dcmiv2_get_urma_device_cnt');
      },
      dir: topoDir(TOPO),
    });
    expect([l.levelOf(CHIP), l.levelOf({ ...CHIP, phyId: 2 })]).toEqual(['[]', '[]']);
    expect(l.reads()).toBe(1);
    expect(l.rec.lines.filter((x) => x.level === 'warn')).toHaveLength(1);
  });

  test('I.2 a failed EID read is retried at the next refresh', () => {
    let n = 0;
    const l = levels({
      eids: () => {
        if (n++ === 0) throw new DcmiError(DcmiCode.INTERNAL, 'dcmiv2_get_urma_device_cnt');
        return [[FE1]];
      },
      dir: topoDir(TOPO),
    });
    expect(l.levelOf(CHIP)).toBe('[]');
    expect(l.levelOf(CHIP)).not.toBe('[]');
  });

  test('L.8 a missing topology file: levelList empty, a warning naming the file, the agent goes on', () => {
    const dir = topoDir();
    const l = levels({ eids: () => [[FE1]], dir });
    expect(l.levelOf(CHIP)).toBe('[]');
    expect(l.rec.lines.some((x) => x.level === 'warn' && /topology file unusable/.test(x.msg))).toBe(true);
  });
});

describe('spec I.3 the RoCE level from the NPU-NIC mapping file', () => {
  const MAP = '{"npuNics":[{"npuId":1,"nicNames":["enp1","enp2"]},{"npuId":2,"nicNames":[]},{"npuId":3}]}';
  const roce = (json: string): unknown =>
    (JSON.parse(json) as { level: number; info: { ROCE?: unknown } }[]).find((l) => l.level === 3)?.info.ROCE;

  test('I.3 the first usable address of the first mapped interface that has one, as level 3', () => {
    const nics: Nics = {
      enp1: [nic('127.0.0.2'), nic('169.254.3.3'), nic('fe80::1', 'IPv6')],
      enp2: [nic('2001:db8::5', 'IPv6'), nic('10.1.1.9')],
    };
    const l = levels({ eids: () => [], dir: withMapping(topoDir(TOPO), MAP), nics });
    expect(l.levelOf(CHIP)).toBe(
      '[{"level":3,"info":{"ROCE":{"net_layer":3,"net_instance_id":"CLUSTER1","net_type":"CLOS","net_attr":"",' +
        '"rank_addr_list":[{"addr_type":"IPV6","addr":"2001:db8::5","ports":[],"plane_id":"CLUSTER"}]}}}]',
    );
  });

  test('I.3 the NPU of a chip is its phy id modulo 8', () => {
    const l = levels({ eids: () => [], dir: withMapping(topoDir(TOPO), MAP), nics: { enp1: [nic('10.1.1.9')] } });
    expect(roce(l.levelOf({ ...CHIP, phyId: 9 }))).toMatchObject({ rank_addr_list: [{ addr: '10.1.1.9' }] });
  });

  test('I.3 a chip with an empty list, without nicNames or not in the file gets no RoCE level', () => {
    const l = levels({ eids: () => [], dir: withMapping(topoDir(TOPO), MAP), nics: { enp1: [nic('10.1.1.9')] } });
    expect([2, 3, 4].map((phyId) => l.levelOf({ ...CHIP, phyId }))).toEqual(['[]', '[]', '[]']);
  });

  test('L.8 a mapping file that is not JSON: a warning, no RoCE level, the other levels still built', () => {
    const l = levels({ eids: () => [[FE1]], dir: withMapping(topoDir(TOPO), '{'), nics: { enp1: [nic('10.1.1.9')] } });
    const list = JSON.parse(l.levelOf(CHIP)) as { level: number }[];
    expect(list.map((x) => x.level)).toEqual([0]);
    expect(l.rec.lines.some((x) => x.level === 'warn' && /NPU-NIC mapping file unusable/.test(x.msg))).toBe(true);
  });
});

describe('spec L.8 readA5Topo', () => {
  test('L.8 a file over the byte limit is refused naming its size', () => {
    const dir = topoDir(TOPO);
    expect(() => readA5Topo(path.join(dir, 'atlas_950_1.json'), 10)).toThrow(/bytes, at most 10 read/);
  });
  test('L.8 a directory is not a topology file', () => {
    expect(() => readA5Topo(topoDir())).toThrow(/not a regular file/);
  });
  test('L.8 a file that is not JSON is refused naming the file', () => {
    const dir = topoDir('{');
    expect(() => readA5Topo(path.join(dir, 'atlas_950_1.json'))).toThrow(/atlas_950_1\.json: not JSON/);
  });
});
