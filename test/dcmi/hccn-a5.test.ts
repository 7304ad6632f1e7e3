/**
 * A5 (Ascend950) hccn_tool commands (dcmi-abi.md §7 "A5 uses …", device-plugin.md D.8): the port table of
 * `-g -dev_info -i <logicId>`, `-g -link` and `-g -stat` per UDie/port, parsed by src/dcmi/hccn.ts and answered by the
 * mock hccn_tool from the mock library's port state (native/mock/mock_ports.c).
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { MOCK_HCCN_TOOL } from '../../src/core/paths.js';
import {
  MAX_PORT_ROWS,
  parsePortStats,
  parsePortTable,
  queryPortLink,
  queryPortStats,
  queryPortTable,
  runHccnTool,
} from '../../src/dcmi/hccn.js';
import { openMock, type MockHarness, type Scenario } from '../helpers/mock-dcmi.js';

const RULE = '+---------+---------+---------------------+-----------+-------------+------------+';
const HEADER = '| UDie ID | Port ID | Speed Ability(Gbps) | Port Type | Link Status | Media Type |';
const row = (udie: string, port: string, type: string, link: string): string =>
  `| ${udie.padEnd(7)} | ${port.padEnd(7)} | 400                 | ${type.padEnd(9)} | ${link.padEnd(11)} | Optical    |`;
const table = (...rows: string[]): string => [RULE, HEADER, RULE, ...rows, RULE, ''].join('\n');

describe('dcmi-abi §7 A5 port table parsing (-g -dev_info)', () => {
  test('UB and UBoE rows give udie, port, type and link; the header is not a port', () => {
    const t = parsePortTable(table(row('0', '0', 'UB', 'UP'), row('1', '4', 'UBoE', 'DOWN')));
    expect(t).toEqual({
      ok: true,
      ports: [
        { udie: 0, port: 0, type: 'UB', link: 'UP' },
        { udie: 1, port: 4, type: 'UBoE', link: 'DOWN' },
      ],
    });
  });

  test('a link text other than UP or DOWN is Abnormal for that port', () => {
    const t = parsePortTable(table(row('0', '4', 'UBoE', 'UNKNOWN')));
    expect(t.ok && t.ports[0]!.link).toBe('Abnormal');
  });

  test('the tables after the port table (netdev rows naming ub interfaces) are not read', () => {
    const netdev = ['+----+----+', '| ubond0 | NA | NA | NA | NA |', '+----+----+'].join('\n');
    const t = parsePortTable(table(row('0', '0', 'UB', 'UP')) + netdev);
    expect(t.ok && t.ports).toHaveLength(1);
  });

  test.each([
    ['no output', ''],
    ['only the header', table()],
    ['a non-integer UDie id', table(row('x', '0', 'UB', 'UP'))],
    ['a port id out of range', table(row('0', '99999', 'UB', 'UP'))],
    ['an unknown port type', table(row('0', '0', 'UBX', 'UP'))],
    ['too few columns', [RULE, HEADER, RULE, '| 0 | 1 | UB |', RULE].join('\n')],
    ['a duplicate port', table(row('0', '1', 'UB', 'UP'), row('0', '1', 'UB', 'DOWN'))],
    [
      'more rows than the bound',
      table(...Array.from({ length: MAX_PORT_ROWS + 1 }, (_, i) => row('0', String(i), 'UB', 'UP'))),
    ],
  ])('%s makes the whole table unreadable (counted as DOWN)', (_what, stdout) => {
    expect(parsePortTable(stdout)).toMatchObject({ ok: false, reason: expect.any(String) });
  });
});

describe('dcmi-abi §7 A5 port statistics parsing (-g -stat -u -p)', () => {
  test('key:value lines are kept as trimmed text, other lines skipped', () => {
    const m = parsePortStats('port statistics:\ntx_pkt_num: 12\nbad line\na:b:c\n rx_pkt_num :7\n');
    expect([...m.entries()]).toEqual([
      ['port statistics', ''],
      ['tx_pkt_num', '12'],
      ['rx_pkt_num', '7'],
    ]);
  });
});

const A5: Scenario = {
  chipName: 'Ascend950PR',
  boardId: 0x60,
  mainboardId: 0x23,
  cards: [
    {
      cardId: 0,
      chips: [
        { deviceId: 0, logicId: 0, phyId: 0 },
        {
          deviceId: 1,
          logicId: 1,
          phyId: 1,
          ports: [
            { udie: 0, port: 0, type: 'UB' },
            { udie: 0, port: 4, type: 'UBoE', link: 'DOWN' },
          ],
        } as Scenario['cards'][0]['chips'][0],
      ],
    },
  ],
};

let h: MockHarness | undefined;
afterEach(() => {
  h?.close();
  h = undefined;
});

const tool = (m: MockHarness) => ({ toolPath: MOCK_HCCN_TOOL, env: { ASCEND_MOCK_CONTROL: m.controlPath } });

describe('dcmi-abi §7 A5 commands against the mock hccn_tool', () => {
  test('an Ascend950 chip without "ports" has the default 4 UB and 2 UBoE ports, all UP', async () => {
    h = await openMock(A5);
    const t = await queryPortTable(tool(h), 0);
    expect(t.ok && t.ports.map((p) => `${p.type}:${p.udie}/${p.port}:${p.link}`)).toEqual([
      'UB:0/0:UP',
      'UB:0/1:UP',
      'UB:1/0:UP',
      'UB:1/1:UP',
      'UBoE:0/4:UP',
      'UBoE:1/4:UP',
    ]);
  });

  test('the scenario "ports" field sets the ports and their links', async () => {
    h = await openMock(A5);
    const t = await queryPortTable(tool(h), 1);
    expect(t).toEqual({
      ok: true,
      ports: [
        { udie: 0, port: 0, type: 'UB', link: 'UP' },
        { udie: 0, port: 4, type: 'UBoE', link: 'DOWN' },
      ],
    });
  });

  test('the control op "port" sets one port DOWN; -dev_info and -link see it', async () => {
    h = await openMock(A5);
    await h.control.expectOk({ op: 'port', logicId: 0, udie: 1, port: 4, status: 'DOWN' });
    const t = await queryPortTable(tool(h), 0);
    expect(t.ok && t.ports.filter((p) => p.link === 'DOWN')).toEqual([
      { udie: 1, port: 4, type: 'UBoE', link: 'DOWN' },
    ]);
    expect(await queryPortLink(tool(h), 0, 1, 4)).toEqual({ status: 'DOWN' });
    expect(await queryPortLink(tool(h), 0, 0, 4)).toEqual({ status: 'UP' });
  });

  test('-link on a port the chip does not have fails: Abnormal with the reason', async () => {
    h = await openMock(A5);
    expect(await queryPortLink(tool(h), 1, 1, 1)).toMatchObject({
      status: 'Abnormal',
      error: expect.stringMatching(/no port \(udie 1, port 1\)/),
    });
  });

  test('-stat per port answers key:value packet counters', async () => {
    h = await openMock(A5);
    const m = await queryPortStats(tool(h), 0, 0, 0);
    expect(m.get('tx_pkt_num')).toMatch(/^\d+$/);
    expect(m.get('rx_pkt_num')).toMatch(/^\d+$/);
  });

  test('a dropped chip is not ready: the port table is unreadable', async () => {
    h = await openMock(A5);
    await h.control.expectOk({ op: 'drop', logicId: 0 });
    expect(await queryPortTable(tool(h), 0)).toMatchObject({ ok: false, reason: expect.stringMatching(/not ready/) });
  });

  test('-dev_info with -u is a usage error', async () => {
    h = await openMock(A5);
    await expect(runHccnTool(tool(h), ['-g', '-dev_info', '-i', '0', '-u', '0'])).rejects.toThrow(/takes no -u/);
  });
});

describe('scenarios/README.md A5 ports: the mock rejects bad port fields', () => {
  // the mock names the field on stderr ("mock_dcmi: <file>: cards[0].chips[0].ports[0].colour: unknown field")
  test.each([
    [{ udie: 0, port: 0, type: 'UB', colour: 'red' }],
    [{ udie: 0, port: 0, type: 'RoCE' }],
    [{ udie: 9, port: 0, type: 'UB' }],
    [{ port: 0, type: 'UB' }],
    [{ udie: 0, port: 0, type: 'UB', link: 'SIDEWAYS' }],
  ])('%j makes dcmi_init fail with -8005', async (port) => {
    const bad: Scenario = JSON.parse(JSON.stringify(A5)) as Scenario;
    (bad.cards[0]!.chips[0] as unknown as Record<string, unknown>).ports = [port];
    await expect(openMock(bad)).rejects.toMatchObject({ code: -8005 });
  });

  test('a scenario with valid ports loads (the refusals above are about the port, not the scenario)', async () => {
    h = await openMock(A5);
    expect(h.scenario.chipName).toBe('Ascend950PR');
  });

  test('the control op "port" names a missing port', async () => {
    h = await openMock(A5);
    const r = await h.control.request({ op: 'port', logicId: 1, udie: 1, port: 1, status: 'DOWN' });
    expect(r).toMatchObject({ ok: false, error: expect.stringMatching(/no port \(udie 1, port 1\)/) });
  });
});
