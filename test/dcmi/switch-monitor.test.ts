/**
 * How the switch faults are read (spec L.9, dcmi-abi.md §8, K.4; issue 18 item 1): start-up query, subscription,
 * per-cycle query while unsubscribed, a query after an overflowed delivery.
 */
import { describe, expect, test } from '@jest/globals';
import type { SwitchEvent } from '../../src/dcmi/switch.js';
import { SwitchMonitor } from '../../src/dcmi/switch-monitor.js';

const ev = (port: number): SwitchEvent => ({
  eventType: 0x08520003,
  subType: 0xffffffff,
  peerPortDevice: 2,
  peerPortId: 0,
  switchChipId: 0,
  switchPortId: port,
  severity: 2,
  assertion: 1,
  eventSerialNum: 1,
  notifySerialNum: 1,
  alarmRaisedTime: 5,
});

function fakeLib(opts: { subscribeRc?: number; missing?: string[] } = {}) {
  const calls = { query: 0, subscribe: 0 };
  let listener: ((e: readonly SwitchEvent[], dropped: number) => void) | undefined;
  return {
    calls,
    fire: (e: readonly SwitchEvent[], dropped = 0) => listener?.(e, dropped),
    lib: {
      missingSymbols: () => opts.missing ?? [],
      subscribe: (l: (e: readonly SwitchEvent[], dropped: number) => void) => {
        calls.subscribe++;
        listener = l;
        return opts.subscribeRc ?? 0;
      },
      unsubscribe: () => undefined,
      queryFaults: () => {
        calls.query++;
        return Promise.resolve([ev(calls.query)]);
      },
    },
  };
}

describe('spec L.9 switch monitor', () => {
  test('dcmi-abi §8 start: one query, then the subscription; events reach the listener in order', async () => {
    const f = fakeLib();
    const got: number[] = [];
    const queried: number[] = [];
    const m = new SwitchMonitor({
      lib: f.lib,
      onEvents: (e) => got.push(...e.map((x) => x.switchPortId)),
      onQuery: (e) => queried.push(e.length),
      onError: () => undefined,
    });
    await m.start();
    expect(f.calls).toEqual({ query: 1, subscribe: 1 });
    expect(m.subscribed()).toBe(true);
    f.fire([ev(7), ev(8)]);
    expect(got).toEqual([7, 8]);
    m.cycle(); // subscribed: no query per cycle
    expect(f.calls.query).toBe(1);
    m.stop();
  });

  test('dcmi-abi §8 a refused subscription: an error reported and a query each cycle', async () => {
    const f = fakeLib({ subscribeRc: -8005 });
    const errors: string[] = [];
    const m = new SwitchMonitor({
      lib: f.lib,
      onEvents: () => undefined,
      onQuery: () => undefined,
      onError: (what) => errors.push(what),
    });
    await m.start();
    expect(m.subscribed()).toBe(false);
    expect(errors).toEqual(['lq_dcmi_subscribe_fault_event']);
    m.cycle();
    await m.query(); // the cycle's query is shared with this one
    expect(f.calls.query).toBe(2);
    m.stop();
  });

  test('nothing dropped silently: an overflowed delivery is followed by a full query', async () => {
    const f = fakeLib();
    const queried: number[] = [];
    const m = new SwitchMonitor({
      lib: f.lib,
      onEvents: () => undefined,
      onQuery: (e) => queried.push(e[0]!.switchPortId),
      onError: () => undefined,
    });
    await m.start();
    f.fire([ev(1)], 3);
    await m.query();
    expect(f.calls.query).toBe(2);
    expect(queried).toEqual([1, 2]);
    m.stop();
  });

  test('a library without the subscription is polled, never subscribed', async () => {
    const f = fakeLib({ missing: ['lq_dcmi_subscribe_fault_event'] });
    const m = new SwitchMonitor({
      lib: f.lib,
      onEvents: () => undefined,
      onQuery: () => undefined,
      onError: () => undefined,
    });
    await m.start();
    expect(f.calls.subscribe).toBe(0);
    expect(m.subscribed()).toBe(false);
    m.stop();
  });
});
