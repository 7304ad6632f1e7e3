/**
 * The files of deploy/ that tests read, in one place (paths relative to the repository root), so that the RBAC the
 * integration test enforces and the files the static checks read are the ones test/deploy/manifests.test.ts proves
 * to be rendered.
 */

/** kustomize overlays: one folder per installable variant (docs/operations.md). */
export const OVERLAYS_DIR = 'deploy/overlays';
/** `kubectl kustomize` of every overlay, committed (deploy/render.sh writes them). */
export const RENDERED_DIR = 'deploy/rendered';

/**
 * The RBAC test/integration/rbac.test.ts enforces: what `kubectl apply -k deploy/overlays/910` and
 * `kubectl apply -k deploy/overlays/fault-center` create. Every other overlay's RBAC is part of it (checked).
 */
export const RBAC_RENDERED: readonly string[] = ['deploy/rendered/910.yaml', 'deploy/rendered/fault-center.yaml'];

/**
 * The RBAC test/integration/rbac-a5.test.ts enforces: what `kubectl apply -k deploy/overlays/a5` creates (the
 * agent on Ascend910A5 nodes: the 910 RBAC plus the nodes/status grant of A.2 step 8).
 */
export const RBAC_RENDERED_A5: readonly string[] = ['deploy/rendered/a5.yaml'];

/**
 * The RBAC test/deploy/dra-rbac.test.ts enforces: what `kubectl apply -k deploy/overlays/dra` creates (the agent as
 * the DRA driver npu.huawei.com: the 910 RBAC plus ResourceSlices and claims).
 */
export const RBAC_RENDERED_DRA: readonly string[] = ['deploy/rendered/dra.yaml'];

/** The RBAC sources the overlays render (test/sim/deploy-admission-policy.test.ts reads them). */
export const RBAC_SOURCES: readonly string[] = [
  'deploy/agent/rbac.yaml',
  'deploy/components/chip-reset/rbac-reset.yaml',
  'deploy/components/a5-node-status/rbac-node-status.yaml',
  'deploy/components/dra/rbac-dra.yaml',
  'deploy/fault-center/rbac.yaml',
];

/**
 * The admission policy of the DRA component (deploy/components/dra): part of the dra overlay itself, not opt-in
 * (the DRA API needs Kubernetes >= 1.34, where policies and node names in tokens are always there).
 */
export const DRA_POLICY_SOURCES: readonly string[] = ['deploy/components/dra/admission-policy.yaml'];

/** The admission policies (opt-in components, Kubernetes >= 1.30): agent first, then the fault center. */
export const POLICY_SOURCES: readonly string[] = [
  'deploy/components/agent-admission-policy/admission-policy.yaml',
  'deploy/components/fault-center-admission-policy/admission-policy.yaml',
];
