/**
 * Step 9 (spec A.2 last step): the kubelet layer, a projection of the store's snapshot. Its device source
 * subscribes to the store first (when wired, before every other projection), so kubelet sees each snapshot first; the
 * device-plugin servers are built and registered at `start()`: wait for the kubelet folder, register every resource.
 */
import { errorMessage as message } from '../core/errors.js';
import type { PodCache } from '../core/pods.js';
import { FsDeviceNodeProbe } from '../kubelet/device-nodes.js';
import { DeviceNodeMissingError, KubeletWaitTimeoutError, SocketPathTooLongError } from '../kubelet/errors.js';
import { DevicePluginManager, KubeletStartAbortedError, type ServerStatus } from '../kubelet/plugin-manager.js';
import { StoreDeviceSource } from '../kubelet/store-device-source.js';
import type { NodeStateStore } from '../state/store.js';
import type { AgentContext } from './context.js';
import { AgentStartError, EXIT, StartAborted } from './errors.js';
import type { DcmiLayer } from './wire-dcmi.js';

/** The kubelet layer. */
export interface KubeletLayer {
  /** `-volcanoType`: the real device id Allocate gave for a kubelet id (undefined before `start` or when unknown). */
  realOf(kubeletId: string): string | undefined;
  /** Per-resource registration and stream state (readiness); empty before `start`. */
  status(): readonly ServerStatus[];
  /** SIGHUP: restart every plugin server and register again. */
  reregister(reason: string): void;
  /** Waits for the kubelet folder and the first registration (exit 4 past `-kubeletWaitTimeout`). */
  start(
    pods: PodCache | undefined,
    onFatal: (reason: string) => void,
    waitTimeoutMs: number,
    /** Spec C.4 `-enableSlowNode`: the variables every Allocate adds. */
    extraEnvs?: () => Readonly<Record<string, string>>,
  ): Promise<void>;
  /** Streams ended, sockets removed. */
  stop(): Promise<void>;
}

export function wireKubelet(ctx: AgentContext, hw: DcmiLayer, store: NodeStateStore): KubeletLayer {
  const { flags, log, metrics, config } = ctx;
  const devices = new StoreDeviceSource(store); // subscribed first: kubelet sees a snapshot before anyone else
  ctx.cleanups.push('device source', () => devices.close());
  let mgr: DevicePluginManager | undefined;
  return {
    realOf: (id) => mgr?.servers.find((s) => s.deviceType === hw.deviceType)?.kubeletToReal.realOf(id),
    status: () => mgr?.status() ?? [],
    reregister: (reason) => mgr?.triggerReregister(reason),
    start: async (pods, onFatal, waitTimeoutMs, extraEnvs) => {
      try {
        mgr = new DevicePluginManager({
          kubeletDir: flags.kubeletDir,
          source: devices,
          probe: new FsDeviceNodeProbe(flags.devDir),
          ...(pods ? { podCache: pods } : {}),
          ...(extraEnvs ? { extraEnvs } : {}),
          logger: log,
          volcanoType: flags.volcanoType,
          useAscendDocker: config.ascendDockerRuntime,
          fdFlag: flags.fdFlag,
          listWatchPeriodSec: flags.listWatchPeriod,
          waitTimeoutMs,
          onFatal,
        });
      } catch (err) {
        if (err instanceof DeviceNodeMissingError)
          throw new AgentStartError(message(err), EXIT.WAIT_TIMEOUT, { cause: err });
        if (err instanceof SocketPathTooLongError)
          throw new AgentStartError(message(err), EXIT.BAD_CONFIG, { cause: err });
        throw new AgentStartError(`kubelet plugin: ${message(err)}`, EXIT.BAD_CONFIG, { cause: err });
      }
      const m = mgr;
      ctx.cleanups.push('kubelet', () => m.stop());
      m.on('registered', (e: { resourceName: string }) => metrics.registered(e.resourceName, true));
      m.on('registerFailed', (e: { resourceName?: string }) =>
        metrics.registered(e.resourceName ?? hw.resourceName, false),
      );
      m.on('sendFailed', (e: { resourceName: string }) =>
        metrics.listAndWatchSends.inc({ resource: e.resourceName, result: 'failed' }),
      );
      m.on('reportSent', (e: { resourceName: string }) =>
        metrics.listAndWatchSends.inc({ resource: e.resourceName, result: 'ok' }),
      );
      m.on('allocated', (e: { resourceName: string; ms: number }) =>
        metrics.allocateLatency.observe({ resource: e.resourceName }, e.ms / 1000),
      );
      try {
        await m.start(ctx.signal);
      } catch (err) {
        if (err instanceof KubeletStartAbortedError || ctx.signal?.aborted) throw new StartAborted('aborted');
        if (err instanceof KubeletWaitTimeoutError)
          throw new AgentStartError(message(err), EXIT.WAIT_TIMEOUT, { cause: err });
        throw new AgentStartError(`kubelet plugin: ${message(err)}`, EXIT.WAIT_TIMEOUT, { cause: err });
      }
    },
    stop: async () => {
      ctx.cleanups.remove('kubelet'); // stopped here, in the shutdown order: not again by the clean-ups
      await mgr?.stop().catch((err: unknown) => log.warn({ error: message(err) }, 'kubelet stop'));
    },
  };
}
