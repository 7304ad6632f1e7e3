/**
 * `npuctl separation list|release` (architecture §7, issue [D]): reads the device-info ConfigMaps
 * `kube-system/mindx-dl-deviceinfo-<node>` (device-plugin.md H) and releases a manually separated chip the way an
 * operator does by hand (G.2): its name is deleted from the `ManuallySeparateNPU` value and nothing else is touched;
 * the agent notices the deleted name at its next write (≤ one cycle) and drops the chip's ManuallySeparateNPU
 * reasons, then recomputes `DeviceInfoCfg` and its CheckCode itself.
 *
 * The edit is a PUT with the resourceVersion that was read (optimistic concurrency): a concurrent writer (the agent
 * writes at most once a second) makes it fail with 409, after which the ConfigMap is read again and the edit redone
 * on what is live, at most {@link MAX_RELEASE_ATTEMPTS} attempts in all. Everything read is bounded in size.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { parseManualNames, quoted } from '../../faults/index.js';
import type { RunMode } from '../../core/chips.js';
import { MAX_LIVE_VALUE_CHARS } from '../../kube/device-info-publisher.js';
import {
  DEVICE_INFO_NAME_PREFIX,
  DEVICE_INFO_NAMESPACE,
  KEY_DEVICE_INFO,
  KEY_MANUALLY_SEPARATE,
  deviceInfoConfigMapName,
} from '../../kube/device-info.js';
import {
  KubeClient,
  fromKubeconfigFile,
  loadKubeAccess,
  type AgentCoreApi,
  type KubeAccessSource,
} from '../../kube/kube-client.js';
import { statusOf } from '../../core/errors.js';
import { UsageError } from './io.js';
import { table } from './table.js';

/** The CoreV1 calls `npuctl separation` makes (a {@link KubeClient} or client-node's `CoreV1Api`). */
export type SeparationApi = Pick<
  AgentCoreApi,
  'readNamespacedConfigMap' | 'replaceNamespacedConfigMap' | 'listNamespacedConfigMap'
>;

/** An API server and the calls to make on it; `server` names it in messages. */
export interface SeparationTarget {
  readonly api: SeparationApi;
  readonly server: string;
}

/** The command failed against the API server or found nothing to do: exit status 1. */
export class SeparationError extends Error {
  override readonly name = 'SeparationError';
}

/** Writes tried by `release` before giving up on conflicts (the first one and two after a 409 each). */
export const MAX_RELEASE_ATTEMPTS = 3;

/** The field manager of npuctl's writes: the agent names it in its release message (`editorOf`). */
export const NPUCTL_FIELD_MANAGER = 'npuctl';

/** ConfigMaps per list page; a ConfigMap is at most 1 MiB, so a page is at most ≈ 20 MiB. */
const LIST_PAGE = 20;
/** Pages followed at most (20 000 ConfigMaps in kube-system). */
const MAX_LIST_PAGES = 1000;
/** Largest answer body accepted by the built-in client. */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;
/** Bound of each call. */
const CALL_TIMEOUT_MS = 15_000;

const RUN_MODES: readonly RunMode[] = ['Ascend910', 'Ascend310P', 'Ascend310'];

// ---------------------------------------------------------------------------------------------------------------
// Arguments

/** A node name (DNS subdomain) whose ConfigMap name stays within 253 characters; else {@link UsageError}. */
export function checkNodeName(node: string | undefined, what = '--node'): string {
  if (node === undefined || node === '') throw new UsageError(`${what} is required (the node's name)`);
  const max = 253 - DEVICE_INFO_NAME_PREFIX.length;
  if (node.length > max || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(node)) {
    throw new UsageError(
      `${what} ${JSON.stringify(node)} is not a node name (lower-case letters, digits, '-' and '.', at most ${max})`,
    );
  }
  return node;
}

/**
 * A physical device name as `ManuallySeparateNPU` holds it (G.2): `<prefix>-<phy id>`, e.g. `Ascend910-3`,
 * `Ascend310P-1`, `npu-0` (A5) or a public prefix (L.6: a letter, then letters, digits and `-`, 2..16 characters);
 * the phy id in decimal without leading zeros (0..255, B.1). Else {@link UsageError}.
 */
export function checkChipName(chip: string | undefined): string {
  if (chip === undefined || chip === '') throw new UsageError('--chip is required (a device name, e.g. Ascend910-3)');
  const m = /^[A-Za-z][A-Za-z0-9-]{1,15}-(0|[1-9][0-9]{0,2})$/.exec(chip);
  if (m === null || Number(m[1]) > 255) {
    throw new UsageError(
      `--chip ${JSON.stringify(chip)} is not a device name like Ascend910-3 (<prefix>-<phy id 0..255>, G.2)`,
    );
  }
  return chip;
}

// ---------------------------------------------------------------------------------------------------------------
// API access

/** An open connection to the API server. */
export interface KubeHandle extends SeparationTarget {
  /** Where the access came from (`--kubeconfig` file, `in-cluster`, ...). */
  readonly from: string;
  close(): void;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The API server as the agent finds it (`--kubeconfig`, else in-cluster, else the first file of `$KUBECONFIG`),
 * then, as kubectl, `~/.kube/config`. The agent's own client serves it unless the kubeconfig needs an authenticator
 * only client-node has. A kubeconfig that cannot be used, or none at all, is a {@link UsageError}.
 */
export async function openKube(flag: string | undefined, env: Env): Promise<KubeHandle> {
  let source: KubeAccessSource | undefined;
  try {
    source = loadKubeAccess(flag ?? '', env);
    if (source === undefined) {
      const home = path.join(env.HOME ?? os.homedir(), '.kube', 'config');
      if (fs.existsSync(home)) source = fromKubeconfigFile(home);
    }
  } catch (err) {
    throw new UsageError(`cannot load the kubeconfig: ${(err as Error).message}`);
  }
  if (source === undefined) {
    throw new UsageError(
      'no API server: give --kubeconfig FILE, set $KUBECONFIG, run in the cluster, or create ~/.kube/config',
    );
  }
  if (source.kind === 'access') {
    const c = new KubeClient(source.access, {
      timeoutMs: CALL_TIMEOUT_MS,
      maxBodyBytes: MAX_ANSWER_BYTES,
      userAgent: 'npuctl',
    });
    return { api: c, server: source.access.server, from: source.from, close: () => c.close() };
  }
  try {
    const m = await import('@kubernetes/client-node');
    const kc = new m.KubeConfig();
    kc.loadFromFile(source.file);
    return {
      api: kc.makeApiClient(m.CoreV1Api),
      server: kc.getCurrentCluster()?.server ?? source.file,
      from: `${source.file} (${source.reason})`,
      close: () => undefined,
    };
  } catch (err) {
    throw new UsageError(`cannot load the kubeconfig ${source.file}: ${(err as Error).message}`);
  }
}

function describeError(err: unknown): string {
  const status = statusOf(err);
  const e = err as { body?: unknown; message?: string; cause?: { code?: string } };
  let reason = '';
  const body = typeof e.body === 'string' ? safeJson(e.body) : e.body;
  if (typeof body === 'object' && body !== null && typeof (body as { message?: unknown }).message === 'string') {
    reason = (body as { message: string }).message;
  }
  if (status !== undefined) return `HTTP ${status}${reason !== '' ? `: ${reason}` : ''}`;
  return (e.cause?.code ?? e.message ?? String(err)).split('\n')[0]!;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const objectName = (name: string): string => `ConfigMap ${DEVICE_INFO_NAMESPACE}/${name}`;

async function readConfigMap(t: SeparationTarget, node: string): Promise<k8s.V1ConfigMap> {
  const name = deviceInfoConfigMapName(node);
  try {
    return await t.api.readNamespacedConfigMap({ name, namespace: DEVICE_INFO_NAMESPACE });
  } catch (err) {
    if (statusOf(err) === 404) {
      throw new SeparationError(
        `${objectName(name)} not found at ${t.server} (is ${node} the node's name, and does the agent run there?)`,
      );
    }
    throw new SeparationError(`cannot read ${objectName(name)} from ${t.server}: ${describeError(err)}`);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// list

/** One separated name of a node. */
export interface SeparatedChip {
  /** The entry of `ManuallySeparateNPU`, as written there. */
  readonly name: string;
  /**
   * DeviceList keys of `DeviceInfoCfg` (H.3) that list the name: a comma-separated list holding it, or a fault list
   * (`…-Fault`) with an entry whose `npu_name` is the name. Sorted.
   */
  readonly listedIn: string[];
}

/** The separation state of one node, from its device-info ConfigMap. */
export interface NodeSeparation {
  readonly node: string;
  readonly configMap: string;
  readonly resourceVersion: string;
  /** The `ManuallySeparateNPU` value as read ("" when the key is absent or empty). */
  readonly value: string;
  /** Its entries, in order, each once (empty entries left out). */
  readonly chips: SeparatedChip[];
  /** What the agent would not read in the value (G.2), and a `DeviceInfoCfg` that cannot be read. */
  readonly problems: string[];
}

interface DeviceList {
  readonly list?: Record<string, string>;
  readonly problem?: string;
}

function deviceListOf(cfg: string | undefined): DeviceList {
  if (cfg === undefined || cfg === '') return { problem: `${KEY_DEVICE_INFO} is missing` };
  if (cfg.length > MAX_LIVE_VALUE_CHARS) {
    return { problem: `${KEY_DEVICE_INFO} is longer than ${MAX_LIVE_VALUE_CHARS} characters; not read` };
  }
  const parsed = safeJson(cfg);
  const di = (parsed as { DeviceInfo?: { DeviceList?: unknown } } | undefined)?.DeviceInfo;
  const dl = typeof di === 'object' && di !== null ? di.DeviceList : undefined;
  if (typeof dl !== 'object' || dl === null || Array.isArray(dl)) {
    return { problem: `${KEY_DEVICE_INFO} is not JSON with DeviceInfo.DeviceList; not read` };
  }
  const list: Record<string, string> = {};
  for (const [k, v] of Object.entries(dl as Record<string, unknown>)) if (typeof v === 'string') list[k] = v;
  return { list };
}

/** Names in a fault list (`…-Fault` value: a JSON array of entries with `npu_name`, H.3); undefined if not one. */
function faultNames(value: string): Set<string> | undefined {
  const a = safeJson(value);
  if (!Array.isArray(a)) return undefined;
  const names = new Set<string>();
  for (const e of a as unknown[]) {
    const n = (e as { npu_name?: unknown } | null)?.npu_name;
    if (typeof n === 'string') names.add(n);
  }
  return names;
}

/** The run mode of a DeviceList: the one whose resource key (`huawei.com/<runMode>[-Unhealthy]`) it has. */
function runModeOf(list: Record<string, string>): RunMode | undefined {
  return RUN_MODES.find((m) => `huawei.com/${m}` in list || `huawei.com/${m}-Unhealthy` in list);
}

/** The separation state of a node from its ConfigMap (pure). */
export function nodeSeparationOf(cm: k8s.V1ConfigMap): NodeSeparation {
  const name = cm.metadata?.name ?? '';
  const data = cm.data ?? {};
  const problems: string[] = [];
  let value = data[KEY_MANUALLY_SEPARATE] ?? '';
  if (value.length > MAX_LIVE_VALUE_CHARS) {
    problems.push(`${KEY_MANUALLY_SEPARATE} is longer than ${MAX_LIVE_VALUE_CHARS} characters; not read`);
    value = '';
  }
  const { list, problem } = deviceListOf(data[KEY_DEVICE_INFO]);
  if (problem !== undefined) problems.push(problem);
  const keys = Object.keys(list ?? {}).sort();
  const inKey = new Map<string, (n: string) => boolean>();
  for (const k of keys) {
    const v = list![k]!;
    const faults = k.endsWith('-Fault') ? faultNames(v) : undefined;
    if (faults !== undefined) inKey.set(k, (n) => faults.has(n));
    else {
      const names = new Set(v.split(','));
      inKey.set(k, (n) => names.has(n));
    }
  }
  const entries = [...new Set(value.split(',').filter((e) => e !== ''))];
  const chips = entries.map((n) => ({ name: n, listedIn: keys.filter((k) => inKey.get(k)!(n)) }));
  const runMode = list !== undefined ? runModeOf(list) : undefined;
  // bounded by the parser (a few problems, then a count); pushed one by one (no spread of a big array)
  if (runMode !== undefined) for (const p of parseManualNames(value, runMode).problems) problems.push(p);
  return {
    node: name.slice(DEVICE_INFO_NAME_PREFIX.length),
    configMap: `${DEVICE_INFO_NAMESPACE}/${name}`,
    resourceVersion: cm.metadata?.resourceVersion ?? '',
    value,
    chips,
    problems,
  };
}

/** `list`: one node's ConfigMap, or every `mindx-dl-deviceinfo-*` of kube-system, by node name. */
export async function listSeparation(t: SeparationTarget, node?: string): Promise<NodeSeparation[]> {
  if (node !== undefined) return [nodeSeparationOf(await readConfigMap(t, node))];
  const out: NodeSeparation[] = [];
  let cont: string | undefined;
  for (let page = 0; ; page++) {
    if (page === MAX_LIST_PAGES) {
      throw new SeparationError(
        `ConfigMaps of ${DEVICE_INFO_NAMESPACE} at ${t.server}: more than ${MAX_LIST_PAGES * LIST_PAGE}; give --node`,
      );
    }
    let answer: k8s.V1ConfigMapList;
    try {
      answer = await t.api.listNamespacedConfigMap({
        namespace: DEVICE_INFO_NAMESPACE,
        limit: LIST_PAGE,
        ...(cont !== undefined ? { _continue: cont } : {}),
      });
    } catch (err) {
      throw new SeparationError(
        `cannot list the ConfigMaps of ${DEVICE_INFO_NAMESPACE} at ${t.server}: ${describeError(err)}`,
      );
    }
    for (const cm of answer.items ?? []) {
      const n = cm.metadata?.name ?? '';
      if (n.startsWith(DEVICE_INFO_NAME_PREFIX) && n.length > DEVICE_INFO_NAME_PREFIX.length) {
        out.push(nodeSeparationOf(cm));
      }
    }
    cont = answer.metadata?._continue;
    if (cont === undefined || cont === '') break;
  }
  return out.sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
}

/** The human-readable listing. */
export function renderList(nodes: readonly NodeSeparation[], server: string): string {
  if (nodes.length === 0)
    return `no device-info ConfigMaps (${DEVICE_INFO_NAME_PREFIX}*) in ${DEVICE_INFO_NAMESPACE} at ${server}\n`;
  const rows: string[][] = [];
  for (const n of nodes) {
    if (n.chips.length === 0) rows.push([n.node, '-', '']);
    for (const c of n.chips) rows.push([n.node, c.name, c.listedIn.length > 0 ? c.listedIn.join(', ') : 'no']);
  }
  let out = table(['NODE', 'SEPARATED', 'IN DEVICE-INFO'], rows);
  const problems = nodes.flatMap((n) => n.problems.map((p) => `  ${n.node}: ${p}`));
  if (problems.length > 0) out += `\nproblems:\n${problems.join('\n')}\n`;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// release

/** `ManuallySeparateNPU` without `chip`: every entry equal to it dropped, the others kept as they are, in order. */
export function removeName(value: string, chip: string): { after: string; removed: number } {
  if (value === '') return { after: '', removed: 0 };
  const entries = value.split(',');
  const kept = entries.filter((e) => e !== chip);
  return { after: kept.join(','), removed: entries.length - kept.length };
}

/** What `release` changed. */
export interface ReleaseResult {
  readonly node: string;
  readonly configMap: string;
  readonly server: string;
  readonly chip: string;
  readonly before: string;
  readonly after: string;
  readonly resourceVersionBefore: string;
  readonly resourceVersionAfter: string;
  /** 409 answers met (each followed by a fresh read). */
  readonly conflicts: number;
}

/**
 * `release`: deletes `chip` from the node's `ManuallySeparateNPU` by a PUT with the resourceVersion read, redone on
 * a fresh read after a 409, {@link MAX_RELEASE_ATTEMPTS} writes at most. Throws {@link SeparationError} when the
 * ConfigMap is missing, the chip is not listed (nothing written), the conflicts persist, or a call fails.
 */
export async function releaseChip(
  t: SeparationTarget,
  node: string,
  chip: string,
  maxAttempts = MAX_RELEASE_ATTEMPTS,
): Promise<ReleaseResult> {
  const name = deviceInfoConfigMapName(node);
  const where = `${objectName(name)} at ${t.server}`;
  let conflicts = 0;
  for (;;) {
    const live = await readConfigMap(t, node);
    const before = live.data?.[KEY_MANUALLY_SEPARATE] ?? '';
    if (before.length > MAX_LIVE_VALUE_CHARS) {
      throw new SeparationError(
        `${where}: ${KEY_MANUALLY_SEPARATE} is longer than ${MAX_LIVE_VALUE_CHARS} characters; not edited`,
      );
    }
    const { after, removed } = removeName(before, chip);
    if (removed === 0) {
      const meanwhile = conflicts > 0 ? ' any more (changed by another writer meanwhile)' : '';
      throw new SeparationError(
        `${chip} is not separated${meanwhile} on ${node}: ${KEY_MANUALLY_SEPARATE} of ${where} is ` +
          `${quoted(before, 200)}; nothing written`,
      );
    }
    const rv = live.metadata?.resourceVersion ?? '';
    if (rv === '') throw new SeparationError(`${where}: the object read has no resourceVersion; nothing written`);
    const body: k8s.V1ConfigMap = {
      ...live,
      metadata: { ...live.metadata, resourceVersion: rv },
      data: { ...live.data, [KEY_MANUALLY_SEPARATE]: after },
    };
    let written: k8s.V1ConfigMap;
    try {
      written = await t.api.replaceNamespacedConfigMap({
        name,
        namespace: DEVICE_INFO_NAMESPACE,
        body,
        fieldManager: NPUCTL_FIELD_MANAGER,
      });
    } catch (err) {
      const status = statusOf(err);
      if (status === 409) {
        conflicts++;
        if (conflicts < maxAttempts) continue;
        throw new SeparationError(
          `${where}: the write conflicted ${conflicts} times (HTTP 409: the object was modified by another writer, ` +
            `last at resourceVersion ${rv}); nothing written, try again`,
        );
      }
      if (status === 404) throw new SeparationError(`${where}: deleted meanwhile; nothing written`);
      throw new SeparationError(`cannot write ${where}: ${describeError(err)}`);
    }
    return {
      node,
      configMap: `${DEVICE_INFO_NAMESPACE}/${name}`,
      server: t.server,
      chip,
      before,
      after,
      resourceVersionBefore: rv,
      resourceVersionAfter: written.metadata?.resourceVersion ?? '',
      conflicts,
    };
  }
}

/** What `release` prints. */
export function renderRelease(r: ReleaseResult): string {
  const retried = r.conflicts > 0 ? `, after ${r.conflicts} conflict${r.conflicts === 1 ? '' : 's'} (409) re-read` : '';
  return (
    `${r.configMap} at ${r.server}: ${KEY_MANUALLY_SEPARATE}\n` +
    `  before: ${JSON.stringify(r.before)}\n` +
    `  after:  ${JSON.stringify(r.after)}\n` +
    `released ${r.chip} (resourceVersion ${r.resourceVersionBefore} → ${r.resourceVersionAfter}${retried}); ` +
    `no other key changed.\n` +
    `The agent on ${r.node} notices the deleted name at its next write (within one cycle) and removes the chip's ` +
    `ManuallySeparateNPU reasons (device-plugin.md G.2).\n`
  );
}
