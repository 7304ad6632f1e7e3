/**
 * The simulated cluster of the fault-center benches (issue [O]): bench/fault-center-e2e-api.ts seeds the API
 * stand-in with it, bench/fault-center-intake.ts feeds the center's intake stages with the same objects. Per node:
 * a device-info ConfigMap of 16 chips with a valid CheckCode (≈ 4.5 % of the chips with a device fault), one job
 * pod using every chip and one PodGroup; public faults in ConfigMaps of 100 (80 % SubHealthFault, 20 %
 * SeparateNPU, 1–2 NPUs each, spread over the nodes); the Node objects (bench/fault-center-real.ts seeds a real
 * apiserver with all of it). Deterministic. Not a test: bench inputs only.
 */
import { checkCodeOf } from '../src/kube/device-info.js';

export const CHIPS = 16;
/** share of chips with a device fault (the 3–6 %) */
export const FAULTED = 0.045;
export const SENDERS = ['CCAE', 'fd-online', 'pingmesh', 'Netmind', 'dpcStorage', 'dtfsStorage'];
const CODES: [string, string][] = [
  ['80E01801', 'RestartNPU'],
  ['8C084E00', 'SeparateNPU'],
  ['80E3A201', 'SeparateNPU'],
  ['81078603', 'RestartBusiness'],
];
/** The marker of an update: a NotHandleFault (never counted, chip stays available) whose fault_time is the update's number. */
export const MARKER_CODE = '80C98000';

/** Deterministic pseudo-random in [0, 1) from integers. */
export function hash01(...xs: number[]): number {
  let h = 2166136261;
  for (const x of xs) {
    h ^= x;
    h = Math.imul(h, 16777619) >>> 0;
    h ^= h >>> 13;
  }
  return (h >>> 0) / 4294967296;
}

function fault(dev: string, code: string, level: string, timeMs: number): Record<string, unknown> {
  return {
    fault_type: 'CardUnhealthy',
    npu_name: dev,
    large_model_fault_level: level,
    fault_level: level,
    fault_handling: level,
    fault_code: code,
    fault_time_and_level_map: { [code]: { fault_time: timeMs, fault_level: level } },
  };
}

/** Node `n`'s device-info ConfigMap; `salt` re-rolls its faults, `marker` adds the update marker. */
export function deviceInfo(n: number, salt: number, marker?: number) {
  const faults: Record<string, unknown>[] = [];
  const bad = new Set<string>();
  for (let c = 0; c < CHIPS; c++) {
    if (hash01(n, c, salt) >= FAULTED) continue;
    const [code, level] = CODES[Math.floor(hash01(n, c, salt, 7) * CODES.length)]!;
    faults.push(fault(`Ascend910-${c}`, code, level, 1_772_359_200_000 + salt));
    bad.add(`Ascend910-${c}`);
  }
  if (marker !== undefined) faults.push(fault(`Ascend910-${marker % CHIPS}`, MARKER_CODE, 'NotHandleFault', marker));
  const all = Array.from({ length: CHIPS }, (_, i) => `Ascend910-${i}`);
  const list: Record<string, string> = {
    'huawei.com/Ascend910': all.filter((d) => !bad.has(d)).join(','),
    'huawei.com/Ascend910-Unhealthy': [...bad].join(','),
    'huawei.com/Ascend910-NetworkUnhealthy': '',
    'huawei.com/Ascend910-Recovering': '',
    'huawei.com/Ascend910-Fault': JSON.stringify(faults),
  };
  const updateTime = 1_772_359_200 + salt;
  return {
    metadata: {
      name: `mindx-dl-deviceinfo-node-${n}`,
      namespace: 'kube-system',
      labels: { 'mx-consumer-cim': 'true' },
    },
    data: {
      DeviceInfoCfg: JSON.stringify({
        DeviceInfo: { DeviceList: list, UpdateTime: updateTime },
        SuperPodID: -2,
        ServerIndex: -2,
        RackID: -2,
        CheckCode: checkCodeOf(list, updateTime),
      }),
    },
  };
}

function owner(uid: string) {
  return [{ apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'job', uid, controller: true }];
}

/** Node `n`'s job pod (job `job-<n>`), using every chip. */
export function jobPod(n: number) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `train-${n}`,
      namespace: 'default',
      ownerReferences: owner(`job-${n}`),
      annotations: {
        'ascend.kubectl.kubernetes.io/ascend-910-configuration': JSON.stringify({
          pod_name: `train-${n}`,
          server_id: '10.0.0.1',
          devices: Array.from({ length: CHIPS }, (_, d) => ({
            device_id: String(d),
            device_ip: `10.1.0.${d}`,
            rank_id: String(d),
          })),
        }),
      },
    },
    spec: { nodeName: `node-${n}`, containers: [{ name: 'c', image: 'x' }] },
  };
}

/** Node `n`'s job PodGroup. */
export function podGroup(n: number) {
  return {
    apiVersion: 'scheduling.volcano.sh/v1beta1',
    kind: 'PodGroup',
    metadata: { name: `pg-${n}`, namespace: 'default', ownerReferences: owner(`job-${n}`) },
    spec: { minMember: 1 },
  };
}

/** `total` public faults in ConfigMaps of 100 over `nodes` nodes, sent at `nowMs` (faults a minute older). */
export function publicFaultConfigMaps(total: number, nodes: number, nowMs: number) {
  const out = [];
  for (let m = 0; m * 100 < total; m++) {
    const faults = [];
    for (let i = 0; i < 100 && m * 100 + i < total; i++) {
      const k = m * 100 + i;
      const node = `node-${k % nodes}`;
      const d = Math.floor(hash01(k, 3) * CHIPS);
      const separate = hash01(k, 5) < 0.2;
      faults.push({
        faultId: `bench-pf-${m}-${i}`, // §2.5: 8 to 128 characters
        faultType: 'NPU',
        faultCode: separate ? '220001001' : '010001001',
        faultTime: nowMs - 60_000,
        assertion: 'occur',
        influence: [{ nodeName: node, deviceIds: hash01(k, 9) < 0.5 ? [d] : [d, (d + 1) % CHIPS] }],
      });
    }
    out.push({
      metadata: { name: `public-fault-${m}`, namespace: 'default', labels: { 'mc-consumer-publicfault': 'true' } },
      data: {
        PublicFault: JSON.stringify({
          id: `bench.msg-${m}`.padEnd(8, '0'),
          timestamp: nowMs,
          version: '1.0',
          resource: SENDERS[m % SENDERS.length],
          faults,
        }),
      },
    });
  }
  return out;
}

/** Node `n` (`node-<n>`), with the serial-number annotation NodeD writes (§2.5 "nodeSN → node"). */
export function node(n: number) {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: `node-${n}`,
      labels: { 'kubernetes.io/hostname': `node-${n}`, accelerator: 'huawei-Ascend910' },
      annotations: { 'product-serial-number': `SN-${String(n).padStart(8, '0')}` },
    },
    spec: {},
  };
}
