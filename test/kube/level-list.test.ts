/**
 * The A5 `levelList` of a chip (device-plugin.md I.2 `baseDeviceInfos`, I.3 rank table, L.8), as upstream's device
 * plugin builds it from the URMA EIDs and the topology file (docs/super-node.md "levelList").
 */
import { describe, expect, test } from '@jest/globals';
import {
  buildA5LevelList,
  eidDiePort,
  eidFeId,
  eidIsD2D,
  levelInstanceId,
  levelKeys,
  parseA5Topo,
  ubPlaneId,
  type A5LevelProduct,
  type A5TopoEdge,
} from '../../src/kube/level-list.js';

const POD_1D: A5LevelProduct = {
  superPodType: 1,
  superPodId: 7,
  superPodSize: 64,
  serverIndex: 2,
  rackId: 3,
  nodeInternalIp: '10.0.0.5',
};
const SERVER: A5LevelProduct = { ...POD_1D, superPodType: 0 };
const LONE_SERVER: A5LevelProduct = { ...SERVER, superPodId: -1, superPodSize: -1 };

/** An EID with FE id `fe` (bits 5–9 of bytes 6–7) and last two bytes `tail` (4 hex digits). */
const eid = (fe: number, tail: string, mid = '0000000000000000'): string =>
  `000000000000${(fe << 5).toString(16).padStart(4, '0')}${mid.slice(0, 12)}${tail}`;

const parse = (json: string): { level: number; info: Record<string, Record<string, unknown>> }[] =>
  JSON.parse(json) as { level: number; info: Record<string, Record<string, unknown>> }[];

describe('spec I.2/I.3 EID fields', () => {
  test('I.2 the FE id is bits 5-9 of the first eight bytes (big-endian)', () => {
    expect(eidFeId(eid(9, '0000'))).toBe(9);
    expect(eidFeId('00000000000003e00000000000000000')).toBe(31);
  });
  test('I.2 an EID is die-to-die when bit 11 of its last two bytes is 0', () => {
    expect(eidIsD2D(eid(1, '0709'))).toBe(true);
    expect(eidIsD2D(eid(1, '0809'))).toBe(false);
  });
  test('I.2 die = bit 2 of the third-last digit, port = (last byte & 0x7f) >> 3', () => {
    expect(eidDiePort(eid(0, '0412'))).toEqual({ die: 1, port: 2 });
    expect(eidDiePort(eid(0, '03ff'))).toEqual({ die: 0, port: 15 });
  });
  test('I.2 the UB plane id is the die of the last byte (physical 1..144 by 9, logical 181..212 by 2)', () => {
    expect([ubPlaneId(eid(0, '0009')), ubPlaneId(eid(0, '000a')), ubPlaneId(eid(0, '0000'))]).toEqual(['0', '1', '0']);
    expect([ubPlaneId(eid(0, '00b5')), ubPlaneId(eid(0, '00b7')), ubPlaneId(eid(0, '00a0'))]).toEqual(['0', '1', '0']);
  });
});

describe('spec I.2/I.3 levels by product', () => {
  test('I.2 a 1D/2D pod: UB, UB, UBG, ROCE', () => {
    expect(levelKeys(POD_1D)).toEqual(['UB', 'UB', 'UBG', 'ROCE']);
  });
  test('I.2 a server in a super pod: UB, UB, UBOE, ROCE; a lone server has no level 1', () => {
    expect(levelKeys(SERVER)).toEqual(['UB', 'UB', 'UBOE', 'ROCE']);
    expect(levelKeys(LONE_SERVER)).toEqual(['UB', '', 'UBOE', 'ROCE']);
  });
  test('I.2 the 300I cards: only ROCE (1P) or UB and ROCE (4P)', () => {
    expect(levelKeys({ ...SERVER, cardType: '300I-A5' })).toEqual(['', '', '', 'ROCE']);
    expect(levelKeys({ ...SERVER, cardType: '300I-A5-4p' })).toEqual(['UB', '', '', 'ROCE']);
  });
  test('I.2 net_instance_id: pod <superPod>_<rack>, super-pod server <superPod>_<server>, else the node IP', () => {
    expect(levelInstanceId(POD_1D, 0)).toBe('7_3');
    expect(levelInstanceId(SERVER, 0)).toBe('7_2');
    expect(levelInstanceId(LONE_SERVER, 0)).toBe('10.0.0.5');
    expect([levelInstanceId(POD_1D, 1), levelInstanceId(POD_1D, 2), levelInstanceId(POD_1D, 3)]).toEqual([
      '7',
      'CLUSTER1',
      'CLUSTER1',
    ]);
  });
});

describe('spec I.2/I.3 buildA5LevelList', () => {
  const edges: A5TopoEdge[] = [
    { netLayer: 0, linkType: 'PEER2NET', localA: 4, localAPorts: ['0/3', '1/4', '0/3'] },
    { netLayer: 0, linkType: 'PEER2PEER', localA: 4, localAPorts: ['0/7'] },
    { netLayer: 0, linkType: 'PEER2NET', localA: 5, localAPorts: ['0/9'] },
    { netLayer: 2, linkType: 'PEER2PEER', localA: 4, localAPorts: ['0/8', '1/8'] },
  ];
  test('I.2 the exact Go bytes of a pod chip with one EID per level', () => {
    const { json } = buildA5LevelList({
      product: POD_1D,
      phyId: 4,
      urma: [[eid(1, '0009'), eid(0, '0412')], [eid(3, '0000')]],
      topoEdges: edges,
    });
    expect(json).toBe(
      '[{"level":0,"info":{"UB":{"net_layer":0,"net_instance_id":"7_3","net_type":"TOPO_FILE_DESC","net_attr":"",' +
        `"rank_addr_list":[{"addr_type":"EID","addr":"${eid(1, '0009')}","ports":["0/1","0/3"],"plane_id":"0"}]}}},` +
        '{"level":1,"info":{"UB":{"net_layer":1,"net_instance_id":"7","net_type":"CLOS","net_attr":"",' +
        `"rank_addr_list":[{"addr_type":"EID","addr":"${eid(0, '0412')}","ports":["1/2"],"plane_id":"1"}]}}},` +
        '{"level":2,"info":{"UBG":{"net_layer":2,"net_instance_id":"CLUSTER1","net_type":"CLOS","net_attr":"",' +
        `"rank_addr_list":[{"addr_type":"EID","addr":"${eid(3, '0000')}","ports":["0/8","1/8"],"plane_id":"CLUSTER"}]}}}]`,
    );
  });
  test('I.2 level 0 leaves out an EID that is not die-to-die', () => {
    const { json } = buildA5LevelList({ product: POD_1D, phyId: 4, urma: [[eid(1, '0809')]], topoEdges: edges });
    expect(json).toBe('[]');
  });
  test('I.2 a server takes FE 8 and 9 at level 2 as UBOE IPv4 from the last four bytes', () => {
    const a = eid(8, '0a0b', '0000000000000000').slice(0, 24) + 'c0a8' + '0a0b';
    const b = eid(9, '0000').slice(0, 24) + '0a000001';
    const levels = parse(buildA5LevelList({ product: SERVER, phyId: 4, urma: [[b, a]], topoEdges: edges }).json);
    expect(levels.map((l) => l.level)).toEqual([2]);
    expect(levels[0]!.info.UBOE!.rank_addr_list).toEqual([
      { addr_type: 'IPV4', addr: '192.168.10.11', ports: ['0/8', '1/8'], plane_id: 'CLUSTER' },
      { addr_type: 'IPV4', addr: '10.0.0.1', ports: ['0/8', '1/8'], plane_id: 'CLUSTER' },
    ]);
  });
  test('I.2 without a usable topology file no EID gets an address: the list is empty', () => {
    const r = buildA5LevelList({
      product: POD_1D,
      phyId: 4,
      urma: [[eid(1, '0009'), eid(3, '0')]],
      topoEdges: undefined,
    });
    expect(r.json).toBe('[]');
  });
  test('I.2 an edge port equal to the EID port repeats (upstream does not mark the first one seen)', () => {
    const { json } = buildA5LevelList({
      product: POD_1D,
      phyId: 5,
      urma: [[eid(1, '0009')]],
      topoEdges: [{ netLayer: 0, linkType: 'PEER2NET', localA: 5, localAPorts: ['0/1', '0/1'] }],
    });
    expect(parse(json)[0]!.info.UB!.rank_addr_list).toEqual([
      { addr_type: 'EID', addr: eid(1, '0009'), ports: ['0/1', '0/1'], plane_id: '0' },
    ]);
  });
  test('I.2 EIDs that are not 32 hex digits are skipped and reported', () => {
    const r = buildA5LevelList({ product: POD_1D, phyId: 4, urma: [['xyz']], topoEdges: edges });
    expect(r).toEqual({ json: '[]', badEids: ['xyz'] });
  });
  test('I.3 a 300I card without RoCE addresses has no level at all', () => {
    const levels = parse(
      buildA5LevelList({
        product: { ...SERVER, cardType: '300I-A5' },
        phyId: 4,
        urma: [[eid(0, '0009')]],
        topoEdges: edges,
      }).json,
    );
    expect(levels).toEqual([]);
  });
});

describe('spec L.8 parseA5Topo', () => {
  test('L.8 reads net_layer, link_type, local_a, local_a_ports of edge_list and ignores other members', () => {
    const t = parseA5Topo(
      '{"version":"1","edge_list":[{"net_layer":1,"link_type":"PEER2NET","local_a":3,"local_a_ports":["0/1"],"x":1}]}',
    );
    expect(t).toEqual([{ netLayer: 1, linkType: 'PEER2NET', localA: 3, localAPorts: ['0/1'] }]);
  });
  test.each([
    ['{', /not JSON/],
    ['[]', /expected a JSON object/],
    ['{"edge_list":{}}', /edge_list: expected an array/],
    ['{"edge_list":[{"local_a":"3"}]}', /edge_list\[0\]\.local_a: expected an integer/],
    ['{"edge_list":[{"local_a_ports":[1]}]}', /edge_list\[0\]\.local_a_ports: expected an array of strings/],
  ])('L.8 %s is refused naming what is wrong', (text, why) => {
    expect(() => parseA5Topo(text)).toThrow(why);
  });
});
