/**
 * Prometheus metrics of the public-fault interface. Every rejection is counted by reason (issue [G] item 3); the
 * `sender` label only takes configured sender names (anything else is `unknown`), so a client cannot grow the
 * label set.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { PublicFaultSource } from './types.js';

/** What the collector and its adapters report. Tests may pass {@link noopPublicFaultMetrics}. */
export interface PublicFaultMetrics {
  request(source: PublicFaultSource, sender: string, result: 'accepted' | 'rejected'): void;
  rejection(source: PublicFaultSource, reason: string): void;
  droppedFault(reason: string, count?: number): void;
  configReload(result: 'ok' | 'error'): void;
  persistence(operation: 'write' | 'patch' | 'create' | 'restore', result: 'ok' | 'error'): void;
}

export const noopPublicFaultMetrics: PublicFaultMetrics = {
  request: () => undefined,
  rejection: () => undefined,
  droppedFault: () => undefined,
  configReload: () => undefined,
  persistence: () => undefined,
};

const PREFIX = 'ascend_fault_center_public_fault';

/** Registers the metrics on `registry`; `size` is read at scrape time for the entry gauge. */
export function createPublicFaultMetrics(registry: Registry, size: () => number): PublicFaultMetrics {
  const requests = new Counter({
    name: `${PREFIX}_requests_total`,
    help: 'Public-fault messages by source (grpc, configmap), sender and result',
    labelNames: ['source', 'sender', 'result'],
    registers: [registry],
  });
  const rejections = new Counter({
    name: `${PREFIX}_rejections_total`,
    help: 'Rejected public-fault messages by source and reason',
    labelNames: ['source', 'reason'],
    registers: [registry],
  });
  const dropped = new Counter({
    name: `${PREFIX}_dropped_faults_total`,
    help: 'Faults dropped from accepted messages (invalid fault, or entries refused by the 50,000 cap) by reason',
    labelNames: ['reason'],
    registers: [registry],
  });
  const reloads = new Counter({
    name: `${PREFIX}_config_reloads_total`,
    help: 'Loads of the public-fault level/sender configuration file by result',
    labelNames: ['result'],
    registers: [registry],
  });
  const persistence = new Counter({
    name: `${PREFIX}_persistence_total`,
    help: 'statistic-fault-info operations by operation and result',
    labelNames: ['operation', 'result'],
    registers: [registry],
  });
  new Gauge({
    name: `${PREFIX}_entries`,
    help: 'Public-fault entries held (one per fault and influence node; capped at 50,000)',
    registers: [registry],
    collect() {
      this.set(size());
    },
  });
  return {
    request: (source, sender, result) => requests.inc({ source, sender, result }),
    rejection: (source, reason) => rejections.inc({ source, reason }),
    droppedFault: (reason, count = 1) => dropped.inc({ reason }, count),
    configReload: (result) => reloads.inc({ result }),
    persistence: (operation, result) => persistence.inc({ operation, result }),
  };
}
