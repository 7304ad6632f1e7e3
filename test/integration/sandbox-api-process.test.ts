/**
 * The bench's harness for issue [P] item 5 (bench/lighter.ts): an {@link AgentSandbox} whose API stand-in runs in a
 * process of its own (`SandboxOptions.apiProcess`, test/helpers/api-process.ts). The agent registers with the
 * kubelet simulator and writes its device-info ConfigMap and Node labels to the stand-in in the other process
 * (read back here through the kubeconfig, as any client would); the in-process view is refused by name; closing the
 * sandbox ends that process.
 */
import * as k8s from '@kubernetes/client-node';
import { afterEach, describe, expect, test } from '@jest/globals';
import { DEVICE_INFO_NAMESPACE, deviceInfoConfigMapName } from '../../src/kube/device-info.js';
import { AgentSandbox, NODE_NAME } from '../helpers/agent-process.js';

let sb: AgentSandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

function core(s: AgentSandbox): k8s.CoreV1Api {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(s.kubeconfig);
  return kc.makeApiClient(k8s.CoreV1Api);
}

async function eventually<T>(read: () => Promise<T | undefined>, what: string, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what} not seen in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('issue [P] item 5 harness: the API stand-in in its own process', () => {
  test('the agent registers and writes its device-info ConfigMap and Node labels to the stand-in in the other process', async () => {
    sb = await AgentSandbox.create(undefined, { apiProcess: true });
    await sb.start();
    const api = core(sb);
    const cm = await eventually(
      () => api.readNamespacedConfigMap({ name: deviceInfoConfigMapName(NODE_NAME), namespace: DEVICE_INFO_NAMESPACE }),
      'the device-info ConfigMap',
    );
    expect(Object.keys(cm.data ?? {})).toContain('DeviceInfoCfg');
    const node = await eventually(async () => {
      const n = await api.readNode({ name: NODE_NAME });
      return n.metadata?.labels?.accelerator !== undefined ? n : undefined;
    }, 'the node labels');
    expect(node.metadata?.labels?.accelerator).toBe('huawei-Ascend910');
    await sb.close();
    sb = undefined;
    // the stand-in's process ended with the sandbox: nothing answers there any more
    await expect(api.readNode({ name: NODE_NAME })).rejects.toThrow();
  }, 40_000);

  test('the in-process view of the stand-in is refused, naming the option', async () => {
    sb = await AgentSandbox.create(undefined, { apiProcess: true });
    const s = sb;
    expect(() => s.api).toThrow(/SandboxOptions\.apiProcess/);
  });

  test('API stand-in options cannot be given with apiProcess', async () => {
    await expect(AgentSandbox.create(undefined, { apiProcess: true, api: {} })).rejects.toThrow(
      /api options need the stand-in in this process/,
    );
  });
});
