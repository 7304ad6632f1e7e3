/**
 * `-enableSlowNode` with the agent as a child process (issue 18 item 4; spec C.4): Allocate adds PERF_DUMP_PATH and
 * PERF_DUMP_CONFIG from the ConfigMap `kube-system/steptime-dtpgroup`.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { AgentSandbox, NODE_NAME, RESOURCE } from '../helpers/agent-process.js';

let sb: AgentSandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

async function podAndAllocate(s: AgentSandbox, name: string): Promise<Record<string, string>> {
  await s.core().createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name, namespace: 'default' },
      spec: {
        nodeName: NODE_NAME,
        containers: [{ name: 'c0', image: 'x', resources: { limits: { [RESOURCE]: '1' } } }],
      },
    },
  });
  const r = await s.kubelet.allocate(RESOURCE, [['Ascend910-1']], { namespace: 'default', name });
  return r.containerResponses?.[0]?.envs ?? {};
}

describe('spec C.4 -enableSlowNode', () => {
  test('C.4 Allocate adds the PERF_DUMP_* variables of steptime-dtpgroup; without the ConfigMap none', async () => {
    sb = await AgentSandbox.create();
    const s = sb;
    await s.start(['-enableSlowNode']);
    expect(Object.keys(await podAndAllocate(s, 'p0'))).not.toContain('PERF_DUMP_PATH');
    await s.core().createNamespacedConfigMap({
      namespace: 'kube-system',
      body: {
        metadata: { name: 'steptime-dtpgroup', namespace: 'kube-system' },
        data: { job: JSON.stringify({ data: { PerfDumpPath: '/root/a', PerfDumpConfig: 'step:true,time=4' } }) },
      },
    });
    const envs = await s.untilAsync(
      async () => {
        const e = await podAndAllocate(s, `p${Date.now()}`);
        return e.PERF_DUMP_PATH !== undefined ? e : undefined;
      },
      'PERF_DUMP_PATH in an Allocate response',
      20_000,
    );
    expect(envs.PERF_DUMP_PATH).toBe('/root/a');
    expect(envs.PERF_DUMP_CONFIG).toBe('step:true,time=4');
  }, 60_000);

  test('C.4 without the flag the ConfigMap is not read', async () => {
    sb = await AgentSandbox.create();
    const s = sb;
    await s.core().createNamespacedConfigMap({
      namespace: 'kube-system',
      body: {
        metadata: { name: 'steptime-dtpgroup', namespace: 'kube-system' },
        data: { job: JSON.stringify({ data: { PerfDumpPath: '/root/a', PerfDumpConfig: 'x' } }) },
      },
    });
    await s.start();
    expect(Object.keys(await podAndAllocate(s, 'p0'))).not.toContain('PERF_DUMP_PATH');
  }, 60_000);
});
