/**
 * Agent restart (issue [T] item 4): the reset layer is built late in the start-up (it needs the Node's labels), after
 * the store has published its first snapshot to the device-info ConfigMap. What the previous run left in `-stateDir`
 * is therefore turned into the store's reset overrides before that first snapshot, so that no output shows, for the
 * few seconds until the reset layer takes over:
 * - the chips of an online episode past its first write as Unhealthy (hot-reset.md §3.10: the task was told to stop,
 *   not to leave; a Volcano reading `-Unhealthy` in between would reschedule it);
 * - a group an offline reset was rebooting as Healthy and free (a pod placed on a booting chip fails).
 * The reset layer's first own push replaces these overrides (docs/hot-reset.md "Agent restart").
 */
import type { Logger } from '../core/logger.js';
import { OfflineStateFile } from './offline-state.js';
import { EpisodeFileStore } from './reset-runtime.js';

/** The reset overrides of the store (`setResetOverrides`) as the saved state implies them. */
export interface RestartOverrides {
  readonly healthy: ReadonlySet<number>;
  readonly networkHealthy: ReadonlySet<number>;
  readonly recovering: ReadonlySet<number>;
}

/**
 * Reads the saved episodes (when the online engine runs, `online`) and offline resets in flight of `stateDir`. A file
 * that does not parse is set aside and logged (as the engines would), and then contributes nothing.
 */
export function restartOverrides(stateDir: string, online: boolean, logger?: Logger): RestartOverrides {
  const healthy = new Set<number>();
  const networkHealthy = new Set<number>();
  const recovering = new Set<number>();
  if (online) {
    for (const ep of new EpisodeFileStore(stateDir, logger).load() ?? []) {
      if (ep.state === 'starting' || ep.outcome === 'failed') continue; // not yet, or no longer, filtered (§3.10)
      for (const id of ep.rankChips) healthy.add(id);
      for (const id of ep.ringChips) networkHealthy.add(id);
    }
  }
  for (const r of new OfflineStateFile(stateDir, logger).load()?.resets ?? []) {
    for (const id of r.group) recovering.add(id);
  }
  return { healthy, networkHealthy, recovering };
}
