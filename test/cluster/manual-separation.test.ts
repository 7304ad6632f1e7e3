import { describe, expect, test } from '@jest/globals';
import { ManualSeparation, type ReleaseReason } from '../../src/cluster/manual-separation.js';
import { parsePolicy } from '../../src/cluster/policy.js';
import { policyText } from './helpers.js';

const H = 3_600_000;
const T = 1772445599000;

function separated(free = '48'): { m: ManualSeparation; releases: [string, ReleaseReason][] } {
  const releases: [string, ReleaseReason][] = [];
  const m = new ManualSeparation({ listener: { released: (_n, d, _c, r) => releases.push([d, r]) } });
  m.setPolicy(parsePolicy(policyText({ threshold: '1', free })));
  m.intake({ jobId: '', node: 'node-1', dev: 'x', code: 'c', receivedTime: T }, T); // jobless: dropped
  m.counter.add(
    { node: 'node-1', dev: 'Ascend910-3', code: '80E01801', receivedTime: T },
    { threshold: 1, windowMs: H },
    T,
  );
  return { m, releases };
}

function writeOnce(m: ManualSeparation, now: number): void {
  const r = m.releaseTick(now, { kind: 'missing' });
  m.written(r.action);
}

describe('1.6 15 s management step', () => {
  test('1.6 an empty cache deletes the ConfigMap', () => {
    expect(new ManualSeparation().releaseTick(T, { kind: 'missing' }).action).toEqual({ kind: 'delete' });
  });

  test('1.6 a separation is written as the node key', () => {
    const { m } = separated();
    const r = m.releaseTick(T, { kind: 'missing' });
    expect(r.action.kind === 'write' && Object.keys(r.action.data)).toEqual(['node-1']);
  });

  test('1.6 operator removal from Total releases the device and clears its counter', () => {
    const { m, releases } = separated();
    writeOnce(m, T);
    m.counter.add(
      { node: 'node-1', dev: 'Ascend910-3', code: 'other', receivedTime: T },
      { threshold: 3, windowMs: H },
      T,
    );
    const r = m.releaseTick(T + 15_000, { kind: 'data', data: { 'node-1': '{"Total":[],"Detail":{}}' } });
    expect([r.action, releases, m.counter.size]).toEqual([{ kind: 'delete' }, [['Ascend910-3', 'operator']], 0]);
  });

  test('1.6 operator additions are ignored and overwritten', () => {
    const { m } = separated();
    writeOnce(m, T);
    const r = m.releaseTick(T + 15_000, {
      kind: 'data',
      data: { 'node-1': '{"Total":["Ascend910-3","Ascend910-7"]}' },
    });
    expect(r.action.kind === 'write' && JSON.parse(r.action.data['node-1']!).Total).toEqual(['Ascend910-3']);
  });

  test('1.6 a deleted ConfigMap releases every device last written', () => {
    const { m } = separated();
    writeOnce(m, T);
    expect(m.releaseTick(T + 15_000, { kind: 'missing' }).action).toEqual({ kind: 'delete' });
  });

  test('1.6 a read error skips removal detection', () => {
    const { m } = separated();
    writeOnce(m, T);
    expect(m.releaseTick(T + 15_000, { kind: 'error', message: 'boom' }).action.kind).toBe('write');
  });

  test('deviation 1.6: an unreadable key is reported and its node is not released', () => {
    const { m } = separated();
    writeOnce(m, T);
    const r = m.releaseTick(T + 15_000, { kind: 'data', data: { 'node-1': 'not json' } });
    expect([r.action.kind, r.bad.map((b) => b.key)]).toEqual(['write', ['node-1']]);
  });

  test('1.6 auto-release is inclusive at fault_free_hours', () => {
    const { m, releases } = separated();
    const r = m.releaseTick(T + 48 * H, { kind: 'missing' });
    expect([r.action, releases]).toEqual([{ kind: 'delete' }, [['Ascend910-3', 'auto']]]);
  });

  test('1.6 auto-release does not fire one ms early', () => {
    const { m } = separated();
    expect(m.releaseTick(T + 48 * H - 1, { kind: 'missing' }).action.kind).toBe('write');
  });

  test('1.6 fault_free_hours -1 disables auto-release', () => {
    const { m } = separated('-1');
    expect(m.releaseTick(T + 1000 * H, { kind: 'missing' }).action.kind).toBe('write');
  });

  test('1.6 a failed write leaves LastCmInfo unchanged', () => {
    const { m } = separated();
    m.releaseTick(T, { kind: 'missing' });
    expect(m.lastCmInfo.size).toBe(0);
  });

  test('1.2 loading enabled: false wipes counter, cache and LastCmInfo', () => {
    const { m, releases } = separated();
    writeOnce(m, T);
    m.setPolicy(parsePolicy(policyText({ enabled: 'false' })));
    expect([m.cache.isEmpty, m.lastCmInfo.size, releases]).toEqual([true, 0, [['Ascend910-3', 'disabled']]]);
  });

  test('1.2 while disabled nothing is taken in', () => {
    const m = new ManualSeparation();
    m.setPolicy(parsePolicy(policyText({ enabled: 'false' })));
    m.intake({ jobId: 'J', node: 'n', dev: 'd', code: 'c', receivedTime: T }, T);
    expect(m.jobs.jobIds).toEqual([]);
  });

  test('1.12 item 1: jobless faults are dropped by default (upstream)', () => {
    const m = new ManualSeparation();
    m.setPolicy(parsePolicy(policyText({ threshold: '1' })));
    m.intake({ jobId: '', node: 'n', dev: 'd', code: 'c', receivedTime: T }, T);
    expect(m.cache.isEmpty).toBe(true);
  });

  test('1.12 item 1: countJoblessFaults counts jobless faults directly (RFC)', () => {
    const m = new ManualSeparation({ countJoblessFaults: true });
    m.setPolicy(parsePolicy(policyText({ threshold: '1' })));
    m.intake({ jobId: '', node: 'n', dev: 'd', code: 'c', receivedTime: T }, T);
    expect(m.cache.has('n', 'd')).toBe(true);
  });
});

describe('1.9 restart', () => {
  const data = {
    'node-1':
      '{"Total":["Ascend910-3"],"Detail":{"Ascend910-3":[{"FaultCode":"c","FaultLevel":"ManuallySeparateNPU","LastSeparateTime":1}]}}',
  };

  test('deviation 1.9: without a loaded policy restored separations are not auto-released', () => {
    const m = new ManualSeparation();
    m.load(data);
    expect(m.releaseTick(T, { kind: 'data', data }).action.kind).toBe('write');
  });

  test('1.9 a loaded ConfigMap fills the cache', () => {
    const m = new ManualSeparation();
    m.load(data);
    expect(m.cache.has('node-1', 'Ascend910-3')).toBe(true);
  });

  test('deviation 1.9: an operator removal in the first tick after start is honoured', () => {
    const m = new ManualSeparation();
    m.load(data);
    expect(m.releaseTick(T, { kind: 'data', data: { 'node-1': '{"Total":[]}' } }).action).toEqual({ kind: 'delete' });
  });

  test('1.9 the counter state survives export/restore', () => {
    const { m } = separated();
    m.counter.add({ node: 'n', dev: 'd', code: 'c', receivedTime: T }, { threshold: 3, windowMs: H }, T);
    const n = new ManualSeparation();
    n.restoreState(m.exportState());
    expect(n.counter.export()).toEqual(m.counter.export());
  });
});
