/**
 * Spec L.5, the duplicate-mount detector against a fake containerd (grpc-js on a Unix socket): the scan of every
 * namespace, the task events, the warning once per duplicate set and its clearing, hostile responses, containerd
 * gone and back, no socket at all.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import {
  DuplicateMountDetector,
  type DuplicateMountOptions,
  duplicateWarning,
  MAX_WARNING_CHARS,
} from '../../src/runtime/duplicate-mounts.js';
import { encodeStrings, FakeContainerd, ociSpec } from './fake-containerd.js';
import { recordingLogger, until, type LogLine } from './log-recorder.js';

const DUP = 'detected duplicate NPU device mount: device /dev/davinci';
const NPU_MAJOR = 236;

let dir: string;
let fake: FakeContainerd;
let detector: DuplicateMountDetector | undefined;
let rec: ReturnType<typeof recordingLogger>;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dm-'));
  fs.writeFileSync(
    path.join(dir, 'devices'),
    `Character devices:\n  1 mem\n${NPU_MAJOR} devdrv-cdev\n237 vdevdrv-cdev\n`,
  );
  fake = new FakeContainerd(path.join(dir, 'c.sock'));
  rec = recordingLogger();
});

afterEach(async () => {
  await detector?.stop();
  detector = undefined;
  fake.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

function start(extra: Partial<DuplicateMountOptions> = {}): DuplicateMountDetector {
  detector = new DuplicateMountDetector({
    log: rec.log,
    env: { CONTAINERD_ADDRESS: `unix://${fake.socket}` },
    procDevicesPath: path.join(dir, 'devices'),
    retryInitialMs: 50,
    retryMaxMs: 200,
    ...extra,
  });
  detector.start();
  return detector;
}

const warnings = (): LogLine[] => rec.lines.filter((l) => l.level === 'warn' && l.msg.startsWith(DUP));
const cleared = (): LogLine[] => rec.lines.filter((l) => l.msg.startsWith('duplicate NPU device mount cleared'));
const scans = (): LogLine[] => rec.lines.filter((l) => l.msg.includes('containers scanned'));
const held = (d: DuplicateMountDetector): string[] =>
  d
    .holders()
    .map((h) => `${h.namespace}/${h.id}:${h.devices.join(',')}`)
    .sort();

describe('L.5 scan', () => {
  test('L.5 the scan takes every namespace, the running and paused tasks only, env first, else devdrv-cdev rules', async () => {
    fake.put('k8s.io', { id: 'env', spec: ociSpec(['PATH=/bin', 'ASCEND_VISIBLE_DEVICES=0-1,3']), task: 'RUNNING' });
    fake.put('k8s.io', {
      id: 'dev',
      spec: ociSpec(
        [],
        [
          { allow: false, type: 'a' },
          { allow: true, type: 'c', major: NPU_MAJOR, minor: 4 },
          { allow: true, type: 'c', major: 237, minor: 5 }, // vdevdrv-cdev
          { allow: true, type: 'c', major: 1, minor: 3 }, // /dev/null
          { allow: false, type: 'c', major: NPU_MAJOR, minor: 6 }, // a deny rule holds nothing
          { allow: true, type: 'c', major: NPU_MAJOR }, // every minor: a privileged container, skipped
        ],
      ),
      task: 'PAUSED',
    });
    fake.put('moby', {
      id: 'named',
      spec: ociSpec(['ASCEND_VISIBLE_DEVICES=Ascend910-7,Ascend910-2']),
      task: 'RUNNING',
    });
    fake.put('k8s.io', { id: 'stopped', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=0']), task: 'STOPPED' });
    fake.put('k8s.io', { id: 'created-only', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=0']) });
    fake.put('k8s.io', { id: 'no-npu', spec: ociSpec(['A=1']), task: 'RUNNING' });
    await fake.start();
    const d = start();
    await until(() => d.connected, 'the scan');
    expect(held(d)).toEqual(['k8s.io/dev:4,5', 'k8s.io/env:0,1,3', 'moby/named:2,7']);
    expect(warnings()).toEqual([]);
  });

  test('L.5 two containers holding the same device at the scan: one warning naming both', async () => {
    const labels = {
      'io.kubernetes.container.name': 'train',
      'io.kubernetes.pod.name': 'p1',
      'io.kubernetes.pod.namespace': 'ai',
    };
    fake.put('k8s.io', {
      id: 'aaaaaaaaaaaaaaaa1',
      labels,
      spec: ociSpec(['ASCEND_VISIBLE_DEVICES=3']),
      task: 'RUNNING',
    });
    fake.put('other', {
      id: 'b2',
      spec: ociSpec([], [{ allow: true, type: 'c', major: NPU_MAJOR, minor: 3 }]),
      task: 'RUNNING',
    });
    await fake.start();
    const d = start();
    await until(() => warnings().length, 'the warning');
    expect(warnings().map((l) => l.msg)).toEqual([
      `${DUP}3 is mounted by multiple containers: ID=aaaaaaaaaaaa, Name=train, Namespace=k8s.io, Pod=ai/p1; ID=b2, Name=, Namespace=other`,
    ]);
    expect(d.duplicates().map((x) => x.device)).toEqual([3]);
  });
});

describe('L.5 events', () => {
  test('L.5 /tasks/start adds a container, an exec exit does not remove it, the init exit does', async () => {
    fake.put('k8s.io', { id: 'c1', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=1']), task: 'RUNNING' });
    await fake.start();
    const d = start();
    await until(() => d.connected && fake.subscribers === 1, 'the subscription');
    fake.put('k8s.io', { id: 'c2', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=2']), task: 'RUNNING' });
    fake.emit('k8s.io', '/tasks/start', encodeStrings({ 1: 'c2', 2: '' }));
    await until(() => held(d).length === 2, 'c2 added');
    fake.emit('k8s.io', '/tasks/exit', encodeStrings({ 1: 'c2', 2: 'exec-1' }));
    fake.emit('k8s.io', '/tasks/exit', encodeStrings({ 1: 'c1', 2: 'c1' }));
    await until(() => held(d).length === 1, 'c1 removed');
    expect(held(d)).toEqual(['k8s.io/c2:2']);
    fake.emit('k8s.io', '/containers/delete', encodeStrings({ 1: 'c2' }));
    await until(() => held(d).length === 0, 'c2 removed');
  });

  test('L.5 a duplicate is warned once per set, again when the set changes, and cleared when one holder is left', async () => {
    fake.put('k8s.io', { id: 'c1', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=5']), task: 'RUNNING' });
    await fake.start();
    const d = start();
    await until(() => d.connected && fake.subscribers === 1, 'the subscription');
    const startC = (id: string): void => {
      fake.put('k8s.io', { id, spec: ociSpec(['ASCEND_VISIBLE_DEVICES=5']), task: 'RUNNING' });
      fake.emit('k8s.io', '/tasks/start', encodeStrings({ 1: id }));
    };
    startC('c2');
    await until(() => warnings().length === 1, 'the first warning');
    fake.emit('k8s.io', '/tasks/start', encodeStrings({ 1: 'c2' })); // the same set again: no new warning
    startC('c3');
    await until(() => warnings().length === 2, 'the warning of the changed set');
    expect(warnings()[1]!.msg).toContain('ID=c1, Name=, Namespace=k8s.io; ID=c2, Name=, Namespace=k8s.io; ID=c3');
    fake.emit('k8s.io', '/tasks/delete', encodeStrings({ 1: 'c3', 5: '' }));
    await until(() => warnings().length === 3, 'the warning of the smaller set');
    fake.emit('k8s.io', '/tasks/exit', encodeStrings({ 1: 'c2', 2: 'c2' }));
    await until(() => cleared().length === 1, 'the clearing');
    expect(cleared()[0]!.msg).toBe(
      'duplicate NPU device mount cleared: device /dev/davinci5 is mounted by at most one container',
    );
    expect(warnings()).toHaveLength(3);
    expect(d.duplicates()).toEqual([]);
  });
});

describe('L.5 hostile containerd', () => {
  test('L.5 an unreadable spec, an oversized spec and a malformed event are problems; the rest is followed', async () => {
    fake.put('k8s.io', { id: 'not-json', spec: Buffer.from('{"process":'), task: 'RUNNING' });
    fake.put('k8s.io', { id: 'huge', spec: Buffer.alloc(1024 * 1024 + 1, 0x20), task: 'RUNNING' });
    fake.put('k8s.io', { id: 'bad-env', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=x,9-2,99999,4']), task: 'RUNNING' });
    fake.put('k8s.io', { id: 'other-type', spec: Buffer.from('x'), specType: 'example.com/Other', task: 'RUNNING' });
    await fake.start();
    const d = start();
    await until(() => d.connected && fake.subscribers === 1, 'the scan');
    fake.emit('k8s.io', '/tasks/start', Buffer.from([0x0a, 0x7f, 0x01])); // a length past the end
    await until(() => rec.lines.some((l) => l.msg.includes('unreadable event')), 'the event problem');
    const problems = rec.lines.filter((l) => l.msg.includes('cannot read a container')).map((l) => l.fields);
    expect(problems.map((p) => p.container).sort()).toEqual([
      'bad-env',
      'bad-env',
      'bad-env',
      'huge',
      'not-json',
      'other-type',
    ]);
    expect(problems.find((p) => p.container === 'huge')?.problem).toBe(
      'OCI spec of 1048577 bytes, the limit is 1048576',
    );
    expect(held(d)).toEqual(['k8s.io/bad-env:4']);
    expect(d.connected).toBe(true);
  });

  test('L.5 a message over the size limit ends the session; the detector retries and recovers', async () => {
    fake.put('k8s.io', { id: 'c1', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=1']), task: 'RUNNING' });
    fake.hostileListMessage = { container: { id: 'x', labels: { big: 'y'.repeat(100_000) } } };
    await fake.start();
    const d = start({ client: { maxMessageBytes: 64 * 1024 } });
    await until(() => rec.lines.some((l) => l.msg.includes('containerd unreachable')), 'the failed session');
    expect(d.connected).toBe(false);
    const failed = rec.lines.find((l) => l.msg.includes('containerd unreachable'));
    expect(String(failed?.fields.error)).toMatch(/larger than max/);
    fake.hostileListMessage = undefined;
    await until(() => d.connected, 'the next session');
    expect(held(d)).toEqual(['k8s.io/c1:1']);
    expect(rec.lines.filter((l) => l.msg.includes('containerd unreachable'))).toHaveLength(1);
  });

  test('L.5 more containers than the limit end the session with an error naming the limit', async () => {
    for (const id of ['c1', 'c2'])
      fake.put('k8s.io', { id, spec: ociSpec(['ASCEND_VISIBLE_DEVICES=1']), task: 'RUNNING' });
    fake.put('k8s.io', { id: 'c3', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=1']) }); // no task: listed all the same
    await fake.start();
    const d = start({ client: { maxContainers: 2 } });
    const failed = await until(
      () => rec.lines.find((l) => l.msg.includes('containerd unreachable')),
      'the failed session',
    );
    expect(failed.fields.error).toBe('containerd listed more than 2 containers in namespace k8s.io');
    expect(d.holders()).toEqual([]);
  });
});

describe('L.5 containerd availability', () => {
  test('L.5 containerd gone: one warning, retries with backoff; back: a new scan replaces what was known', async () => {
    fake.put('k8s.io', { id: 'c1', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=1']), task: 'RUNNING' });
    fake.put('k8s.io', { id: 'c2', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=1']), task: 'RUNNING' });
    await fake.start();
    const d = start();
    await until(() => warnings().length === 1, 'the first warning');
    fake.stop();
    await until(() => !d.connected, 'the lost connection');
    await new Promise((r) => setTimeout(r, 600)); // several retries fail meanwhile
    expect(rec.lines.filter((l) => l.level === 'warn' && l.msg.includes('containerd unreachable'))).toHaveLength(1);
    expect(rec.lines.filter((l) => l.level === 'debug' && l.msg.includes('still unreachable')).length).toBeGreaterThan(
      0,
    );
    fake.namespaces.clear();
    fake.put('k8s.io', { id: 'c3', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=1']), task: 'RUNNING' });
    await fake.start();
    await until(() => scans().length === 2, 'the second scan');
    expect(held(d)).toEqual(['k8s.io/c3:1']);
    expect(cleared()).toHaveLength(1);
    // a second outage warns again
    fake.stop();
    await until(
      () => rec.lines.filter((l) => l.msg.includes('containerd unreachable')).length === 2,
      'the second warning',
    );
  });

  test('L.5 an unreadable /proc/devices is one warning, not one per session; the env rule still works', async () => {
    fake.put('k8s.io', { id: 'c1', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=1']), task: 'RUNNING' });
    fake.put('k8s.io', { id: 'c2', spec: ociSpec(['ASCEND_VISIBLE_DEVICES=1']), task: 'RUNNING' });
    await fake.start();
    start({ procDevicesPath: path.join(dir, 'missing') });
    await until(() => warnings().length === 1, 'the warning');
    fake.stop();
    await new Promise((r) => setTimeout(r, 300));
    await fake.start();
    await until(() => scans().length === 2, 'the second scan');
    const majors = rec.lines.filter((l) => l.msg.includes('cannot read the NPU majors'));
    expect(majors).toHaveLength(1);
    expect(String(majors[0]!.fields.problem)).toMatch(/^cannot read .*missing: ENOENT/);
  });

  test('L.5 no containerd socket: one info line, the detector off', async () => {
    const d = start({ env: {}, sockets: [path.join(dir, 'none.sock'), path.join(dir, 'none2.sock')] });
    expect(rec.lines).toEqual([
      expect.objectContaining({
        level: 'info',
        msg: expect.stringMatching(/^duplicate-mount detector off: no containerd socket \(/),
      }),
    ]);
    expect(d.connected).toBe(false);
    await d.stop();
  });

  test('L.5 a socket writable by others is refused (upstream checks owner and mode)', async () => {
    await fake.start();
    fs.chmodSync(fake.socket, 0o666);
    const d = start();
    expect(rec.lines.map((l) => l.msg)).toEqual([expect.stringMatching(/is writable by others$/)]);
    expect(d.connected).toBe(false);
  });
});

describe('L.5 warning text', () => {
  test('L.5 the warning is bounded: many containers are cut with the number left out', () => {
    const holders = Array.from({ length: 100 }, (_, i) => ({
      namespace: 'k8s.io',
      id: `container-${String(i).padStart(3, '0')}-${'f'.repeat(50)}`,
      name: 'n'.repeat(60),
      podName: 'p'.repeat(60),
      podNamespace: 'default',
      devices: [0],
    }));
    const text = duplicateWarning({ device: 0, holders });
    expect(text.length).toBeLessThanOrEqual(MAX_WARNING_CHARS);
    expect(text).toMatch(/; … \d+ more$/);
    expect(text.startsWith(`${DUP}0 is mounted by multiple containers: ID=container-00`)).toBe(true);
  });
});
