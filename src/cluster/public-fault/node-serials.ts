/**
 * Serial number → node name (spec cluster-faults.md §2.5 "nodeSN → node"): from the `product-serial-number`
 * annotation NodeD writes on each Node, kept current by a watch. Nodes without the annotation are not entered
 * (upstream enters them under SN "", see docs/public-faults.md).
 */
import type { Logger } from '../../core/logger.js';
import type * as k8s from '@kubernetes/client-node';
import type { ClusterKube } from '../kube.js';
import { RawConfigMapWriter } from '../raw-configmap-writer.js';
import { RawInformer } from '../raw-informer.js';

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

/**
 * Watches Nodes into a {@link NodeSerials}: the list as the center's other inputs read theirs, in pages, metadata
 * only and as protobuf (`PartialObjectMetadataList`, issue [P] item 6: a Node's status, with its image list, is
 * most of it and never read; a server without either answers the plain JSON list), the watch through the kube
 * layer's `ListWatch` (re-list on 410 or a failure, with backoff).
 */
export class NodeSerialWatcher {
  readonly serials = new NodeSerials();
  readonly #kube: ClusterKube;
  readonly #logger: Logger;
  #informer: RawInformer<k8s.V1Node> | undefined;
  #raw: RawConfigMapWriter | undefined;

  constructor(kube: ClusterKube, logger: Logger) {
    this.#kube = kube;
    this.#logger = logger;
  }

  async start(): Promise<void> {
    const put = (n: k8s.V1Node): void =>
      this.serials.set(n.metadata?.name ?? '', n.metadata?.annotations?.[SERIAL_ANNOTATION]);
    const raw = (this.#raw = new RawConfigMapWriter(this.#kube.transport));
    const informer = (this.#informer = new RawInformer<k8s.V1Node>(
      {
        what: 'nodes',
        path: '/api/v1/nodes',
        watch: this.#kube.watch,
        getJson: (p) => raw.getList(p, 'Metadata'),
        logger: this.#logger,
      },
      { add: put, update: put, delete: (n) => this.serials.remove(n.metadata?.name ?? '') },
    ));
    await informer.start();
  }

  stop(): Promise<void> {
    this.#informer?.stop();
    this.#informer = undefined;
    this.#raw?.close();
    this.#raw = undefined;
    return Promise.resolve();
  }
}
