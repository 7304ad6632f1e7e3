/**
 * When the pod annotations of spec I.3 are written: a pass asks kubelet which pods hold the resource (its
 * pod-resources answer, given as `held`) and annotates them. Passes run one at a time; a request while one runs
 * makes one more pass after it. A pass asks kubelet only while a cached pod that asks for the resource has no
 * `huawei.com/AscendReal` yet, so an idle node never calls kubelet.
 */
import { errorMessage } from '../core/errors.js';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import type { PodCache, PodDevices } from '../core/pods.js';
import { ANNOTATION_ASCEND_REAL, type PodAnnotator } from './pod-annotator.js';

/** Options of {@link PodAnnotationPasses}. */
export interface PodAnnotationPassesOptions {
  readonly annotator: Pick<PodAnnotator, 'annotate'>;
  readonly pods: Pick<PodCache, 'pods'>;
  /** `huawei.com/<deviceType>`. */
  readonly resourceName: string;
  readonly deviceType: string;
  /** Kubelet's pod-resources answer for the resource (rejects when kubelet cannot be asked). */
  readonly held: () => Promise<readonly PodDevices[]>;
  /** Each pod a pass has just annotated (`namespace`, `name`). */
  readonly onAnnotated?: (namespace: string, name: string) => void;
  readonly logger?: Logger;
}

/** Runs the annotation passes. */
export class PodAnnotationPasses {
  readonly #o: PodAnnotationPassesOptions;
  readonly #log: Logger;
  #running: Promise<void> | undefined;
  #again = false;
  #failedLogged = false;
  #stopped = false;

  constructor(options: PodAnnotationPassesOptions) {
    this.#o = options;
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /** Asks for a pass; resolves when the passes it started or joined are done. Never rejects. */
  request(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = this.#run().finally(() => (this.#running = undefined));
    return this.#running;
  }

  /** No pass starts from now on (a pass running finishes its step). */
  stop(): void {
    this.#stopped = true;
  }

  /** Whether a cached pod asks for the resource and has no `huawei.com/AscendReal` yet. */
  #waiting(): boolean {
    const r = this.#o.resourceName;
    return this.#o.pods
      .pods()
      .some(
        (p) => p.annotations[ANNOTATION_ASCEND_REAL] === undefined && p.containerLimits.some((l) => (l[r] ?? 0) > 0),
      );
  }

  async #run(): Promise<void> {
    try {
      do {
        this.#again = false;
        if (!this.#waiting()) break; // the idle case: nothing to ask kubelet
        const r = await this.#o.annotator.annotate(this.#o.deviceType, await this.#o.held());
        this.#failedLogged = false;
        if (r.patched.length > 0) this.#log.info({ pods: r.patched }, 'pod annotations written (I.3)');
        for (const key of r.patched) {
          const slash = key.indexOf('/');
          this.#o.onAnnotated?.(key.slice(0, slash), key.slice(slash + 1));
        }
        if (r.failed.length > 0) this.#log.warn({ pods: r.failed }, 'pod annotations not written; next cycle');
      } while (this.#again && !this.#stopped);
    } catch (err) {
      if (!this.#failedLogged)
        this.#log.warn({ error: errorMessage(err) }, 'pod-resources unavailable: pods are not annotated');
      this.#failedLogged = true;
    }
  }
}
