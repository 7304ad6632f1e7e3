import { describe, expect, test } from '@jest/globals';
import { faultKey, PublicFaultCache, type NewRecord } from '../../../src/cluster/public-fault/cache.js';

const S = 1_772_330_400; // s

function rec(over: Partial<NewRecord> = {}): NewRecord {
  return {
    resource: 'CCAE',
    faultId: 'fault-0001',
    faultType: 'Storage',
    faultCode: '220001001',
    level: 'SeparateNPU',
    devIds: [0, 1],
    faultTime: S - 10,
    ...over,
  };
}

const KEY = faultKey('CCAE', 'fault-0001');

describe('§2.7 assertions', () => {
  test('§2.7 occur adds an entry stamped with addTime = now (s)', () => {
    const c = new PublicFaultCache();
    c.apply('occur', 'node-1', KEY, rec(), S);
    expect(c.get('node-1', KEY)).toMatchObject({ assertion: 'occur', addTime: S, devIds: [0, 1] });
  });

  test('§4.2 TestDealFault: a repeated occur is idempotent and does not update the entry', () => {
    const c = new PublicFaultCache();
    c.apply('occur', 'node-1', KEY, rec(), S);
    const outcome = c.apply('occur', 'node-1', KEY, rec({ devIds: [5] }), S + 1);
    expect([outcome, c.size, c.get('node-1', KEY)?.devIds, c.get('node-1', KEY)?.addTime]).toEqual([
      'exists',
      1,
      [0, 1],
      S,
    ]);
  });

  test('§4.2 TestDealFault: recover of a fault that existed ≥ 5 s deletes it at once', () => {
    const c = new PublicFaultCache();
    c.apply('occur', 'node-1', KEY, rec(), S);
    expect([c.apply('recover', 'node-1', KEY, rec(), S + 5), c.has('node-1', KEY)]).toEqual(['deleted', false]);
  });

  test('§4.2 TestDealFault: occur then immediate recover — present after 1 s', () => {
    const c = new PublicFaultCache();
    c.apply('occur', 'node-1', KEY, rec(), S);
    c.apply('recover', 'node-1', KEY, rec(), S);
    c.expire(S + 1);
    expect(c.has('node-1', KEY)).toBe(true);
  });

  test('§4.2 TestDealFault: occur then immediate recover — gone at addTime + 5 s', () => {
    const c = new PublicFaultCache();
    c.apply('occur', 'node-1', KEY, rec(), S);
    c.apply('recover', 'node-1', KEY, rec(), S + 2);
    c.expire(S + 5);
    expect(c.has('node-1', KEY)).toBe(false);
  });

  test('§2.7 a delayed recover is still pending at addTime + 4 s', () => {
    const c = new PublicFaultCache();
    c.apply('occur', 'node-1', KEY, rec(), S);
    c.apply('recover', 'node-1', KEY, rec(), S + 2);
    c.expire(S + 4);
    expect(c.has('node-1', KEY)).toBe(true);
  });

  test('§4.2 TestDealFault: recover then occur — the occur is removed by the delayed delete', () => {
    const c = new PublicFaultCache();
    c.apply('recover', 'node-1', KEY, rec(), S);
    c.apply('occur', 'node-1', KEY, rec(), S + 1);
    const present = c.has('node-1', KEY);
    c.expire(S + 5);
    expect([present, c.has('node-1', KEY)]).toEqual([true, false]);
  });

  test('§4.2 TestDealFault: once — present after 1 s', () => {
    const c = new PublicFaultCache();
    c.apply('once', 'node-1', KEY, rec(), S);
    c.expire(S + 1);
    expect(c.has('node-1', KEY)).toBe(true);
  });

  test('§4.2 TestDealFault: once — gone after 5 s', () => {
    const c = new PublicFaultCache();
    c.apply('once', 'node-1', KEY, rec(), S);
    expect(c.expire(S + 5)).toBe(1);
  });

  test('§2.7 once on an existing occur is ignored (and queues no delete)', () => {
    const c = new PublicFaultCache();
    c.apply('occur', 'node-1', KEY, rec(), S);
    c.apply('once', 'node-1', KEY, rec(), S + 1);
    c.expire(S + 60);
    expect([c.has('node-1', KEY), c.pendingDeletes]).toEqual([true, 0]);
  });

  test('§2.7 a re-sent occur within a pending once window is removed too', () => {
    const c = new PublicFaultCache();
    c.apply('once', 'node-1', KEY, rec(), S);
    c.apply('occur', 'node-1', KEY, rec(), S + 2);
    c.expire(S + 5);
    expect(c.has('node-1', KEY)).toBe(false);
  });

  test('§2.7 the delete queue is FIFO: a head not yet due blocks later due items', () => {
    const c = new PublicFaultCache();
    const k2 = faultKey('CCAE', 'fault-0002');
    c.apply('occur', 'node-1', KEY, rec(), S);
    c.apply('occur', 'node-1', k2, rec({ faultId: 'fault-0002' }), S - 10);
    c.apply('recover', 'node-1', KEY, rec(), S + 1); // due S + 5
    c.apply('recover', 'node-1', k2, rec(), S + 1); // entry 11 s old: deleted at once
    c.apply('once', 'node-2', KEY, rec(), S + 1); // due S + 6
    c.expire(S + 5);
    expect([c.has('node-1', KEY), c.has('node-2', KEY), c.nextDeleteAt()]).toEqual([false, true, S + 6]);
  });

  test('§4.2 TestPubFaultNeedDelete: an empty queue has no due time', () => {
    expect(new PublicFaultCache().nextDeleteAt()).toBeUndefined();
  });

  test('§2.8 one entry per (fault × influence) node: two influences on one node share the key', () => {
    const c = new PublicFaultCache();
    c.apply('occur', 'node-1', KEY, rec({ devIds: [0] }), S);
    c.apply('occur', 'node-1', KEY, rec({ devIds: [1] }), S);
    expect([c.size, c.get('node-1', KEY)?.devIds]).toEqual([1, [0]]);
  });

  test('§2.8 two senders with the same faultId are different keys', () => {
    const c = new PublicFaultCache();
    c.apply('occur', 'node-1', faultKey('CCAE', 'fault-0001'), rec(), S);
    c.apply('occur', 'node-1', faultKey('pingmesh', 'fault-0001'), rec({ resource: 'pingmesh' }), S);
    expect(c.size).toBe(2);
  });

  test('§4.2 TestPubFaultCache: delete of an absent entry changes nothing', () => {
    const c = new PublicFaultCache();
    const v = c.version;
    expect([c.delete('node-1', KEY), c.version]).toEqual([false, v]);
  });

  test('§4.2 TestPubFaultCache: the last entry of a node removes the node', () => {
    const c = new PublicFaultCache();
    c.apply('occur', 'node-1', KEY, rec(), S);
    c.delete('node-1', KEY);
    expect([...c.nodes()]).toEqual([]);
  });
});

describe('§2.8 the 50,000 cap', () => {
  function full(): PublicFaultCache {
    const c = new PublicFaultCache();
    for (let i = 0; i < 50_000; i++) c.insert(`node-${i % 1000}`, `CCAEfault-${i}`, rec({ faultId: `fault-${i}` }), S);
    return c;
  }

  test('§2.8 the store accepts exactly 50,000 entries', () => {
    expect(full().size).toBe(50_000);
  });

  test('§2.8 at 50,000 entries an occur is refused', () => {
    const c = full();
    expect([c.apply('occur', 'node-x', KEY, rec(), S), c.size]).toEqual(['capped', 50_000]);
  });

  test('§2.8 at 50,000 entries a once is refused', () => {
    expect(full().apply('once', 'node-x', KEY, rec(), S)).toBe('capped');
  });

  test('§2.8 recover still works at the cap, and makes room', () => {
    const c = full();
    c.apply('recover', 'node-0', 'CCAEfault-0', rec(), S + 10);
    expect(c.apply('occur', 'node-x', KEY, rec(), S + 10)).toBe('added');
  });

  test('§2.8 a configurable cap is honoured', () => {
    const c = new PublicFaultCache({ cap: 1 });
    c.insert('node-1', 'a', rec(), S);
    expect(c.insert('node-1', 'b', rec(), S)).toBe('capped');
  });
});

describe('per-node version and frozen entries (the processor cache relies on them)', () => {
  test('nodeVersion changes on every insert and delete of that node only, never repeats, and is gone with the node', () => {
    const c = new PublicFaultCache();
    c.insert('node-1', 'a', rec(), S);
    c.insert('node-2', 'a', rec(), S);
    const v1 = c.nodeVersion('node-1')!;
    const v2 = c.nodeVersion('node-2')!;
    c.insert('node-1', 'b', rec(), S);
    const v1b = c.nodeVersion('node-1')!;
    const refused = [c.insert('node-1', 'b', rec(), S), c.delete('node-1', 'zz'), c.nodeVersion('node-1')];
    c.delete('node-1', 'b');
    const v1c = c.nodeVersion('node-1')!;
    c.delete('node-1', 'a');
    const gone = c.nodeVersion('node-1');
    c.insert('node-1', 'a', rec(), S);
    expect([
      v1b > v1,
      refused,
      v1c > v1b,
      gone,
      c.nodeVersion('node-1')! > v1c,
      c.nodeVersion('node-2') === v2,
      c.nodeVersion('ghost'),
    ]).toEqual([true, ['exists', false, v1b], true, undefined, true, true, undefined]);
  });

  test('expiry of a queued delete changes the version; stored entries are frozen copies', () => {
    const c = new PublicFaultCache();
    const ids = [0, 1];
    c.apply('once', 'node-1', KEY, rec({ devIds: ids }), S);
    const r = c.get('node-1', KEY)!;
    ids.push(2);
    expect([Object.isFrozen(r), Object.isFrozen(r.devIds), r.devIds]).toEqual([true, true, [0, 1]]);
    const v = c.nodeVersion('node-1');
    c.insert('node-1', 'other', rec(), S);
    expect(c.nodeVersion('node-1')).not.toBe(v);
    const v2 = c.nodeVersion('node-1');
    c.expire(S + 5);
    expect([c.has('node-1', KEY), c.nodeVersion('node-1') !== v2]).toEqual([false, true]);
  });

  test('§2.8 a stored entry has exactly the record members, assertion occur and addTime, in one member order', () => {
    const c = new PublicFaultCache();
    // the same members given in another order and with an extra one: the entry is written out, not spread
    const r = rec({ faultId: 'x-0000001' });
    const given = {
      faultTime: r.faultTime,
      devIds: r.devIds,
      level: r.level,
      extra: 1,
      faultCode: r.faultCode,
      faultType: r.faultType,
      faultId: r.faultId,
      resource: r.resource,
    };
    c.insert('node-1', 'k', given, S + 1);
    c.apply('occur', 'node-2', 'k', rec(), S + 2);
    const a = c.get('node-1', 'k')!;
    const b = c.get('node-2', 'k')!;
    expect([Object.keys(a), Object.keys(b), a]).toEqual([
      ['resource', 'faultId', 'faultType', 'faultCode', 'level', 'devIds', 'faultTime', 'assertion', 'addTime'],
      Object.keys(a),
      { ...r, assertion: 'occur', addTime: S + 1 },
    ]);
  });
});
