/**
 * The reset layer's side of the state store (architecture §2; docs/architecture.md): it reads the snapshot — the
 * fault engine's own health, before the reset layer's own filter (hot-reset §3.10) — and sends back through the store
 * its health filter, the chips an offline reset reboots (`setResetOverrides`) and its re-sync requests (D.5).
 */
import type { NodeStateStore } from '../state/store.js';
import type { ResetStorePort } from './reset-runtime.js';

/** The store calls {@link resetStorePort} uses. */
export type ResetStore = Pick<
  NodeStateStore,
  'snapshot' | 'onChange' | 'setResetOverrides' | 'requestResync' | 'resyncApplied'
>;

/** The {@link ResetStorePort} of a {@link NodeStateStore}. */
export function resetStorePort(store: ResetStore): ResetStorePort {
  return {
    chips: () =>
      store.snapshot().chips.map((c) => ({
        logicId: c.logicId,
        level: c.level,
        codes: c.faultCodes.map((t) => Number.parseInt(t, 16)).filter((n) => Number.isFinite(n)),
        healthy: c.faultHealth === 'Healthy', // the engine's, not the filtered health (§3.10)
        podUsed: c.podUsed,
      })),
    onChange: (listener) => store.onChange(() => listener()),
    setResetOverrides: (healthy, networkHealthy, recovering) =>
      store.setResetOverrides(healthy, networkHealthy, recovering),
    markResync: (ids, why) => store.requestResync(ids, why),
    resyncApplied: () => store.resyncApplied(),
  };
}
