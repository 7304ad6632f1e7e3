/**
 * Serial number → node name (spec cluster-faults.md §2.5 "nodeSN → node"): from the `product-serial-number`
 * annotation NodeD writes on each Node, kept current by a watch. Nodes without the annotation are not entered
 * (upstream enters them under SN "", see docs/public-faults.md).
 */
import type { Logger } from '../../core/logger.js';
import * as k8s from '@kubernetes/client-node';
import { startInformer, type RunningInformer } from './informer.js';

export const SERIAL_ANNOTATION = 'product-serial-number';

/** The lookup table, fed by node events (pure; the watch is {@link NodeSerialWatcher}). */
export class NodeSerials {
  readonly #byNode = new Map<string, string>();
  readonly #bySerial = new Map<string, string>();

  /** A node was added or changed. */
  set(node: string, serial: string | undefined): void {
    this.remove(node);
    if (serial === undefined || serial === '') return;
    this.#byNode.set(node, serial);
    this.#bySerial.set(serial, node);
  }

  /** A node was deleted. */
  remove(node: string): void {
    const old = this.#byNode.get(node);
    if (old === undefined) return;
    this.#byNode.delete(node);
    if (this.#bySerial.get(old) === node) {
      this.#bySerial.delete(old);
      // another node with the same serial takes over
      for (const [n, s] of this.#byNode) if (s === old) this.#bySerial.set(s, n);
    }
  }

  nodeBySerial(serial: string): string | undefined {
    return serial === '' ? undefined : this.#bySerial.get(serial);
  }
}

/** Watches Nodes into a {@link NodeSerials}. */
export class NodeSerialWatcher {
  readonly serials = new NodeSerials();
  readonly #kc: k8s.KubeConfig;
  readonly #logger: Logger;
  #informer: RunningInformer | undefined;

  constructor(kubeConfig: k8s.KubeConfig, logger: Logger) {
    this.#kc = kubeConfig;
    this.#logger = logger;
  }

  async start(): Promise<void> {
    const core = this.#kc.makeApiClient(k8s.CoreV1Api);
    const put = (n: k8s.V1Node): void =>
      this.serials.set(n.metadata?.name ?? '', n.metadata?.annotations?.[SERIAL_ANNOTATION]);
    this.#informer = await startInformer<k8s.V1Node>(
      this.#kc,
      '/api/v1/nodes',
      () => core.listNode(),
      { add: put, update: put, delete: (n) => this.serials.remove(n.metadata?.name ?? '') },
      this.#logger,
    );
  }

  async stop(): Promise<void> {
    await this.#informer?.stop();
    this.#informer = undefined;
  }
}
