/**
 * Prometheus metrics of the fault center (prom-client), registered on a registry passed in.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The metric set. */
export class FaultCenterMetrics {
  readonly separations: Counter<'new'>;
  readonly releases: Counter<'reason'>;
  readonly verdicts: Counter<'verdict'>;
  readonly separatedDevices: Gauge;
  readonly leader: Gauge;
  readonly leaseTransitions: Counter;
  readonly rejectedInputs: Counter<'input' | 'reason'>;
  readonly cycles: Counter;
  readonly publishedWrites: Counter;
  readonly publishedWriteSeconds: Histogram;
  readonly policyLoads: Counter<'result'>;
  readonly cycleNodes: Counter;
  readonly cycleSeconds: Histogram;
  readonly stateWrites: Counter<'object' | 'result'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.separations = new Counter({
      name: 'ascend_fault_center_separations_total',
      help: 'Manual separations triggered by the counter (new: device newly separated, or refreshed).',
      labelNames: ['new'],
      registers,
    });
    this.releases = new Counter({
      name: 'ascend_fault_center_releases_total',
      help: 'Manual separations released, by reason (operator, auto, disabled).',
      labelNames: ['reason'],
      registers,
    });
    this.verdicts = new Counter({
      name: 'ascend_fault_center_software_fault_verdicts_total',
      help: 'Job detector decisions per fault: hardware (counted), software (dropped), orphaned (PodGroup gone).',
      labelNames: ['verdict'],
      registers,
    });
    this.separatedDevices = new Gauge({
      name: 'ascend_fault_center_separated_devices',
      help: 'Devices currently in the manual-separation cache.',
      registers,
    });
    this.leader = new Gauge({
      name: 'ascend_fault_center_lease_leader',
      help: '1 while this replica holds the Lease.',
      registers,
    });
    this.leaseTransitions = new Counter({
      name: 'ascend_fault_center_lease_transitions_total',
      help: 'Leadership changes of this replica.',
      registers,
    });
    this.rejectedInputs = new Counter({
      name: 'ascend_fault_center_rejected_inputs_total',
      help: 'Inputs ignored, by input and reason.',
      labelNames: ['input', 'reason'],
      registers,
    });
    this.cycles = new Counter({ name: 'ascend_fault_center_cycles_total', help: 'Processing cycles run.', registers });
    this.publishedWrites = new Counter({
      name: 'ascend_fault_center_published_writes_total',
      help: 'cluster-info-device ConfigMap writes.',
      registers,
    });
    this.publishedWriteSeconds = new Histogram({
      name: 'ascend_fault_center_published_write_seconds',
      help: 'Duration of one cluster-info-device ConfigMap write request (whatever its outcome).',
      buckets: [0.005, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.cycleNodes = new Counter({
      name: 'ascend_fault_center_cycle_nodes_total',
      help: 'Nodes re-processed by the processing cycles (only those whose inputs changed).',
      registers,
    });
    this.cycleSeconds = new Histogram({
      name: 'ascend_fault_center_cycle_seconds',
      help: 'Duration of one processing cycle.',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.stateWrites = new Counter({
      name: 'ascend_fault_center_state_commits_total',
      help: 'Commits of the persisted state: object head (one write) or base (compaction), result ok or refused.',
      labelNames: ['object', 'result'],
      registers,
    });
    this.policyLoads = new Counter({
      name: 'ascend_fault_center_policy_loads_total',
      help: 'Policy loads by result (applied, rejected, missing).',
      labelNames: ['result'],
      registers,
    });
  }
}
