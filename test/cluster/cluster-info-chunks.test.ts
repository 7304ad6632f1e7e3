/**
 * The published view (cluster-faults §0.3) as readers see it (issue [O] item 6: exactly ClusterD's five keys per
 * node) and the incremental chunks (issue [O] item 1: a chunk is rewritten only when its bytes change).
 */
import { describe, expect, test } from '@jest/globals';
import { buildChunks, ClusterInfoChunks, mergeFaults, publishedNodeJson } from '../../src/cluster/cluster-info.js';
import type { DeviceFault, NodeDeviceView } from '../../src/cluster/device-view.js';
import { parseDeviceInfoConfigMap } from '../../src/cluster/device-info-intake.js';
import { checkCodeOf } from '../../src/kube/device-info.js';
import { clusterInfoKeys, faultObject, readClusterInfo } from './helpers.js';

function view(node: string, deviceList: Record<string, string>, deviceType = 'Ascend910'): NodeDeviceView {
  return {
    node,
    deviceType,
    deviceList,
    updateTime: 5,
    superPodId: -2,
    serverIndex: -2,
    rackId: -2,
    faults: new Map(),
  };
}

/** A 310P node as its device plugin writes it: no -NetworkUnhealthy and no -Recovering key, plus virtual counts. */
function view310p(node: string): NodeDeviceView {
  const list = {
    'huawei.com/Ascend310P': 'Ascend310P-0,Ascend310P-1',
    'huawei.com/Ascend310P-Unhealthy': '',
    'huawei.com/Ascend310P-Fault': '[]',
    'huawei.com/Ascend310P-2c': '4',
    ManuallySeparateNPU: '',
  };
  const text = JSON.stringify({ DeviceInfo: { DeviceList: list, UpdateTime: 9 }, CheckCode: checkCodeOf(list, 9) });
  const r = parseDeviceInfoConfigMap({
    metadata: { name: `mindx-dl-deviceinfo-${node}`, namespace: 'kube-system' },
    data: { DeviceInfoCfg: text },
  });
  if (!r.ok) throw new Error(r.detail);
  return r.view;
}

const df = (dev: string, code: string, time: number, type = 'PublicFault'): DeviceFault => ({
  code,
  level: 'SeparateNPU',
  faultTime: time,
  receivedTime: 0,
  object: faultObject(dev, code, 'SeparateNPU', time, type),
});

describe('issue [O] item 6: what the readers see', () => {
  test('0.3 a 310P node is published with exactly ClusterD\'s five keys: no "don\'t have key" warning', () => {
    const json = publishedNodeJson(view310p('p1'));
    const r = readClusterInfo([`{"mindx-dl-deviceinfo-p1":${json}}`]);
    expect([r.warnings, r.extraKeys]).toEqual([[], []]);
  });

  test('0.3 keys of the node beyond the five (virtual-device counts, ManuallySeparateNPU) are not passed through', () => {
    const published = JSON.parse(publishedNodeJson(view310p('p1'))) as { DeviceList: Record<string, string> };
    expect(Object.keys(published.DeviceList)).toEqual(clusterInfoKeys('Ascend310P'));
  });

  test('0.3 a node without faults is published with -Fault "[]", the lists "" when the node had none', () => {
    const published = JSON.parse(publishedNodeJson(view('n', {}))) as { DeviceList: Record<string, string> };
    expect(published.DeviceList).toEqual({
      'huawei.com/Ascend910': '',
      'huawei.com/Ascend910-Fault': '[]',
      'huawei.com/Ascend910-NetworkUnhealthy': '',
      'huawei.com/Ascend910-Recovering': '',
      'huawei.com/Ascend910-Unhealthy': '',
    });
  });

  test('2.9 two public faults with the same code and different faultTime publish "fault_code":"A,A"', () => {
    const m = mergeFaults(new Map([['Ascend910-2', [df('Ascend910-2', 'A', 1), df('Ascend910-2', 'A', 2)]]]));
    expect(m.map((o) => o.fault_code)).toEqual(['A,A']);
  });
});

/** A published value of about `bytes` bytes (valid JSON). */
function member(_node: string, bytes: number): string {
  return `{"x":"${'y'.repeat(Math.max(0, bytes - 8))}"}`;
}

describe('issue [O] item 1: incremental chunks', () => {
  const nodes = (n: number, size = 100) =>
    new Map<string, string | null>(
      Array.from({ length: n }, (_, i) => [`n${String(i).padStart(3, '0')}`, member('', size)]),
    );

  test('0.3 a first fill packs nodes in name order exactly as buildChunks does (same bytes)', () => {
    const views = new Map(
      Array.from({ length: 40 }, (_, i) => {
        const n = `node-${i}`;
        return [n, view(n, { 'huawei.com/Ascend910': `Ascend910-${i % 8}`.repeat(1 + (i % 5)) })] as const;
      }),
    );
    const c = new ClusterInfoChunks(3000);
    c.apply(new Map([...views].map(([n, v]) => [n, publishedNodeJson(v)])));
    expect(Array.from({ length: c.count }, (_, i) => c.text(i))).toEqual(buildChunks(views, 0, 3000));
  });

  /** 40 views of varied sizes, so that a later small node would fit into an earlier chunk's room. */
  const variedViews = () =>
    new Map(
      Array.from({ length: 40 }, (_, i) => {
        const n = `node-${String(i).padStart(2, '0')}`;
        return [n, view(n, { 'huawei.com/Ascend910': `Ascend910-${i % 8}`.repeat(i % 3 === 0 ? 60 : 1) })] as const;
      }),
    );
  const sliced = (views: Map<string, NodeDeviceView>, slice: number, c: ClusterInfoChunks, sealed: string[][] = []) => {
    const all = [...views];
    for (let k = 0; k < all.length; k += slice) {
      c.apply(new Map(all.slice(k, k + slice).map(([n, v]) => [n, publishedNodeJson(v)])), { sequential: true });
      sealed.push(Array.from({ length: c.sealed }, (_, i) => c.text(i)));
    }
    return c;
  };

  test('0.3 a first fill in slices (issue [O] start-up) packs nodes exactly as buildChunks does (same bytes)', () => {
    const views = variedViews();
    const c = sliced(views, 7, new ClusterInfoChunks(3000));
    expect(Array.from({ length: c.count }, (_, i) => c.text(i))).toEqual(buildChunks(views, 0, 3000));
  });

  test('0.3 a first fill in slices never adds a node to a sealed chunk: what was sealed is what is written last', () => {
    const sealed: string[][] = [];
    const c = sliced(variedViews(), 7, new ClusterInfoChunks(3000), sealed);
    const last = Array.from({ length: c.count }, (_, i) => c.text(i));
    expect([sealed.at(-2)!.length > 1, sealed.every((s) => s.every((t, i) => t === last[i]))]).toEqual([true, true]);
  });

  test('0.3 a first fill in slices at a take-over fills the chunk indices found in use first, in order', () => {
    const views = variedViews();
    const c = new ClusterInfoChunks(3000);
    c.ensureChunks(3);
    sliced(views, 7, c);
    expect(Array.from({ length: c.count }, (_, i) => c.text(i))).toEqual(buildChunks(views, 3, 3000));
  });

  test('issue [O] start-up: takeDirty(below) takes only the dirty chunks below the index and leaves the others dirty', () => {
    const c = new ClusterInfoChunks(2000);
    c.apply(nodes(60));
    const below = c.takeDirty(2);
    expect([below, c.takeDirty()]).toEqual([[0, 1], Array.from({ length: c.count - 2 }, (_, i) => i + 2)]);
  });

  test('0.3 every chunk value is valid JSON under the limit, with keys in Go (sorted) order', () => {
    const c = new ClusterInfoChunks(2000);
    c.apply(nodes(60));
    for (let i = 0; i < c.count; i++) {
      const keys = Object.keys(JSON.parse(c.text(i)) as object);
      expect([Buffer.byteLength(c.text(i)) <= 2000, c.bytes(i) === Buffer.byteLength(c.text(i))]).toEqual([true, true]);
      expect(keys).toEqual([...keys].sort());
    }
  });

  test('issue [O] 1: one changed node marks only its chunk dirty', () => {
    const c = new ClusterInfoChunks(2000);
    c.apply(nodes(60));
    c.takeDirty();
    c.apply(new Map([['n030', member('', 90)]]));
    expect(c.takeDirty()).toEqual([c.chunkOf('n030')]);
  });

  test('issue [O] 1: an unchanged value marks nothing', () => {
    const c = new ClusterInfoChunks(2000);
    const v = nodes(60);
    c.apply(v);
    c.takeDirty();
    c.apply(new Map([['n030', v.get('n030')!]]));
    expect(c.takeDirty()).toEqual([]);
  });

  test('0.3 a node that outgrows its full chunk moves to a chunk with room; both chunks are written', () => {
    const c = new ClusterInfoChunks(2000);
    c.apply(nodes(60));
    const before = c.chunkOf('n000')!;
    c.takeDirty();
    c.apply(new Map([['n000', member('', 900)]]));
    const after = c.chunkOf('n000')!;
    expect([after !== before, c.takeDirty().sort()]).toEqual([true, [before, after].sort()]);
    for (let i = 0; i < c.count; i++) expect(c.bytes(i)).toBeLessThanOrEqual(2000);
  });

  test('0.3 a node that left the view leaves its chunk; the index stays in use and an empty chunk is "{}"', () => {
    const c = new ClusterInfoChunks();
    c.ensureChunks(3);
    c.apply(new Map([['a', member('', 20)]]));
    c.apply(new Map([['a', null]]));
    expect([c.count, c.text(0), c.text(2), c.nodeCount]).toEqual([3, '{}', '{}', 0]);
  });

  test('0.3 the chunks read back as one map with every node once', () => {
    const c = new ClusterInfoChunks(2000);
    c.apply(nodes(60));
    c.apply(
      new Map([
        ['n000', member('', 900)],
        ['n010', null],
      ]),
    );
    const all = Array.from({ length: c.count }, (_, i) => Object.keys(JSON.parse(c.text(i)) as object)).flat();
    expect([all.length, new Set(all).size, all.includes('mindx-dl-deviceinfo-n010')]).toEqual([59, 59, false]);
  });

  test('issue [O] 1: the escaped value equals the escaped text after changes, moves and removals (quotes, backslashes, control and non-ASCII characters)', () => {
    const c = new ClusterInfoChunks(2000);
    const odd = (i: number) => JSON.stringify({ x: `q"\\${String.fromCharCode(i % 32)}é€😀`.repeat(1 + (i % 7)) });
    c.apply(new Map(Array.from({ length: 60 }, (_, i) => [`n${String(i).padStart(3, '0')}`, odd(i)])));
    const check = () => {
      for (let i = 0; i < c.count; i++) {
        expect(c.escapedValue(i).toString('utf8')).toBe(JSON.stringify(c.text(i)).slice(1, -1));
      }
    };
    check();
    c.apply(
      new Map([
        ['n005', odd(90)],
        ['n000', member('', 900)],
        ['n010', null],
        ['n100', odd(3)],
      ]),
    );
    check();
  });
});
