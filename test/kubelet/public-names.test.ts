/**
 * Issue 17 item 5: spec L.6 public-name customisation — the file's validation (one problem per bad entry, the
 * whole file refused), the replacement rules, and the kubelet servers (Register, ListAndWatch, Allocate and
 * GetPreferredAllocation input mapped back).
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import {
  IDENTITY_NAMES,
  MAX_NAME_CUSTOMIZATION_BYTES,
  parseNameCustomization,
  publicNamesFor,
  RANK_TABLE_910_KEY,
} from '../../src/core/public-names.js';
import { simSnapshot } from '../../src/sim/kubelet-devices.js';
import { startHarness, type Harness } from './harness.js';

const GOOD = {
  ResourceType: 'Ascend910',
  DevicePublicType: 'example.com/accel910',
  DevicePublicNamePre: 'accel-',
  PodConfigurationName: 'example.com/rank-table-config',
};

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('L.6 the file, field by field', () => {
  test('L.6 a valid entry is read; field names are matched case-insensitively as Go does', () => {
    const p = parseNameCustomization(
      JSON.stringify([
        { resourcetype: 'Ascend310P', DEVICEPUBLICTYPE: 'example.com/infer', DevicePublicNamePre: 'inf-' },
      ]),
    );
    expect(p.problems).toEqual([]);
    expect(p.entries).toEqual([
      {
        resourceType: 'Ascend310P',
        devicePublicType: 'example.com/infer',
        devicePublicNamePre: 'inf-',
        podConfigurationName: '',
      },
    ]);
  });

  test('L.6 the shipped file (empty values) is refused, naming each entry', () => {
    const empty = { ResourceType: '', DevicePublicType: '', DevicePublicNamePre: '', PodConfigurationName: '' };
    const p = parseNameCustomization(JSON.stringify([empty, empty]));
    expect(p.entries).toEqual([]);
    expect(p.problems).toEqual(['entry 0: ResourceType is empty', 'entry 1: ResourceType is empty']);
  });

  test.each([
    [
      { ...GOOD, ResourceType: 'Ascend910B' },
      'entry 0: ResourceType "Ascend910B" is not one of Ascend910, Ascend310, Ascend310P',
    ],
    [{ ...GOOD, DevicePublicType: 'short' }, 'entry 0: DevicePublicType "short" does not match'],
    [{ ...GOOD, DevicePublicType: '9example.com/x' }, 'entry 0: DevicePublicType "9example.com/x" does not match'],
    [{ ...GOOD, DevicePublicNamePre: 'a' }, 'entry 0: DevicePublicNamePre "a" does not match'],
    [{ ...GOOD, DevicePublicNamePre: 'accel_' }, 'entry 0: DevicePublicNamePre "accel_" does not match'],
    [{ ...GOOD, PodConfigurationName: 'short' }, 'entry 0: PodConfigurationName "short" does not match'],
    [{ ...GOOD, DevicePublicNamePre: '' }, 'entry 0: DevicePublicNamePre is empty'],
  ])('L.6 a bad field refuses the file: %j', (entry, problem) => {
    const p = parseNameCustomization(JSON.stringify([entry]));
    expect(p.entries).toEqual([]);
    expect(p.problems).toEqual([expect.stringContaining(problem)]);
  });

  test('L.6 one problem per bad entry, the good ones are not used either', () => {
    const p = parseNameCustomization(
      JSON.stringify([
        GOOD,
        { ...GOOD, ResourceType: 'Ascend310', DevicePublicNamePre: '-x' },
        { ...GOOD, ResourceType: 'npu' },
      ]),
    );
    expect(p.entries).toEqual([]);
    expect(p.problems).toEqual([
      expect.stringMatching(/^entry 1: DevicePublicNamePre "-x"/),
      expect.stringMatching(/^entry 2: ResourceType "npu"/),
    ]);
  });

  test('L.6 a resource type customised twice is refused (upstream: the last wins silently)', () => {
    const p = parseNameCustomization(JSON.stringify([GOOD, GOOD]));
    expect(p.problems).toEqual(['entry 1: ResourceType Ascend910 is customised twice']);
  });

  test('L.6 not JSON, not an array, a wrong type, too big: one clear problem each', () => {
    expect(parseNameCustomization('[{').problems).toEqual([expect.stringMatching(/^not JSON: /)]);
    expect(parseNameCustomization('{}').problems).toEqual(['the top level is not an array of entries']);
    expect(parseNameCustomization(JSON.stringify([{ ...GOOD, ResourceType: 910 }])).problems).toEqual([
      'entry 0: $[0].ResourceType is 910, expected string',
    ]);
    expect(parseNameCustomization(JSON.stringify(['x'])).problems).toEqual(['entry 0: $[0] is "x", expected object']);
    expect(parseNameCustomization(' '.repeat(MAX_NAME_CUSTOMIZATION_BYTES + 1)).problems).toEqual([
      expect.stringMatching(/over the 65536-byte limit$/),
    ]);
  });

  test('L.6 an unknown member is a warning, not a problem (Go ignores it)', () => {
    const p = parseNameCustomization(JSON.stringify([{ ...GOOD, Colour: 'red' }]));
    expect(p.problems).toEqual([]);
    expect(p.warnings).toEqual(['entry 0: member "Colour" names no field; ignored']);
  });
});

describe('L.6 the replacement rules', () => {
  const n = publicNamesFor(parseNameCustomization(JSON.stringify([GOOD])).entries, 'Ascend910');

  test('L.6 inner prefix → public prefix everywhere in a text; public → inner per name', () => {
    expect(n.name('Ascend910-0,Ascend910-10')).toBe('accel-0,accel-10');
    expect(n.inner('accel-0,accel-10')).toBe('Ascend910-0,Ascend910-10');
    expect(n.inner('Ascend910-3')).toBe('Ascend910-3');
  });

  test('L.6 the resource type and the keys built on it; the rank-table key → PodConfigurationName', () => {
    expect(n.resource('huawei.com/Ascend910')).toBe('example.com/accel910');
    expect(n.resource('huawei.com/Ascend910-Unhealthy')).toBe('example.com/accel910-Unhealthy');
    expect(n.podKey(RANK_TABLE_910_KEY)).toBe('example.com/rank-table-config');
    expect(n.podKey('huawei.com/AscendReal')).toBe('huawei.com/AscendReal');
  });

  test('L.6 UpgradeFaultReason read back: its device-name keys made inner; garbage left for its reader', () => {
    expect(n.innerReasons('{"accel-5":[{"upgrade_time":1}]}')).toBe('{"Ascend910-5":[{"upgrade_time":1}]}');
    expect(n.innerReasons('not json')).toBe('not json');
  });

  test('L.6 a file for another resource type leaves this node alone', () => {
    expect(publicNamesFor(parseNameCustomization(JSON.stringify([GOOD])).entries, 'Ascend310P')).toBe(IDENTITY_NAMES);
  });
});

describe('L.6 the kubelet servers', () => {
  async function harness(): Promise<Harness> {
    const names = publicNamesFor(parseNameCustomization(JSON.stringify([GOOD])).entries, 'Ascend910');
    h = await startHarness({
      snapshot: simSnapshot({ kind: 'Ascend910B', chips: 4 }),
      manager: { useAscendDocker: true, names },
    });
    await h.sim.waitForRegistration('example.com/accel910');
    return h;
  }

  test('L.6 Register with the public type; ListAndWatch streams the public IDs', async () => {
    const { sim } = await harness();
    expect(sim.devices('huawei.com/Ascend910')).toBeUndefined();
    expect(sim.devices('example.com/accel910')!.map((d) => d.ID)).toEqual(['accel-0', 'accel-1', 'accel-2', 'accel-3']);
  });

  test('L.6/C.3 Allocate maps public IDs back before its checks; a refusal names what kubelet sent', async () => {
    const { sim } = await harness();
    const c = (await sim.allocate('example.com/accel910', [['accel-2', 'accel-0']])).containerResponses[0]!;
    expect(c.envs.ASCEND_VISIBLE_DEVICES).toBe('2,0');
    const err = await sim.allocate('example.com/accel910', [['accel-9']]).then(
      () => undefined,
      (e: unknown) => e as { details: string },
    );
    expect(err?.details).toContain('unknown device ID "accel-9" for example.com/accel910');
  });

  test('L.6 GetPreferredAllocation takes and returns public IDs', async () => {
    const { sim } = await harness();
    const r = await sim.getPreferredAllocation('example.com/accel910', [
      { available: ['accel-0', 'accel-1', 'accel-2', 'accel-3'], mustInclude: ['accel-3'], size: 2 },
    ]);
    const ids = r.containerResponses[0]!.deviceIDs;
    expect(ids).toHaveLength(2);
    expect(ids).toContain('accel-3');
    expect(ids.every((id) => id.startsWith('accel-'))).toBe(true);
  });
});
