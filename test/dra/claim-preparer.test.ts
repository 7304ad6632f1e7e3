/**
 * Issue [DRA] item 1 (and 6): NodePrepareResources / NodeUnprepareResources of the claim preparer — batched,
 * idempotent, fault-aware refusals per claim, one CDI spec per claim, the checkpoint and what the start-up recovery
 * makes of it, the store's `draClaims`. In process, over real files and device nodes.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import { CdiSpecDir } from '../../src/cdi/spec-dir.js';
import type { CdiSpec } from '../../src/cdi/spec.js';
import { ClaimCdi } from '../../src/dra/claim-cdi.js';
import { chipRefusal, ClaimPreparer, type PrepareOutcome, type VnpuPort } from '../../src/dra/claim-preparer.js';
import { CachedClaimReader, type ClaimRef } from '../../src/dra/claims.js';
import { DraCheckpoint } from '../../src/dra/checkpoint.js';
import { lookupDraDevice } from '../../src/dra/device-lookup.js';
import type { ChipState } from '../../src/state/store.js';
import { testStore, type TestStore } from '../state/helpers.js';
import { claimObject, FakeClaimApi, makeCharDevices, MAJOR, mknod, result } from './helpers.js';

const POOL = 'node-1';
const SEPARATE = 0x80e18402; // SeparateNPU (faultCode.json)

interface Rig extends TestStore {
  readonly dir: string;
  readonly api: FakeClaimApi;
  readonly cdiDir: string;
  readonly checkpoint: DraCheckpoint;
  readonly preparer: ClaimPreparer;
  make(o?: {
    vnpu?: VnpuPort;
    resetting?: (id: number) => boolean;
    pluginHeld?: () => Promise<ReadonlySet<number>>;
  }): ClaimPreparer;
}

let rig: Rig | undefined;
afterEach(() => {
  if (rig) fs.rmSync(rig.dir, { recursive: true, force: true });
  rig = undefined;
});

function setup(o: Parameters<Rig['make']>[0] = {}): Rig {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dra-prep-'));
  const devDir = path.join(dir, 'dev');
  makeCharDevices(devDir, 4);
  fs.mkdirSync(path.join(dir, 'state'));
  const ts = testStore();
  const api = new FakeClaimApi();
  const cdiDir = path.join(dir, 'cdi');
  const checkpoint = new DraCheckpoint(path.join(dir, 'state'), POOL);
  const make = (m: Parameters<Rig['make']>[0] = {}): ClaimPreparer =>
    new ClaimPreparer({
      poolName: POOL,
      store: ts.store,
      claims: new CachedClaimReader({ api, clock: ts.clock }),
      lookup: lookupDraDevice,
      checkpoint,
      cdi: new ClaimCdi({
        dir: new CdiSpecDir(cdiDir),
        devDir,
        shared: ['davinci_manager', 'devmm_svm', 'hisi_hdc'].map((n) => ({
          hostPath: path.join(devDir, n),
          containerPath: `/dev/${n}`,
        })),
        mounts: [],
      }),
      clock: ts.clock,
      ...(m.vnpu ? { vnpu: m.vnpu } : {}),
      ...(m.resetting ? { resetting: m.resetting } : {}),
      ...(m.pluginHeld ? { pluginHeld: m.pluginHeld } : {}),
    });
  rig = { ...ts, dir, api, cdiDir, checkpoint, preparer: make(o), make };
  return rig;
}

/** A claim in the API for `devices` of this pool, and its ref. */
function claim(r: Rig, name: string, devices: string[]): ClaimRef {
  const uid = randomUUID();
  r.api.set(
    claimObject(
      uid,
      name,
      devices.map((d) => result(d, POOL)),
    ),
  );
  return { namespace: 'default', name, uid };
}

function specOf(r: Rig, uid: string): CdiSpec | undefined {
  const file = path.join(r.cdiDir, `ascend.com-npu_${uid}.json`);
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as CdiSpec) : undefined;
}

function errorOf(o: PrepareOutcome | undefined): string | undefined {
  return o && 'error' in o ? o.error : undefined;
}

describe('issue [DRA] item 1: NodePrepareResources', () => {
  test('a claim for ascend910-1: one CDI device naming /dev/davinci1 with the host’s numbers, the answer names it', async () => {
    const r = setup();
    const ref = claim(r, 'c1', ['ascend910-1']);
    const out = await r.preparer.prepare([ref]);
    expect(out.get(ref.uid)).toEqual({
      devices: [
        {
          requestNames: ['npu'],
          poolName: POOL,
          deviceName: 'ascend910-1',
          cdiDeviceIds: [`ascend.com/npu=${ref.uid}-ascend910-1`],
        },
      ],
    });
    const spec = specOf(r, ref.uid)!;
    expect(
      spec.devices.map((d) => [d.name, d.containerEdits.deviceNodes!.map((n) => [n.path, n.major, n.minor])]),
    ).toEqual([[`${ref.uid}-ascend910-1`, [['/dev/davinci1', MAJOR.davinci, 1]]]]);
    expect(spec.containerEdits.deviceNodes!.map((n) => n.path)).toEqual([
      '/dev/davinci_manager',
      '/dev/devmm_svm',
      '/dev/hisi_hdc',
    ]);
  });

  test('the store holds the prepared claim (NodeState.draClaims) and the checkpoint holds it prepared', async () => {
    const r = setup();
    const ref = claim(r, 'c1', ['ascend910-2']);
    await r.preparer.prepare([ref]);
    expect(r.store.snapshot().draClaims).toEqual([
      { uid: ref.uid, namespace: 'default', name: 'c1', devices: [{ device: 'ascend910-2', logicId: 2 }] },
    ]);
    expect(r.checkpoint.load()[ref.uid]).toMatchObject({
      state: 'prepared',
      devices: [{ device: 'ascend910-2', logicId: 2 }],
    });
  });

  test('idempotent: the same claim again is answered from the checkpoint, without reading the API, even if its chip failed since', async () => {
    const r = setup();
    const ref = claim(r, 'c1', ['ascend910-1']);
    const first = await r.preparer.prepare([ref]);
    const reads = r.api.reads;
    r.store.applyEvents([{ logicId: 1, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    r.api.claims.clear(); // the claim is even gone from the API
    const again = await r.preparer.prepare([ref, ref]);
    expect([again.get(ref.uid), r.api.reads]).toEqual([first.get(ref.uid), reads]);
  });

  test('batched: one claim on an Unhealthy chip is refused, the other in the same request is prepared', async () => {
    const r = setup();
    r.store.applyEvents([{ logicId: 3, code: SEPARATE, assertion: 'occur', severity: 2 }]);
    const bad = claim(r, 'bad', ['ascend910-3']);
    const good = claim(r, 'good', ['ascend910-0']);
    const out = await r.preparer.prepare([bad, good]);
    expect(errorOf(out.get(bad.uid))).toMatch(
      /refusing to prepare ascend910-3 for default\/bad: chip Ascend910-3 is Unhealthy \(level SeparateNPU\)/,
    );
    expect(errorOf(out.get(good.uid))).toBeUndefined();
    expect([specOf(r, bad.uid), r.checkpoint.load()[bad.uid]]).toEqual([undefined, undefined]);
  });

  test('-deviceApi=both: a chip the device plugin has handed out is refused; kubelet is asked once per batch', async () => {
    const r = setup();
    let asked = 0;
    const p = r.make({ pluginHeld: () => (asked++, Promise.resolve(new Set([2]))) });
    const held = claim(r, 'held', ['ascend910-2']);
    const free = claim(r, 'free', ['ascend910-1']);
    const out = await p.prepare([held, free]);
    expect(errorOf(out.get(held.uid))).toBe(
      'refusing to prepare ascend910-2 for default/held: chip Ascend910-2 is allocated through the device plugin',
    );
    expect([errorOf(out.get(free.uid)), specOf(r, held.uid), asked]).toEqual([undefined, undefined, 1]);
  });

  test('-deviceApi=both: a claim already prepared is answered from the checkpoint without asking kubelet', async () => {
    const r = setup();
    let asked = 0;
    const p = r.make({ pluginHeld: () => (asked++, Promise.resolve(new Set<number>())) });
    const ref = claim(r, 'c1', ['ascend910-1']);
    const first = await p.prepare([ref]);
    const again = await p.prepare([ref]);
    expect([again.get(ref.uid), asked]).toEqual([first.get(ref.uid), 1]);
  });

  test('a chip being reset (task-aware reset: reported Healthy meanwhile) is refused', async () => {
    const r = setup();
    const p = r.make({ resetting: (id) => id === 2 });
    const ref = claim(r, 'c', ['ascend910-2']);
    expect(errorOf((await p.prepare([ref])).get(ref.uid))).toMatch(/chip Ascend910-2 is being reset/);
  });

  test.each([
    [{ recovering: true }, /is being reset/],
    [{ manuallySeparated: true, level: 'ManuallySeparateNPU' }, /is manually separated \(level ManuallySeparateNPU\)/],
    [{ level: 'PreSeparateNPU' }, /is separated \(level PreSeparateNPU\)/],
    [{ health: 'Unhealthy', level: 'RestartNPU' }, /is Unhealthy \(level RestartNPU\)/],
  ] as const)('chipRefusal %j', (patch, expected) => {
    const base = { health: 'Healthy', level: 'NormalNPU', manuallySeparated: false, recovering: false } as const;
    expect(chipRefusal({ ...base, ...patch } as unknown as ChipState, false)).toMatch(expected);
    expect(chipRefusal(base as unknown as ChipState, false)).toBeUndefined();
  });

  test('a device of another pool, or not on this node, is a per-claim error; another driver’s result is left alone', async () => {
    const r = setup();
    const other = randomUUID();
    r.api.set(claimObject(other, 'other-pool', [result('ascend910-1', 'node-2')]));
    const unknown = randomUUID();
    r.api.set(claimObject(unknown, 'unknown', [result('ascend910-9', POOL)]));
    const mixed = randomUUID();
    r.api.set(
      claimObject(mixed, 'mixed', [
        { request: 'gpu', driver: 'gpu.example.com', pool: POOL, device: 'gpu-0' },
        result('ascend910-0', POOL),
      ]),
    );
    const refs = [other, unknown, mixed].map((uid, i) => ({
      namespace: 'default',
      name: ['other-pool', 'unknown', 'mixed'][i]!,
      uid,
    }));
    const out = await r.preparer.prepare(refs);
    expect(errorOf(out.get(other))).toMatch(/allocated from pool node-2; this node's pool is node-1/);
    expect(errorOf(out.get(unknown))).toMatch(/ascend910-9 of default\/unknown is not a device of this node/);
    expect(out.get(mixed)).toMatchObject({ devices: [{ deviceName: 'ascend910-0' }] });
  });

  test('a claim replaced (another uid), not allocated, or not found is a per-claim error', async () => {
    const r = setup();
    r.api.set(claimObject(randomUUID(), 'replaced', [result('ascend910-0', POOL)]));
    r.api.set(claimObject(randomUUID(), 'pending', undefined));
    const refs: ClaimRef[] = ['replaced', 'pending', 'missing'].map((name) => ({
      namespace: 'default',
      name,
      uid: randomUUID(),
    }));
    refs[1] = { ...refs[1]!, uid: (r.api.claims.get('default/pending') as { metadata: { uid: string } }).metadata.uid };
    const out = await r.preparer.prepare(refs);
    expect(refs.map((x) => errorOf(out.get(x.uid)))).toEqual([
      expect.stringMatching(/ResourceClaim default\/replaced has uid .* kubelet asked for .* \(replaced\)/),
      'ResourceClaim default/pending is not allocated',
      'ResourceClaim default/missing not found',
    ]);
  });

  test('a device another prepared claim holds is refused (the scheduler should never do it: said, not obeyed)', async () => {
    const r = setup();
    const first = claim(r, 'first', ['ascend910-1']);
    await r.preparer.prepare([first]);
    const second = claim(r, 'second', ['ascend910-1']);
    expect(errorOf((await r.preparer.prepare([second])).get(second.uid))).toMatch(
      /already prepared for claim default\/first/,
    );
  });

  test('hostile API answers: a malformed result, more results than the API allows — each the claim’s own error', async () => {
    const r = setup();
    const bad = randomUUID();
    r.api.set(
      claimObject(bad, 'bad', [{ request: 7, driver: 'npu.huawei.com', pool: POOL, device: 'ascend910-0' } as never]),
    );
    const many = randomUUID();
    r.api.set(
      claimObject(
        many,
        'many',
        Array.from({ length: 33 }, (_, i) => result(`ascend910-${i % 4}`, POOL, `r${i}`)),
      ),
    );
    const good = claim(r, 'good', ['ascend910-1']);
    const out = await r.preparer.prepare([
      { namespace: 'default', name: 'bad', uid: bad },
      { namespace: 'default', name: 'many', uid: many },
      good,
    ]);
    expect(errorOf(out.get(bad))).toMatch(/default\/bad has a malformed allocation result/);
    expect(errorOf(out.get(many))).toBe('default/many has 33 allocation results, the API allows 32');
    expect(errorOf(out.get(good.uid))).toBeUndefined();
  });

  test('a uid that is not usable in a file name is refused before anything is read', async () => {
    const r = setup();
    const out = await r.preparer.prepare([{ namespace: 'default', name: 'x', uid: '../../etc' }]);
    expect([errorOf(out.get('../../etc')), r.api.reads]).toEqual([expect.stringMatching(/not a Kubernetes uid/), 0]);
  });

  test('a device node that is not a character device: the claim fails and leaves no spec and no checkpoint entry', async () => {
    const r = setup();
    const node = path.join(r.dir, 'dev', 'davinci2');
    fs.rmSync(node);
    fs.writeFileSync(node, '');
    const ref = claim(r, 'c', ['ascend910-2']);
    const out = await r.preparer.prepare([ref]);
    expect(errorOf(out.get(ref.uid))).toMatch(/davinci2: is not a character device/);
    expect([specOf(r, ref.uid), r.checkpoint.load(), r.store.snapshot().draClaims]).toEqual([undefined, {}, []]);
  });

  test('a checkpoint that cannot be written: every claim of the batch fails, nothing is left', async () => {
    const r = setup();
    fs.mkdirSync(r.checkpoint.file); // the rename onto it fails
    const ref = claim(r, 'c', ['ascend910-0']);
    const out = await r.preparer.prepare([ref]);
    expect(errorOf(out.get(ref.uid))).toMatch(/the DRA checkpoint cannot be written/);
    expect(fs.existsSync(r.cdiDir) ? fs.readdirSync(r.cdiDir) : []).toEqual([]);
  });
});

describe('issue [DRA] item 1: NodeUnprepareResources', () => {
  test('removes the spec, the checkpoint entry and the store’s hold; an unknown claim is a success', async () => {
    const r = setup();
    const ref = claim(r, 'c', ['ascend910-0']);
    await r.preparer.prepare([ref]);
    const out = await r.preparer.unprepare([ref, { namespace: 'default', name: 'never', uid: randomUUID() }]);
    expect([...out.values()]).toEqual([undefined, undefined]);
    expect([specOf(r, ref.uid), r.checkpoint.load(), r.store.snapshot().draClaims]).toEqual([undefined, {}, []]);
    // and the device is free again for another claim
    const next = claim(r, 'next', ['ascend910-0']);
    expect(errorOf((await r.preparer.prepare([next])).get(next.uid))).toBeUndefined();
  });
});

describe('issue [DRA] items 1, 5: vNPU partitions (named as the API side publishes them)', () => {
  const PART = 'ascend910-1-vir05-1c-16g-0';

  test('prepare creates the vNPU and exposes /dev/vdavinci<id> at /dev/davinci<id>; unprepare destroys it', async () => {
    const calls: string[] = [];
    const vnpu: VnpuPort = {
      create: (chip, template) => (calls.push(`create ${chip.logicId} ${template}`), { vdevId: 100 }),
      destroy: (chip, vdevId) => void calls.push(`destroy ${chip.logicId} ${vdevId}`),
    };
    const r = setup();
    mknod(path.join(r.dir, 'dev', 'vdavinci100'), MAJOR.vdavinci, 100);
    const p = r.make({ vnpu });
    const ref = claim(r, 'part', [PART]);
    expect(errorOf((await p.prepare([ref])).get(ref.uid))).toBeUndefined();
    const node = specOf(r, ref.uid)!.devices[0]!.containerEdits.deviceNodes![0]!;
    expect([node.path, node.hostPath, node.major, node.minor]).toEqual([
      '/dev/davinci100',
      path.join(r.dir, 'dev', 'vdavinci100'),
      MAJOR.vdavinci,
      100,
    ]);
    expect(r.checkpoint.load()[ref.uid]!.devices[0]).toMatchObject({ template: 'vir05_1c_16g', vdevId: 100 });
    await p.unprepare([ref]);
    expect(calls).toEqual(['create 1 vir05_1c_16g', 'destroy 1 100']);
  });

  test('without a vNPU port a partition is refused; a failed create is the claim’s error', async () => {
    const r = setup();
    const ref = claim(r, 'part', [PART]);
    expect(errorOf((await r.make().prepare([ref])).get(ref.uid))).toMatch(/creates no vNPUs/);
    const failing: VnpuPort = {
      create: () => {
        throw new Error('dcmi_create_vdevice -8005');
      },
      destroy: () => undefined,
    };
    const out = await r.make({ vnpu: failing }).prepare([ref]);
    expect(errorOf(out.get(ref.uid))).toMatch(
      /vNPU vir05_1c_16g for ascend910-1-vir05-1c-16g-0 cannot be created on Ascend910-1: dcmi_create_vdevice -8005/,
    );
  });
});

describe('issue [DRA] item 1: start-up recovery from the checkpoint', () => {
  test('a claim left preparing is undone (spec removed); a prepared one is kept and its missing spec written again', async () => {
    const r = setup();
    const kept = claim(r, 'kept', ['ascend910-0']);
    await r.preparer.prepare([kept]);
    const cut = randomUUID();
    const saved = r.checkpoint.load();
    r.checkpoint.save({
      ...saved,
      [cut]: {
        namespace: 'default',
        name: 'cut',
        state: 'preparing',
        devices: [
          { ...saved[kept.uid]!.devices[0]!, device: 'ascend910-3', logicId: 3, cdiName: `${cut}-ascend910-3` },
        ],
      },
    });
    fs.copyFileSync(
      path.join(r.cdiDir, `ascend.com-npu_${kept.uid}.json`),
      path.join(r.cdiDir, `ascend.com-npu_${cut}.json`),
    );
    fs.rmSync(path.join(r.cdiDir, `ascend.com-npu_${kept.uid}.json`));
    const fresh = r.make();
    const report = fresh.recover();
    expect(report).toMatchObject({ kept: 1, undone: [cut], specsRewritten: [kept.uid] });
    expect([specOf(r, cut), specOf(r, kept.uid)?.devices[0]?.name]).toEqual([undefined, `${kept.uid}-ascend910-0`]);
    expect(Object.keys(r.checkpoint.load())).toEqual([kept.uid]);
    expect(r.store.snapshot().draClaims.map((c) => c.uid)).toEqual([kept.uid]);
  });

  test('specs of claims the checkpoint does not know (a crash before the intent was written) are removed; others kept', () => {
    const r = setup();
    fs.mkdirSync(r.cdiDir, { recursive: true });
    const orphan = randomUUID();
    for (const f of [`ascend.com-npu_${orphan}.json`, 'ascend.com-npu.json', 'nvidia.com-gpu_x.json'])
      fs.writeFileSync(path.join(r.cdiDir, f), '{}');
    expect(r.make().recover().orphanSpecsRemoved).toEqual([orphan]);
    expect(fs.readdirSync(r.cdiDir).sort()).toEqual(['ascend.com-npu.json', 'nvidia.com-gpu_x.json']);
  });

  test('a damaged checkpoint is moved aside and said; the specs are left alone (their claims are unknown)', async () => {
    const r = setup();
    const ref = claim(r, 'c', ['ascend910-0']);
    await r.preparer.prepare([ref]);
    const text = fs.readFileSync(r.checkpoint.file, 'utf8').replace('ascend910-0', 'ascend910-1');
    fs.writeFileSync(r.checkpoint.file, text); // content changed, checksum not
    const report = r.make().recover();
    expect(report.unusable).toMatch(/checksum does not match \(damaged\); moved to .*dra-checkpoint\.json\.bad-/);
    expect([specOf(r, ref.uid) !== undefined, r.checkpoint.load()]).toEqual([true, {}]);
  });
});
