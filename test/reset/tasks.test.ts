import { describe, expect, test } from '@jest/globals';
import type { ChipKind } from '../../src/core/chips.js';
import { deviceAnnotationKey, discoverTasks, taskNameOf, type TaskDiscoveryInput } from '../../src/reset/tasks.js';
import type { ResetPod } from '../../src/reset/types.js';

const names = (ids: number[], prefix = 'Ascend910') => ids.map((i) => `${prefix}-${i}`).join(',');

/** Fixture F1 pod (§6.2): default/job1-w1, 8 chips, rank index 1. */
function pod(o: Partial<ResetPod> & { devices?: string; rankIndex?: string } = {}): ResetPod {
  const { devices, rankIndex, ...rest } = o;
  return {
    uid: 'uid-1',
    namespace: 'default',
    name: 'job1-w1',
    phase: 'Running',
    labels: { 'volcano.sh/job-name': 'job1' },
    annotations: {
      'volcano.sh/job-name': 'job1',
      'huawei.com/Ascend910': devices ?? names([0, 1, 2, 3, 4, 5, 6, 7]),
      ...(rankIndex === undefined
        ? { 'hccl/rankIndex': '1' }
        : rankIndex === '<none>'
          ? {}
          : { 'hccl/rankIndex': rankIndex }),
    },
    ...rest,
  };
}

/** F1: 910B training node, 8 chips, logic id = phy id, ring 8. */
function input(pods: ResetPod[], o: Partial<TaskDiscoveryInput> = {}): TaskDiscoveryInput {
  return {
    pods,
    kind: 'Ascend910B',
    usage: 'train',
    ringSize: 8,
    logicIdOfPhy: (phy) => (phy >= 0 && phy < 16 ? phy : undefined),
    ...o,
  };
}

describe('D10 task name and device annotation', () => {
  test('D10 task name from label volcano.sh/job-name', () => {
    expect(taskNameOf(pod({ labels: { 'volcano.sh/job-name': 'a', 'training.kubeflow.org/job-name': 'b' } }))).toBe(
      'a',
    );
  });
  test('D10 task name falls back to label training.kubeflow.org/job-name', () => {
    expect(taskNameOf(pod({ labels: { 'training.kubeflow.org/job-name': 'b' } }))).toBe('b');
  });
  test('D10 an empty volcano label falls back to the kubeflow label', () => {
    expect(taskNameOf(pod({ labels: { 'volcano.sh/job-name': '', 'training.kubeflow.org/job-name': 'b' } }))).toBe('b');
  });
  test('D10 the annotation volcano.sh/job-name alone does not name a task (labels only)', () => {
    expect(taskNameOf(pod({ labels: {} }))).toBeUndefined();
  });
  test.each<[ChipKind, string]>([
    ['Ascend910', 'huawei.com/Ascend910'],
    ['Ascend910B', 'huawei.com/Ascend910'],
    ['Ascend910A3', 'huawei.com/Ascend910'],
    ['Ascend910A5', 'huawei.com/npu'],
  ])('D10 device annotation of %s is %s', (kind, key) => {
    expect(deviceAnnotationKey(kind)).toBe(key);
  });
});

describe('§1.3 task discovery (setTaskDevInfoCache)', () => {
  test('§1.3 F1 pod → task job1 with chips 0–7 and ranks 8–15 (HR-02)', () => {
    const { tasks, problems } = discoverTasks(input([pod()]));
    expect(problems).toEqual([]);
    const t = tasks.get('job1');
    expect(t).toMatchObject({
      name: 'job1',
      namespace: 'default',
      logicIds: [0, 1, 2, 3, 4, 5, 6, 7],
      distributed: false,
    });
    expect(t?.ranks).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => ({ logicId: i, rankId: 8 + i })));
  });
  test('§1.3 the task keeps the pod it came from', () => {
    const p = pod();
    expect(discoverTasks(input([p])).tasks.get('job1')?.pod).toBe(p);
  });
  test.each(['Succeeded', 'Failed'])('§1.3 pods in phase %s are skipped', (phase) => {
    expect(discoverTasks(input([pod({ phase })]))).toEqual({ tasks: new Map(), problems: [] });
  });
  test('§1.3 a Pending pod is active', () => {
    expect(discoverTasks(input([pod({ phase: 'Pending' })])).tasks.has('job1')).toBe(true);
  });

  describe('step 1: device annotation', () => {
    test('§1.3 a pod without the device annotation is not a task (no problem reported)', () => {
      expect(discoverTasks(input([pod({ annotations: { 'hccl/rankIndex': '1' } })]))).toEqual({
        tasks: new Map(),
        problems: [],
      });
    });
    test('§1.3 an empty device annotation is not a task', () => {
      expect(discoverTasks(input([pod({ devices: '' })]))).toEqual({ tasks: new Map(), problems: [] });
    });
    test('§1.3 an annotation of exactly 1 MiB is read', () => {
      const devices = names([0, 1, 2, 3, 4, 5, 6, 7]);
      // pad the first name's phy field with `_…` (B.3: anything after `_` is dropped) up to exactly 1 MiB
      const padded = `Ascend910-0_${'x'.repeat(1024 * 1024 - devices.length - 1)}${devices.slice('Ascend910-0'.length)}`;
      expect(padded.length).toBe(1024 * 1024);
      expect(discoverTasks(input([pod({ devices: padded })])).tasks.get('job1')?.logicIds).toHaveLength(8);
    });
    test('§1.3 an annotation over 1 MiB drops the pod with a problem naming it', () => {
      const devices = `${names([0, 1, 2, 3, 4, 5, 6, 7])},${'x'.repeat(1024 * 1024)}`;
      const { tasks, problems } = discoverTasks(input([pod({ devices })]));
      expect(tasks.size).toBe(0);
      expect(problems).toEqual([expect.stringMatching(/pod default\/job1-w1: .*over the 1 MiB limit/)]);
    });
    test('§1.3 the 1 MiB limit counts UTF-8 bytes', () => {
      const devices = `${names([0, 1, 2, 3, 4, 5, 6, 7])}_${'é'.repeat(600 * 1024)}`;
      expect(discoverTasks(input([pod({ devices })])).problems).toEqual([expect.stringMatching(/1 MiB/)]);
    });
    test('§1.3 an unparsable device name drops the pod with a problem naming it', () => {
      const { tasks, problems } = discoverTasks(input([pod({ devices: 'Ascend910-0,Ascend910-x,Ascend910-2' })]));
      expect(tasks.size).toBe(0);
      expect(problems).toEqual([expect.stringMatching(/job1-w1.*unparsable device name "Ascend910-x"/)]);
    });
    test('§1.3 a trailing comma is an unparsable (empty) device name', () => {
      expect(discoverTasks(input([pod({ devices: `${names([0, 1, 2, 3, 4, 5, 6, 7])},` })])).problems).toEqual([
        expect.stringMatching(/unparsable device name ""/),
      ]);
    });
    test('§1.3 a failed phy → logic conversion drops the pod with a problem naming the phy id', () => {
      const { tasks, problems } = discoverTasks(
        input([pod()], { logicIdOfPhy: (phy) => (phy === 5 ? undefined : phy) }),
      );
      expect(tasks.size).toBe(0);
      expect(problems).toEqual([expect.stringMatching(/job1-w1: no logic id for phy id 5/)]);
    });
    test('§1.3 chips are converted phy → logic and sorted by logic id', () => {
      const t = discoverTasks(
        input([pod({ devices: names([7, 6, 5, 4, 3, 2, 1, 0]) })], { logicIdOfPhy: (phy) => 7 - phy }),
      ).tasks.get('job1');
      expect(t?.logicIds).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    });
    test('§1.3 a device listed twice drops the pod with a problem', () => {
      const { tasks, problems } = discoverTasks(input([pod({ devices: names([0, 1, 2, 3, 4, 5, 6, 7, 3]) })]));
      expect(tasks.size).toBe(0);
      expect(problems).toEqual([expect.stringMatching(/lists chip Ascend910-3 twice/)]);
    });
    test('[M] item 1 share-mode copy names <name>-<phy>-<i> are read as chip <phy>, copies of one chip once', () => {
      const p = pod({ devices: 'Ascend910-3-0,Ascend910-3-7,Ascend910-12-99', rankIndex: '-1' });
      const t = discoverTasks(input([p], { ringSize: 0, logicIdOfPhy: (phy) => phy + 100 })).tasks.get('job1');
      expect(t?.logicIds).toEqual([103, 112]);
    });
    test('[M] item 1 the same copy name twice still drops the pod with a problem', () => {
      const { problems } = discoverTasks(input([pod({ devices: 'Ascend910-3-0,Ascend910-3-0' })], { ringSize: 0 }));
      expect(problems).toEqual([expect.stringMatching(/lists chip Ascend910-3-0 twice/)]);
    });
    test('D10 on 910A5 the chips come from annotation huawei.com/npu', () => {
      const p = pod({ annotations: { 'huawei.com/npu': 'npu-2', 'hccl/rankIndex': '3' } });
      const t = discoverTasks(input([p], { kind: 'Ascend910A5', ringSize: 1 })).tasks.get('job1');
      expect(t?.ranks).toEqual([{ logicId: 2, rankId: 3 }]);
    });
    test('D10 on 910A5 the huawei.com/Ascend910 annotation is not read', () => {
      expect(discoverTasks(input([pod()], { kind: 'Ascend910A5', ringSize: 1 })).tasks.size).toBe(0);
    });
  });

  describe('step 2: rescheduling filter', () => {
    test('§1.3 HR-03 on a training node a pod with fewer chips than the ring is ignored silently', () => {
      expect(discoverTasks(input([pod({ devices: names([0, 1, 2, 3]) })]))).toEqual({
        tasks: new Map(),
        problems: [],
      });
    });
    test('§1.3 on an inference node a pod with fewer chips than the ring is a task', () => {
      const p = pod({ devices: names([0, 1]) });
      expect(discoverTasks(input([p], { usage: 'infer', kind: 'Ascend910' })).tasks.get('job1')?.logicIds).toEqual([
        0, 1,
      ]);
    });
    test('§1.3 a pod holding two rings (16 chips) on a ring-8 node is a task', () => {
      const all = Array.from({ length: 16 }, (_, i) => i);
      expect(discoverTasks(input([pod({ devices: names(all) })])).tasks.get('job1')?.ranks).toHaveLength(16);
    });
  });

  describe('step 3: task name', () => {
    test('§1.3 a pod without a task-name label is ignored silently', () => {
      expect(discoverTasks(input([pod({ labels: {} })]))).toEqual({ tasks: new Map(), problems: [] });
    });
    test('§1.3 D10 the kubeflow label names the task', () => {
      const p = pod({ labels: { 'training.kubeflow.org/job-name': 'kf' } });
      expect([...discoverTasks(input([p])).tasks.keys()]).toEqual(['kf']);
    });
  });

  describe('step 4: rank index', () => {
    test('§1.3 on 910B infer the rank index is forced to -1 (every rank id -1)', () => {
      const t = discoverTasks(
        input([pod({ devices: 'Ascend910-3', rankIndex: '4' })], { usage: 'infer', ringSize: 1 }),
      ).tasks.get('job1');
      expect(t?.ranks).toEqual([{ logicId: 3, rankId: -1 }]);
    });
    test('§1.3 on 910B infer a missing rank index is no obstacle', () => {
      const p = pod({ devices: 'Ascend910-3', rankIndex: '<none>' });
      expect(discoverTasks(input([p], { usage: 'infer', ringSize: 1 })).tasks.has('job1')).toBe(true);
    });
    test('§1.3 elsewhere a missing rank index drops the pod with a problem naming it', () => {
      const { tasks, problems } = discoverTasks(input([pod({ rankIndex: '<none>' })]));
      expect(tasks.size).toBe(0);
      expect(problems).toEqual([expect.stringMatching(/job1-w1: annotation hccl\/rankIndex is missing/)]);
    });
    test('§1.3 rank index -1 outside 910B infer gives rank id -1 to every chip', () => {
      const t = discoverTasks(input([pod({ rankIndex: '-1' })])).tasks.get('job1');
      expect(t?.ranks.map((r) => r.rankId)).toEqual(Array(8).fill(-1));
    });
    test.each(['x', '1.5', ' 1', '', '0x1', '99999999999999999999'])(
      '§1.3 non-integer rank index %p: problem naming the pod, only that pod skipped',
      (rankIndex) => {
        const other = pod({ uid: 'uid-2', name: 'job2-w1', labels: { 'volcano.sh/job-name': 'job2' } });
        const { tasks, problems } = discoverTasks(input([pod({ rankIndex }), other]));
        expect([...tasks.keys()]).toEqual(['job2']);
        expect(problems).toEqual([
          `pod default/job1-w1: annotation hccl/rankIndex ${JSON.stringify(rankIndex)} is not an integer ≥ -1; pod ignored`,
        ]);
      },
    );
    test('§1.3 a rank index below -1 is reported and the pod skipped', () => {
      expect(discoverTasks(input([pod({ rankIndex: '-2' })])).problems).toEqual([expect.stringMatching(/"-2"/)]);
    });
    test('§1.3 Go Atoi syntax: a leading + is accepted', () => {
      expect(discoverTasks(input([pod({ rankIndex: '+2' })])).tasks.get('job1')?.ranks[0]).toEqual({
        logicId: 0,
        rankId: 16,
      });
    });
  });

  describe('step 5: rank ids (GenerateTaskDevFaultInfoList)', () => {
    test('§1.3 rank id = rankIndex·n + k over the logic ids in ascending order', () => {
      const p = pod({ devices: names([6, 4, 5, 7]), rankIndex: '3' });
      const t = discoverTasks(input([p], { kind: 'Ascend910', ringSize: 4 })).tasks.get('job1');
      expect(t?.ranks).toEqual([
        { logicId: 4, rankId: 12 },
        { logicId: 5, rankId: 13 },
        { logicId: 6, rankId: 14 },
        { logicId: 7, rankId: 15 },
      ]);
    });
    test('§1.3 rank index 0 gives rank ids 0 … n−1', () => {
      const t = discoverTasks(input([pod({ rankIndex: '0' })])).tasks.get('job1');
      expect(t?.ranks.map((r) => r.rankId)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    });
  });

  describe('distributed-job and step 6', () => {
    test('§1.3 annotation distributed-job "true" marks the task distributed', () => {
      const p = pod();
      const q = { ...p, annotations: { ...p.annotations, 'distributed-job': 'true' } };
      expect(discoverTasks(input([q])).tasks.get('job1')?.distributed).toBe(true);
    });
    test('§1.3 any other distributed-job value is not distributed', () => {
      const p = pod();
      const q = { ...p, annotations: { ...p.annotations, 'distributed-job': 'True' } };
      expect(discoverTasks(input([q])).tasks.get('job1')?.distributed).toBe(false);
    });
    test('§1.3 two pods of one task on the node: the last one wins and a problem names both', () => {
      const first = pod({ devices: names([0, 1, 2, 3, 4, 5, 6, 7]) });
      const second = pod({
        uid: 'uid-2',
        name: 'job1-w2',
        devices: names([8, 9, 10, 11, 12, 13, 14, 15]),
        rankIndex: '2',
      });
      const { tasks, problems } = discoverTasks(input([first, second]));
      expect(tasks.get('job1')?.pod).toBe(second);
      expect(problems).toEqual([
        'task job1: pod default/job1-w2 replaces pod default/job1-w1 (one pod per task per node is assumed)',
      ]);
    });
    test('§1.3 task names are not namespaced: same job name in two namespaces collides', () => {
      const a = pod();
      const b = pod({ uid: 'uid-2', namespace: 'other', devices: names([8, 9, 10, 11, 12, 13, 14, 15]) });
      const { tasks, problems } = discoverTasks(input([a, b]));
      expect([tasks.size, tasks.get('job1')?.namespace, problems.length]).toEqual([1, 'other', 1]);
    });
    test('§1.3 two tasks on one node are both found', () => {
      const a = pod({ devices: names([0, 1, 2, 3]) });
      const b = pod({
        uid: 'uid-2',
        name: 'job2-w1',
        labels: { 'volcano.sh/job-name': 'job2' },
        devices: names([4, 5, 6, 7]),
      });
      const { tasks } = discoverTasks(input([a, b], { kind: 'Ascend910', ringSize: 4 }));
      expect([...tasks.keys()].sort()).toEqual(['job1', 'job2']);
    });
  });
});

describe('§1.3 problems are bounded (issue 12 loose end 3)', () => {
  const big = '9'.repeat(256 * 1024) + 'x'; // a 256 KiB hccl/rankIndex: not an integer

  test('§1.3 a 256 KiB rank index is quoted in at most a few hundred characters, with its length', () => {
    const [p] = discoverTasks(input([pod({ rankIndex: big })])).problems;
    expect([p!.length < 400, p!.includes(`(${big.length} chars)`)]).toEqual([true, true]);
  });

  test('§1.3 a 256 KiB device name is quoted in at most a few hundred characters', () => {
    const name = `${'A'.repeat(256 * 1024)}-3`; // ends in a phy id, but lists the chip twice
    const [p] = discoverTasks(input([pod({ devices: `${name},${name}` })])).problems;
    expect(p!.length < 400).toBe(true);
  });

  test('§1.3 500 bad pods give the first 20 problems and one entry counting the other 480', () => {
    const pods = Array.from({ length: 500 }, (_, i) =>
      pod({ name: `w${i}`, uid: `u${i}`, labels: { 'volcano.sh/job-name': `job${i}` }, rankIndex: big }),
    );
    const { problems } = discoverTasks(input(pods));
    expect([problems.length, problems.at(-1), Buffer.byteLength(JSON.stringify(problems)) < 16 * 1024]).toEqual([
      21,
      '… and 480 more problems',
      true,
    ]);
  });
});
