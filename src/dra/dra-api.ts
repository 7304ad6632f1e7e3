/**
 * The `resource.k8s.io/v1` calls of the DRA driver's API side, over any client that sends a JSON request and answers
 * the API server's JSON as is (`KubeClient.requestJson`). Errors carry the HTTP status as `code` (the kube layer's
 * retry and 404/409 handling read it with `statusOf`).
 */
import type { JsonRequester } from '../kube/kube-client.js';
import {
  RESOURCE_CLAIMS_PATH,
  RESOURCE_SLICES_PATH,
  type ObjectList,
  type ResourceClaim,
  type ResourceSlice,
} from './dra-types.js';

/** The client the calls go through (`KubeClient`, or client-node's kubeconfig through `clientNodeJsonRequester`). */
export type { JsonRequester };

/** The calls the slice writer and the claim-status writer make. */
export interface DraApi {
  /** Cluster-scoped slices selected by a field selector (`spec.nodeName=…,spec.driver=…`). */
  listResourceSlices(fieldSelector: string): Promise<ObjectList<ResourceSlice>>;
  createResourceSlice(body: ResourceSlice): Promise<ResourceSlice>;
  /** PUT; `body.metadata.resourceVersion` makes it conditional (409 when the slice changed meanwhile). */
  replaceResourceSlice(body: ResourceSlice): Promise<ResourceSlice>;
  deleteResourceSlice(name: string): Promise<void>;
  readResourceClaim(namespace: string, name: string): Promise<ResourceClaim>;
  /** PUT of the `status` subresource (conditional on `body.metadata.resourceVersion`). */
  replaceResourceClaimStatus(body: ResourceClaim): Promise<ResourceClaim>;
  /** Every claim of the cluster (paged by the caller's `continue`), for the binding-condition watch. */
  listResourceClaims(query?: Readonly<Record<string, string>>): Promise<ObjectList<ResourceClaim>>;
}

/** Field manager of the agent's writes. */
export const DRA_FIELD_MANAGER = 'ascend-npu-agent';

const seg = (s: string): string => {
  if (s === '') throw new Error('a name or namespace is required');
  return encodeURIComponent(s);
};

/** {@link DraApi} over a {@link JsonRequester}. */
export function draApiOf(client: JsonRequester): DraApi {
  const manager = { fieldManager: DRA_FIELD_MANAGER };
  const nameOf = (o: { metadata: { name?: string } }): string => seg(o.metadata.name ?? '');
  return {
    listResourceSlices: (fieldSelector) =>
      client.requestJson('GET', RESOURCE_SLICES_PATH, { query: { fieldSelector } }),
    createResourceSlice: (body) => client.requestJson('POST', RESOURCE_SLICES_PATH, { body, query: manager }),
    replaceResourceSlice: (body) =>
      client.requestJson('PUT', `${RESOURCE_SLICES_PATH}/${nameOf(body)}`, { body, query: manager }),
    deleteResourceSlice: async (name) => {
      await client.requestJson('DELETE', `${RESOURCE_SLICES_PATH}/${seg(name)}`);
    },
    readResourceClaim: (namespace, name) =>
      client.requestJson('GET', `/apis/resource.k8s.io/v1/namespaces/${seg(namespace)}/resourceclaims/${seg(name)}`),
    replaceResourceClaimStatus: (body) =>
      client.requestJson(
        'PUT',
        `/apis/resource.k8s.io/v1/namespaces/${seg(body.metadata.namespace ?? '')}/resourceclaims/${nameOf(body)}/status`,
        { body, query: manager },
      ),
    listResourceClaims: (query = {}) => client.requestJson('GET', RESOURCE_CLAIMS_PATH, { query }),
  };
}
