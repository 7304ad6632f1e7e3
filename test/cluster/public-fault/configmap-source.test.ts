import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { PublicFaultConfigMapSource } from '../../../src/cluster/public-fault/configmap-source.js';
import { noopPublicFaultMetrics, type PublicFaultMetrics } from '../../../src/cluster/public-fault/metrics.js';
import type { PublicFaultMessage } from '../../../src/cluster/public-fault/types.js';
import { centerKube } from '../helpers.js';
import { KubeApiStandIn } from '../../../src/sim/kube-api.js';
import { until } from './helpers.js';
import { message, recordingLogger } from './fixtures.js';

let api: KubeApiStandIn;
let core: k8s.CoreV1Api;
let source: PublicFaultConfigMapSource | undefined;
let got: { id: string; origin: string }[];
let reasons: string[];
let logger: ReturnType<typeof recordingLogger>;

function cm(
  name: string,
  value: string | undefined,
  opts: { namespace?: string; labelled?: boolean } = {},
): k8s.V1ConfigMap {
  return {
    metadata: {
      name,
      namespace: opts.namespace ?? 'default',
      ...(opts.labelled === false ? {} : { labels: { 'mc-consumer-publicfault': 'true' } }),
    },
    data: value === undefined ? { Other: 'x' } : { PublicFault: value },
  };
}

const msg = (id: string): string => JSON.stringify(message({ id }));

async function startSource(maxValueBytes?: number): Promise<void> {
  const metrics: PublicFaultMetrics = { ...noopPublicFaultMetrics, rejection: (_s, r) => void reasons.push(r) };
  source = new PublicFaultConfigMapSource({
    kube: centerKube(api),
    collect: (m: PublicFaultMessage, _s, origin) => {
      got.push({ id: m.id, origin });
      return { code: 0, info: '' };
    },
    logger,
    metrics,
    ...(maxValueBytes !== undefined ? { maxValueBytes } : {}),
  });
  await source.start();
}

/** Creates a marker ConfigMap and waits for it: everything submitted before it has been handled. */
async function barrier(n: number): Promise<void> {
  await core.createNamespacedConfigMap({ namespace: 'default', body: cm(`barrier-${n}`, msg(`barrier-${n}`)) });
  await until(() => got.some((g) => g.id === `barrier-${n}`), 10_000, `barrier-${n}`);
}

beforeEach(async () => {
  api = await KubeApiStandIn.start();
  core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
  got = [];
  reasons = [];
  logger = recordingLogger();
});

afterEach(async () => {
  await source?.stop();
  source = undefined;
  await api.stop();
});

describe('§2.1 ConfigMap entry point', () => {
  test('§2.1 a labelled ConfigMap is collected, named in the logs by namespace/name', async () => {
    await startSource();
    await core.createNamespacedConfigMap({ namespace: 'default', body: cm('ccae-1', msg('msg-00000001')) });
    await until(() => got.length > 0);
    expect(got).toEqual([{ id: 'msg-00000001', origin: 'default/ccae-1' }]);
  });

  test('§2.1 ConfigMaps in any namespace are collected', async () => {
    await startSource();
    await core.createNamespacedConfigMap({
      namespace: 'kube-public',
      body: cm('x', msg('msg-kube-public'), { namespace: 'kube-public' }),
    });
    await until(() => got.length > 0);
    expect(got[0]!.origin).toBe('kube-public/x');
  });

  test('§2.1 a ConfigMap without the label is not collected', async () => {
    await startSource();
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: cm('plain', msg('msg-unlabelled'), { labelled: false }),
    });
    await barrier(1);
    expect(got.map((g) => g.id)).toEqual(['barrier-1']);
  });

  test('§2.1 the initial list delivers existing ConfigMaps as adds', async () => {
    await core.createNamespacedConfigMap({ namespace: 'default', body: cm('before', msg('msg-existing')) });
    await startSource();
    await until(() => got.length > 0);
    expect(got[0]!.id).toBe('msg-existing');
  });

  test('§2.1 every update re-submits the whole message', async () => {
    await startSource();
    await core.createNamespacedConfigMap({ namespace: 'default', body: cm('c', msg('msg-version-1')) });
    await until(() => got.length === 1);
    await core.replaceNamespacedConfigMap({ name: 'c', namespace: 'default', body: cm('c', msg('msg-version-2')) });
    await until(() => got.length === 2);
    expect(got.map((g) => g.id)).toEqual(['msg-version-1', 'msg-version-2']);
  });

  test('§2.1 deleting the ConfigMap submits nothing (faults are not cleared)', async () => {
    await startSource();
    await core.createNamespacedConfigMap({ namespace: 'default', body: cm('c', msg('msg-version-1')) });
    await until(() => got.length === 1);
    await core.deleteNamespacedConfigMap({ name: 'c', namespace: 'default' });
    await barrier(2);
    expect(got.map((g) => g.id)).toEqual(['msg-version-1', 'barrier-2']);
  });

  test('§2.1 a missing PublicFault key is logged and ignored', async () => {
    await startSource();
    await core.createNamespacedConfigMap({ namespace: 'default', body: cm('nokey', undefined) });
    await barrier(3);
    expect([got.length, reasons]).toEqual([1, ['missing-key']]);
  });

  test('§2.1 invalid JSON is logged and ignored', async () => {
    await startSource();
    await core.createNamespacedConfigMap({ namespace: 'default', body: cm('bad', '{"id":') });
    await barrier(4);
    expect([reasons, logger.lines.some((l) => l.msg.startsWith('public fault ConfigMap ignored'))]).toEqual([
      ['unparsable'],
      true,
    ]);
  });

  test('§2.1 an update whose old version did not parse is ignored, even if the new one is valid', async () => {
    await startSource();
    await core.createNamespacedConfigMap({ namespace: 'default', body: cm('c', '{"id":') });
    await core.replaceNamespacedConfigMap({ name: 'c', namespace: 'default', body: cm('c', msg('msg-now-valid')) });
    await barrier(5);
    expect([got.map((g) => g.id), reasons]).toEqual([['barrier-5'], ['unparsable', 'previous-version-unparsable']]);
  });

  test('issue [G] item 3: a value over the size limit is refused before decoding', async () => {
    await startSource(200);
    await core.createNamespacedConfigMap({ namespace: 'default', body: cm('big', msg('msg-big').padEnd(201, ' ')) });
    await until(() => reasons.length > 0);
    expect(reasons).toEqual(['too-large']);
  });

  test('issue [O] bad input: an unparsable ConfigMap at 1 MiB is counted and logged once, however often it is written', async () => {
    await startSource();
    // the largest value the API server stores (1 MiB with the key), not JSON
    const big = '{"id":'.padEnd(1024 * 1024 - 'PublicFault'.length, ' ');
    await core.createNamespacedConfigMap({ namespace: 'default', body: cm('big', big) });
    for (let i = 0; i < 3; i++) {
      const body = cm('big', big);
      body.metadata!.annotations = { rev: String(i) };
      await core.replaceNamespacedConfigMap({ name: 'big', namespace: 'default', body });
    }
    await barrier(6);
    // §2.1: the updates are refused for their unparsable old version: one more reason, logged once too
    const logged = logger.lines.filter((l) => l.msg.startsWith('public fault ConfigMap')).length;
    expect([reasons, logged]).toEqual([['unparsable', 'previous-version-unparsable'], 2]);
  });

  test('issue [O] bad input: a refused ConfigMap made valid is collected, and a new refusal is logged again', async () => {
    await startSource();
    await core.createNamespacedConfigMap({ namespace: 'default', body: cm('c', '{"id":') });
    await core.replaceNamespacedConfigMap({ name: 'c', namespace: 'default', body: cm('c', msg('msg-valid-1')) });
    await core.replaceNamespacedConfigMap({ name: 'c', namespace: 'default', body: cm('c', msg('msg-valid-2')) });
    await core.replaceNamespacedConfigMap({ name: 'c', namespace: 'default', body: cm('c', '{"id":') });
    await barrier(7);
    expect([got.map((g) => g.id), reasons]).toEqual([
      ['msg-valid-2', 'barrier-7'],
      ['unparsable', 'previous-version-unparsable', 'unparsable'],
    ]);
  });
});
