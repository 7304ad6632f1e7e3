/**
 * Metrics of the DRA driver `npu.huawei.com` (issue [DRA]; docs/metrics.md "DRA series"): the API side's slice
 * writes (written on change only: an idle node's counters stand still), the slices put back after someone else —
 * kubelet at its start, or 30 s after the plugin went away — deleted or changed them, the pool's generation, the
 * claims' device-status writes, and the node side's prepared claims, NodePrepare / NodeUnprepare latency and refused
 * claims.
 *
 * The API side's counters live in its writers (`SliceWriterStats`, `ClaimStatusStats`); they are read at each scrape
 * from {@link DraMetrics.follow}'s source and turned into Prometheus counters by their increase, so a scrape never
 * waits on a writer.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What the DRA layer reports at each scrape (cumulative counts since the start). */
export interface DraStats {
  /** Pool writes that changed something (a generation written). */
  readonly poolWrites: number;
  /** Slice create / update / delete requests that succeeded. */
  readonly sliceWrites: number;
  /** Failed slice write attempts (retried) and slices the server refused as invalid (dropped until the next change). */
  readonly sliceFailures: number;
  readonly sliceRejected: number;
  /** Our slices changed or deleted by someone else and written again. */
  readonly slicesRepublished: number;
  /** The pool's generation last written or listed. */
  readonly generation: number;
  /** Claim device-status writes: written, 409 answers, failures. */
  readonly claimStatusWrites: number;
  readonly claimStatusConflicts: number;
  readonly claimStatusFailures: number;
  /** Claims prepared on the node now (the checkpoint's). */
  readonly preparedClaims: number;
}

type CounterKey = Exclude<keyof DraStats, 'generation' | 'preparedClaims'>;

/** The DRA metric set, on the agent's registry. */
export class DraMetrics {
  /** NodePrepareResources / NodeUnprepareResources latency. */
  readonly callLatency: Histogram<'call'>;
  /** Claims answered with an error, by call. */
  readonly claimsRefused: Counter<'call'>;
  #source: (() => DraStats) | undefined;
  /** The last counts turned into counter increases. */
  readonly #seen = new Map<CounterKey, number>();

  constructor(registry: Registry, prefix: string) {
    const registers = [registry];
    const stats = (): DraStats | undefined => {
      try {
        return this.#source?.();
      } catch {
        return undefined; // stats that cannot be taken keep the last values: /metrics must not fail for them
      }
    };
    const seen = this.#seen;
    // a counter per series set: at each scrape, the increase of each count since the last one
    const counter = (name: string, help: string, keys: Readonly<Record<string, CounterKey>>, label?: string) =>
      new Counter({
        name: `${prefix}${name}`,
        help,
        labelNames: label !== undefined ? [label] : [],
        registers,
        collect(this: Counter<string>) {
          const s = stats();
          if (s === undefined) return;
          for (const [value, key] of Object.entries(keys)) {
            const delta = s[key] - (seen.get(key) ?? 0);
            if (delta <= 0) continue;
            seen.set(key, s[key]);
            if (label !== undefined) this.inc({ [label]: value }, delta);
            else this.inc(delta);
          }
        },
      });
    counter('dra_pool_writes_total', 'ResourceSlice pool writes that changed something (a new generation).', {
      '': 'poolWrites',
    });
    counter(
      'dra_slice_writes_total',
      'ResourceSlice requests by result: ok (create, update, delete), failed (retried), rejected (invalid).',
      { ok: 'sliceWrites', failed: 'sliceFailures', rejected: 'sliceRejected' },
      'result',
    );
    counter(
      'dra_slices_republished_total',
      'Times our ResourceSlices were changed or deleted by someone else (kubelet at its start, or 30 s after the ' +
        'plugin left) and written again.',
      { '': 'slicesRepublished' },
    );
    counter(
      'dra_claim_status_writes_total',
      'ResourceClaim device-status writes (device IPs, binding conditions) by result: ok, conflict, failed.',
      { ok: 'claimStatusWrites', conflict: 'claimStatusConflicts', failed: 'claimStatusFailures' },
      'result',
    );
    new Gauge({
      name: `${prefix}dra_pool_generation`,
      help: "The generation of the node's ResourceSlice pool last written or listed.",
      registers,
      collect() {
        const s = stats();
        if (s !== undefined) this.set(s.generation);
      },
    });
    new Gauge({
      name: `${prefix}dra_prepared_claims`,
      help: 'ResourceClaims prepared on the node (NodePrepareResources answered, not unprepared yet).',
      registers,
      collect() {
        const s = stats();
        if (s !== undefined) this.set(s.preparedClaims);
      },
    });
    this.callLatency = new Histogram({
      name: `${prefix}dra_node_call_seconds`,
      help: 'NodePrepareResources / NodeUnprepareResources latency, by call (prepare, unprepare).',
      labelNames: ['call'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers,
    });
    this.claimsRefused = new Counter({
      name: `${prefix}dra_claims_refused_total`,
      help: 'Claims answered with an error by NodePrepareResources / NodeUnprepareResources, by call.',
      labelNames: ['call'],
      registers,
    });
  }

  /** The DRA layer's counts, read at every scrape (nothing is reported before this is called). */
  follow(source: () => DraStats): void {
    this.#source = source;
  }

  /** One answered NodePrepare / NodeUnprepare call (the kubelet plugin's `observed` hook). */
  observeCall(call: 'prepare' | 'unprepare', ms: number, failedClaims: number): void {
    this.callLatency.observe({ call }, ms / 1000);
    if (failedClaims > 0) this.claimsRefused.inc({ call }, failedClaims);
  }
}
