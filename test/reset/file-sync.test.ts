/**
 * hot-reset.md §2.8 file landing (HR-22) with the issue-[F] deviations: 0755/0644 modes, atomic writes, validated
 * path components, 1 MiB limit, bounded retries on an injected clock.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { ResetFileSync, landedPaths, MAX_LANDED_VALUE_BYTES } from '../../src/reset/file-sync.js';
import type { ConfigMapObject, ResetPod } from '../../src/reset/types.js';
import type { ChipKind } from '../../src/core/chips.js';
import { FakeClock } from '../health/fake-clock.js';

const RESET_TEXT = '{"RankList":[],"UpdateTime":0,"RetryTime":0,"FaultFlushing":false,"GracefulExit":0}';

function pod(over: Partial<ResetPod> = {}): ResetPod {
  return {
    uid: 'uid-1',
    namespace: 'default',
    name: 'job1-w1',
    phase: 'Running',
    labels: { 'volcano.sh/job-name': 'job1' },
    annotations: { 'huawei.com/Ascend910': 'Ascend910-0,Ascend910-1', 'hccl/rankIndex': '1' },
    ...over,
  };
}

function cm(name: string, data: Record<string, string>, namespace = 'default'): ConfigMapObject {
  return { namespace, name, labels: { reset: 'true' }, data, resourceVersion: '1' };
}

interface LogLine {
  level: string;
  obj: unknown;
  msg: string | undefined;
}

class Harness {
  readonly root = fs.mkdtempSync(path.join(os.tmpdir(), 'landing-'));
  readonly clock = new FakeClock();
  readonly cms = new Map<string, ConfigMapObject>();
  readonly logs: LogLine[] = [];
  readonly sync: ResetFileSync;

  constructor(kind: ChipKind = 'Ascend910B', retry = { attempts: 3, baseMs: 100, maxMs: 1000 }) {
    const logFn =
      (level: string) =>
      (a: unknown, b?: string): void => {
        this.logs.push(typeof a === 'string' ? { level, obj: {}, msg: a } : { level, obj: a, msg: b });
      };
    this.sync = new ResetFileSync({
      hostRoot: this.root,
      kind,
      clock: this.clock,
      configMaps: { get: (ns, name) => this.cms.get(`${ns}/${name}`) },
      logger: { debug: logFn('debug'), info: logFn('info'), warn: logFn('warn'), error: logFn('error') },
      retry,
    });
  }

  put(c: ConfigMapObject): ConfigMapObject {
    this.cms.set(`${c.namespace}/${c.name}`, c);
    return c;
  }

  paths(ns = 'default', job = 'job1') {
    return landedPaths(this.root, ns, job);
  }

  read(file: string): string | undefined {
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined;
  }

  logged(level: string, text: string): boolean {
    return this.logs.some((l) => l.level === level && (l.msg ?? '').includes(text));
  }

  close(): void {
    this.sync.close();
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

let h: Harness;
beforeEach(() => {
  h = new Harness();
});
afterEach(() => h.close());

describe('§2.8 paths', () => {
  test('§2.8 reset and data-trace folders are <ns>.reset-config-<job> and <ns>.data-trace-<job> under hostRoot', () => {
    const p = landedPaths('/host', 'default', 'job1');
    expect(p).toEqual({
      resetDir: '/host/user/restore/reset/default.reset-config-job1',
      resetJson: '/host/user/restore/reset/default.reset-config-job1/reset.json',
      restartType: '/host/user/restore/reset/default.reset-config-job1/restartType',
      traceDir: '/host/user/cluster-info/datatrace-config/default.data-trace-job1',
      profilingSwitch: '/host/user/cluster-info/datatrace-config/default.data-trace-job1/profilingSwitch',
    });
  });

  test.each([
    ['a slash in the job', 'default', 'a/b'],
    ['a dot-dot job', 'default', '..'],
    ['a job with a dot-dot inside', 'default', 'a..b'],
    ['an upper-case job', 'default', 'Job1'],
    ['an empty job', 'default', ''],
    ['a job of 64 characters', 'default', 'j'.repeat(64)],
    ['a slash in the namespace', 'a/b', 'job1'],
    ['a dot in the namespace', 'a.b', 'job1'],
  ])('§2.8 deviation: %s is refused as a path component', (_what, ns, job) => {
    expect(() => landedPaths('/host', ns, job)).toThrow(/namespace|job name/);
  });

  test('§2.8 a dotted job name (DNS-1123 subdomain) is accepted', () => {
    expect(landedPaths('/host', 'default', 'job.v2').resetDir).toBe(
      '/host/user/restore/reset/default.reset-config-job.v2',
    );
  });
});

describe('§2.8 pod add (HR-22)', () => {
  test('HR-22 pod add creates both folders and writes reset.json, restartType and profilingSwitch verbatim', async () => {
    const text = `${RESET_TEXT}\n  trailing spaces  `;
    h.put(cm('reset-config-job1', { 'reset.json': text, restartType: 'hotReset', checkCode: 'abc' }));
    h.put(cm('data-trace-job1', { profilingSwitch: '{"a":1}' }));
    h.sync.podAdded(pod());
    await h.sync.idle();
    const p = h.paths();
    expect(h.read(p.resetJson)).toBe(text);
    expect(h.read(p.restartType)).toBe('hotReset');
    expect(h.read(p.profilingSwitch)).toBe('{"a":1}');
    expect(fs.readdirSync(p.resetDir).sort()).toEqual(['reset.json', 'restartType']);
  });

  test('HR-22 pod add without ConfigMaps creates the folders only and logs the missing reset ConfigMap', async () => {
    h.sync.podAdded(pod());
    await h.sync.idle();
    const p = h.paths();
    expect(fs.readdirSync(p.resetDir)).toEqual([]);
    expect(fs.readdirSync(p.traceDir)).toEqual([]);
    expect(h.logged('info', 'no reset ConfigMap')).toBe(true);
  });

  test('§2.8 deviation: folders are created 0755 and files 0644, not 0666', async () => {
    h.put(cm('reset-config-job1', { 'reset.json': RESET_TEXT }));
    h.put(cm('data-trace-job1', { profilingSwitch: 'on' }));
    h.sync.podAdded(pod());
    await h.sync.idle();
    const p = h.paths();
    for (const dir of [p.resetDir, p.traceDir, path.join(h.root, 'user/restore/reset')])
      expect(fs.statSync(dir).mode & 0o7777).toBe(0o755);
    for (const file of [p.resetJson, p.profilingSwitch]) expect(fs.statSync(file).mode & 0o7777).toBe(0o644);
  });

  test('§2.8 deviation: an existing job folder with another mode is set back to 0755', async () => {
    const p = h.paths();
    fs.mkdirSync(p.resetDir, { recursive: true, mode: 0o777 });
    fs.chmodSync(p.resetDir, 0o777);
    h.sync.podAdded(pod());
    await h.sync.idle();
    expect(fs.statSync(p.resetDir).mode & 0o7777).toBe(0o755);
  });

  test('§2.8 a pod without the device annotation is not landed', async () => {
    h.put(cm('reset-config-job1', { 'reset.json': RESET_TEXT }));
    h.sync.podAdded(pod({ annotations: { 'huawei.com/npu': 'npu-0' } }));
    await h.sync.idle();
    expect(fs.existsSync(path.join(h.root, 'user'))).toBe(false);
  });

  test('D10 on 910A5 the device annotation is huawei.com/npu', async () => {
    h.close();
    h = new Harness('Ascend910A5');
    h.sync.podAdded(pod({ annotations: { 'huawei.com/Ascend910': 'Ascend910-0' } }));
    await h.sync.idle();
    expect(fs.existsSync(h.paths().resetDir)).toBe(false);
    h.sync.podAdded(pod({ annotations: { 'huawei.com/npu': 'npu-0' } }));
    await h.sync.idle();
    expect(fs.existsSync(h.paths().resetDir)).toBe(true);
  });

  test('D10 the job name comes from label training.kubeflow.org/job-name when volcano.sh/job-name is absent', async () => {
    h.sync.podAdded(pod({ labels: { 'training.kubeflow.org/job-name': 'tf1' } }));
    await h.sync.idle();
    expect(fs.existsSync(h.paths('default', 'tf1').resetDir)).toBe(true);
  });

  test('D10 a job-name annotation without the label does not name the job', async () => {
    h.sync.podAdded(
      pod({ labels: {}, annotations: { 'huawei.com/Ascend910': 'Ascend910-0', 'volcano.sh/job-name': 'job1' } }),
    );
    await h.sync.idle();
    expect(fs.existsSync(path.join(h.root, 'user'))).toBe(false);
  });

  test('§2.8 deviation: a pod whose job name is not a valid name is refused and logged, nothing is created', async () => {
    h.sync.podAdded(pod({ labels: { 'volcano.sh/job-name': '../../etc' } }));
    await h.sync.idle();
    expect(fs.existsSync(path.join(h.root, 'user'))).toBe(false);
    expect(h.logged('warn', 'refused pod')).toBe(true);
  });

  test('§2.8 deviation: a value over 1 MiB is refused and logged, the previous file is kept', async () => {
    h.put(cm('reset-config-job1', { 'reset.json': RESET_TEXT }));
    h.sync.podAdded(pod());
    await h.sync.idle();
    h.sync.configMapChanged(cm('reset-config-job1', { 'reset.json': 'x'.repeat(MAX_LANDED_VALUE_BYTES + 1) }));
    await h.sync.idle();
    expect(h.read(h.paths().resetJson)).toBe(RESET_TEXT);
    expect(h.logged('error', 'larger than 1 MiB')).toBe(true);
  });

  test('§2.8 a value of exactly 1 MiB is written', async () => {
    const big = 'y'.repeat(MAX_LANDED_VALUE_BYTES);
    h.put(cm('reset-config-job1', { 'reset.json': big }));
    h.sync.podAdded(pod());
    await h.sync.idle();
    expect(fs.statSync(h.paths().resetJson).size).toBe(MAX_LANDED_VALUE_BYTES);
  });

  test('§2.8 a reset ConfigMap without reset.json is logged and leaves no reset.json file', async () => {
    h.put(cm('reset-config-job1', { restartType: 'hotReset' }));
    h.sync.podAdded(pod());
    await h.sync.idle();
    expect(h.read(h.paths().resetJson)).toBeUndefined();
    expect(h.read(h.paths().restartType)).toBe('hotReset');
    expect(h.logged('warn', 'no reset.json')).toBe(true);
  });

  test('§2.8 data-trace ConfigMaps are read through configMaps.dataTrace when the cache provides it', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'landing-'));
    try {
      const sync = new ResetFileSync({
        hostRoot: root,
        kind: 'Ascend910B',
        configMaps: {
          get: () => undefined,
          dataTrace: (ns, name) => cm(name, { profilingSwitch: 'from-trace-cache' }, ns),
        },
      });
      sync.podAdded(pod());
      await sync.idle();
      expect(fs.readFileSync(landedPaths(root, 'default', 'job1').profilingSwitch, 'utf8')).toBe('from-trace-cache');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('§2.8 ConfigMap events (HR-22)', () => {
  beforeEach(async () => {
    h.put(cm('reset-config-job1', { 'reset.json': RESET_TEXT, restartType: 'hotReset' }));
    h.put(cm('data-trace-job1', { profilingSwitch: 'off' }));
    h.sync.podAdded(pod());
    await h.sync.idle();
  });

  test('HR-22 a reset ConfigMap update rewrites reset.json and restartType', async () => {
    h.sync.configMapChanged(cm('reset-config-job1', { 'reset.json': '{"new":1}', restartType: 'podReschedule' }));
    await h.sync.idle();
    expect(h.read(h.paths().resetJson)).toBe('{"new":1}');
    expect(h.read(h.paths().restartType)).toBe('podReschedule');
  });

  test('HR-22 a data-trace ConfigMap update rewrites profilingSwitch', async () => {
    h.sync.configMapChanged(cm('data-trace-job1', { profilingSwitch: 'on' }));
    await h.sync.idle();
    expect(h.read(h.paths().profilingSwitch)).toBe('on');
  });

  test('§2.8 deviation: an update that drops restartType removes the stale restartType file', async () => {
    h.sync.configMapChanged(cm('reset-config-job1', { 'reset.json': RESET_TEXT }));
    await h.sync.idle();
    expect(h.read(h.paths().restartType)).toBeUndefined();
    expect(h.read(h.paths().resetJson)).toBe(RESET_TEXT);
  });

  test('HR-22 a reset ConfigMap delete removes reset.json and restartType, the folder stays', async () => {
    h.sync.configMapDeleted(cm('reset-config-job1', {}));
    await h.sync.idle();
    expect(fs.readdirSync(h.paths().resetDir)).toEqual([]);
  });

  test('HR-22 a data-trace ConfigMap delete removes profilingSwitch, the folder stays', async () => {
    h.sync.configMapDeleted(cm('data-trace-job1', {}));
    await h.sync.idle();
    expect(fs.readdirSync(h.paths().traceDir)).toEqual([]);
  });

  test('HR-22 a ConfigMap update of a job without a local pod writes no file', async () => {
    h.sync.configMapChanged(cm('reset-config-job2', { 'reset.json': RESET_TEXT }));
    h.sync.configMapChanged(cm('reset-config-job1', { 'reset.json': RESET_TEXT }, 'other'));
    await h.sync.idle();
    expect(fs.existsSync(h.paths('default', 'job2').resetDir)).toBe(false);
    expect(fs.existsSync(h.paths('other', 'job1').resetDir)).toBe(false);
  });

  test('§2.8 ConfigMaps with other names are ignored', async () => {
    h.sync.configMapChanged(cm('fault-config-job1', { 'reset.json': '{"x":1}' }));
    await h.sync.idle();
    expect(h.read(h.paths().resetJson)).toBe(RESET_TEXT);
  });

  test('§2.8 a later update wins over an earlier one sent while the first write was running', async () => {
    for (let i = 0; i < 20; i++) h.sync.configMapChanged(cm('reset-config-job1', { 'reset.json': `{"v":${i}}` }));
    await h.sync.idle();
    expect(h.read(h.paths().resetJson)).toBe('{"v":19}');
  });

  test('§2.8 deviation: writes are atomic (rename), so a reader never sees a half file and no temp file is left', async () => {
    const p = h.paths();
    const size = 512 * 1024;
    const observed: string[] = [];
    let reading = true;
    const reader = (async () => {
      while (reading) {
        const text = fs.readFileSync(p.resetJson, 'utf8'); // throws if the file is ever missing
        observed.push(
          text === RESET_TEXT ? 'initial' : text.length === size && /^(a+|b+|c+|d+)$/.test(text) ? 'whole' : 'torn',
        );
        await new Promise((r) => setImmediate(r));
      }
    })();
    for (const c of ['a', 'b', 'c', 'd']) {
      h.sync.configMapChanged(cm('reset-config-job1', { 'reset.json': c.repeat(size), restartType: 'hotReset' }));
      await h.sync.idle();
    }
    reading = false;
    await reader;
    expect(observed).not.toContain('torn');
    expect(observed).toContain('whole');
    expect(fs.readdirSync(p.resetDir).sort()).toEqual(['reset.json', 'restartType']);
  });

  test('§2.8 deviation: a symbolic link planted as reset.json is replaced, not followed', async () => {
    const target = path.join(h.root, 'victim');
    fs.writeFileSync(target, 'precious');
    fs.rmSync(h.paths().resetJson);
    fs.symlinkSync(target, h.paths().resetJson);
    h.sync.configMapChanged(cm('reset-config-job1', { 'reset.json': '{"v":2}' }));
    await h.sync.idle();
    expect(fs.readFileSync(target, 'utf8')).toBe('precious');
    expect(fs.lstatSync(h.paths().resetJson).isSymbolicLink()).toBe(false);
    expect(h.read(h.paths().resetJson)).toBe('{"v":2}');
  });
});

describe('§2.8 pod delete (HR-22)', () => {
  beforeEach(async () => {
    h.put(cm('reset-config-job1', { 'reset.json': RESET_TEXT, restartType: 'hotReset' }));
    h.put(cm('data-trace-job1', { profilingSwitch: 'off' }));
    h.sync.podAdded(pod());
    await h.sync.idle();
  });

  test('HR-22 pod delete removes the reset files and folder and the whole data-trace folder', async () => {
    h.sync.podDeleted(pod());
    await h.sync.idle();
    expect(fs.existsSync(h.paths().resetDir)).toBe(false);
    expect(fs.existsSync(h.paths().traceDir)).toBe(false);
    expect(fs.existsSync(path.join(h.root, 'user/restore/reset'))).toBe(true);
  });

  test('HR-22 after pod delete a ConfigMap update writes no file', async () => {
    h.sync.podDeleted(pod());
    await h.sync.idle();
    h.sync.configMapChanged(cm('reset-config-job1', { 'reset.json': '{"v":3}' }));
    await h.sync.idle();
    expect(fs.existsSync(h.paths().resetDir)).toBe(false);
  });

  test('§2.8 deleting an unknown pod does nothing', async () => {
    h.sync.podDeleted(pod({ name: 'someone-else' }));
    await h.sync.idle();
    expect(h.read(h.paths().resetJson)).toBe(RESET_TEXT);
  });

  test('§2.8 deviation: with two pods of one job, the folders stay until the last pod leaves', async () => {
    h.sync.podAdded(pod({ name: 'job1-w2', uid: 'uid-2' }));
    await h.sync.idle();
    h.sync.podDeleted(pod());
    await h.sync.idle();
    expect(h.read(h.paths().resetJson)).toBe(RESET_TEXT);
    h.sync.podDeleted(pod({ name: 'job1-w2', uid: 'uid-2' }));
    await h.sync.idle();
    expect(fs.existsSync(h.paths().resetDir)).toBe(false);
  });

  test('§2.8 a reset folder holding foreign files is left in place and logged', async () => {
    fs.writeFileSync(path.join(h.paths().resetDir, 'foreign'), 'x');
    h.sync.podDeleted(pod());
    await h.sync.idle();
    expect(fs.readdirSync(h.paths().resetDir)).toEqual(['foreign']);
    expect(h.logged('warn', 'other files')).toBe(true);
  });

  test('§2.8 pod add, delete and add again lands the files again', async () => {
    h.sync.podDeleted(pod());
    h.sync.podAdded(pod());
    await h.sync.idle();
    expect(h.read(h.paths().resetJson)).toBe(RESET_TEXT);
  });
});

describe('§2.8 retries (bounded backoff on the injected clock)', () => {
  /** A regular file where the folder tree starts makes every mkdir fail with ENOTDIR until it is removed. */
  function blockTree(): string {
    const blocker = path.join(h.root, 'user');
    fs.writeFileSync(blocker, 'not a folder');
    return blocker;
  }

  test('§2.8 a failed write is retried after the backoff and succeeds once the cause is gone', async () => {
    h.put(cm('reset-config-job1', { 'reset.json': RESET_TEXT }));
    const blocker = blockTree();
    h.sync.podAdded(pod());
    await h.sync.idle();
    expect(h.sync.pendingRetries()).toEqual(['default/job1']);
    expect(h.logged('warn', 'sync failed')).toBe(true);
    fs.rmSync(blocker);
    await h.clock.advance(99);
    await h.sync.idle();
    expect(fs.existsSync(h.paths().resetJson)).toBe(false);
    await h.clock.advance(1);
    await h.sync.idle();
    expect(h.read(h.paths().resetJson)).toBe(RESET_TEXT);
    expect(h.sync.pendingRetries()).toEqual([]);
  });

  /** Clock times (since the first failure) of the next `n` failed attempts. */
  async function failureTimes(n: number): Promise<number[]> {
    const failures = (): number => h.logs.filter((l) => l.msg?.includes('sync failed')).length;
    const times: number[] = [];
    const start = h.clock.now();
    for (let i = 0; i < n; i++) {
      const before = failures();
      while (failures() === before) {
        await h.clock.advance(10);
        await h.sync.idle();
      }
      times.push(h.clock.now() - start);
    }
    return times;
  }

  test('§2.8 pauses double from baseMs', async () => {
    blockTree();
    h.sync.podAdded(pod());
    await h.sync.idle();
    expect(await failureTimes(3)).toEqual([100, 300, 700]);
  });

  test('§2.8 pauses never exceed maxMs', async () => {
    h.close();
    h = new Harness('Ascend910B', { attempts: 5, baseMs: 300, maxMs: 1000 });
    blockTree();
    h.sync.podAdded(pod());
    await h.sync.idle();
    expect(await failureTimes(5)).toEqual([300, 900, 1900, 2900, 3900]);
  });

  test('§2.8 after the retry budget the job is given up (logged) until the next notification', async () => {
    const blocker = blockTree();
    h.sync.podAdded(pod());
    await h.sync.idle();
    for (let i = 0; i < 10; i++) {
      await h.clock.advance(1000);
      await h.sync.idle();
    }
    expect(h.logs.filter((l) => l.msg?.includes('sync failed'))).toHaveLength(4); // first try + 3 retries
    expect(h.logged('error', 'giving up')).toBe(true);
    expect(h.clock.pending()).toBe(0);
    fs.rmSync(blocker);
    h.put(cm('reset-config-job1', { 'reset.json': RESET_TEXT }));
    h.sync.configMapChanged(cm('reset-config-job1', { 'reset.json': RESET_TEXT }));
    await h.sync.idle();
    expect(h.read(h.paths().resetJson)).toBe(RESET_TEXT);
  });

  test('§2.8 a retry writes the newest notified value, not the one that failed', async () => {
    const blocker = blockTree();
    h.put(cm('reset-config-job1', { 'reset.json': '{"v":1}' }));
    h.sync.podAdded(pod());
    await h.sync.idle();
    h.sync.configMapChanged(cm('reset-config-job1', { 'reset.json': '{"v":2}' }));
    await h.sync.idle();
    fs.rmSync(blocker);
    await h.clock.advance(1000);
    await h.sync.idle();
    expect(h.read(h.paths().resetJson)).toBe('{"v":2}');
  });

  test('§2.8 close() cancels pending retries', async () => {
    blockTree();
    h.sync.podAdded(pod());
    await h.sync.idle();
    expect(h.clock.pending()).toBe(1);
    h.sync.close();
    expect(h.clock.pending()).toBe(0);
  });
});

describe('ResetFileSync options', () => {
  test('an empty hostRoot is refused', () => {
    expect(() => new ResetFileSync({ hostRoot: '', kind: 'Ascend910B', configMaps: { get: () => undefined } })).toThrow(
      /hostRoot/,
    );
  });

  test('a negative retry setting is refused naming the field', () => {
    expect(
      () =>
        new ResetFileSync({
          hostRoot: '/x',
          kind: 'Ascend910B',
          configMaps: { get: () => undefined },
          retry: { baseMs: -1 },
        }),
    ).toThrow(/retry\.baseMs/);
  });
});
