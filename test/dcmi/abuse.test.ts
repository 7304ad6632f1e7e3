/**
 * Abuse of the binding (style.md "Abuse tests"): wrong argument types, calls after shutdown, double subscribe,
 * a listener that throws. The binding must throw, never crash the process.
 */
import { describe, expect, test } from '@jest/globals';
import { loadAddon } from '../../src/dcmi/bindings.js';
import { MOCK_DCMI_LIBRARY } from '../../src/core/paths.js';
import { EventCollector, openMock, waitUntil } from '../helpers/mock-dcmi.js';

/** Name of what `f` throws; the addon's errors come from the main realm, so `instanceof` is not usable here. */
function thrownName(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    return (err as Error).name;
  }
  return 'nothing thrown';
}

describe('binding abuse', () => {
  test('wrong argument types throw TypeError without calling the library', async () => {
    const h = await openMock('910b-8chip');
    try {
      const lib = new (loadAddon().DcmiLibrary)(MOCK_DCMI_LIBRARY);
      try {
        const raw = lib as any;
        expect(thrownName(() => raw.getDeviceHealth('0', 0))).toBe('TypeError');
        expect(thrownName(() => raw.getDeviceHealth(0.5, 0))).toBe('TypeError');
        expect(thrownName(() => raw.getDeviceHealth())).toBe('TypeError');
        expect(thrownName(() => raw.getPhyIdFromLogicId(-1))).toBe('TypeError');
        expect(thrownName(() => raw.getDeviceInfo(0, 0, 52, 1, 'not a buffer'))).toBe('TypeError');
        expect(thrownName(() => raw.subscribeFaultEvents(-1, -1, 'not a function'))).toBe('TypeError');
        expect(thrownName(() => new (loadAddon().DcmiLibrary)(42 as never))).toBe('TypeError');
      } finally {
        lib.close();
      }
    } finally {
      h.close();
    }
  });

  test('dcmi-abi §2.2 ids out of range are refused before DCMI is called', async () => {
    const h = await openMock('910b-8chip');
    try {
      const before = (await h.control.state()).counters.callsByName.dcmi_get_device_health ?? 0;
      expect(() => h.dcmi.getDeviceHealth(0, 4)).toThrow(/device id 4 is outside 0..3/);
      expect(() => h.dcmi.getDeviceHealth(-1, 0)).toThrow(/card id -1/);
      expect(() => h.dcmi.getPhyIdFromLogicId(256)).toThrow(/logic id 256/);
      expect((await h.control.state()).counters.callsByName.dcmi_get_device_health ?? 0).toBe(before);
    } finally {
      h.close();
    }
  });

  test('every call after close throws -99999 and close is idempotent', async () => {
    const h = await openMock('910b-8chip');
    h.close();
    expect(h.dcmi.closed).toBe(true);
    expect(() => h.dcmi.getDeviceHealth(0, 0)).toThrow(expect.objectContaining({ code: -99999 }));
    expect(() => h.dcmi.enumerate()).toThrow(expect.objectContaining({ code: -99999 }));
    await expect(h.dcmi.setDeviceReset(0, 0)).rejects.toMatchObject({ code: -99999 });
    expect(() => h.dcmi.subscribeFaultEvents(new EventCollector().subscription)).toThrow(
      expect.objectContaining({ code: -99999 }),
    );
    expect(() => h.dcmi.close()).not.toThrow();
    expect(() => h.dcmi.unsubscribeFaultEvents()).not.toThrow();
  });

  test('double subscribe and double unsubscribe are harmless', async () => {
    const h = await openMock('910b-8chip');
    try {
      const a = new EventCollector();
      h.dcmi.subscribeFaultEvents(a.subscription);
      h.dcmi.subscribeFaultEvents(a.subscription);
      await h.control.expectOk({ op: 'fault', logicId: 1, eventId: '80C98009', assertion: 'once' });
      await a.waitForEvents(1);
      h.dcmi.unsubscribeFaultEvents();
      h.dcmi.unsubscribeFaultEvents();
      expect(a.events).toHaveLength(1);
    } finally {
      h.close();
    }
  });

  test('a listener that throws is reported and does not stop later events', async () => {
    const h = await openMock('910b-8chip');
    const warnings: string[] = [];
    try {
      const seen: number[] = [];
      h.dcmi.subscribeFaultEvents({
        onEvent: (e) => {
          seen.push(e.logicId);
          if (seen.length === 1) throw new Error('listener bug');
        },
        onOverflow: () => undefined,
        onListenerError: (err) => void warnings.push(String(err)),
      });
      await h.control.expectOk({ op: 'fault', logicId: 1, eventId: '80C98009', assertion: 'once' });
      await h.control.expectOk({ op: 'fault', logicId: 2, eventId: '80C98009', assertion: 'once' });
      const deadline = Date.now() + 5000;
      while (seen.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      expect(seen).toEqual([1, 2]);
      await waitUntil(() => warnings.length > 0, 'the listener error to be reported as a process warning');
      expect(warnings.join('\n')).toMatch(/listener bug/);
    } finally {
      h.close();
    }
  });

  test('close while a reset is in flight settles the promise without crashing', async () => {
    const h = await openMock('910b-8chip');
    const pending = h.dcmi.setDeviceReset(3, 0);
    h.close();
    await expect(
      pending.then(
        () => 'resolved',
        () => 'rejected',
      ),
    ).resolves.toMatch(/resolved|rejected/);
  });
});
