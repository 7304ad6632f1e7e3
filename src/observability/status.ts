/**
 * The `/status` document of the observability server (issue [F] item 4): the chips as kubelet sees them and the
 * state of the reset layer, read by `npuctl status`. Built on demand from the latest store snapshot and
 * `ResetRuntime.status()`; nothing is cached.
 */
import type { ResetStatus } from '../reset/reset-runtime.js';
import type { NodeState } from '../state/store.js';

/** Version of the document; `npuctl status` refuses a version it does not know. */
export const STATUS_VERSION = 1;

/** One chip of the node as the latest snapshot has it (reset filter applied, hot-reset.md §3.10). */
export interface StatusChip {
  readonly logicId: number;
  readonly phyId: number;
  /** `Ascend910-<phy>` (spec H.5). */
  readonly name: string;
  readonly health: string;
  readonly networkHealth: string;
  /** Effective chip fault level (spec E.4). */
  readonly level: string;
}

/** What `GET /status` answers. */
export interface AgentStatusDocument {
  readonly version: typeof STATUS_VERSION;
  readonly node: string;
  /** ISO time the document was built. */
  readonly time: string;
  /** Logic-id order. */
  readonly chips: readonly StatusChip[];
  /** null when the agent runs without the reset layer. */
  readonly reset: ResetStatus | null;
}

/** Builds the document from the agent's current state. */
export function agentStatus(o: {
  readonly node: string;
  /** Epoch ms. */
  readonly now: number;
  readonly state: Pick<NodeState, 'chips'>;
  readonly reset?: ResetStatus;
}): AgentStatusDocument {
  return {
    version: STATUS_VERSION,
    node: o.node,
    time: new Date(o.now).toISOString(),
    chips: o.state.chips.map((c) => ({
      logicId: c.logicId,
      phyId: c.phyId,
      name: c.name,
      health: c.health,
      networkHealth: c.networkHealth,
      level: c.level,
    })),
    reset: o.reset ?? null,
  };
}
