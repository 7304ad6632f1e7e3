/**
 * The mock's control protocol (architecture §5): malformed requests get `ok:false` and the connection keeps
 * being served; the `state` reply has the documented shape.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { openMock, scenarioChips, type MockHarness } from '../helpers/mock-dcmi.js';

describe('architecture §5 control socket', () => {
  let h: MockHarness;
  beforeAll(async () => {
    h = await openMock('910a-8chip');
  });
  afterAll(() => h.close());

  test.each([
    ['not JSON', 'this is not json'],
    ['an unknown op', JSON.stringify({ op: 'explode' })],
    ['an unknown logic id', JSON.stringify({ op: 'fault', logicId: 99, eventId: '80E01801', assertion: 'occur' })],
    ['a bad event id', JSON.stringify({ op: 'fault', logicId: 1, eventId: 'xyz', assertion: 'occur' })],
    ['a bad assertion', JSON.stringify({ op: 'fault', logicId: 1, eventId: '80E01801', assertion: 'maybe' })],
    ['a bad reset result', JSON.stringify({ op: 'resetResult', logicId: 1, result: 'explode' })],
    ['a missing field', JSON.stringify({ op: 'health', logicId: 1 })],
  ])('%s gets ok:false with a reason and the connection keeps serving', async (_what, line) => {
    const reply = await h.control.sendLine(line);
    expect(reply.ok).toBe(false);
    expect((reply as { error: string }).error.length).toBeGreaterThan(0);
    expect((await h.control.request({ op: 'state' })).ok).toBe(true);
  });

  test('a request line over 64 KiB is refused and the mock keeps serving', async () => {
    const reply = await h.control.sendLine(JSON.stringify({ op: 'state', pad: 'x'.repeat(70 * 1024) }));
    expect(reply.ok).toBe(false);
    expect((await h.control.request({ op: 'state' })).ok).toBe(true);
  });

  test('state lists every chip with the documented fields', async () => {
    const state = await h.control.state();
    expect(state.chips.map((c) => c.logicId)).toEqual(scenarioChips(h.scenario).map((c) => c.logicId));
    for (const chip of state.chips) {
      expect(chip).toEqual(
        expect.objectContaining({
          phyId: expect.any(Number),
          cardId: expect.any(Number),
          deviceId: expect.any(Number),
          health: expect.any(Number),
          errorCodes: expect.any(Array),
          link: expect.any(String),
          processes: expect.any(Number),
          dropped: expect.any(Boolean),
          resets: expect.any(Number),
        }),
      );
    }
    expect(typeof state.counters.subscribeCalls).toBe('number');
  });

  test('event ids are accepted in either case and reported upper-case', async () => {
    await h.control.expectOk({ op: 'silentFault', logicId: 2, eventId: '80cb8009', assertion: 'occur' });
    const chip = (await h.control.state()).chips.find((c) => c.logicId === 2)!;
    expect(chip.errorCodes).toEqual(['80CB8009']);
  });
});
