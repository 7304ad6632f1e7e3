/**
 * The fault center's {@link ClusterKube} through client-node, for the kubeconfigs the kube layer's own client
 * cannot serve (see `kube.ts`). This module loads client-node: import it only for such a kubeconfig (and in tests).
 */
import * as k8s from '@kubernetes/client-node';
import type { ClusterKube } from './kube.js';

export function clientNodeKube(kc: k8s.KubeConfig): ClusterKube {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const watcher = new k8s.Watch(kc);
  const health = new k8s.Health(kc);
  return {
    core,
    leases: kc.makeApiClient(k8s.CoordinationV1Api),
    mergePatchConfigMap: (p) =>
      core.patchNamespacedConfigMap(p, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch)),
    watch: (p, q, cb, done) => watcher.watch(p, q, cb, done),
    transport: kc,
    probe: (ms) => health.readyz({ signal: AbortSignal.timeout(ms) }).catch(() => false),
    client: 'client-node',
    server: kc.getCurrentCluster()?.server ?? '',
    close: () => undefined,
  };
}
