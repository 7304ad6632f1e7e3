/**
 * bench/configmap: the device-info ConfigMap during a fault storm on 16 chips, against the Kubernetes API stand-in
 * over real HTTP, on the real clock:
 * - writes per minute (spec H.4: at most one per second, so ≤ 60);
 * - delay from a state change (an engine cycle) to the ConfigMap showing it, seen through a watch (target p99 ≤ 1.1 s
 *   given the 1 s spacing rule).
 * The publisher reads the state store's snapshot, as in the agent.
 */
import * as k8s from '@kubernetes/client-node';
import { FaultEngine, parsePolicy } from '../src/faults/index.js';
import { PROJECT_ROOT } from '../src/core/paths.js';
import { SYSTEM_CLOCK } from '../src/core/clock.js';
import { DeviceInfoPublisher, storeSeparationHost } from '../src/kube/device-info-publisher.js';
import { deviceInfoViewOf } from '../src/kube/device-info-view.js';
import { NodeStateStore } from '../src/state/store.js';
import { KubeApiStandIn } from '../src/sim/kube-api.js';
import fs from 'node:fs';
import path from 'node:path';
import { percentile } from './stats.js';

const STORM_MS = Number(process.env.BENCH_CONFIGMAP_MS ?? 20_000);
const EVENTS_PER_S = Number(process.env.BENCH_CONFIGMAP_RATE ?? 50);

export interface ConfigMapResult {
  durationS: number;
  cycles: number;
  writes: number;
  writesPerMinute: number;
  minGapMs: number;
  delayP50Ms: number;
  delayP99Ms: number;
  delayMaxMs: number;
}

export async function benchConfigMap(): Promise<ConfigMapResult> {
  const api = await KubeApiStandIn.start();
  const kc = api.kubeConfig();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const read = (f: string): string => fs.readFileSync(path.join(PROJECT_ROOT, f), 'utf8');
  const policy = parsePolicy(read('faultCode.json'), read('faultCustomization.json')).policy!;
  const chips = Array.from({ length: 16 }, (_, i) => ({ logicId: i, phyId: i, cardId: i, deviceId: 0 }));
  const engine = new FaultEngine(policy, { chips });
  const store = new NodeStateStore({
    engine,
    chips,
    node: { chipKind: 'Ascend910B', boardId: 0x24 },
    clock: SYSTEM_CLOCK,
    listWatchPeriodMs: 5000,
  });
  const codes = [0x80e18402, 0x8118043c, 0x80e21007, 0x80c98008];
  /** Unhealthy list after each cycle, with the time it was produced. */
  const pending: { list: string; at: number }[] = [];
  const delays: number[] = [];
  /** Times the watch saw a write. */
  const shown: number[] = [];
  const unhealthy = (): string =>
    store
      .snapshot()
      .chips.filter((v) => v.health === 'Unhealthy')
      .map((v) => v.name)
      .sort()
      .join(',');
  const cycle = (events: Parameters<NodeStateStore['applyEvents']>[0]): void => {
    store.applyEvents(events);
    pending.push({ list: unhealthy(), at: performance.now() });
    if (pending.length > 10_000) pending.shift();
  };
  const view = { runMode: 'Ascend910', resourceName: 'huawei.com/Ascend910', superPodId: -2, serverIndex: -2 } as const;
  const publisher = new DeviceInfoPublisher({
    api: core,
    nodeName: 'bench',
    runMode: 'Ascend910',
    view: (now) => deviceInfoViewOf(store.snapshot().chips, view, now),
    separation: storeSeparationHost(store, 'Ascend910'),
    confirmedManual: '',
  });
  store.onChange((_, change) => {
    publisher.noteTransitions(change.transitions);
    publisher.changed();
  });
  const controller = await new k8s.Watch(kc).watch(
    '/api/v1/namespaces/kube-system/configmaps',
    { fieldSelector: 'metadata.name=mindx-dl-deviceinfo-bench' },
    (_t, obj: k8s.V1ConfigMap) => {
      const now = performance.now();
      shown.push(now);
      const list = JSON.parse(obj.data?.DeviceInfoCfg ?? '{}').DeviceInfo?.DeviceList?.[
        'huawei.com/Ascend910-Unhealthy'
      ];
      // every state change up to the one shown is now visible: its delay is now − its time
      const idx = pending.map((p) => p.list).lastIndexOf(list as string);
      if (idx < 0) return;
      for (const p of pending.splice(0, idx + 1)) if (p.list !== (pending[0]?.list ?? '')) delays.push(now - p.at);
    },
    () => undefined,
  );
  await publisher.start();
  const start = performance.now();
  const before = api.writeCount({ resource: 'configmaps', name: 'mindx-dl-deviceinfo-bench' });
  let cycles = 0;
  while (performance.now() - start < STORM_MS) {
    const logicId = Math.floor(Math.random() * 16);
    const code = codes[Math.floor(Math.random() * codes.length)]!;
    cycle([{ logicId, code, assertion: Math.random() < 0.5 ? 'occur' : 'recover', severity: 2 }]);
    cycles++;
    await new Promise((r) => setTimeout(r, 1000 / EVENTS_PER_S));
  }
  await new Promise((r) => setTimeout(r, 1500));
  const writes = api.writeCount({ resource: 'configmaps', name: 'mindx-dl-deviceinfo-bench' }) - before;
  const elapsed = (performance.now() - start) / 1000;
  // rate = intervals between consecutive writes seen by the watch, per minute of the span they cover
  const gaps = shown.slice(1).map((t, i) => t - shown[i]!);
  const span = (shown.at(-1)! - shown[0]!) / 1000;
  controller.abort();
  publisher.stop();
  await api.stop();
  return {
    durationS: elapsed,
    cycles,
    writes,
    writesPerMinute: (gaps.length / span) * 60,
    minGapMs: Math.min(...gaps),
    delayP50Ms: percentile(delays, 50),
    delayP99Ms: percentile(delays, 99),
    delayMaxMs: Math.max(...delays),
  };
}

if (process.argv[1]?.endsWith('configmap.ts')) {
  void benchConfigMap().then((r) => console.log(JSON.stringify({ bench: 'configmap', ...r })));
}
