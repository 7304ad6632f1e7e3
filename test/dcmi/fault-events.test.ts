/**
 * Contract tests of the fault subscription (dcmi-abi.md §5) and of the mock's control operations that change
 * a chip's error-code list (architecture §5).
 */
import { execFile } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { DcmiError } from '../../src/dcmi/errors.js';
import { EventCollector, hex, openMock, waitUntil, type MockHarness } from '../helpers/mock-dcmi.js';

/** Sends one control line from a separate Node process (not this one) and resolves with its reply. */
function requestFromAnotherProcess(socketPath: string, request: object): Promise<string> {
  const script = `
    const s = require('node:net').createConnection(process.argv[1]);
    s.on('connect', () => s.write(process.argv[2] + '\\n'));
    s.on('data', (d) => { process.stdout.write(d); s.end(); });
    s.on('error', (e) => { console.error(e.message); process.exit(1); });`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script, socketPath, JSON.stringify(request)], (err, stdout) =>
      err ? reject(new Error(err.message)) : resolve(stdout),
    );
  });
}

describe('fault events on 910b-8chip', () => {
  let h: MockHarness;
  let events: EventCollector;
  beforeAll(async () => {
    h = await openMock('910b-8chip');
  });
  afterAll(() => h.close());
  afterEach(async () => {
    h.dcmi.unsubscribeFaultEvents();
    for (const logicId of [0, 3, 5]) {
      await h.control.expectOk({ op: 'silentFault', logicId, eventId: '80E01801', assertion: 'recover' });
      await h.control.expectOk({ op: 'silentFault', logicId, eventId: '80C98009', assertion: 'recover' });
    }
  });
  const subscribe = (): void => {
    events = new EventCollector();
    h.dcmi.subscribeFaultEvents(events.subscription);
  };

  test('dcmi-abi §5.2 a fault injected from another process reaches the JS listener with the driver fields', async () => {
    subscribe();
    const reply = await requestFromAnotherProcess(h.controlPath, {
      op: 'fault',
      logicId: 3,
      eventId: '80e01801',
      assertion: 'occur',
      severity: 3,
    });
    expect(JSON.parse(reply)).toMatchObject({ ok: true });
    const [e] = await events.waitForEvents(1);
    expect(e).toMatchObject({ eventId: 0x80e01801, logicId: 3, severity: 3, assertion: 'occur', assertionValue: 1 });
    expect(e!.eventName).not.toBe('');
    expect(typeof e!.trampolineNs).toBe('bigint');
    expect(e!.receivedAtMs).toBeGreaterThan(0);
  });

  test('dcmi-abi §5.2 severity defaults to 2 (major)', async () => {
    subscribe();
    await h.control.expectOk({ op: 'fault', logicId: 0, eventId: '80C98009', assertion: 'occur' });
    const [e] = await events.waitForEvents(1);
    expect(e!.severity).toBe(2);
  });

  test('architecture §5 occur adds the code once, like the driver', async () => {
    await h.control.expectOk({ op: 'fault', logicId: 5, eventId: '80E01801', assertion: 'occur' });
    await h.control.expectOk({ op: 'fault', logicId: 5, eventId: '80E01801', assertion: 'occur' });
    expect(h.dcmi.getDeviceAllErrorCodes(5, 0).codes.map(hex)).toEqual(['80E01801']);
  });

  test('architecture §5 recover removes the code and fires assertion 0', async () => {
    await h.control.expectOk({ op: 'fault', logicId: 5, eventId: '80E01801', assertion: 'occur' });
    subscribe();
    await h.control.expectOk({ op: 'fault', logicId: 5, eventId: '80E01801', assertion: 'recover' });
    const [e] = await events.waitForEvents(1);
    expect(e).toMatchObject({ assertion: 'recover', assertionValue: 0, logicId: 5 });
    expect(h.dcmi.getDeviceAllErrorCodes(5, 0).codes).toEqual([]);
  });

  test('architecture §5 once fires assertion 2 and leaves the code list unchanged', async () => {
    subscribe();
    await h.control.expectOk({ op: 'fault', logicId: 3, eventId: '80C98009', assertion: 'once' });
    const [e] = await events.waitForEvents(1);
    expect(e).toMatchObject({ assertion: 'once', assertionValue: 2, eventId: 0x80c98009 });
    expect(h.dcmi.getDeviceAllErrorCodes(3, 0).codes).toEqual([]);
  });

  test('architecture §5 silentFault changes the list and fires nothing', async () => {
    subscribe();
    await h.control.expectOk({ op: 'silentFault', logicId: 3, eventId: '80E01801', assertion: 'occur' });
    // The mock fires callbacks in request order: the next event seen must be this marker, not the silent one.
    await h.control.expectOk({ op: 'fault', logicId: 0, eventId: '80C98009', assertion: 'once' });
    const [first] = await events.waitForEvents(1);
    expect(first).toMatchObject({ logicId: 0, eventId: 0x80c98009 });
    expect(h.dcmi.getDeviceAllErrorCodes(3, 0).codes.map(hex)).toEqual(['80E01801']);
  });

  test('dcmi-abi §5.2 events arrive in the order the driver fired them', async () => {
    subscribe();
    for (const logicId of [0, 3, 5, 3, 0]) {
      await h.control.expectOk({ op: 'fault', logicId, eventId: '80C98009', assertion: 'once' });
    }
    const got = await events.waitForEvents(5);
    expect(got.map((e) => e.logicId)).toEqual([0, 3, 5, 3, 0]);
  });

  test('dcmi-abi §5 subscribing twice replaces the listener', async () => {
    const first = new EventCollector();
    h.dcmi.subscribeFaultEvents(first.subscription);
    subscribe();
    await h.control.expectOk({ op: 'fault', logicId: 0, eventId: '80C98009', assertion: 'once' });
    await events.waitForEvents(1);
    expect(first.events).toHaveLength(0);
    const state = await h.control.state();
    expect(state.counters.subscribeCalls).toBeGreaterThanOrEqual(2);
  });

  test('dcmi-abi §5 after unsubscribe no event reaches JS and the drop is counted', async () => {
    subscribe();
    h.dcmi.unsubscribeFaultEvents();
    const before = h.dcmi.faultDeliveryStats();
    await h.control.expectOk({ op: 'fault', logicId: 0, eventId: '80C98009', assertion: 'once' });
    // the control reply comes after the callback returned, so the counter is already updated
    await new Promise((r) => setTimeout(r, 50));
    expect(events.events).toHaveLength(0);
    expect(h.dcmi.faultDeliveryStats().delivered).toBe(before.delivered);
  });

  test('dcmi-abi §5.2 a burst larger than the queue is reported as overflow, never dropped silently', async () => {
    events = new EventCollector();
    h.dcmi.subscribeFaultEvents(events.subscription, { maxQueue: 16 });
    const reply = await h.control.expectOk({
      op: 'burst',
      logicId: 5,
      eventId: '80C98009',
      assertion: 'once',
      count: 20000,
      ratePerSec: 0,
    });
    expect(reply.fired).toBe(20000);
    const dropped = (): number => events.overflows.reduce((n, o) => n + o.dropped, 0);
    await waitUntil(() => events.events.length + dropped() >= 20000, 'all events delivered or reported');
    expect(events.events.length + dropped()).toBe(20000);
    expect(dropped()).toBeGreaterThan(0);
    expect(new Set(events.overflows.flatMap((o) => o.logicIds))).toEqual(new Set([5]));
  });
});

describe('subscription failure', () => {
  test('dcmi-abi §5.2 a library that refuses the subscription throws the DCMI code (caller falls back to polling)', async () => {
    const h = await openMock({
      chipName: '910B3',
      boardId: 0x24,
      subscribe: 'fail',
      cards: [{ cardId: 0, chips: [{ deviceId: 0, logicId: 0, phyId: 0 }] }],
    });
    try {
      const events = new EventCollector();
      let caught: unknown;
      try {
        h.dcmi.subscribeFaultEvents(events.subscription);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(DcmiError);
      expect((caught as DcmiError).code).toBe(-8005);
      expect((caught as DcmiError).fn).toBe('dcmi_subscribe_fault_event');
    } finally {
      h.close();
    }
  });
});
