/**
 * The Kubernetes API as the fault center uses it (issue [O], start-up without client-node): the CoreV1 and Lease
 * calls, the watch, the outage probe and the request options of the raw ConfigMap writer. Normally served by the
 * kube layer's own {@link KubeClient} ({@link builtInKube}); a kubeconfig that needs what only client-node has
 * (`exec`, `auth-provider`, `as`, `proxy-url`, several `$KUBECONFIG` files) is served by client-node instead
 * (`clientNodeKube` in `kube-client-node.ts`, loaded only then).
 */
import type https from 'node:https';
import type * as k8s from '@kubernetes/client-node';
import type { KubeClient, LeaseApi } from '../kube/kube-client.js';
import type { WatchFn } from '../kube/list-watch.js';

/** The CoreV1 calls of the fault center. */
export type CenterCoreApi = Pick<
  k8s.CoreV1Api,
  | 'readNamespacedConfigMap'
  | 'createNamespacedConfigMap'
  | 'replaceNamespacedConfigMap'
  | 'deleteNamespacedConfigMap'
  | 'createNamespacedEvent'
>;

/** What the raw ConfigMap writer needs to send its own requests (a client-node `KubeConfig` has it too). */
export interface RawTransport {
  getCurrentCluster(): { readonly server: string; readonly proxyUrl?: string | undefined } | null;
  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void>;
}

/** The fault center's access to the API server. */
export interface ClusterKube {
  readonly core: CenterCoreApi;
  readonly leases: LeaseApi;
  /** A JSON merge patch of a ConfigMap (`statistic-fault-info`'s count). */
  mergePatchConfigMap(p: { name: string; namespace: string; body: object }): Promise<unknown>;
  readonly watch: WatchFn;
  readonly transport: RawTransport;
  /** Whether the API server serves now (`GET /readyz`, bounded by `timeoutMs`, never rejects). */
  probe(timeoutMs: number): Promise<boolean>;
  /** `built-in` or `client-node` (for the log). */
  readonly client: 'built-in' | 'client-node';
  readonly server: string;
  close(): void;
}

/** The fault center's access through the kube layer's own client. */
export function builtInKube(c: KubeClient): ClusterKube {
  return {
    core: c,
    leases: c,
    mergePatchConfigMap: (p) => c.mergePatchNamespacedConfigMap(p),
    watch: c.watch,
    transport: {
      getCurrentCluster: () => ({ server: c.server }),
      applyToHTTPSOptions: (o) => c.applyToHTTPSOptions(o),
    },
    probe: (ms) => c.probe(ms),
    client: 'built-in',
    server: c.server,
    close: () => c.close(),
  };
}
