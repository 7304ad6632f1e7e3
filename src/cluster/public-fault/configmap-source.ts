/**
 * The ConfigMap entry point (spec cluster-faults.md §2.1): ConfigMaps in any namespace labelled
 * `mc-consumer-publicfault=true`, key `PublicFault`. Add and Update submit the new content; an Update whose old
 * content did not parse is ignored; Delete clears nothing. A value larger than the size limit is refused before it
 * is decoded.
 */
import type { Logger } from '../../core/logger.js';
import type * as k8s from '@kubernetes/client-node';
import type { ClusterKube } from '../kube.js';
import type { CollectResult } from './collector.js';
import { RawConfigMapWriter } from '../raw-configmap-writer.js';
import { RawInformer } from '../raw-informer.js';
import { decodePublicFaultMessage } from './message-decode.js';
import type { PublicFaultMetrics } from './metrics.js';
import type { PublicFaultMessage } from './types.js';

export const PUBLIC_FAULT_LABEL = 'mc-consumer-publicfault';
export const PUBLIC_FAULT_SELECTOR = `${PUBLIC_FAULT_LABEL}=true`;
export const PUBLIC_FAULT_KEY = 'PublicFault';
/** Largest `PublicFault` value accepted (UTF-8 bytes): the Kubernetes ConfigMap limit. */
export const MAX_PUBLIC_FAULT_VALUE_BYTES = 1024 * 1024;

/** Options of the source. */
export interface PublicFaultConfigMapSourceOptions {
  kube: ClusterKube;
  collect(msg: PublicFaultMessage, source: 'configmap', origin: string): CollectResult;
  logger: Logger;
  metrics: PublicFaultMetrics;
  maxValueBytes?: number;
}

type Parsed = { ok: true; msg: PublicFaultMessage } | { ok: false; reason: string; detail: string };

/** Watches the labelled ConfigMaps and submits their messages. */
export class PublicFaultConfigMapSource {
  readonly #o: PublicFaultConfigMapSourceOptions;
  /** whether the last seen content of each ConfigMap parsed (for §2.1 "old object fails to parse") */
  readonly #lastParsed = new Map<string, boolean>();
  /** the reason each ConfigMap is refused for now: a refusal is counted and logged once per object and reason */
  readonly #refused = new Map<string, string>();
  #informer: RawInformer<k8s.V1ConfigMap> | undefined;
  #raw: RawConfigMapWriter | undefined;

  constructor(options: PublicFaultConfigMapSourceOptions) {
    this.#o = options;
  }

  #parse(cm: k8s.V1ConfigMap): Parsed {
    const value = cm.data?.[PUBLIC_FAULT_KEY];
    if (value === undefined) return { ok: false, reason: 'missing-key', detail: `no ${PUBLIC_FAULT_KEY} key` };
    const limit = this.#o.maxValueBytes ?? MAX_PUBLIC_FAULT_VALUE_BYTES;
    const size = Buffer.byteLength(value, 'utf8');
    if (size > limit) return { ok: false, reason: 'too-large', detail: `${size} bytes, limit ${limit}` };
    try {
      return { ok: true, msg: decodePublicFaultMessage(value) };
    } catch (e) {
      return { ok: false, reason: 'unparsable', detail: (e as Error).message };
    }
  }

  #submit(cm: k8s.V1ConfigMap, event: 'add' | 'update'): void {
    const ref = `${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}`;
    const parsed = this.#parse(cm);
    const oldParsed = this.#lastParsed.get(ref);
    this.#lastParsed.set(ref, parsed.ok);
    if (event === 'update' && oldParsed === false) {
      // §2.1: upstream ignores an update whose old object failed to parse, even when the new one is valid
      if (this.#firstRefusal(ref, 'previous-version-unparsable')) {
        this.#o.metrics.rejection('configmap', 'previous-version-unparsable');
        this.#o.logger.warn(
          { configMap: ref, reason: 'previous-version-unparsable' },
          'public fault ConfigMap update ignored: its previous version did not parse (re-create it to resubmit)',
        );
      }
      return;
    }
    if (!parsed.ok) {
      if (this.#firstRefusal(ref, parsed.reason)) {
        this.#o.metrics.rejection('configmap', parsed.reason);
        this.#o.logger.warn(
          { configMap: ref, reason: parsed.reason },
          `public fault ConfigMap ignored: ${parsed.detail}`,
        );
      }
      return;
    }
    this.#refused.delete(ref);
    this.#o.collect(parsed.msg, 'configmap', ref);
  }

  /** True the first time `ref` is refused for `reason` (until it is accepted or deleted). */
  #firstRefusal(ref: string, reason: string): boolean {
    if (this.#refused.get(ref) === reason) return false;
    this.#refused.set(ref, reason);
    return true;
  }

  /**
   * Lists (every existing ConfigMap arrives as an Add) and watches. The list is requested at once but handled only
   * after `after` (what must be in place before any message is collected: node serials, the restored store), so
   * that its transfer overlaps that work (issue [O] start-up). The list is read as protobuf (or plain JSON from a
   * server without it), without client-node's models and cache.
   */
  async start(after: Promise<unknown> = Promise.resolve()): Promise<void> {
    const raw = (this.#raw = new RawConfigMapWriter(this.#o.kube.transport));
    this.#informer = new RawInformer<k8s.V1ConfigMap>(
      {
        what: 'public fault ConfigMaps',
        path: '/api/v1/configmaps',
        labelSelector: PUBLIC_FAULT_SELECTOR,
        watch: this.#o.kube.watch,
        getJson: async (p) => (await Promise.all([raw.getList(p, 'ConfigMap'), after]))[0],
        logger: this.#o.logger,
      },
      {
        add: (cm) => this.#submit(cm, 'add'),
        update: (cm) => this.#submit(cm, 'update'),
        // §2.1: deleting the ConfigMap does not clear its faults
        delete: (cm) => {
          const ref = `${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}`;
          this.#lastParsed.delete(ref);
          this.#refused.delete(ref);
        },
      },
    );
    await this.#informer.start();
  }

  async stop(): Promise<void> {
    this.#informer?.stop();
    this.#informer = undefined;
    this.#raw?.close();
    this.#raw = undefined;
    await Promise.resolve();
  }
}
