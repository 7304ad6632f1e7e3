/**
 * When the I.3 pod annotations are written (the passes moved out of the agent's composition root, issue 14 item 4),
 * and which rank table a node writes.
 */
import { describe, expect, test } from '@jest/globals';
import type { PodDevices, PodView } from '../../src/core/pods.js';
import { PodAnnotationPasses } from '../../src/kube/pod-annotation-passes.js';
import { ANNOTATION_ASCEND_REAL, rankTableOf, type AnnotateResult } from '../../src/kube/pod-annotator.js';

const RESOURCE = 'huawei.com/Ascend910';

function pod(name: string, annotated: boolean): PodView {
  return {
    uid: name,
    namespace: 'default',
    name,
    annotations: annotated ? { [ANNOTATION_ASCEND_REAL]: 'Ascend910-0' } : {},
    containerLimits: [{ [RESOURCE]: 1 }],
    deleting: false,
    waitingMessages: [],
  };
}

/** Passes over a pod list; kubelet's answers and the annotate calls are counted. */
function passes(pods: PodView[], held: () => Promise<readonly PodDevices[]>) {
  const calls = { held: 0, annotate: 0, annotated: [] as string[], warnings: 0 };
  const log = (): void => undefined;
  const p = new PodAnnotationPasses({
    annotator: {
      annotate: (_type: string, h: readonly PodDevices[]): Promise<AnnotateResult> => {
        calls.annotate++;
        return Promise.resolve({ patched: h.map((d) => `${d.namespace}/${d.name}`), skipped: [], failed: [] });
      },
    },
    pods: { pods: () => pods },
    resourceName: RESOURCE,
    deviceType: 'Ascend910',
    held: () => {
      calls.held++;
      return held();
    },
    onAnnotated: (ns, name) => calls.annotated.push(`${ns}/${name}`),
    logger: { debug: log, info: log, warn: () => void calls.warnings++, error: log },
  });
  return { p, calls };
}

const answer = (name: string): PodDevices[] => [
  { namespace: 'default', name, resourceName: RESOURCE, deviceIds: ['Ascend910-0'] },
];

describe('I.3 annotation passes', () => {
  test('I.3 an idle node (every pod annotated) never asks kubelet', async () => {
    const { p, calls } = passes([pod('a', true)], () => Promise.resolve(answer('a')));
    await p.request();
    expect([calls.held, calls.annotate]).toEqual([0, 0]);
  });

  test('I.3 a pod waiting for its annotation is annotated and reported', async () => {
    const { p, calls } = passes([pod('a', false)], () => Promise.resolve(answer('a')));
    await p.request();
    expect([calls.held, calls.annotated]).toEqual([1, ['default/a']]);
  });

  test('I.3 requests while a pass runs make one more pass after it, not one each', async () => {
    const { p, calls } = passes([pod('a', false)], () => new Promise((r) => setImmediate(() => r(answer('a')))));
    const first = p.request();
    for (let i = 0; i < 5; i++) void p.request();
    await first;
    expect(calls.held).toBe(2);
  });

  test('I.3 kubelet that cannot be asked is logged once until a pass gets through', async () => {
    let fail = true;
    const { p, calls } = passes([pod('a', false)], () =>
      fail ? Promise.reject(new Error('no pod-resources socket')) : Promise.resolve(answer('a')),
    );
    await p.request();
    await p.request();
    fail = false;
    await p.request();
    fail = true;
    await p.request();
    expect(calls.warnings).toBe(2);
  });

  test('I.3 no pass starts after stop()', async () => {
    const { p, calls } = passes([pod('a', false)], () => Promise.resolve(answer('a')));
    p.stop();
    await p.request();
    expect(calls.held).toBe(0);
  });
});

describe('I.3 rank table of a node', () => {
  test.each([
    ['Ascend910B', [], '910'],
    ['Ascend910A3', [], '910'],
    ['Ascend910A5', [], 'npu'],
    ['Ascend310P', ['Atlas 300I Duo', 'Atlas 300I Duo'], '910'],
    ['Ascend310P', ['Atlas 300I Duo', 'Atlas 300V Pro'], 'none'],
    ['Ascend310P', [], 'none'],
    ['Ascend310', [], 'none'],
  ] as const)('I.3 %s with products %j writes %s', (kind, products, table) => {
    expect(rankTableOf(kind, products)).toBe(table);
  });
});
