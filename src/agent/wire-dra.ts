/**
 * The DRA driver `npu.huawei.com`, node side (issue [DRA]; docs/dra.md), wired when `-deviceApi` is `dra` or `both`:
 * a projection of the store's snapshot (health stream, what NodePrepare may hand out) with one input into it (the
 * prepared claims, `setDraClaims`). Built at once (the management nodes and driver mounts are read here, like the
 * device plugin's default nodes), started last: folders, checkpoint recovery, dra.sock, the registration socket.
 * It reads ResourceClaims from the API server, so `dra` and `both` need a kubeconfig.
 */
import { driverMounts } from '../cdi/spec.js';
import { CdiSpecDir } from '../cdi/spec-dir.js';
import { deviceApiOf } from '../cli/agent-flags.js';
import { errorMessage as message } from '../core/errors.js';
import { ClaimCdi } from '../dra/claim-cdi.js';
import { ClaimPreparer, type PrepareStep, type VnpuPort } from '../dra/claim-preparer.js';
import { CachedClaimReader } from '../dra/claims.js';
import { DraCheckpoint } from '../dra/checkpoint.js';
import { draApiOf } from '../dra/dra-api.js';
import { lookupDraDevice } from '../dra/device-lookup.js';
import { DraKubeletPlugin, type DraRegistrationStatus } from '../dra/kubelet-plugin.js';
import { loadDraProtos } from '../dra/proto.js';
import { collectDefaultDeviceNodes, FsDeviceNodeProbe, ubNodes } from '../kubelet/device-nodes.js';
import { DeviceNodeMissingError, SocketPathTooLongError } from '../kubelet/errors.js';
import type { NodeStateStore } from '../state/store.js';
import type { AgentContext } from './context.js';
import { AgentStartError, EXIT } from './errors.js';
import type { ApiLayer } from './wire-api.js';
import type { DcmiLayer } from './wire-dcmi.js';

/**
 * Test hook (integration tests only): `ASCEND_NPU_AGENT_TEST_DRA_CRASH_AT=<step>` kills the agent (SIGKILL, as
 * `kill -9`) right after that durable step of a prepare or unprepare (`prepare-intent`, `prepare-vnpu`,
 * `prepare-cdi`, `prepare-commit`, `unprepare-cdi`, `unprepare-commit`), to prove the checkpoint's recovery.
 */
export const DRA_CRASH_ENV = 'ASCEND_NPU_AGENT_TEST_DRA_CRASH_AT';
const STEPS: readonly PrepareStep[] = [
  'prepare-intent',
  'prepare-vnpu',
  'prepare-cdi',
  'prepare-commit',
  'unprepare-cdi',
  'unprepare-commit',
];

/** The DRA layer. */
export interface DraLayer {
  /** Whether `-deviceApi` serves DRA at all. */
  readonly enabled: boolean;
  /** Registration state for `/readyz` (empty when DRA is off). */
  status(): DraRegistrationStatus[];
  /** Folders, recovery, sockets (no-op when off). */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The plugin (undefined when off). */
  readonly plugin: DraKubeletPlugin | undefined;
}

const OFF: DraLayer = Object.freeze({
  enabled: false,
  status: () => [],
  start: () => Promise.resolve(),
  stop: () => Promise.resolve(),
  plugin: undefined,
});

function crashHook(ctx: AgentContext): ((step: PrepareStep) => void) | undefined {
  const raw = ctx.env[DRA_CRASH_ENV];
  if (raw === undefined) return undefined;
  if (!STEPS.includes(raw as PrepareStep)) {
    throw new AgentStartError(`${DRA_CRASH_ENV}=${raw}: not one of ${STEPS.join(', ')}`, EXIT.BAD_CONFIG);
  }
  ctx.log.warn({ step: raw }, `${DRA_CRASH_ENV} is set: the agent kills itself after that step (tests only)`);
  return (step) => {
    if (step === raw) process.kill(process.pid, 'SIGKILL');
  };
}

/** DCMI's vNPU calls for partitions. */
function dcmiVnpu(hw: DcmiLayer): VnpuPort {
  return {
    create: (chip, template) => hw.dcmi.createVirtualDevice(chip.cardId, chip.deviceId, template),
    destroy: (chip, vdevId) => hw.dcmi.destroyVirtualDevice(chip.cardId, chip.deviceId, vdevId),
  };
}

/**
 * Builds the DRA layer (or the no-op one for `-deviceApi=plugin`). `pluginHeld` (`-deviceApi=both`): the chips the
 * device plugin has handed out, asked before a new claim is prepared.
 */
export function wireDra(
  ctx: AgentContext,
  hw: DcmiLayer,
  store: NodeStateStore,
  api: ApiLayer | undefined,
  pluginHeld?: () => Promise<ReadonlySet<number>>,
): DraLayer {
  const { flags, log, config, clock } = ctx;
  if (deviceApiOf(flags) === 'plugin') return OFF;
  if (!api) {
    throw new AgentStartError(
      `-deviceApi=${flags.deviceApi} needs the API server (NodePrepareResources reads ResourceClaims): no kubeconfig applies`,
      EXIT.BAD_CONFIG,
    );
  }
  const probe = new FsDeviceNodeProbe(flags.devDir);
  let shared;
  try {
    shared = [
      ...collectDefaultDeviceNodes(probe, {
        chipKind: hw.kind,
        fdFlag: flags.fdFlag,
        ...(hw.facts.productTypes ? { productTypes: hw.facts.productTypes } : {}),
      }),
      ...ubNodes(probe),
    ];
  } catch (err) {
    if (err instanceof DeviceNodeMissingError)
      throw new AgentStartError(message(err), EXIT.WAIT_TIMEOUT, { cause: err });
    throw err;
  }
  const mounts = driverMounts(hw.kind, flags.hostRoot);
  const poolName = config.nodeName; // one pool per node, named after it (the API side publishes the same)
  const afterStep = crashHook(ctx);
  const preparer = new ClaimPreparer({
    poolName,
    store,
    claims: new CachedClaimReader({ api: draApiOf(api.json), clock, logger: log }),
    lookup: lookupDraDevice,
    checkpoint: new DraCheckpoint(flags.stateDir, config.nodeName),
    cdi: new ClaimCdi({ dir: new CdiSpecDir(flags.cdiDir), devDir: flags.devDir, shared, mounts }),
    clock,
    vnpu: dcmiVnpu(hw),
    resetting: (id) => store.resetOverrides().healthy.has(id),
    ...(pluginHeld ? { pluginHeld } : {}),
    ...(afterStep ? { afterStep } : {}),
    logger: log,
  });
  let plugin: DraKubeletPlugin;
  try {
    plugin = new DraKubeletPlugin({
      pluginsDir: flags.kubeletPluginsDir,
      registryDir: flags.kubeletRegistryDir,
      poolName,
      protos: loadDraProtos(),
      preparer,
      store,
      clock,
      logger: log,
      observed: (call, ms, failed) => {
        ctx.metrics.dra.observeCall(call, ms, failed);
        log.debug({ call, ms, failedClaims: failed }, 'DRA call answered');
      },
    });
  } catch (err) {
    if (err instanceof SocketPathTooLongError) throw new AgentStartError(message(err), EXIT.BAD_CONFIG, { cause: err });
    throw err;
  }
  log.info(
    {
      driver: 'npu.huawei.com',
      pool: poolName,
      registration: plugin.registrationSocket,
      endpoint: plugin.draSocket,
      cdiDir: flags.cdiDir,
      managementNodes: shared.map((n) => n.containerPath),
      driverMounts: mounts.map((m) => m.containerPath),
    },
    'DRA driver',
  );
  let started = false;
  return {
    enabled: true,
    plugin,
    status: () => [plugin.status()],
    start: async () => {
      try {
        await plugin.start();
        started = true;
        ctx.cleanups.push('DRA plugin', () => plugin.stop());
      } catch (err) {
        await plugin.stop().catch(() => undefined);
        throw new AgentStartError(`DRA plugin: ${message(err)}`, EXIT.BAD_CONFIG, { cause: err });
      }
    },
    stop: async () => {
      if (!started) return;
      ctx.cleanups.remove('DRA plugin');
      await plugin.stop().catch((err: unknown) => log.warn({ error: message(err) }, 'DRA plugin stop'));
    },
  };
}
