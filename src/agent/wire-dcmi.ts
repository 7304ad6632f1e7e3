/**
 * Step 1 (spec A.2 steps 1-4): the DCMI library resolved, opened and initialised (exit 3 when unusable), the chips
 * enumerated and the node discovered; what later layers need of the hardware is read here once (910A3 multi-die
 * policy and super-pod info, 910A work mode).
 */
import { A5_INFO_NAMES, type PublicNames } from '../core/public-names.js';
import { loadPublicNames } from './public-names.js';
import { errorMessage as message } from '../core/errors.js';
import type { ChipKind, NodeFacts, RunMode } from '../core/chips.js';
import { a5CardTypeOf, runModeOf, type A5Facts } from '../core/chips.js';
import { managerName } from '../core/device-names.js';
import path from 'node:path';
import { PROJECT_ROOT } from '../core/paths.js';
import { Dcmi, type ChipAddress } from '../dcmi/dcmi.js';
import { resolveDcmiLibrary } from '../dcmi/library-path.js';
import { SWITCH_LIBRARY_NAME, SwitchLibrary } from '../dcmi/switch.js';
import { SwitchCodeSource } from '../kube/device-info-switch-codes.js';
import { discoverNode } from '../health/discovery.js';
import type { AgentBase } from './context.js';
import { AgentStartError, EXIT, StartAborted } from './errors.js';
import { pause, untilAborted } from './lifecycle.js';

/** The hardware as the other layers see it. */
export interface DcmiLayer {
  readonly dcmi: Dcmi;
  /** The DCMI library opened (resolved path; `build_info`). */
  readonly libraryPath: string;
  readonly chips: readonly ChipAddress[];
  readonly facts: NodeFacts;
  readonly kind: ChipKind;
  readonly runMode: RunMode;
  /** `Ascend910`, `Ascend310P`, … (the device-type part of resource and device names). */
  readonly deviceType: string;
  /** `huawei.com/<deviceType>`. */
  readonly resourceName: string;
  /** DCMI's chip name (node label). */
  readonly chipName: string;
  /** Spec B.7 (910A3 and 910A5; -2 elsewhere or when unknown). */
  readonly superPodId: number;
  readonly serverIndex: number;
  /** Ascend910A5 only (spec B.7, I.2, L.8): rack id, super-pod type and size, 300I card type. */
  readonly a5?: A5Facts;
  /** 910A: the chip work mode is SMP (hot-reset §1.2 gate); false elsewhere. */
  readonly workModeSmp: boolean;
  /**
   * Spec L.6: the node's public-name rules from `-nameCustomizationFile`, read once here (its problems logged once)
   * so every wiring renames with the same rules.
   */
  readonly names: PublicNames;
  /**
   * The names of the device-info ConfigMap and its read-back (spec H.3, G.2, G.5): {@link names} on every kind
   * but Ascend910A5, where upstream rewrites the run-mode names `Ascend910-<phy>` to `npu-<phy>` (L.6).
   */
  readonly infoNames: PublicNames;
  /** 910A3 with a usable `liblingqu-dcmi.so` (spec L.9); undefined = switch faults off. */
  readonly switch?: SwitchHardware;
}

/** The 910A3 switch library and its code table (spec L.9); the faults themselves are store state. */
export interface SwitchHardware {
  readonly lib: SwitchLibrary;
  readonly codes: SwitchCodeSource;
}

/** Opens DCMI and discovers the node; registers DCMI's close. */
export async function wireDcmi(ctx: AgentBase, retryMs: number): Promise<DcmiLayer> {
  const { log, flags } = ctx;
  const { dcmi, chips, libraryPath } = await openDcmi(ctx, retryMs);
  ctx.cleanups.push('dcmi', () => {
    dcmi.unsubscribeFaultEvents();
    dcmi.close();
  });
  let discovery;
  try {
    discovery = discoverNode(dcmi, chips);
  } catch (err) {
    throw new AgentStartError(`DCMI unusable: ${message(err)}`, EXIT.DCMI_UNUSABLE, { cause: err });
  }
  for (const w of discovery.warnings) log.warn({ warning: w }, 'discovery');
  const facts = discovery.facts;
  const kind = facts.chipKind;
  if (kind === 'Ascend910A3') {
    try {
      dcmi.setMultiDiePolicy(flags.useSingleDieMode ? 1 : 0);
    } catch (err) {
      log.warn({ error: message(err) }, 'dcmi_set_multi_die_policy failed');
    }
  }
  const sp = kind === 'Ascend910A3' || kind === 'Ascend910A5' ? readSuperPod(dcmi, chips, kind, log) : undefined;
  let a5: A5Facts | undefined;
  if (kind === 'Ascend910A5') {
    let mainboardId: number | undefined;
    try {
      mainboardId = dcmi.getMainboardId(chips[0]!.cardId, chips[0]!.deviceId);
    } catch (err) {
      log.warn({ error: message(err) }, 'dcmi_get_mainboard_id failed: no A5 300I card type');
    }
    const cardType = a5CardTypeOf(facts.boardId, mainboardId);
    a5 = {
      rackId: sp?.rackId ?? -2,
      superPodType: sp?.superPodType ?? 0,
      superPodSize: sp?.superPodSize ?? -2,
      answered: sp !== undefined,
      ...(cardType !== undefined ? { cardType } : {}),
    };
    log.info({ ...a5 }, 'A5 super-pod facts');
  }
  log.info({ chipKind: kind, chipName: discovery.chipName, chips: chips.length, boardId: facts.boardId }, 'DCMI ready');
  let workModeSmp = false;
  if (kind === 'Ascend910') {
    try {
      workModeSmp = dcmi.getNpuWorkMode(chips[0]!.cardId) !== 0; // dcmi-abi §4: 0 = AMP, other = SMP
    } catch (err) {
      log.warn({ error: message(err) }, 'dcmi_get_npu_work_mode failed: 910A taken as AMP (no task-aware reset)');
    }
  }
  const deviceType = managerName(kind);
  const names = loadPublicNames(ctx, { deviceType }, true);
  const sw = kind === 'Ascend910A3' ? await openSwitch(ctx) : undefined;
  return {
    dcmi,
    libraryPath,
    chips,
    facts,
    kind,
    runMode: runModeOf(kind),
    deviceType,
    resourceName: `huawei.com/${deviceType}`,
    chipName: discovery.chipName,
    superPodId: sp?.superPodId ?? -2,
    serverIndex: sp?.serverIndex ?? -2,
    ...(a5 ? { a5 } : {}),
    workModeSmp,
    names,
    infoNames: kind === 'Ascend910A5' ? A5_INFO_NAMES : names,
    ...(sw ? { switch: sw } : {}),
  };
}

/** Spec B.7 as read here; undefined when no chip answered. */
export interface SuperPodRead {
  readonly superPodId: number;
  readonly serverIndex: number;
  readonly rackId: number;
  readonly superPodType: number;
  readonly superPodSize: number;
}

/**
 * Spec B.7: `dcmi_get_device_info(12, 1)` chip by chip; the first chip that answers gives the node's values (the
 * super-device ids are read per chip with the addresses, `node-facts.ts`). On 910A5 a chip whose rack id is
 * negative counts as not answering (upstream `getSuperPodInfo`).
 */
export function readSuperPod(
  dcmi: Pick<Dcmi, 'getSuperPodInfo'>,
  chips: readonly ChipAddress[],
  kind: ChipKind,
  log: AgentBase['log'],
): SuperPodRead | undefined {
  const problems: string[] = [];
  for (const c of chips) {
    let info;
    try {
      info = dcmi.getSuperPodInfo(c.cardId, c.deviceId);
    } catch (err) {
      problems.push(`logic ${c.logicId}: ${message(err)}`);
      continue;
    }
    if (kind === 'Ascend910A5' && info.chassisId < 0) {
      problems.push(`logic ${c.logicId}: rack id ${info.chassisId} invalid`);
      continue;
    }
    if (problems.length > 0) log.warn({ problems: problems.slice(0, 8) }, 'super pod info unavailable on some chips');
    return {
      superPodId: info.superPodId,
      serverIndex: info.serverId,
      rackId: info.chassisId,
      superPodType: info.superPodType,
      superPodSize: info.scaleType,
    };
  }
  log.warn({ problems: problems.slice(0, 8) }, 'super pod info unavailable: -2 (spec B.7)');
  return undefined;
}

/**
 * Spec L.9 / dcmi-abi.md §8: the switch library found (`-switchLibrary`, else the §1.2 lookup of
 * `liblingqu-dcmi.so`), opened and initialised. Any failure — not found, not loadable, `lq_dcmi_init` or
 * `lq_dcmi_get_fault_info` missing, `lq_dcmi_init` failing — turns switch faults off with one warning; the rest of
 * the agent is unaffected. A library without the subscription is polled each cycle.
 */
async function openSwitch(ctx: AgentBase): Promise<SwitchHardware | undefined> {
  const { flags, log } = ctx;
  const off = (reason: string): undefined => {
    log.warn({ reason }, `910A3 switch faults off: ${reason}`);
    return undefined;
  };
  let libPath: string;
  try {
    const r = await resolveDcmiLibrary({
      ...(flags.switchLibrary !== '' ? { explicitPath: flags.switchLibrary } : {}),
      env: ctx.env,
      ownUid: process.getuid?.() ?? 0,
      libraryName: SWITCH_LIBRARY_NAME,
      flagName: '-switchLibrary',
    });
    libPath = r.path;
  } catch (err) {
    return off(message(err));
  }
  let lib: SwitchLibrary;
  try {
    lib = SwitchLibrary.open(libPath);
  } catch (err) {
    return off(message(err));
  }
  const missing = lib.missingSymbols();
  if (missing.includes('lq_dcmi_init') || missing.includes('lq_dcmi_get_fault_info')) {
    return off(`${libPath} lacks ${missing.join(', ')}`);
  }
  if (missing.length > 0) log.warn({ library: libPath, missing }, 'switch library lacks the subscription: polling');
  try {
    lib.init();
  } catch (err) {
    return off(`${libPath}: ${message(err)}`);
  }
  const codes = await SwitchCodeSource.open({
    file: flags.switchFaultCodeFile,
    fallbackFile: path.join(PROJECT_ROOT, 'SwitchFaultCode.json'),
    log: (level, line) => log[level]({ source: 'switch-fault-code' }, line),
  });
  ctx.cleanups.push('switch fault codes', () => codes.close());
  log.info({ library: libPath }, 'init switch library succeeded');
  return { lib, codes };
}

/**
 * Resolves, opens and initialises DCMI (exit 3 when unusable), enumerates the chips: `dcmi_init` and the card list
 * retried every `retryMs` until `-deviceResetTimeout`. An aborted signal ends the retries at once
 * ({@link StartAborted}; DCMI is closed, after a `dcmi_init` in flight returned).
 */
async function openDcmi(
  ctx: AgentBase,
  retryMs: number,
): Promise<{ dcmi: Dcmi; chips: ChipAddress[]; libraryPath: string }> {
  const { flags, log, signal } = ctx;
  let lib;
  try {
    lib = await resolveDcmiLibrary({
      ...(flags.dcmiLibrary !== '' ? { explicitPath: flags.dcmiLibrary } : {}),
      env: ctx.env,
      ownUid: process.getuid?.() ?? 0,
    });
  } catch (err) {
    throw new AgentStartError(`DCMI library unusable: ${message(err)}`, EXIT.DCMI_UNUSABLE, { cause: err });
  }
  let dcmi: Dcmi;
  try {
    dcmi = Dcmi.open(lib.path);
  } catch (err) {
    throw new AgentStartError(`DCMI library unusable: ${lib.path}: ${message(err)}`, EXIT.DCMI_UNUSABLE, {
      cause: err,
    });
  }
  const missing = dcmi.missingSymbols();
  // spec A.2 step 4.1: v1 (`dcmi_*`) or v2 (`dcmiv2_*`, Ascend910A5); a library must offer one of them whole enough
  const v1Unusable = missing.includes('dcmi_init') || missing.includes('dcmi_get_card_num_list');
  const missingV2 = dcmi.missingSymbolsV2();
  const v2Unusable = missingV2.includes('dcmiv2_init') || missingV2.includes('dcmiv2_get_device_list');
  if (v1Unusable && v2Unusable) {
    dcmi.close();
    throw new AgentStartError(
      `DCMI library unusable: ${lib.path} lacks ${missing.slice(0, 5).join(', ')} and ` +
        `${missingV2.slice(0, 3).join(', ')} (wrong ABI?)`,
      EXIT.DCMI_UNUSABLE,
    );
  }
  if (missing.length > 0) log.warn({ library: lib.path, missing }, 'DCMI library lacks some functions');
  log.info({ library: lib.path, source: lib.source, rejected: lib.rejected }, 'DCMI library');
  // a budget on the monotonic clock (issue [T] item 1): a wall-clock step neither ends nor stretches it
  const deadline = performance.now() + flags.deviceResetTimeout * 1000;
  for (let attempt = 1; ; attempt++) {
    const init = dcmi.init();
    try {
      await untilAborted(init, signal);
      const chips = dcmi.enumerate();
      if (chips.length === 0) throw new Error('DCMI reports no chips');
      return { dcmi, chips, libraryPath: lib.path };
    } catch (err) {
      if (err instanceof StartAborted) {
        // dcmi_init runs off the JS thread: the library is closed once it has returned
        void init.then(
          () => dcmi.close(),
          () => dcmi.close(),
        );
        throw err;
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        dcmi.close();
        throw new AgentStartError(
          `DCMI unusable: ${lib.path}: dcmi_init/enumeration still failing after ${flags.deviceResetTimeout} s ` +
            `(-deviceResetTimeout): ${message(err)}`,
          EXIT.DCMI_UNUSABLE,
          { cause: err },
        );
      }
      log.warn({ attempt, error: message(err), retryInMs: Math.min(retryMs, left) }, 'DCMI not ready; retrying');
      try {
        await pause(Math.min(retryMs, left), signal);
      } catch (abort) {
        dcmi.close();
        throw abort;
      }
    }
  }
}
