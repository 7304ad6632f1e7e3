/** The pod cache of manual separation (cluster-faults §1.3 "Job id"), indexed by node (issue [O] start-up). */
import { describe, expect, test } from '@jest/globals';
import { JobIndex } from '../../src/cluster/job-index.js';
import { jobPod } from './helpers.js';

describe('1.3 job of an NPU', () => {
  test('1.3 the job of the pod on the node whose annotation lists the device; other nodes and devices give ""', () => {
    const j = new JobIndex();
    j.upsertPod(jobPod('a', 'node-1', 'job-a', [0, 1]));
    j.upsertPod(jobPod('b', 'node-2', 'job-b', [2]));
    expect([
      j.jobOf('node-1', 'Ascend910-1'),
      j.jobOf('node-1', 'Ascend910-2'),
      j.jobOf('node-3', 'Ascend910-0'),
    ]).toEqual(['job-a', '', '']);
  });

  test('1.3 of two pods listing the device, the first seen wins, also when it was bound to the node later', () => {
    const j = new JobIndex();
    j.upsertPod(jobPod('first', '', 'job-first', [3])); // pending: no node yet
    j.upsertPod(jobPod('second', 'node-1', 'job-second', [3]));
    j.upsertPod(jobPod('first', 'node-1', 'job-first', [3])); // bound
    expect(j.jobOf('node-1', 'Ascend910-3')).toBe('job-first');
  });

  test('1.3 a deleted pod no longer gives its job; a pod moved off the node neither', () => {
    const j = new JobIndex();
    j.upsertPod(jobPod('a', 'node-1', 'job-a', [0]));
    j.upsertPod(jobPod('b', 'node-1', 'job-b', [1]));
    j.deletePod(jobPod('a', 'node-1', 'job-a', [0]));
    j.upsertPod(jobPod('b', 'node-2', 'job-b', [1]));
    expect([
      j.jobOf('node-1', 'Ascend910-0'),
      j.jobOf('node-1', 'Ascend910-1'),
      j.jobOf('node-2', 'Ascend910-1'),
    ]).toEqual(['', '', 'job-b']);
  });

  test('1.3 an update of a pod with a changed annotation takes the new device list', () => {
    const j = new JobIndex();
    j.upsertPod(jobPod('a', 'node-1', 'job-a', [0]));
    j.upsertPod(jobPod('a', 'node-1', 'job-a', [0]));
    j.upsertPod(jobPod('a', 'node-1', 'job-a', [1]));
    expect([j.jobOf('node-1', 'Ascend910-0'), j.jobOf('node-1', 'Ascend910-1')]).toEqual(['', 'job-a']);
  });

  test('1.3 a malformed annotation is reported again on every update that still carries it', () => {
    const j = new JobIndex();
    const pod = jobPod('a', 'node-1', 'job-a', [0]);
    pod.metadata.annotations['ascend.kubectl.kubernetes.io/ascend-910-configuration'] = '{"devices":';
    const errors = [j.upsertPod(pod), j.upsertPod(pod)];
    expect([errors.map((e) => e?.includes('pod default/a')), j.jobOf('node-1', 'Ascend910-0')]).toEqual([
      [true, true],
      '',
    ]);
  });
});
