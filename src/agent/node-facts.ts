/**
 * What the node labeler (spec I.1, I.2) and the pod annotator (I.3) need from DCMI, read by the composition root:
 * the start-up label facts (read once) and the chips' C.5 device IPs and B.7 super-device ids (read at start and at
 * every `baseDeviceInfos` refresh). Every DCMI call is optional: a failed one leaves its fact out (or empty) and is
 * logged once at debug level; nothing here stops the start.
 */
import type { ChipAddress, Dcmi } from '../dcmi/dcmi.js';
import type { Logger } from '../core/logger.js';
import type { A5Facts, ChipKind, NodeFacts } from '../core/chips.js';
import { chipName } from '../core/device-names.js';
import type { BaseDeviceInfo, NodeLabelFacts } from '../kube/node-labeler.js';
import type { RankChip } from '../kube/pod-annotator.js';

/** The DCMI calls used here. */
export type NodeFactsDcmi = Pick<
  Dcmi,
  'getDcmiVersion' | 'getChipInfo' | 'getHbmInfo' | 'getDeviceIp' | 'getSuperPodInfo'
>;

const is910Family = (k: ChipKind): boolean =>
  k === 'Ascend910' || k === 'Ascend910B' || k === 'Ascend910A3' || k === 'Ascend910A5';

function first<T>(chips: readonly ChipAddress[], read: (c: ChipAddress) => T): T | undefined {
  for (const c of chips) {
    try {
      return read(c);
    } catch {
      // next chip
    }
  }
  return undefined;
}

/** Spec I.1/I.2 facts. `realCardType` is the chip kind (public-name customisation, L.6, is not built). */
export function nodeLabelFactsOf(
  dcmi: NodeFactsDcmi,
  chips: readonly ChipAddress[],
  o: {
    facts: NodeFacts;
    chipName: string;
    superPodId: number;
    serverIndex: number;
    a5?: A5Facts;
    logger: Logger;
  },
): NodeLabelFacts {
  const kind = o.facts.chipKind;
  let driverVersion = '';
  try {
    driverVersion = dcmi.getDcmiVersion();
  } catch (err) {
    o.logger.debug({ error: String(err) }, 'dcmi_get_dcmi_version failed: no driver.version label');
  }
  const aiCoreCount = first(chips, (c) => dcmi.getChipInfo(c.cardId, c.deviceId).aicoreCount) ?? 0;
  const hbmMb = is910Family(kind)
    ? first(chips, (c) => dcmi.getHbmInfo(c.cardId, c.deviceId).memorySizeMiB)
    : undefined;
  return {
    chipKind: kind,
    chipName: o.chipName,
    driverVersion,
    aiCoreCount,
    realCardType: kind,
    ...(hbmMb !== undefined && hbmMb > 0 ? { hbmMb } : {}),
    boardId: o.facts.boardId,
    productTypes: o.facts.productTypes ?? [],
    superPodId: o.superPodId,
    serverIndex: o.serverIndex,
    ...(o.a5
      ? {
          rackId: o.a5.rackId,
          superPodType: o.a5.superPodType,
          ...(o.a5.cardType !== undefined ? { cardType: o.a5.cardType } : {}),
        }
      : {}),
  };
}

/**
 * One read of every chip's device IP (C.5: IPv4, else IPv6, else ""; A5: always "") and super-device id (910A3 and
 * 910A5, B.7; on A5 also the logic id as `DeviceID`, I.2).
 */
export interface ChipAddresses {
  readonly base: BaseDeviceInfo[];
  readonly rank: ReadonlyMap<number, RankChip>;
}

export function readChipAddresses(
  dcmi: NodeFactsDcmi,
  chips: readonly ChipAddress[],
  kind: ChipKind,
  deviceType: string,
  levelOf?: (chip: ChipAddress) => string,
): ChipAddresses {
  const base: BaseDeviceInfo[] = [];
  const rank = new Map<number, RankChip>();
  for (const c of [...chips].sort((a, b) => a.phyId - b.phyId)) {
    const a5 = kind === 'Ascend910A5';
    let ip: string | undefined = a5 ? '' : undefined; // spec C.5: A5 → empty
    if (is910Family(kind) && !a5) {
      for (const v6 of [false, true]) {
        try {
          ip = dcmi.getDeviceIp(c.cardId, c.deviceId, v6);
          break;
        } catch {
          // next family, else unknown
        }
      }
    }
    let superDeviceId: number | undefined;
    if (kind === 'Ascend910A3' || a5) {
      try {
        const sp = dcmi.getSuperPodInfo(c.cardId, c.deviceId);
        // upstream: an A5 chip with a negative rack id keeps no super-device id
        superDeviceId = a5 && sp.chassisId < 0 ? undefined : sp.sdid;
      } catch {
        superDeviceId = undefined;
      }
    }
    const levelList = a5 && levelOf ? levelOf(c) : undefined; // spec I.2, I.3: upstream's []RankLevel JSON
    base.push({
      name: chipName(deviceType, c.phyId),
      ip: ip ?? '',
      superDeviceId: superDeviceId ?? 0,
      ...(a5 ? { deviceId: c.logicId } : {}),
      ...(levelList !== undefined ? { levelListJson: levelList } : {}),
    });
    rank.set(c.phyId, {
      phyId: c.phyId,
      ...(ip !== undefined ? { ip } : {}),
      ...(superDeviceId !== undefined ? { superDeviceId } : {}),
      ...(levelList !== undefined ? { levelList } : {}),
    });
  }
  return { base, rank };
}
