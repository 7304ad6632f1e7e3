/**
 * Node labels and annotations (spec I.1, I.2): the start-up labels and annotations in one merge patch (3 tries 1 s
 * apart, then retried in the background with a backoff until it is written), the 60 s `baseDeviceInfos` refresher, the legacy-annotation clean-up
 * at the first device-info write, and the `-autoStowing=false` labels `huawei.com/Ascend910-Recover` /
 * `-NetworkRecover` with their effect on the device-info lists (chips pending in `-Recover` are withheld from the
 * schedulable list, `-NetworkUnhealthy` stays sticky until the operator removes the chip from `-NetworkRecover`).
 *
 * Labels and annotations are not essential (issue [R] item 1, defect 4): a refused patch — 403 from RBAC or an
 * admission policy, 422, a webhook that is down, no answer — is logged (bounded text), reported to `onRefused`
 * (the agent counts it in /metrics) and retried, and never stops the daemon: spec A.2 step 5.7 makes the start-up
 * patch fatal after its 3 tries, which on a real cluster put every node of a mis-set policy into a crash loop and
 * took the kubelet path down with it; upstream's kubelet path keeps serving. docs/kube.md "Refused writes".
 */
import type * as k8s from '@kubernetes/client-node';
import { NOOP_LOGGER, type Logger } from '../core/logger.js';
import { a5PublishesRackId, type ChipKind } from '../core/chips.js';
import type { DeviceInfoChip, DeviceInfoView } from './device-info.js';
import { goMap, goStruct, goRaw, isEmptyJsonSlice, marshalGo, type GoValue } from '../core/go-json.js';
import { ListWatch, type WatchFn } from './list-watch.js';
import { MERGE_PATCH } from './merge-patch.js';
import { statusOf } from '../core/errors.js';
import { backoffDelay, RetryTimer, systemQueueClock, type BackoffOptions, type QueueClock } from './write-queue.js';

export const LABEL_CHIP_NAME = 'node.kubernetes.io/npu.chip.name';
export const LABEL_SERVER_TYPE = 'servertype';
export const LABEL_DRIVER_VERSION = 'huawei.com/driver.version';
export const LABEL_CHIP_MEMORY = 'mind-cluster/npu-chip-memory';
export const LABEL_ACCELERATOR_TYPE = 'accelerator-type';
export const LABEL_INFER_CARD_TYPE = 'infer-card-type';
export const LABEL_ACCELERATOR = 'accelerator';
export const LABEL_SUPER_POD_ID = 'huawei.com/topotree.superpodid';
export const LABEL_RACK_ID = 'huawei.com/topotree.rackid';
export const LABEL_SERVER_ID = 'huawei.com/topotree.serverid';
export const LABEL_RECOVER = 'huawei.com/Ascend910-Recover';
export const LABEL_NETWORK_RECOVER = 'huawei.com/Ascend910-NetworkRecover';

export const ANNOTATION_BASE_DEVICE_INFOS = 'baseDeviceInfos';
export const ANNOTATION_SUPER_POD_ID = 'superPodID';
export const ANNOTATION_SERVER_INDEX = 'serverIndex';
export const ANNOTATION_SERVER_TYPE = 'serverType';
export const ANNOTATION_CARD_TYPE = 'cardType';
export const ANNOTATION_RACK_ID = 'rackID';

/** Spec I.1: a label value outside this pattern is skipped (Kubernetes' own rule for label values). */
export const LABEL_VALUE_PATTERN = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

/** Characters of an API error quoted in a log line (bounded log text). */
const LOGGED_ERROR_CHARS = 300;

/** One chip in `baseDeviceInfos` (spec I.2, C.5). */
export interface BaseDeviceInfo {
  /** Public device name, e.g. `Ascend910-3`. */
  readonly name: string;
  /** Device IP by the C.5 rules (`""` when unknown). */
  readonly ip: string;
  /** Super-device id (B.7); 0 when DCMI gave none. */
  readonly superDeviceId: number;
  /** A5 only. */
  readonly deviceId?: number;
  /** A5 only: the `levelList` JSON (written as is). */
  readonly levelListJson?: string;
}

/** What the start-up labels and annotations are computed from (DCMI facts gathered by [A]/[C]). */
export interface NodeLabelFacts {
  readonly chipKind: ChipKind;
  /** DCMI chip name, e.g. `910B3`. */
  readonly chipName: string;
  /** DCMI version string. */
  readonly driverVersion: string;
  /** Spec B.6. */
  readonly aiCoreCount: number;
  /** Spec B.2 real card type for `servertype`, e.g. `Ascend910B` (public-name rules already applied). */
  readonly realCardType: string;
  /** HBM size in MB of the 910 family (absent: no memory label). */
  readonly hbmMb?: number;
  /** Board id of the first valid chip (B.2). */
  readonly boardId: number;
  /** Product type strings (A.2 step 4.6). */
  readonly productTypes: readonly string[];
  /** Spec B.7 (-2 unknown). */
  readonly superPodId: number;
  readonly serverIndex: number;
  /** A5 only (B.7): the rack id; labelled when ≥ 0, annotated (`rackID`) in 1D/2D pods only. */
  readonly rackId?: number;
  /** A5 only (B.7): the super-pod type (1 = 1D pod, 2 = 2D pod). */
  readonly superPodType?: number;
  /** A5 only: `huawei.com/topotree.serverid` (default: the server index). */
  readonly serverId?: number;
  /** A5 300I cards only. */
  readonly cardType?: string;
}

/** A chip as the stowing labels need it (from the engine's views). */
export interface StowingChip {
  readonly logicId: number;
  readonly phyId: number;
  readonly health: 'Healthy' | 'Unhealthy';
  readonly networkHealth: 'Healthy' | 'Unhealthy';
}

const isA5 = (k: ChipKind): boolean => k === 'Ascend910A5';
const is910Family = (k: ChipKind): boolean =>
  k === 'Ascend910' || k === 'Ascend910B' || k === 'Ascend910A3' || k === 'Ascend910A5';

/** `accelerator` label value (spec I.1). */
export function acceleratorOf(kind: ChipKind): string {
  if (isA5(kind)) return 'huawei-npu';
  if (is910Family(kind)) return 'huawei-Ascend910';
  if (kind === 'Ascend310P') return 'huawei-Ascend310P';
  return 'huawei-Ascend310';
}

/** A label to write and why it was skipped, if it was. */
export interface LabelPlan {
  readonly labels: Record<string, string>;
  readonly skipped: readonly { readonly label: string; readonly value: string }[];
}

/**
 * Spec I.1 start-up labels. `existing` is the node's current labels (`servertype` is only added when absent,
 * except on A5). Values that do not match {@link LABEL_VALUE_PATTERN} are returned in `skipped`.
 */
export function nodeLabelsOf(f: NodeLabelFacts, existing: Readonly<Record<string, string>> = {}): LabelPlan {
  const want: [string, string][] = [
    [LABEL_CHIP_NAME, f.chipName],
    [LABEL_DRIVER_VERSION, f.driverVersion],
  ];
  if (isA5(f.chipKind) || existing[LABEL_SERVER_TYPE] === undefined) {
    want.push([LABEL_SERVER_TYPE, isA5(f.chipKind) ? `npu-${f.aiCoreCount}` : `${f.realCardType}-${f.aiCoreCount}`]);
  }
  if (is910Family(f.chipKind) && f.hbmMb !== undefined)
    want.push([LABEL_CHIP_MEMORY, `${Math.floor(f.hbmMb / 1024)}G`]);
  if (f.chipKind === 'Ascend910B' && (f.boardId === 0x28 || f.boardId === 0x29))
    want.push([LABEL_ACCELERATOR_TYPE, 'card-910b-infer']);
  if (f.productTypes.length > 0 && f.productTypes.every((p) => p === 'Atlas 300I Duo'))
    want.push([LABEL_INFER_CARD_TYPE, 'card-300i-duo']);
  want.push([LABEL_ACCELERATOR, acceleratorOf(f.chipKind)]);
  if ((f.chipKind === 'Ascend910A3' || isA5(f.chipKind)) && f.superPodId >= 0)
    want.push([LABEL_SUPER_POD_ID, String(f.superPodId)]);
  if (isA5(f.chipKind)) {
    // upstream: each only when the value is not negative
    if (f.rackId !== undefined && f.rackId >= 0) want.push([LABEL_RACK_ID, String(f.rackId)]);
    const serverId = f.serverId ?? f.serverIndex;
    if (serverId >= 0) want.push([LABEL_SERVER_ID, String(serverId)]);
  }
  const labels: Record<string, string> = {};
  const skipped: { label: string; value: string }[] = [];
  for (const [label, value] of want) {
    if (LABEL_VALUE_PATTERN.test(value)) labels[label] = value;
    else skipped.push({ label, value });
  }
  return { labels, skipped };
}

/**
 * `baseDeviceInfos` (spec I.2): device name → `{"IP","SuperDeviceID"}`; A5 writes upstream's
 * `{"DeviceID":<logic id>,"IP","SuperDeviceID","levelList":[…]}` (Go field order; `levelList` omitted when empty).
 */
export function baseDeviceInfosValue(chips: readonly BaseDeviceInfo[], a5 = false): string {
  const m: Record<string, GoValue> = {};
  for (const c of chips) {
    const fields: [string, GoValue][] = [];
    if (a5) fields.push(['DeviceID', c.deviceId ?? 0]);
    fields.push(['IP', c.ip], ['SuperDeviceID', c.superDeviceId >>> 0]);
    if (a5 && c.levelListJson !== undefined && !isEmptyJsonSlice(c.levelListJson)) {
      fields.push(['levelList', goRaw(c.levelListJson)]);
    }
    m[c.name] = goStruct(fields);
  }
  return marshalGo(goMap(m));
}

/** Spec I.2 start-up annotations. */
export function nodeAnnotationsOf(f: NodeLabelFacts, chips: readonly BaseDeviceInfo[]): Record<string, string> {
  const a5 = isA5(f.chipKind);
  const out: Record<string, string> = {
    [ANNOTATION_BASE_DEVICE_INFOS]: baseDeviceInfosValue(chips, a5),
    [ANNOTATION_SUPER_POD_ID]: String(f.superPodId),
    [ANNOTATION_SERVER_INDEX]: String(f.serverIndex),
    [ANNOTATION_SERVER_TYPE]: a5 ? 'npu' : f.chipKind === 'Ascend910A3' ? 'A3' : '',
  };
  if (a5 && f.cardType !== undefined) out[ANNOTATION_CARD_TYPE] = f.cardType;
  // upstream: `rackID` in the 1D/2D super pods only (super-pod type 1 or 2)
  if (
    a5 &&
    f.rackId !== undefined &&
    f.superPodType !== undefined &&
    a5PublishesRackId({ superPodType: f.superPodType })
  ) {
    out[ANNOTATION_RACK_ID] = String(f.rackId);
  }
  return out;
}

const LEGACY_KEY =
  /^huawei\.com\/(Ascend910|Ascend310P|Ascend310|npu)(-\d+c(\.[0-9A-Za-z]+)*|-V|-VPro|-IPro)?(-Unhealthy|-NetworkUnhealthy|-Recovering|-Fault)?$/;

/** Spec I.2: node annotation keys that are legacy device-info keys (deleted at the first device-info write). */
export function legacyAnnotationKeys(annotations: Readonly<Record<string, string>>): string[] {
  return Object.keys(annotations).filter((k) => LEGACY_KEY.test(k));
}

/** Dot-separated phy ids (spec I.1), ascending; an unreadable part is ignored. */
export function parsePhyLabel(value: string | undefined): Set<number> {
  const out = new Set<number>();
  for (const part of (value ?? '').split('.')) if (/^\d{1,9}$/.test(part)) out.add(Number(part));
  return out;
}

export function phyLabelValue(phys: Iterable<number>): string {
  return [...phys].sort((a, b) => a - b).join('.');
}

/**
 * The `-autoStowing=false` state (spec I.1), pure. {@link step} takes one cycle's chips and the live label values
 * and returns the label values to write; {@link withheld} / {@link sticky} say how the device-info lists change.
 */
export class RecoverStowing {
  #prevUnhealthy = new Set<number>();
  #sticky = new Set<number>();
  #lastNetWritten: Set<number> | undefined;
  #recover = new Set<number>();
  /** Phy ids a recovery put into `-Recover` that no write has carried yet (a failed patch must not lose them). */
  #unwritten = new Set<number>();
  readonly #logicToPhy = new Map<number, number>();

  /** Start: chips listed in `-NetworkRecover` stay network-unhealthy-listed until the operator removes them. */
  init(liveNetworkRecover: Set<number>, liveRecover: Set<number>): void {
    this.#lastNetWritten = new Set(liveNetworkRecover);
    for (const p of liveNetworkRecover) this.#sticky.add(p);
    this.#recover = new Set(liveRecover);
  }

  /** One cycle; returns the label values wanted now. */
  step(
    chips: readonly StowingChip[],
    liveRecover: Set<number>,
    liveNetworkRecover: Set<number>,
  ): { recover: string; networkRecover: string } {
    for (const c of chips) this.#logicToPhy.set(c.logicId, c.phyId);
    // The operator removed a chip from -NetworkRecover (compared with what we wrote last): it leaves the sticky list.
    for (const p of this.#lastNetWritten ?? []) if (!liveNetworkRecover.has(p)) this.#sticky.delete(p);
    const recover = new Set(liveRecover);
    for (const c of chips) if (this.#prevUnhealthy.has(c.phyId) && c.health === 'Healthy') this.#unwritten.add(c.phyId);
    for (const p of this.#unwritten) recover.add(p);
    this.#prevUnhealthy = new Set(chips.filter((c) => c.health === 'Unhealthy').map((c) => c.phyId));
    const net = new Set(liveNetworkRecover);
    for (const c of chips) {
      if (c.networkHealth === 'Unhealthy') this.#sticky.add(c.phyId);
      else if (this.#sticky.has(c.phyId)) net.add(c.phyId);
    }
    this.#recover = recover;
    return { recover: phyLabelValue(recover), networkRecover: phyLabelValue(net) };
  }

  /** The `-NetworkRecover` value was written (or found live equal): the base of the next removal check. */
  networkRecoverWritten(value: string): void {
    this.#lastNetWritten = parsePhyLabel(value);
  }

  /** The `-Recover` value of the last {@link step} was written (or found live equal). */
  recoverWritten(): void {
    this.#unwritten.clear();
  }

  /** Pending in `-Recover`: off the schedulable list (spec H.3). */
  withheld(logicId: number): boolean {
    const p = this.#logicToPhy.get(logicId);
    return p !== undefined && this.#recover.has(p);
  }

  /** Kept in `-NetworkUnhealthy` (spec I.1). */
  sticky(logicId: number): boolean {
    const p = this.#logicToPhy.get(logicId);
    return p !== undefined && this.#sticky.has(p);
  }
}

/** Options of {@link NodeLabeler}. */
export interface NodeLabelerOptions {
  readonly api: Pick<k8s.CoreV1Api, 'readNode' | 'patchNode' | 'listNode'>;
  readonly nodeName: string;
  readonly facts: NodeLabelFacts;
  /** Chips for `baseDeviceInfos` at start and at every refresh (C.5 IPs re-read). */
  readonly baseDeviceInfos: () => readonly BaseDeviceInfo[] | Promise<readonly BaseDeviceInfo[]>;
  /** `-autoStowing` (default true). Only the 910 family has the Recover labels. */
  readonly autoStowing?: boolean;
  /** Watch of the Node (to see an operator's label edit at once); absent: the live labels are read each cycle. */
  readonly watch?: WatchFn | k8s.KubeConfig;
  readonly clock?: QueueClock;
  readonly backoff?: BackoffOptions;
  readonly logger?: Logger;
  /** Start-up tries and the pause between them (spec A.2 step 5.7: 3, 1000 ms). */
  readonly tries?: number;
  readonly retryDelayMs?: number;
  /** `baseDeviceInfos` refresh period (spec I.2: 60 s). */
  readonly refreshMs?: number;
  /** Called for every refused or unanswered patch (`status` undefined: no HTTP answer), for the metrics. */
  readonly onRefused?: (status: number | undefined) => void;
}

/** Counters. */
export interface NodeLabelerStats {
  patches: number;
  failedPatches: number;
  skippedLabels: number;
  /** The start-up labels and annotations are written (false while their patch is refused and retried). */
  setUp: boolean;
  /** Background retries of the start-up patch after its first tries failed. */
  setUpRetries: number;
}

/** Writes the node's labels and annotations. */
export class NodeLabeler {
  readonly #o: NodeLabelerOptions;
  readonly #clock: QueueClock;
  readonly #log: Logger;
  readonly #stowing = new RecoverStowing();
  readonly #watch: ListWatch<k8s.V1Node> | undefined;
  #liveLabels: Record<string, string> = {};
  #liveAnnotations: Record<string, string> = {};
  #baseInfos = '';
  #firstWriteDone = false;
  #refreshTimer: unknown;
  #cycling: Promise<void> | undefined;
  #pendingChips: readonly StowingChip[] | undefined;
  /** The chips of the last cycle, for the retry of a failed Recover-label patch. */
  #lastChips: readonly StowingChip[] | undefined;
  /**
   * Retry of a failed Recover-label patch (issue 12): after a backoff, or as soon as the agent's shared
   * `ApiRecovery` sees the API server back — not only at the next `-listWatchPeriod` cycle.
   */
  readonly #retry: RetryTimer;
  #cycleFailures = 0;
  /** Background retry of the start-up patch (after its `tries` failed), on the monotonic timers of `clock`. */
  readonly #setUpRetry: RetryTimer;
  #setUpFailures = 0;
  #stopped = false;
  readonly stats: NodeLabelerStats = {
    patches: 0,
    failedPatches: 0,
    skippedLabels: 0,
    setUp: false,
    setUpRetries: 0,
  };

  constructor(options: NodeLabelerOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemQueueClock;
    this.#log = options.logger ?? NOOP_LOGGER;
    this.#retry = new RetryTimer(this.#clock, options.backoff?.recovery);
    this.#setUpRetry = new RetryTimer(this.#clock, options.backoff?.recovery);
    if (options.watch !== undefined) {
      const selector = `metadata.name=${options.nodeName}`;
      this.#watch = new ListWatch<k8s.V1Node>({
        what: `node ${options.nodeName}`,
        path: '/api/v1/nodes',
        fieldSelector: selector,
        watch: options.watch,
        clock: this.#clock,
        ...(options.backoff ? { backoff: options.backoff } : {}),
        logger: this.#log,
        maxItems: 1,
        list: async () => {
          const l = await options.api.listNode({ fieldSelector: selector });
          return { items: l.items, resourceVersion: l.metadata?.resourceVersion ?? '' };
        },
        onSync: (items) => {
          if (items[0] !== undefined) this.#observe(items[0]);
        },
        onEvent: (type, node) => {
          if (type !== 'DELETED') this.#observe(node);
        },
      });
    }
  }

  get autoStowing(): boolean {
    return this.#o.autoStowing ?? true;
  }

  get #stowingOn(): boolean {
    return !this.autoStowing && is910Family(this.#o.facts.chipKind);
  }

  /**
   * Spec I.1/I.2 at start (A.2 step 5.7): reads the Node, writes labels and annotations in one merge patch, tried
   * `tries` times `retryDelayMs` apart. Still refused: logged, reported, and retried in the background with a
   * backoff until written (issue [R] item 1; see the file comment). Starts the watch when given. Never throws;
   * resolves true when the patch was written now.
   */
  async start(): Promise<boolean> {
    const tries = this.#o.tries ?? 3;
    for (let i = 1; i <= tries && !this.#stopped; i++) {
      try {
        await this.#startOnce();
        break;
      } catch (e) {
        this.#log.warn(
          { node: this.#o.nodeName, attempt: i, status: statusOf(e), error: String(e).slice(0, LOGGED_ERROR_CHARS) },
          'node label/annotation patch failed',
        );
        if (i === tries) {
          this.#log.warn(
            { node: this.#o.nodeName, tries },
            'node labels and annotations not written; retried in the background with a backoff (the kubelet path and device-info go on)',
          );
          this.#armSetUpRetry();
        } else await this.#sleep(this.#o.retryDelayMs ?? 1000);
      }
    }
    await this.#watch?.start();
    return this.stats.setUp;
  }

  /** The next background try of the start-up patch, after a backoff (or when the API server is seen back). */
  #armSetUpRetry(): void {
    if (this.#stopped) return;
    this.#setUpFailures++;
    this.#setUpRetry.arm(backoffDelay(this.#setUpFailures, this.#o.backoff), () => {
      this.stats.setUpRetries++;
      void this.#startOnce().then(
        () => {
          this.#setUpRetry.succeeded();
          this.#log.info(
            { node: this.#o.nodeName, retries: this.stats.setUpRetries },
            'node labels and annotations written after refusals',
          );
        },
        (e: unknown) => {
          this.#log.debug(
            { status: statusOf(e), error: String(e).slice(0, LOGGED_ERROR_CHARS) },
            'node patch retry failed',
          );
          this.#armSetUpRetry();
        },
      );
    });
  }

  async #startOnce(): Promise<void> {
    const node = await this.#o.api.readNode({ name: this.#o.nodeName });
    this.#observe(node);
    const plan = nodeLabelsOf(this.#o.facts, this.#liveLabels);
    for (const s of plan.skipped) {
      this.stats.skippedLabels++;
      this.#log.warn({ label: s.label, value: s.value }, `label ${s.label} not set: value "${s.value}" is not valid`);
    }
    const chips = await this.#o.baseDeviceInfos();
    const annotations = nodeAnnotationsOf(this.#o.facts, chips);
    await this.#patch({ labels: plan.labels, annotations });
    this.#baseInfos = annotations[ANNOTATION_BASE_DEVICE_INFOS]!;
    if (this.#stowingOn) {
      this.#stowing.init(
        parsePhyLabel(this.#liveLabels[LABEL_NETWORK_RECOVER]),
        parsePhyLabel(this.#liveLabels[LABEL_RECOVER]),
      );
    }
    this.stats.setUp = true;
  }

  /** Starts the spec I.2 refresher: every `refreshMs` re-reads the IPs and re-writes `baseDeviceInfos` on change. */
  startRefresher(): void {
    if (this.#stopped || this.#refreshTimer !== undefined) return;
    this.#refreshTimer = this.#clock.setTimeout(() => {
      this.#refreshTimer = undefined;
      void this.refresh().finally(() => this.startRefresher());
    }, this.#o.refreshMs ?? 60_000);
  }

  /** One refresh (spec I.2): `baseDeviceInfos` re-written when a chip's IP changed; 3 tries; failure only logs. */
  async refresh(): Promise<boolean> {
    // before the start-up patch is written its retry carries baseDeviceInfos (re-read at each try)
    if (this.#stopped || !this.stats.setUp) return false;
    let value: string;
    try {
      value = baseDeviceInfosValue(await this.#o.baseDeviceInfos(), isA5(this.#o.facts.chipKind));
    } catch (e) {
      this.#log.warn({ error: String(e) }, 'cannot read device IPs for baseDeviceInfos');
      return false;
    }
    if (value === this.#baseInfos) return false;
    const tries = this.#o.tries ?? 3;
    for (let i = 1; i <= tries; i++) {
      try {
        await this.#patch({ annotations: { [ANNOTATION_BASE_DEVICE_INFOS]: value } });
        this.#baseInfos = value;
        this.#log.info({ node: this.#o.nodeName }, 'baseDeviceInfos re-written (a device IP changed)');
        return true;
      } catch (e) {
        this.#log.warn({ attempt: i, error: String(e) }, 'baseDeviceInfos patch failed');
        if (i < tries) await this.#sleep(this.#o.retryDelayMs ?? 1000);
      }
    }
    return false;
  }

  /**
   * Call after the first successful device-info write (spec I.2 "first cycle"): deletes legacy device-info
   * annotations and, with `-autoStowing=true`, the two Recover labels. Once; later calls do nothing. A failed
   * patch is logged and tried again at the next call.
   */
  async onDeviceInfoWritten(): Promise<void> {
    if (this.#firstWriteDone || this.#stopped) return;
    try {
      if (this.#watch === undefined) this.#observe(await this.#o.api.readNode({ name: this.#o.nodeName }));
      const annotations: Record<string, null> = {};
      for (const k of legacyAnnotationKeys(this.#liveAnnotations)) annotations[k] = null;
      const labels: Record<string, null> = {};
      if (this.autoStowing) {
        for (const k of [LABEL_RECOVER, LABEL_NETWORK_RECOVER]) if (this.#liveLabels[k] !== undefined) labels[k] = null;
      }
      if (Object.keys(annotations).length > 0 || Object.keys(labels).length > 0) {
        await this.#patch({ labels, annotations });
        this.#log.info(
          { annotations: Object.keys(annotations), labels: Object.keys(labels) },
          'legacy node annotations / Recover labels deleted',
        );
      }
      this.#firstWriteDone = true;
    } catch (e) {
      this.#log.warn({ error: String(e) }, 'legacy node annotation clean-up failed; tried again later');
    }
  }

  /**
   * Every cycle (spec I.1, `-autoStowing=false` on the 910 family): updates the Recover labels from the chips'
   * health. Patches only when a value changes; a failed patch is logged and repeated after a backoff, at once when
   * the API server is seen back (`backoff.recovery`), or by the next cycle, whichever comes first; a chip it put into
   * `-Recover` stays there until a patch carries it. Calls while one runs are coalesced (the last chips win). Does
   * nothing with `-autoStowing=true`.
   */
  cycle(chips: readonly StowingChip[]): Promise<void> {
    // the Recover labels start from the live ones read by the start-up patch: nothing before it is written
    if (!this.#stowingOn || this.#stopped || !this.stats.setUp) return Promise.resolve();
    this.#pendingChips = chips;
    this.#lastChips = chips;
    this.#cycling ??= this.#runCycles().finally(() => {
      this.#cycling = undefined;
    });
    return this.#cycling;
  }

  async #runCycles(): Promise<void> {
    while (this.#pendingChips !== undefined && !this.#stopped) {
      const chips = this.#pendingChips;
      this.#pendingChips = undefined;
      try {
        if (this.#watch === undefined) this.#observe(await this.#o.api.readNode({ name: this.#o.nodeName }));
        const liveRecover = this.#liveLabels[LABEL_RECOVER];
        const liveNet = this.#liveLabels[LABEL_NETWORK_RECOVER];
        const want = this.#stowing.step(chips, parsePhyLabel(liveRecover), parsePhyLabel(liveNet));
        const labels: Record<string, string> = {};
        if (want.recover !== (liveRecover ?? '')) labels[LABEL_RECOVER] = want.recover;
        if (want.networkRecover !== (liveNet ?? '')) labels[LABEL_NETWORK_RECOVER] = want.networkRecover;
        if (Object.keys(labels).length > 0) await this.#patch({ labels });
        this.#stowing.networkRecoverWritten(want.networkRecover);
        this.#stowing.recoverWritten();
        this.#cycleFailures = 0;
        this.#retry.succeeded();
        this.#retry.cancel();
      } catch (e) {
        this.#o.backoff?.recovery?.reportFailure(statusOf(e)); // an outage starts the recovery probe
        this.#cycleFailures++;
        const delay = backoffDelay(this.#cycleFailures, this.#o.backoff);
        this.#log.warn({ error: String(e), retryInMs: delay }, 'Recover label patch failed; retrying');
        if (!this.#stopped) {
          this.#retry.arm(delay, () => {
            if (this.#lastChips !== undefined) void this.cycle(this.#lastChips);
          });
        }
      }
    }
  }

  /** Chip pending in `huawei.com/Ascend910-Recover`: withheld from the schedulable list (H.3). */
  withheld(logicId: number): boolean {
    return this.#stowingOn && this.#stowing.withheld(logicId);
  }

  /**
   * The device-info view with the stowing rules applied: pending chips `withheld`, sticky chips kept in
   * `-NetworkUnhealthy`. Use it around `deviceInfoViewOf(…)` in the publisher's `view`.
   */
  applyToView<V extends Pick<DeviceInfoView, 'chips'>>(view: V): V {
    if (!this.#stowingOn) return view;
    const chips: DeviceInfoChip[] = view.chips.map((c) => {
      const w = this.#stowing.withheld(c.logicId);
      const s = this.#stowing.sticky(c.logicId);
      return w || s ? { ...c, ...(w ? { withheld: true } : {}), ...(s ? { stickyNetworkUnhealthy: true } : {}) } : c;
    });
    return { ...view, chips };
  }

  /** The Node's labels as last read or patched (the reset layer's `server-usage`, hot-reset §1.3). */
  nodeLabels(): Readonly<Record<string, string>> {
    return this.#liveLabels;
  }

  stop(): void {
    this.#stopped = true;
    this.#retry.cancel();
    this.#setUpRetry.cancel();
    this.#watch?.stop();
    if (this.#refreshTimer !== undefined) this.#clock.clearTimeout(this.#refreshTimer);
    this.#refreshTimer = undefined;
  }

  #observe(node: k8s.V1Node): void {
    this.#liveLabels = { ...(node.metadata?.labels ?? {}) };
    this.#liveAnnotations = { ...(node.metadata?.annotations ?? {}) };
  }

  async #patch(meta: {
    labels?: Record<string, string | null>;
    annotations?: Record<string, string | null>;
  }): Promise<void> {
    const metadata: Record<string, unknown> = {};
    if (meta.labels && Object.keys(meta.labels).length > 0) metadata.labels = meta.labels;
    if (meta.annotations && Object.keys(meta.annotations).length > 0) metadata.annotations = meta.annotations;
    const recovery = this.#o.backoff?.recovery;
    try {
      const node = await this.#o.api.patchNode({ name: this.#o.nodeName, body: { metadata } }, MERGE_PATCH);
      this.stats.patches++;
      recovery?.reportSuccess();
      this.#observe(node);
    } catch (e) {
      this.stats.failedPatches++;
      const status = statusOf(e);
      recovery?.reportFailure(status);
      this.#o.onRefused?.(status);
      throw e;
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.#clock.setTimeout(resolve, ms));
  }
}
