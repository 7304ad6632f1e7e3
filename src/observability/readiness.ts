/**
 * The agent's `/readyz` checks (issue [J] item 1). The probes server starts before DCMI, the API client and kubelet
 * (architecture §4: probes from the first second), so each check is given its source when that layer exists and
 * fails with the reason meanwhile:
 *
 * - `dcmi`: "DCMI not open" until `dcmi_init` and the enumeration succeeded; "DCMI closed" after the shutdown closed
 *   it.
 * - `kubelet`: "not registered with kubelet" until every resource's Register call succeeded; "not streaming" while
 *   kubelet has not opened a ListAndWatch stream on a registered resource (spec A.5, C.1).
 * - `api`: "API server never reached" until one request to the API server succeeded (an outage later does not fail
 *   readiness: the kubelet path never depends on the API server). Passes when no kubeconfig applies.
 *
 * Chip health is never a check: a bad chip must not fail a probe (it is reported to kubelet as Unhealthy).
 */
import type { ReadinessCheck } from './http-server.js';

/** One resource's registration state, as the kubelet layer reports it. */
export interface ResourceRegistration {
  readonly resourceName: string;
  readonly registered: boolean;
  readonly activeStreams: number;
}

/** The readiness of one agent; its checks read the sources given so far. */
export class AgentReadiness {
  #dcmi: { readonly closed: boolean } | undefined;
  #kubelet: (() => readonly ResourceRegistration[]) | undefined;
  /** undefined: the API client is not set up yet; null: no kubeconfig applies. */
  #apiReached: (() => boolean) | null | undefined;

  /** DCMI is initialised and enumerated its chips. */
  dcmiOpened(dcmi: { readonly closed: boolean }): void {
    this.#dcmi = dcmi;
  }

  /** The kubelet layer exists; `status` lists its resources (empty before its start). */
  followKubelet(status: () => readonly ResourceRegistration[]): void {
    this.#kubelet = status;
  }

  /** The API client is set up: `reached` says whether one request succeeded; `null` when there is none. */
  followApi(reached: (() => boolean) | null): void {
    this.#apiReached = reached;
  }

  /** The named checks of `/readyz`. */
  checks(): Record<string, ReadinessCheck> {
    return {
      dcmi: () => {
        if (this.#dcmi === undefined) return { ok: false, reason: 'DCMI not open' };
        return this.#dcmi.closed ? { ok: false, reason: 'DCMI closed' } : { ok: true };
      },
      kubelet: () => {
        const status = this.#kubelet?.() ?? [];
        if (status.length === 0) return { ok: false, reason: 'not registered with kubelet' };
        const unregistered = status.filter((s) => !s.registered).map((s) => s.resourceName);
        if (unregistered.length > 0) {
          return { ok: false, reason: `not registered with kubelet: ${unregistered.join(', ')}` };
        }
        const idle = status.filter((s) => s.activeStreams === 0).map((s) => s.resourceName);
        if (idle.length > 0) return { ok: false, reason: `not streaming (no ListAndWatch): ${idle.join(', ')}` };
        return { ok: true };
      },
      api: () => {
        const reached = this.#apiReached;
        if (reached === null) return { ok: true };
        if (reached === undefined || !reached()) return { ok: false, reason: 'API server never reached' };
        return { ok: true };
      },
    };
  }
}
