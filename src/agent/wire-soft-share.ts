/**
 * Soft share (spec L.7, A.1 `-softShareDevConfigDir`): the {@link SoftShareRuntime} of the kubelet layer, built when
 * the flag is set on a kind that shares chips (310P/310B: `-shareDevCount=100` advertises 100 copies per chip). The
 * flag checks of A.1 ran in the CLI; here: the folder's parent must exist (the folder itself is created).
 */
import fs from 'node:fs';
import path from 'node:path';
import { errorMessage as message } from '../core/errors.js';
import type { EventSink } from '../kube/event-recorder.js';
import { SOFT_SHARE_COPIES } from '../kubelet/soft-share.js';
import { SoftShareRuntime } from '../kubelet/soft-share-runtime.js';
import type { AgentContext } from './context.js';
import { AgentStartError, EXIT } from './errors.js';
import type { DcmiLayer } from './wire-dcmi.js';

/** Longest hold of the test hook (ms). */
const MAX_HOLD_MS = 60_000;

/**
 * Test hook (integration tests only): `ASCEND_NPU_AGENT_TEST_SOFT_SHARE_HOLD_MS` blocks the agent for that long after
 * a vNPU's files are written and before Allocate answers, so that a test can kill it in that window.
 */
export const SOFT_SHARE_HOLD_ENV = 'ASCEND_NPU_AGENT_TEST_SOFT_SHARE_HOLD_MS';

function holdOf(ctx: AgentContext): (() => void) | undefined {
  const raw = ctx.env[SOFT_SHARE_HOLD_ENV];
  if (raw === undefined || !/^\d{1,5}$/.test(raw)) return undefined;
  const ms = Math.min(Number(raw), MAX_HOLD_MS);
  ctx.log.warn({ ms }, `${SOFT_SHARE_HOLD_ENV} is set: every soft-share Allocate blocks after its write (tests only)`);
  return () => void Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The soft-share runtime, or undefined when the mode is off (or has no effect on this chip kind, said once). */
export function softShareOf(
  ctx: AgentContext,
  hw: DcmiLayer,
  shareCount: number,
  events: EventSink | undefined,
): SoftShareRuntime | undefined {
  const { flags, log } = ctx;
  const dir = flags.softShareDevConfigDir;
  if (dir === '') return undefined;
  if (shareCount !== SOFT_SHARE_COPIES) {
    log.warn(
      { chipKind: hw.kind },
      '-softShareDevConfigDir has no effect on this chip kind (soft share is built for 310P/310B, spec L.7)',
    );
    return undefined;
  }
  if (!fs.existsSync(path.dirname(dir))) {
    throw new AgentStartError(`-softShareDevConfigDir=${dir}: its parent folder does not exist`, EXIT.BAD_CONFIG);
  }
  const afterWrite = holdOf(ctx);
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    return new SoftShareRuntime({
      enpuRoot: path.join(flags.hostRoot, 'etc', 'enpu'),
      shmRoot: dir,
      logger: log,
      deviceType: hw.deviceType,
      chips: hw.chips,
      dieIdOf: (card, device) => hw.dcmi.getDieId(card, device),
      memoryOf: (card, device) => hw.dcmi.getHbmInfo(card, device).memorySizeMiB,
      ...(events ? { events } : {}),
      ...(afterWrite ? { afterWrite } : {}),
    });
  } catch (err) {
    throw new AgentStartError(`soft share: ${message(err)}`, EXIT.BAD_CONFIG, { cause: err });
  }
}
