/**
 * A client-node `ListWatch` that restarts after errors (client-node stops an informer on any error but a 410), with
 * a fixed pause, logging each failure once.
 */
import type { Logger } from '../../core/logger.js';
import * as k8s from '@kubernetes/client-node';

/** Handlers of one informer. */
export interface InformerHandlers<T extends k8s.KubernetesObject> {
  add(obj: T): void;
  update(obj: T): void;
  delete(obj: T): void;
}

/** A started informer. */
export interface RunningInformer {
  stop(): Promise<void>;
}

/** Starts list+watch of `path`; resolves after the first list was delivered (or the first attempt failed). */
export async function startInformer<T extends k8s.KubernetesObject>(
  kubeConfig: k8s.KubeConfig,
  path: string,
  list: () => Promise<k8s.KubernetesListObject<T>>,
  handlers: InformerHandlers<T>,
  logger: Logger,
  options: { labelSelector?: string; retryMs?: number } = {},
): Promise<RunningInformer> {
  const informer = new k8s.ListWatch<T>(path, new k8s.Watch(kubeConfig), list, false, options.labelSelector);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  informer.on('add', (o) => handlers.add(o));
  informer.on('update', (o) => handlers.update(o));
  informer.on('delete', (o) => handlers.delete(o));
  informer.on('error', (err: unknown) => {
    if (stopped) return;
    logger.warn({ path, err: String((err as Error | undefined)?.message ?? err) }, 'watch failed; restarting');
    timer = setTimeout(() => void informer.start().catch(() => undefined), options.retryMs ?? 2000);
    timer.unref();
  });
  await informer.start().catch(() => undefined);
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await informer.stop();
    },
  };
}
