/**
 * Issue [O] item 2: the persisted state of any size (docs/fault-center.md "Persisted state"): every write below
 * the 1 MiB ConfigMap limit, a head written last as the commit point, base parts in the set the durable head does
 * not use, so that a restart reads exactly the state of one commit whatever write failed.
 */
import { describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../../src/core/logger.js';
import type { ConfigMapBody } from '../../src/kube/configmap-writer.js';
import { decodeHead, headName, partName, PART_KEY, STATE_KEY } from '../../src/cluster/persisted-state.js';
import { StateStore, type StateIo } from '../../src/cluster/state-store.js';

const LIMIT = 1024 * 1024;

/** An API stand-in for the store: objects by name, the 1 MiB limit (422 → refused), optional failures. */
class FakeIo implements StateIo {
  readonly objects = new Map<string, { data?: Record<string, string>; binaryData?: Record<string, string> }>();
  readonly writes: { name: string; bytes: number }[] = [];
  /** names whose next writes are refused */
  refuse = new Set<string>();
  readFails = false;

  async read(name: string) {
    await Promise.resolve();
    if (this.readFails) throw new Error('connection refused');
    const o = this.objects.get(name);
    return o === undefined ? undefined : structuredClone(o);
  }

  async write(body: ConfigMapBody): Promise<boolean> {
    await Promise.resolve();
    const name = body.metadata.name;
    let bytes = 0;
    for (const m of [body.data, body.binaryData])
      for (const [k, v] of Object.entries(m ?? {})) bytes += k.length + v.length;
    this.writes.push({ name, bytes });
    if (bytes > LIMIT || this.refuse.has(name)) return false;
    this.objects.set(name, {
      ...(body.data ? { data: { ...body.data } } : {}),
      ...(body.binaryData ? { binaryData: { ...body.binaryData } } : {}),
    });
    return true;
  }
}

const errors: string[] = [];
const logger: Logger = {
  info: () => undefined,
  debug: () => undefined,
  warn: () => undefined,
  error: (_o: unknown, msg?: string) => void errors.push(String(msg)),
};

function store(io: StateIo, extra: Partial<ConstructorParameters<typeof StateStore>[0]> = {}): StateStore {
  return new StateStore({
    leaseName: 'afc',
    namespace: 'cluster-system',
    io,
    logger,
    minIntervalMs: 0,
    retryMs: 10,
    ...extra,
  });
}

/** Pseudo-random, poorly compressible records of about `bytes` each. */
function records(n: number, bytes: number, salt = 0): Map<string, string> {
  let x = 12345 + salt;
  const next = () => (x = (x * 1103515245 + 12345) & 0x7fffffff);
  return new Map(
    Array.from({ length: n }, (_, i) => {
      let s = '';
      while (s.length < bytes) s += next().toString(36);
      return [`node-${i}`, JSON.stringify({ s: { 'Ascend910-1': [[s.slice(0, bytes), 'RestartNPU', i]] } })];
    }),
  );
}

/** Waits until `cond` holds (at most 10 s: a loaded machine runs the store's background write late), instead of a fixed sleep. */
async function until(cond: () => boolean): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!cond() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

async function commit(s: StateStore, changes: Map<string, string | null>, seq = 1): Promise<void> {
  s.update(changes, seq);
  await s.flush();
}

describe('issue [O] item 2: persisted state in ConfigMaps below 1 MiB', () => {
  test('a small state is one head; a new store reads the same records and job sequence', async () => {
    const io = new FakeIo();
    const recs = records(10, 50);
    await commit(store(io), recs, 42);
    const loaded = await store(io).load();
    expect(loaded.kind === 'v2' && [loaded.records, loaded.nextJobSeq, [...io.objects.keys()]]).toEqual([
      recs,
      42,
      [headName('afc')],
    ]);
  });

  test('a state of 3 MiB is written as a base of parts plus a head, every write below 1 MiB, and reads back', async () => {
    const io = new FakeIo();
    const recs = records(3000, 1000);
    await commit(store(io), recs);
    const loaded = await store(io).load();
    expect([
      loaded.kind === 'v2' && loaded.records.size,
      loaded.kind === 'v2' && loaded.records.get('node-2999') === recs.get('node-2999'),
      io.writes.every((w) => w.bytes < LIMIT),
      [...io.objects.keys()].filter((n) => n.startsWith('afc-state-a-')).length > 1,
    ]).toEqual([3000, true, true, true]);
  });

  test('changes after a compaction go into the head only (the base is not rewritten)', async () => {
    const io = new FakeIo();
    const s = store(io);
    await commit(s, records(3000, 1000));
    const before = io.writes.length;
    await commit(s, new Map([['node-7', '{"l":["Ascend910-1"]}']]));
    expect(io.writes.slice(before).map((w) => w.name)).toEqual([headName('afc')]);
  });

  test('a compaction whose head write fails leaves the previous commit readable (parts went to the other set)', async () => {
    const io = new FakeIo();
    const s = store(io, { headMaxBytes: 64 * 1024 });
    const first = records(3000, 300);
    await commit(s, first);
    const firstSet = decodeHead(io.objects.get(headName('afc'))!.data![STATE_KEY]!);
    io.refuse.add(headName('afc'));
    const writesBefore = io.writes.length;
    s.update(records(3000, 300, 7), 1); // every record changed: a new base, then the refused head
    await until(() => io.writes.slice(writesBefore).some((w) => w.name === headName('afc')));
    s.close();
    const loaded = await store(io).load();
    expect([
      firstSet.kind === 'v2' && firstSet.head.header.base?.set,
      io.objects.has(partName('afc', 'b', 0)),
      loaded.kind === 'v2' && loaded.records.get('node-5') === first.get('node-5'),
    ]).toEqual(['a', true, true]);
  });

  test('a base part that is not the one the head names is detected: the state is not used, with an error', async () => {
    const io = new FakeIo();
    await commit(store(io), records(3000, 1000));
    const p = io.objects.get(partName('afc', 'a', 1))!;
    p.binaryData![PART_KEY] = p.binaryData![PART_KEY]!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'));
    errors.length = 0;
    const loaded = await store(io).load();
    expect([loaded.kind, errors]).toEqual(['none', ['persisted state unreadable; not used']]);
  });

  test('a removed node is removed after the restart too', async () => {
    const io = new FakeIo();
    const s = store(io);
    await commit(s, records(5, 40));
    await commit(s, new Map([['node-2', null]]));
    const loaded = await store(io).load();
    expect(loaded.kind === 'v2' && [...loaded.records.keys()]).toEqual(['node-0', 'node-1', 'node-3', 'node-4']);
  });

  test('the version-1 state (one object) is recognised for the take-over', async () => {
    const io = new FakeIo();
    io.objects.set(headName('afc'), {
      data: { [STATE_KEY]: JSON.stringify({ version: 1, counter: {}, jobs: [], intake: {} }) },
    });
    const loaded = await store(io).load();
    expect(loaded.kind).toBe('v1');
  });

  test('when the head ConfigMap cannot be read, the local copy in -stateDir is read', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'afc-state-'));
    try {
      const io = new FakeIo();
      const recs = records(3000, 1000);
      await commit(store(io, { stateDir: dir }), recs);
      io.readFails = true;
      const loaded = await store(io, { stateDir: dir }).load();
      expect(loaded.kind === 'v2' && [loaded.source, loaded.records.size]).toEqual(['file', 3000]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a state beyond the parts RBAC grants is refused with an error, never as a head naming missing parts', async () => {
    const io = new FakeIo();
    errors.length = 0;
    const s = store(io, { partRawTargetBytes: 64 * 1024, partMaxStoredBytes: 16 * 1024, headMaxBytes: 16 * 1024 });
    s.update(records(2000, 200), 1);
    await until(() => errors.some((e) => e.includes('exceeds 8 parts')));
    s.close();
    expect([io.objects.has(headName('afc')), errors.some((e) => e.includes('exceeds 8 parts'))]).toEqual([false, true]);
  });
});
