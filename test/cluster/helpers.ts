/**
 * Builders shared by the fault-center tests: device-info ConfigMaps with a valid CheckCode, fault objects, pods.
 */
import { builtInKube, type ClusterKube } from '../../src/cluster/kube.js';
import { KubeClient } from '../../src/kube/kube-client.js';
import { checkCodeOf } from '../../src/kube/device-info.js';
import type { FaultObject } from '../../src/cluster/device-view.js';

/** A fault object of the device plugin (one code). */
export function faultObject(dev: string, code: string, level: string, timeMs = 1, type = 'CardUnhealthy'): FaultObject {
  return {
    fault_type: type,
    npu_name: dev,
    large_model_fault_level: level,
    fault_level: level,
    fault_handling: level,
    fault_code: code,
    fault_time_and_level_map: code === '' ? {} : { [code]: { fault_time: timeMs, fault_level: level } },
  };
}

/** A `DeviceList` of 8 Ascend910 chips with the given faults (faulty chips off the available list). */
export function deviceList(faults: FaultObject[], chips = 8): Record<string, string> {
  const bad = new Set(faults.filter((f) => f.fault_level !== 'NotHandleFault').map((f) => f.npu_name));
  const all = Array.from({ length: chips }, (_, i) => `Ascend910-${i}`);
  return {
    'huawei.com/Ascend910': all.filter((d) => !bad.has(d)).join(','),
    'huawei.com/Ascend910-Unhealthy': all.filter((d) => bad.has(d)).join(','),
    'huawei.com/Ascend910-NetworkUnhealthy': '',
    'huawei.com/Ascend910-Recovering': '',
    'huawei.com/Ascend910-Fault': JSON.stringify(faults),
  };
}

/** A device-info ConfigMap of `node` with a valid (or, with `tamper`, a wrong) CheckCode. */
export function deviceInfoCm(
  node: string,
  faults: FaultObject[],
  opts: { updateTime?: number; tamper?: boolean; chips?: number } = {},
): { metadata: { name: string; namespace: string; labels: Record<string, string> }; data: Record<string, string> } {
  const list = deviceList(faults, opts.chips);
  const updateTime = opts.updateTime ?? 1772359200;
  let checkCode = checkCodeOf(list, updateTime);
  if (opts.tamper === true) list['huawei.com/Ascend910'] += ',Ascend910-99';
  if (opts.tamper === true) checkCode = checkCode.replace(/^./, (c) => (c === '0' ? '1' : '0'));
  const cfg = JSON.stringify({
    DeviceInfo: { DeviceList: list, UpdateTime: updateTime },
    SuperPodID: -2,
    ServerIndex: -2,
    RackID: -2,
    CheckCode: checkCode,
  });
  return {
    metadata: { name: `mindx-dl-deviceinfo-${node}`, namespace: 'kube-system', labels: { 'mx-consumer-cim': 'true' } },
    data: { DeviceInfoCfg: cfg },
  };
}

/** A pod of job `jobUid` on `node` using NPUs `deviceIds`. */
export function jobPod(name: string, node: string, jobUid: string, deviceIds: number[], namespace = 'default') {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      uid: `pod-${name}`,
      ownerReferences: [
        { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'job', uid: jobUid, controller: true },
      ],
      annotations: {
        'ascend.kubectl.kubernetes.io/ascend-910-configuration': JSON.stringify({
          pod_name: name,
          server_id: '10.0.0.1',
          devices: deviceIds.map((d, i) => ({ device_id: String(d), device_ip: `10.1.0.${d}`, rank_id: String(i) })),
        }),
      },
    },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'x' }] },
  };
}

/** A Volcano PodGroup owned by job `jobUid`. */
export function podGroup(name: string, jobUid: string, namespace = 'default') {
  return {
    apiVersion: 'scheduling.volcano.sh/v1beta1',
    kind: 'PodGroup',
    metadata: {
      name,
      namespace,
      ownerReferences: [
        { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'job', uid: jobUid, controller: true },
      ],
    },
    spec: { minMember: 1 },
  };
}

/** The shipped policy text (§1.2) with overrides. */
export function policyText(o: { enabled?: string; window?: string; threshold?: string; free?: string } = {}): string {
  return [
    `enabled: ${o.enabled ?? 'true'}`,
    'separate:',
    `  fault_window_hours: ${o.window ?? '24'}`,
    `  fault_threshold: ${o.threshold ?? '3'}`,
    'release:',
    `  fault_free_hours: ${o.free ?? '48'}`,
    '',
  ].join('\n');
}

/** The five DeviceList keys ClusterD writes for every node and Volcano reads (issue [O] item 6). */
export function clusterInfoKeys(deviceType: string): string[] {
  const base = `huawei.com/${deviceType}`;
  return [base, `${base}-Fault`, `${base}-NetworkUnhealthy`, `${base}-Recovering`, `${base}-Unhealthy`];
}

/**
 * A reader of `cluster-info-device-<m>` values that follows the upstream readers' parsing (Volcano's Ascend
 * plugin and ClusterD's consumers): every chunk's value is a JSON map of `mindx-dl-deviceinfo-<node>` →
 * `{DeviceList, UpdateTime, CmName, SuperPodID, RackID, ServerIndex}`, merged across chunks; per node each of the
 * five keys is looked up and a missing one is a "don't have key" warning; keys beyond the five are reported too.
 */
export function readClusterInfo(values: readonly string[]): {
  nodes: Map<string, { DeviceList: Record<string, string>; UpdateTime: number; CmName: string }>;
  warnings: string[];
  extraKeys: string[];
  duplicates: string[];
} {
  const nodes = new Map<string, { DeviceList: Record<string, string>; UpdateTime: number; CmName: string }>();
  const warnings: string[] = [];
  const extraKeys: string[] = [];
  const duplicates: string[] = [];
  for (const value of values) {
    const map = JSON.parse(value) as Record<
      string,
      { DeviceList: Record<string, string>; UpdateTime: number; CmName: string }
    >;
    for (const [cmName, info] of Object.entries(map)) {
      if (nodes.has(cmName)) duplicates.push(cmName);
      nodes.set(cmName, info);
      const keys = Object.keys(info.DeviceList ?? {});
      const type = keys.includes('huawei.com/npu')
        ? 'npu'
        : (['Ascend910', 'Ascend310P', 'Ascend310'].find((t) => keys.some((k) => k.includes(t))) ?? 'npu');
      const wanted = clusterInfoKeys(type);
      for (const k of wanted) if (!(k in (info.DeviceList ?? {}))) warnings.push(`${cmName} don't have key ${k}`);
      for (const k of keys) if (!wanted.includes(k)) extraKeys.push(`${cmName}: ${k}`);
    }
  }
  return { nodes, warnings, extraKeys, duplicates };
}

/**
 * The fault center's API access to a stand-in as the program builds it from a kubeconfig (issue [O]: the kube
 * layer's own client, no client-node).
 */
export function centerKube(api: { readonly url: string }, token = 'stand-in-token'): ClusterKube {
  return builtInKube(new KubeClient({ server: api.url, token, insecureSkipTlsVerify: true }));
}

/** Public fault `f` of CCAE as the store keeps it: 220001001 (SeparateNPU) on NPU 2, faultTime 1 (cluster-faults §2). */
export function ccaeSeparateFault() {
  return {
    resource: 'CCAE',
    faultId: 'f',
    faultType: 'NPU',
    faultCode: '220001001',
    level: 'SeparateNPU' as const,
    devIds: [2],
    faultTime: 1,
  };
}
