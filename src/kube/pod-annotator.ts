/**
 * Pod annotations written by the agent (spec I.3) for the pods kubelet reports as holding our resources (I.5):
 * `huawei.com/kltDev`, `huawei.com/AscendReal` and the rank table
 * (`ascend.kubectl.kubernetes.io/ascend-910-configuration`, A5 `…/ascend-npu-configuration`) with the device IPs of
 * C.5. Written once per pod (the `AscendReal` guard), never removed. Pods are read from a {@link PodCache}
 * (the {@link PodCacheWatcher}); the agent's cycle ([E]) calls {@link PodAnnotator.annotate} with kubelet's
 * pod-resources answer.
 */
import type * as k8s from '@kubernetes/client-node';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { isVirtualName, phyIdOfName, RESOURCE_PREFIX } from '../core/device-names.js';
import type { PodCache, PodView, PodDevices } from '../core/pods.js';
import { joinSorted } from './device-info.js';
import { MERGE_PATCH } from './merge-patch.js';
import { goRaw, goSlice, goStruct, isEmptyJsonSlice, marshalGo, type GoValue } from '../core/go-json.js';
import { systemQueueClock, type QueueClock } from './write-queue.js';
import { statusOf } from '../core/errors.js';
import { runModeOf, type ChipKind } from '../core/chips.js';

export const ANNOTATION_KLT_DEV = 'huawei.com/kltDev';
export const ANNOTATION_ASCEND_REAL = 'huawei.com/AscendReal';
export const ANNOTATION_RANK_TABLE_910 = 'ascend.kubectl.kubernetes.io/ascend-910-configuration';
export const ANNOTATION_RANK_TABLE_NPU = 'ascend.kubectl.kubernetes.io/ascend-npu-configuration';

/** A chip as the rank table needs it (spec B.7, C.5). */
export interface RankChip {
  readonly phyId: number;
  /** C.5 device IP; undefined when the query failed (written `-1`). */
  readonly ip?: string;
  /** B.7 super-device id; undefined when DCMI gave none (written `0`). */
  readonly superDeviceId?: number;
  /** A5 only: `levelList` JSON array (written as is; left out when empty, as upstream's omitempty). */
  readonly levelList?: string;
}

/** Options of {@link PodAnnotator}. */
export interface PodAnnotatorOptions {
  readonly api: Pick<k8s.CoreV1Api, 'patchNamespacedPod'>;
  /** The node's pods (a {@link PodCacheWatcher}). */
  readonly pods: Pick<PodCache, 'pods'>;
  /** Node InternalIP (`host_ip`, `server_ip`). */
  readonly hostIp: string;
  /** Spec B.7 (-2 unknown). */
  readonly superPodId: number;
  readonly serverIndex: number;
  /** A5 only (`rack_id`; 0 elsewhere). */
  readonly rackId?: number;
  /** Chips of the enumeration by phy id (B.3/B.7). */
  readonly chips: () => ReadonlyMap<number, RankChip>;
  /**
   * Whether a rank table is written for this node and under which key: run mode 910 → `910`, 910A5 → `npu`,
   * all-Duo 310P → `910`, else `none` (spec I.3).
   */
  readonly rankTable: '910' | 'npu' | 'none';
  /** `-volcanoType`: real devices come from the kubelet→real map; without it real = kubelet IDs (I.5). */
  readonly volcanoType: boolean;
  /** The kubelet→real map of the device type's server (C.3 step 5). */
  readonly realOf?: (kubeletId: string) => string | undefined;
  /** Public-name rules (L.6) applied to keys and values before patching; identity by default. */
  readonly publicName?: (text: string) => string;
  /** Public-name rules (L.6) for annotation keys: the 910 rank-table key → `PodConfigurationName`; identity by default. */
  readonly podKey?: (key: string) => string;
  /** 310P share mode (spec B.3): device names end in `-<i>`, removed before the phy id is read. */
  readonly shareMode?: boolean;
  readonly clock?: QueueClock;
  readonly logger?: Logger;
  /** Spec I.3: 3 tries 200 ms apart. */
  readonly tries?: number;
  readonly retryDelayMs?: number;
  /** Called for every refused or unanswered patch (`status` undefined: no answer), for the metrics. */
  readonly onRefused?: (status: number | undefined) => void;
}

/** Spec I.3: which rank table a node writes — run mode 910 → `910`, 910A5 → `npu`, all-Duo 310P → `910`, else `none`. */
export function rankTableOf(kind: ChipKind, productTypes: readonly string[]): PodAnnotatorOptions['rankTable'] {
  if (runModeOf(kind) === 'Ascend910') return kind === 'Ascend910A5' ? 'npu' : '910';
  const allDuo = productTypes.length > 0 && productTypes.every((p) => p === 'Atlas 300I Duo');
  return allDuo ? '910' : 'none';
}

/** What one {@link PodAnnotator.annotate} call did. */
export interface AnnotateResult {
  readonly patched: string[];
  readonly skipped: { readonly pod: string; readonly why: string }[];
  readonly failed: string[];
}

/** Spec I.5: the pods holding `huawei.com/<deviceType>` (exact resource name; mixed-insert resources never match). */
export function podsOfDeviceType(all: readonly PodDevices[], deviceType: string): PodDevices[] {
  const r = `${RESOURCE_PREFIX}${deviceType}`;
  return all.filter((p) => p.resourceName === r && p.deviceIds.length > 0);
}

/** Spec I.3: the rank-table JSON (members in the order of the spec, Go encoding). */
export function rankTableJson(o: {
  podName: string;
  podUid: string;
  hostIp: string;
  superPodId: number;
  serverIndex: number;
  rackId: number;
  realNames: readonly string[];
  chips: ReadonlyMap<number, RankChip>;
  a5: boolean;
  /** Share mode (spec B.3): the trailing `-<i>` is dropped first; copies of one chip are one device. */
  shareMode?: boolean;
}): string {
  const devices: { phy: number; v: GoValue }[] = [];
  for (const name of o.realNames) {
    const phy = phyIdOfName(name, o.shareMode ?? false);
    if (phy === undefined || (o.shareMode === true && devices.some((d) => d.phy === phy))) continue;
    const chip = o.chips.get(phy);
    const virtual = isVirtualName(name);
    const fields: [string, GoValue][] = [
      ['device_id', String(phy)],
      ['device_ip', virtual ? '127.0.0.1' : (chip?.ip ?? '-1')],
      ['super_device_id', chip === undefined ? '-2' : String(chip.superDeviceId ?? 0)],
    ];
    // A5: upstream's `levelList` array, left out when empty (Go omitempty)
    if (o.a5 && chip?.levelList !== undefined && !isEmptyJsonSlice(chip.levelList)) {
      fields.push(['levelList', goRaw(chip.levelList)]);
    }
    devices.push({ phy, v: goStruct(fields) });
  }
  devices.sort((a, b) => a.phy - b.phy);
  return marshalGo(
    goStruct([
      ['pod_name', o.podName],
      ['server_id', o.podUid],
      ['host_ip', o.hostIp],
      ['super_pod_id', o.superPodId],
      ['devices', goSlice(devices.map((d) => d.v))],
      ['rack_id', o.rackId],
      ['server_index', String(o.serverIndex)],
      ['server_ip', o.hostIp],
    ]),
  );
}

const DONE_LIMIT = 20_000;

/** Writes the spec I.3 annotations. */
export class PodAnnotator {
  readonly #o: PodAnnotatorOptions;
  readonly #clock: QueueClock;
  readonly #log: Logger;
  /** UIDs annotated by us (the watch may not have delivered our own patch yet). */
  readonly #done = new Set<string>();

  constructor(options: PodAnnotatorOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemQueueClock;
    this.#log = options.logger ?? NOOP_LOGGER;
  }

  /**
   * One cycle for one device type (spec I.3): `held` is kubelet's pod-resources answer (all pods; filtered by
   * {@link podsOfDeviceType}). 310P vNPU types are skipped. Never throws; failures are in the result.
   */
  async annotate(deviceType: string, held: readonly PodDevices[]): Promise<AnnotateResult> {
    const result: AnnotateResult = { patched: [], skipped: [], failed: [] };
    if (/^Ascend310P-\d+c/.test(deviceType)) return result;
    const byKey = new Map<string, PodView>();
    for (const p of this.#o.pods.pods()) byKey.set(`${p.namespace}_${p.name}`, p);
    for (const h of podsOfDeviceType(held, deviceType)) {
      const key = `${h.namespace}_${h.name}`;
      const pod = byKey.get(key);
      const skip = (why: string): void => {
        result.skipped.push({ pod: `${h.namespace}/${h.name}`, why });
      };
      if (pod === undefined) {
        skip('not in the pod cache yet');
        continue;
      }
      if (pod.annotations[ANNOTATION_ASCEND_REAL] !== undefined || this.#done.has(pod.uid)) {
        skip('already annotated');
        continue;
      }
      const real = this.#realOf(deviceType, h.deviceIds);
      if (h.deviceIds.length === 0 || real.length === 0) {
        skip('no kubelet or real devices');
        continue;
      }
      const want = this.#annotationsFor(pod, deviceType, h.deviceIds, real);
      const diff: Record<string, string> = {};
      for (const [k, v] of Object.entries(want)) if (pod.annotations[k] !== v) diff[k] = v;
      if (Object.keys(diff).length === 0) continue;
      if (await this.#patch(pod, diff)) {
        this.#remember(pod.uid);
        result.patched.push(`${pod.namespace}/${pod.name}`);
      } else result.failed.push(`${pod.namespace}/${pod.name}`);
    }
    return result;
  }

  /** Spec I.5: real devices of a matched pod. */
  #realOf(deviceType: string, kubeletIds: readonly string[]): string[] {
    if (isVirtualName(deviceType) || !this.#o.volcanoType) return [...kubeletIds];
    const out: string[] = [];
    for (const id of kubeletIds) {
      const r = this.#o.realOf?.(id);
      if (r === undefined) return []; // incomplete map: nothing is written (the next cycle tries again)
      out.push(r);
    }
    return out;
  }

  #annotationsFor(
    pod: PodView,
    deviceType: string,
    kubeletIds: readonly string[],
    real: readonly string[],
  ): Record<string, string> {
    const pub = this.#o.publicName ?? ((s: string) => s);
    const out: Record<string, string> = {};
    if (!isVirtualName(deviceType)) out[ANNOTATION_KLT_DEV] = pub(joinSorted(kubeletIds));
    out[ANNOTATION_ASCEND_REAL] = pub(joinSorted(real));
    if (this.#o.rankTable !== 'none') {
      const key = this.#o.rankTable === 'npu' ? ANNOTATION_RANK_TABLE_NPU : ANNOTATION_RANK_TABLE_910;
      out[this.#o.podKey ? this.#o.podKey(key) : pub(key)] = pub(
        rankTableJson({
          podName: pod.name,
          podUid: pod.uid,
          hostIp: this.#o.hostIp,
          superPodId: this.#o.superPodId,
          serverIndex: this.#o.serverIndex,
          rackId: this.#o.rankTable === 'npu' ? (this.#o.rackId ?? 0) : 0,
          realNames: real,
          chips: this.#o.chips(),
          a5: this.#o.rankTable === 'npu',
          ...(this.#o.shareMode === true ? { shareMode: true } : {}),
        }),
      );
    }
    return out;
  }

  /** Merge patch of the annotations; `tries` tries `retryDelayMs` apart; a 404 stops. */
  async #patch(pod: PodView, annotations: Record<string, string>): Promise<boolean> {
    const tries = this.#o.tries ?? 3;
    for (let i = 1; i <= tries; i++) {
      try {
        await this.#o.api.patchNamespacedPod(
          { name: pod.name, namespace: pod.namespace, body: { metadata: { annotations } } },
          MERGE_PATCH,
        );
        return true;
      } catch (e) {
        const status = statusOf(e);
        if (status !== 404) this.#o.onRefused?.(status); // a pod gone is no refusal
        this.#log.warn(
          { pod: `${pod.namespace}/${pod.name}`, attempt: i, status, error: String(e).slice(0, 300) },
          'pod annotation patch failed',
        );
        if (status === 404) return false;
        if (i < tries) await new Promise<void>((r) => this.#clock.setTimeout(r, this.#o.retryDelayMs ?? 200));
      }
    }
    return false;
  }

  #remember(uid: string): void {
    if (this.#done.size >= DONE_LIMIT) this.#done.clear();
    this.#done.add(uid);
  }
}
