/**
 * Library loading (dcmi-abi.md §1.3): per-symbol resolution, unloadable libraries, bad scenarios, re-opening.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { loadAddon } from '../../src/dcmi/bindings.js';
import { MOCK_DCMI_LIBRARY, PROJECT_ROOT } from '../../src/core/paths.js';
import { Dcmi } from '../../src/dcmi/dcmi.js';
import { DcmiError } from '../../src/dcmi/errors.js';
import { openMock, tempDir, thrown } from '../helpers/mock-dcmi.js';

const PARTIAL_LIBRARY = path.join(PROJECT_ROOT, 'build', 'Release', 'libdcmi_partial.so');

describe('dcmi-abi §1.3 loading', () => {
  test('a library that cannot be opened is DcmiError -99999 naming dlopen', () => {
    const err = thrown(() => Dcmi.open(path.join(tempDir(), 'libdcmi.so')));
    expect(err).toBeInstanceOf(DcmiError);
    expect(err).toMatchObject({ code: -99999, fn: 'dlopen' });
  });

  test('a missing symbol is reported by missingSymbols and fails only that call with -99998', async () => {
    const dcmi = Dcmi.open(PARTIAL_LIBRARY);
    try {
      expect(dcmi.missingSymbols()).toContain('dcmi_get_device_health');
      expect(dcmi.missingSymbols()).not.toContain('dcmi_init');
      await dcmi.init();
      expect(dcmi.getCardList().cards).toEqual([0]);
      const err = thrown(() => dcmi.getDeviceHealth(0, 0));
      expect(err).toMatchObject({ code: -99998, fn: 'dcmi_get_device_health' });
    } finally {
      dcmi.close();
    }
  });

  test('every bound function of dcmi-abi §3 is exported by the mock', () => {
    const dcmi = Dcmi.open(MOCK_DCMI_LIBRARY);
    try {
      expect(dcmi.missingSymbols()).toEqual([]);
      expect(loadAddon().boundFunctions).toHaveLength(36);
    } finally {
      dcmi.close();
    }
  });

  test('architecture §5 an invalid scenario makes dcmi_init fail with -8005', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'bad.json');
    fs.writeFileSync(file, '{"chipName": "910B3", "cards": [ }');
    const dcmi = Dcmi.open(MOCK_DCMI_LIBRARY);
    try {
      dcmi.mockConfigure(file, path.join(dir, 'ctl.sock'));
      await expect(dcmi.init()).rejects.toMatchObject({ code: -8005, fn: 'dcmi_init' });
    } finally {
      dcmi.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('architecture §5 a scenario with an unknown field is refused, not silently ignored', async () => {
    await expect(
      openMock({
        chipName: '910B3',
        boardId: 0x24,
        cards: [{ cardId: 0, chips: [{ deviceId: 0, logicId: 0, phyId: 0, helth: 1 } as never] }],
      }),
    ).rejects.toMatchObject({ code: -8005 });
  });

  test('architecture §5 a re-opened library re-reads the scenario', async () => {
    const first = await openMock('910b-8chip');
    await first.control.expectOk({ op: 'silentFault', logicId: 1, eventId: '80E01801', assertion: 'occur' });
    expect(first.dcmi.getDeviceAllErrorCodes(1, 0).codes).toHaveLength(1);
    first.close();
    const second = await openMock('910b-8chip');
    try {
      expect(second.dcmi.getDeviceAllErrorCodes(1, 0).codes).toEqual([]);
    } finally {
      second.close();
    }
  });

  test('mockConfigure on a library without the mock hook is -99998', () => {
    const dcmi = Dcmi.open(PARTIAL_LIBRARY);
    try {
      expect(thrown(() => dcmi.mockConfigure(null, null))).toMatchObject({ code: -99998 });
    } finally {
      dcmi.close();
    }
  });
});
