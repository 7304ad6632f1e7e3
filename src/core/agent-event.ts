/**
 * The vocabulary of a Kubernetes Event the agent records (spec K.1, K.2): shared by the layers that report one (the
 * kube layer's recorder writes them; the kubelet path's soft share hands them over without waiting on the API).
 */

/** One Event to create. */
export interface AgentEvent {
  readonly type: 'Normal' | 'Warning';
  /** `Occur`, `Recovery`, `Notice`, `EventReleaseUpgradeFault`, or one of ours (see docs/kube.md). */
  readonly reason: string;
  /** Defaults to `reason`. */
  readonly action?: string;
  readonly message: string;
  /** Object name after `<HOSTNAME>.`; default `<ms>`. Fault events use `<ms><logicId>` (K.1). */
  readonly nameSuffix?: string;
  /** Short description used in the drop summary, e.g. `Occur Ascend910-3 80E18402`. */
  readonly brief?: string;
  /** The pod the Event is about (e.g. one whose Allocate was refused, spec L.7); default the agent's own pod (K.1). */
  readonly involvedPod?: { readonly namespace: string; readonly name: string; readonly uid?: string };
}
