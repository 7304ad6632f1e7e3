/**
 * Spec A.2 step 8: on an Ascend910A5 node the resource is `huawei.com/npu`; a node that ran the 910 plugin before
 * still advertises `huawei.com/Ascend910` in its status, so upstream removes that entry from `status.capacity` and
 * `status.allocatable` once at start. Here: one read, and a merge patch of the status subresource only when an
 * entry is there. Upstream fails the start when the removal fails; this agent logs it and runs on (the stale entry
 * only misleads the scheduler until kubelet's next status update drops it — deliberate, docs/kube.md).
 */
import type * as k8s from '@kubernetes/client-node';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { MERGE_PATCH } from './merge-patch.js';

/** The resource name A5 replaces (spec A.2 step 8). */
export const OBSOLETE_A5_RESOURCE = 'huawei.com/Ascend910';

/** The merge patch that removes `resource` from capacity and allocatable, or undefined when neither lists it. */
export function removalPatchOf(node: k8s.V1Node, resource: string): Record<string, unknown> | undefined {
  const status: Record<string, Record<string, null>> = {};
  for (const field of ['capacity', 'allocatable'] as const) {
    if (node.status?.[field] !== undefined && Object.hasOwn(node.status[field], resource)) {
      status[field] = { [resource]: null };
    }
  }
  return Object.keys(status).length > 0 ? { status } : undefined;
}

/** Reads the node and removes `resource` from its status when listed; returns what happened (never throws). */
export async function removeObsoleteResource(
  api: Pick<k8s.CoreV1Api, 'readNode' | 'patchNodeStatus'>,
  nodeName: string,
  log: Logger,
  resource = OBSOLETE_A5_RESOURCE,
): Promise<'removed' | 'absent' | 'failed'> {
  try {
    const node = await api.readNode({ name: nodeName });
    const patch = removalPatchOf(node, resource);
    if (!patch) return 'absent';
    await api.patchNodeStatus({ name: nodeName, body: patch }, MERGE_PATCH);
    log.info({ node: nodeName, resource }, 'obsolete resource removed from the node capacity (spec A.2 step 8)');
    return 'removed';
  } catch (err) {
    log.warn(
      { node: nodeName, resource, error: errorMessage(err) },
      `could not remove ${resource} from the node capacity (spec A.2 step 8); running on`,
    );
    return 'failed';
  }
}
