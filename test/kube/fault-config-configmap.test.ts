import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import type { FaultConfigReport, FaultConfigSource } from '../../src/config/fault-config-source.js';
import { EMPTY_POLICY, type FaultPolicy } from '../../src/faults/index.js';
import { FaultConfigConfigMapSource } from '../../src/kube/fault-config-configmap.js';
import type { Logger } from '../../src/core/logger.js';
import { KubeApiStandIn } from '../../src/sim/kube-api.js';
import { EventList, until } from './harness.js';

const files: FaultConfigSource = {
  current: () => EMPTY_POLICY,
  lastReport: (): FaultConfigReport => ({ trigger: 'initial', changed: true, files: [] }),
  subscribe: () => () => undefined,
  close: () => undefined,
};

const RULE = JSON.stringify({
  FaultFrequency: [{ EventId: ['80E01801'], TimeWindow: 3600, Times: 3, FaultHandling: 'ManuallySeparateNPU' }],
});

let api: KubeApiStandIn;
let core: k8s.CoreV1Api;
let src: FaultConfigConfigMapSource;
let events: EventList;
let policies: FaultPolicy[];

beforeEach(async () => {
  api = await KubeApiStandIn.start();
  core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
  events = new EventList();
  policies = [];
  src = new FaultConfigConfigMapSource({ api: core, watch: api.kubeConfig(), files, events });
  src.subscribe((_r, p) => policies.push(p));
  await src.start();
});

afterEach(async () => {
  src.close();
  await api.stop();
});

async function put(data: Record<string, string>): Promise<void> {
  const body = { metadata: { name: 'mindx-dl-fault-config', namespace: 'kube-system' }, data };
  try {
    const old = await core.readNamespacedConfigMap({ name: 'mindx-dl-fault-config', namespace: 'kube-system' });
    await core.replaceNamespacedConfigMap({
      name: 'mindx-dl-fault-config',
      namespace: 'kube-system',
      body: { ...body, metadata: { ...body.metadata, resourceVersion: old.metadata!.resourceVersion! } },
    });
  } catch {
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body });
  }
}

const hasRule = (): boolean => src.current().customization.frequency.size === 1;

describe('F.8 fault-config ConfigMap, watched', () => {
  test('F.8 a valid faultCustomization.json key is swapped in when the ConfigMap is created', async () => {
    await put({ 'faultCustomization.json': RULE });
    await until(hasRule);
    expect(src.lastReport().files.find((f) => f.file === 'faultCustomization.json')?.status).toBe('loaded');
  });

  test('F.8 an invalid value keeps the last good one and is reported by one Event naming the key', async () => {
    await put({ 'faultCustomization.json': RULE });
    await until(hasRule);
    await put({ 'faultCustomization.json': '{not json' });
    await until(() => events.events.length > 0);
    expect([hasRule(), events.events.map((e) => e.message.split(' ').slice(0, 3).join(' '))]).toEqual([
      true,
      ['kube-system/mindx-dl-fault-config: key faultCustomization.json'],
    ]);
  });

  test('F.8 deleting the ConfigMap reverts to the local files', async () => {
    await put({ 'faultCustomization.json': RULE });
    await until(hasRule);
    await core.deleteNamespacedConfigMap({ name: 'mindx-dl-fault-config', namespace: 'kube-system' });
    await until(() => !hasRule());
    expect(src.current().customization).toBe(EMPTY_POLICY.customization);
  });

  test('F.8 listeners get each new policy', async () => {
    await put({ 'faultCustomization.json': RULE });
    await until(hasRule);
    expect(policies.at(-1)?.customization.frequency.size).toBe(1);
  });
});

describe('F.8 log lines of a fault-config value are capped (issue 12 loose end 5)', () => {
  let lines: { level: string; line: string }[];

  beforeEach(async () => {
    src.close();
    lines = [];
    const at =
      (level: string) =>
      (o: unknown, msg?: string): void =>
        void lines.push({ level, line: JSON.stringify({ ...(o as object), msg }) });
    const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger;
    src = new FaultConfigConfigMapSource({ api: core, watch: api.kubeConfig(), files, events, logger });
    await src.start();
  });

  test('F.8 500 bad entries of 1.5 KB each: 20 entry lines and one counting the other 480, each line under 2 KiB', async () => {
    const codes = Array.from({ length: 500 }, (_, i) => `bad-${i}-${'z'.repeat(1500)}`);
    await put({ 'faultCode.json': JSON.stringify({ NotHandleFaultCodes: ['80E01801'], RestartNPUCodes: codes }) });
    await until(() => src.lastReport().files.some((f) => f.file === 'faultCode.json' && f.status === 'loaded'));
    const entries = lines.filter((l) => l.line.includes('fault configuration entry'));
    expect([
      entries.length,
      entries.at(-1)?.line.includes('… and 480 more'),
      Math.max(...entries.map((l) => Buffer.byteLength(l.line))) < 2048,
    ]).toEqual([21, true, true]);
  });

  test('F.8 a value rejected for 500 reasons is logged by one line naming 10 of them and counting the rest, under 4 KiB', async () => {
    const codes = Array.from({ length: 500 }, (_, i) => i); // numbers where strings belong: fatal type problems
    await put({ 'faultCode.json': JSON.stringify({ NotHandleFaultCodes: codes }) });
    await until(() => src.lastReport().files.some((f) => f.file === 'faultCode.json' && f.status === 'rejected'));
    const rejected = lines.filter((l) => l.line.includes('fault configuration rejected'));
    const fatal = (JSON.parse(rejected[0]!.line) as { fatal: string[] }).fatal;
    expect([rejected.length, fatal.length, fatal.at(-1), Buffer.byteLength(rejected[0]!.line) < 4096]).toEqual([
      1,
      11,
      '… and 490 more',
      true,
    ]);
  });
});
