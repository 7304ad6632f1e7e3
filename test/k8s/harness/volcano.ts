/**
 * Volcano's PodGroup as a custom resource for a cluster without Volcano (the fault center reads PodGroups, spec
 * cluster-faults §1.4): the CRD of `scheduling.volcano.sh/v1beta1` PodGroups, any content kept (no schema: only the
 * objects' metadata is read).
 */
export const PODGROUP_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'podgroups.scheduling.volcano.sh' },
  spec: {
    group: 'scheduling.volcano.sh',
    scope: 'Namespaced',
    names: { plural: 'podgroups', singular: 'podgroup', kind: 'PodGroup', listKind: 'PodGroupList' },
    versions: [
      {
        name: 'v1beta1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        subresources: { status: {} },
      },
    ],
  },
} as const;
