/**
 * An {@link ObjectWriter} for one ConfigMap through client-node: UPDATE (replace), CREATE on NotFound, and an
 * optional reconcile step for conflicts.
 */
import type * as k8s from '@kubernetes/client-node';
import type { ObjectWriter } from './write-queue.js';

/** A ConfigMap as written (name and namespace are required). */
export interface ConfigMapBody extends k8s.V1ConfigMap {
  metadata: k8s.V1ObjectMeta & { name: string; namespace: string };
}

/** The client-node calls the writer needs (a `CoreV1Api` has them). */
export type ConfigMapApi = Pick<k8s.CoreV1Api, 'replaceNamespacedConfigMap' | 'createNamespacedConfigMap'>;

/**
 * Writes whole ConfigMaps. Without a `resourceVersion` in the body an UPDATE is unconditional (spec H.1: the whole
 * object is replaced); with one, a stale version is a 409 that the queue hands to `reconcile`.
 */
export function configMapWriter(
  api: ConfigMapApi,
  reconcile?: (desired: ConfigMapBody) => Promise<ConfigMapBody | null>,
): ObjectWriter<ConfigMapBody> {
  return {
    update: async (cm) => {
      await api.replaceNamespacedConfigMap({ name: cm.metadata.name, namespace: cm.metadata.namespace, body: cm });
    },
    create: async (cm) => {
      const body: ConfigMapBody = { ...cm, metadata: { ...cm.metadata } };
      delete body.metadata.resourceVersion;
      await api.createNamespacedConfigMap({ namespace: cm.metadata.namespace, body });
    },
    ...(reconcile !== undefined ? { reconcile } : {}),
  };
}
