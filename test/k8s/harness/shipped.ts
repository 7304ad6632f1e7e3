/**
 * The shipped manifests on the real cluster, as an operator installs them (issue [R] item 5): `deploy/rendered/`
 * 910.yaml (the agent), fault-center.yaml and admission-policies.yaml applied as they are with kubectl, and the two
 * programs run as host processes with pod-bound ServiceAccount tokens.
 *
 * Why host processes: the DaemonSet's and the Deployment's images do not exist here (the fake CRI "runs" any image
 * but executes nothing). Each program gets a stand-in pod instead: a pod of its workload's pod template (service
 * account, priority class, tolerations) with the pause image, no volumes and no probes, bound to the node at
 * creation; `TokenRequest` bound to that pod gives the token kubelet would have mounted, whose user carries
 * `authentication.kubernetes.io/node-name` (what the agent's admission policy reads). The node is tainted
 * {@link HOST_PROCESS_TAINT} so that neither the DaemonSet nor the Deployment places a pod of its own on it (kubelet
 * would create their `DirectoryOrCreate` host paths, `/user/restore/reset` and others, on this machine); the stand-in
 * pods and the tests' pods tolerate the taint.
 */
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import type * as k8s from '@kubernetes/client-node';
import { PROJECT_ROOT } from '../../../src/core/paths.js';
import { ClusterAgent } from './agent.js';
import type { Cluster } from './cluster.js';
import { pollUntil } from './component.js';
import { ClusterFaultCenter } from './fault-center.js';
import { rawRequest } from './raw-api.js';

/** The files an operator applies for 910-family nodes with the fault center and the admission policies. */
export const SHIPPED_FILES = [
  'deploy/rendered/910.yaml',
  'deploy/rendered/fault-center.yaml',
  'deploy/rendered/admission-policies.yaml',
] as const;
export const AGENT_NS = 'kube-system';
export const AGENT_SA = 'ascend-npu-agent';
export const AGENT_DAEMONSET = 'ascend-npu-agent-910';
export const CENTER_NS = 'cluster-system';
export const CENTER_SA = 'ascend-fault-center';
export const CENTER_DEPLOYMENT = 'ascend-fault-center';
/** Keeps the shipped workloads' own pods off the node (see the file comment). */
export const HOST_PROCESS_TAINT = { key: 'ascend-test/host-processes', value: 'true', effect: 'NoSchedule' } as const;
export const HOST_PROCESS_TOLERATION: k8s.V1Toleration = { ...HOST_PROCESS_TAINT, operator: 'Equal' };
/** The pause image the tests' pods use (the fake CRI pulls nothing). */
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10';

/** The documents of a rendered file. */
export function renderedDocs(file: string): Record<string, unknown>[] {
  return yaml
    .loadAll(fs.readFileSync(path.join(PROJECT_ROOT, file), 'utf8'))
    .filter((d): d is Record<string, unknown> => typeof d === 'object' && d !== null);
}

/** A pod bound to a node: name and uid (what a pod-bound token names). */
export interface BoundPod {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
}

/** The deployed manifests, the stand-in pods and their tokens. */
export class Shipped {
  private constructor(
    readonly cluster: Cluster,
    /** kubectl's output of the apply. */
    readonly applied: string,
    readonly agentPod: BoundPod,
    readonly centerPod: BoundPod,
    /** Pod-bound tokens of the two service accounts. */
    readonly agentToken: string,
    readonly centerToken: string,
    /** kubeconfig files with those tokens, for the real server directly (kubectl, refusal checks). */
    readonly agentKubeconfig: string,
    readonly centerKubeconfig: string,
  ) {}

  /**
   * Applies {@link SHIPPED_FILES} with kubectl as they are, taints the node, creates the two stand-in pods and their
   * tokens, and waits until the admission policies act (the apiserver loads them a moment after they are created).
   */
  static async deploy(c: Cluster): Promise<Shipped> {
    // first the taint: the scheduler would place the Deployment's pod on the node at once
    await c.kubectl([
      'taint',
      'node',
      c.nodeName,
      `${HOST_PROCESS_TAINT.key}=${HOST_PROCESS_TAINT.value}:${HOST_PROCESS_TAINT.effect}`,
    ]);
    const applied = await c.kubectl(['apply', ...SHIPPED_FILES.flatMap((f) => ['-f', path.join(PROJECT_ROOT, f)])]);
    const agentPod = await standInPod(c, AGENT_NS, 'daemonset', AGENT_DAEMONSET, `${AGENT_DAEMONSET}-host`);
    const centerPod = await standInPod(c, CENTER_NS, 'deployment', CENTER_DEPLOYMENT, `${CENTER_DEPLOYMENT}-host`);
    const agentToken = await c.createToken(AGENT_NS, AGENT_SA, { pod: agentPod });
    const centerToken = await c.createToken(CENTER_NS, CENTER_SA, { pod: centerPod });
    const dir = path.join(c.runDir, 'tokens');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const s = new Shipped(
      c,
      applied,
      agentPod,
      centerPod,
      agentToken,
      centerToken,
      c.writeKubeconfig(path.join(dir, 'agent.kubeconfig'), agentToken),
      c.writeKubeconfig(path.join(dir, 'fault-center.kubeconfig'), centerToken),
    );
    await s.#waitPoliciesActive();
    return s;
  }

  /** Until a dry-run write each policy refuses is refused (403): the apiserver has loaded both policies. */
  async #waitPoliciesActive(): Promise<void> {
    const probe = async (token: string, namespace: string, name: string): Promise<boolean> => {
      const r = await rawRequest(this.cluster, token, 'POST', `/api/v1/namespaces/${namespace}/configmaps?dryRun=All`, {
        metadata: { name, namespace },
      });
      return r.status === 403 && r.message.includes('ValidatingAdmissionPolicy');
    };
    await pollUntil(
      async () =>
        (await probe(this.agentToken, AGENT_NS, 'policy-probe')) &&
        (await probe(this.centerToken, CENTER_NS, 'policy-probe')),
      'the shipped admission policies in force',
      30_000,
      () => '',
      250,
    );
  }

  /**
   * The agent of the DaemonSet as a host process: the stand-in pod's token (through `server`, e.g. a proxy), the
   * pod's name as `HOSTNAME` (the DaemonSet sets it from `metadata.name`); not started.
   */
  agent(o: { server?: string; scenario?: string } = {}): ClusterAgent {
    return ClusterAgent.create(this.cluster, {
      token: this.agentToken,
      ...(o.server !== undefined ? { server: o.server } : {}),
      ...(o.scenario !== undefined ? { scenario: o.scenario } : {}),
      env: { HOSTNAME: this.agentPod.name },
    });
  }

  /** The fault center of the Deployment as a host process (the stand-in pod's token); does not wait for the Lease. */
  faultCenter(o: { server?: string; flags?: readonly string[] } = {}): Promise<ClusterFaultCenter> {
    return ClusterFaultCenter.start(this.cluster, {
      token: this.centerToken,
      identity: this.centerPod.name,
      ...(o.server !== undefined ? { server: o.server } : {}),
      ...(o.flags !== undefined ? { flags: o.flags } : {}),
    });
  }
}

/**
 * A pod of the applied workload's pod template (service account, priority class, tolerations, security context),
 * reduced to what runs on the fake CRI (the pause image, no volumes, probes or ports) and bound to the node; no
 * label of the workload's selector (its controller would adopt it).
 */
async function standInPod(
  c: Cluster,
  namespace: string,
  kind: 'daemonset' | 'deployment',
  workload: string,
  name: string,
): Promise<BoundPod> {
  const w = JSON.parse(await c.kubectl(['-n', namespace, 'get', kind, workload, '-o', 'json'])) as {
    spec: { template: { spec: k8s.V1PodSpec } };
  };
  const t = w.spec.template.spec;
  const pod = await c.core().createNamespacedPod({
    namespace,
    body: {
      metadata: { name, namespace, labels: { 'app.kubernetes.io/name': `${workload}-host-process` } },
      spec: {
        nodeName: c.nodeName,
        serviceAccountName: t.serviceAccountName,
        ...(t.priorityClassName !== undefined ? { priorityClassName: t.priorityClassName } : {}),
        ...(t.securityContext !== undefined ? { securityContext: t.securityContext } : {}),
        tolerations: [...(t.tolerations ?? []), HOST_PROCESS_TOLERATION],
        terminationGracePeriodSeconds: 1,
        containers: t.containers.map((ct) => ({
          name: ct.name,
          image: PAUSE_IMAGE,
          ...(ct.securityContext !== undefined ? { securityContext: ct.securityContext } : {}),
        })),
      },
    },
  });
  return { name, namespace, uid: pod.metadata!.uid! };
}
