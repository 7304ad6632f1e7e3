/**
 * The duplicate-mount detector (spec A.2 step 9, L.5): started once the agent runs, in the background; it only
 * logs, so nothing else waits on it, and containerd missing or gone never stops the agent. Stopped by the clean-up
 * stack.
 */
import { DuplicateMountDetector } from '../runtime/duplicate-mounts.js';
import type { AgentContext } from './context.js';

/** The detector's handle. */
export interface MountsLayer {
  /** Finds the containerd socket and follows it (one info line and nothing else when there is none). */
  start(): void;
  /** Ends the session and the retries. */
  stop(): Promise<void>;
}

/** Builds the detector on the agent's logger and environment (`CONTAINERD_ADDRESS` names another socket). */
export function wireMounts(ctx: AgentContext): MountsLayer {
  const detector = new DuplicateMountDetector({ log: ctx.log, env: ctx.env });
  ctx.cleanups.push('duplicate-mount detector', () => detector.stop());
  return { start: () => detector.start(), stop: () => detector.stop() };
}
