/**
 * `ascend-npu-agent simulate [options]` ({@link SIMULATE_USAGE}; architecture §3, `npm start`): the real
 * agent (`runAgent`) on the mock DCMI library, with the embedded kubelet simulator and Kubernetes API stand-in, every
 * host path in a temporary folder (no root, no cluster, no NPU). It plays the scenario's `timeline` (else
 * `scenarios/timelines/demo.jsonl`), prints a live table after every step — chip, level, health as kubelet sees
 * it, ManuallySeparateNPU, last ConfigMap write — and a final summary, then stops the agent and exits 0. The
 * agent's metrics URL is printed before the first step and answers until the demo ends (with `--hold`, until
 * SIGINT/SIGTERM after the summary), so a Prometheus or `curl` can watch the chips' series change (issue [J] item 6).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import * as k8s from '@kubernetes/client-node';
import { pino } from 'pino';
import { EXIT } from '../agent/errors.js';
import type { AllocateResponse__Output } from '../generated/deviceplugin/v1beta1/AllocateResponse.js';
import { AgentStartError, runAgent, type AgentHandle } from '../agent/run-agent.js';
import { parseAgentArgs } from '../cli/agent-flags.js';
import { chipName, phyIdOfName } from '../core/device-names.js';
import { MOCK_DCMI_LIBRARY, MOCK_HCCN_TOOL, MOCK_SWITCH_LIBRARY, PROJECT_ROOT } from '../core/paths.js';
import {
  DEVICE_INFO_NAMESPACE,
  KEY_DEVICE_INFO,
  KEY_SWITCH_INFO,
  KEY_MANUALLY_SEPARATE,
  deviceInfoConfigMapName,
  verifyDeviceInfoCfg,
} from '../kube/device-info.js';
import { parseListenAddress } from '../observability/listen-address.js';
import { createLogger } from '../observability/logger.js';
import { KubeApiStandIn } from './kube-api.js';
import { KubeletSimulator } from './kubelet.js';
import { MockControlClient } from './mock-control.js';
import { PLAYER_OPS, playTimeline, readTimelineFile, timelineFromArray, type TimelineStep } from './timeline-player.js';

export const SIM_NODE_NAME = 'sim-node';
/** The exit status of a bad agent flag (architecture §4). */
const EXIT_BAD_FLAG = EXIT.BAD_CONFIG;
/** In an `--agentFlag` value: the temporary folder (e.g. `-softShareDevConfigDir={sandbox}/share_device`). */
export const SANDBOX_TOKEN = '{sandbox}';
/** A `devices` line lists at most this many IDs in full (else the first ones, `…`, the last one). */
const SHOWN_IDS = 12;
export const DEFAULT_SCENARIO = path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json');
export const DEFAULT_TIMELINE = path.join(PROJECT_ROOT, 'scenarios', 'timelines', 'demo.jsonl');

/** `simulate --help`. */
export const SIMULATE_USAGE = `Usage: ascend-npu-agent simulate [options]      (npm start)

The real agent on the mock DCMI library, with the embedded kubelet simulator and Kubernetes API stand-in, every
host path in a temporary folder: plays a timeline, prints a table after every step and a summary, exits 0.

Options:
  --scenario FILE        hardware scenario (default: scenarios/910b-8chip.json)
  --timeline FILE        timeline, JSON lines (default: the scenario's "timeline", else scenarios/timelines/demo.jsonl)
  --speed N              play the timeline N times faster, N in (0, 1000] (default: 1)
  --dcmiLibrary FILE     the DCMI library the agent loads (default: the mock, build/Release/libdcmi.so)
  --metricsAddress ADDR  the agent's /metrics, /healthz, /readyz, /status: [host]:port (default: 127.0.0.1:0, a
                         free port); the URL is printed at the start
  --hold                 after the summary, keep the agent and its metrics running until Ctrl-C (SIGINT or SIGTERM)
  --agentFlag FLAG       one more agent flag, as one argument (-name=value), after the sandbox's own flags (so it
                         wins), checked by the agent's flag parser; repeatable, e.g. --agentFlag -shareDevCount=3;
                         {sandbox} in it is the temporary folder (-softShareDevConfigDir={sandbox}/share_device)
  --keep                 keep the temporary folder (agent log, state) and print the log's path
  -h, --help             this text
`;

export interface SimulateIo {
  readonly out: NodeJS.WritableStream;
  readonly err: NodeJS.WritableStream;
}

interface SimOptions {
  scenario: string;
  timeline?: string;
  speed: number;
  keep: boolean;
  /** The DCMI library the agent runs on (default: the mock). */
  dcmiLibrary: string;
  /** The agent's `-metricsAddress`. */
  metricsAddress: string;
  /** Keep running after the summary until a signal. */
  hold: boolean;
  /** `--agentFlag`s, in order: appended to the sandbox flags. */
  agentFlags: string[];
}

/** At most this many `--agentFlag`s (the agent has fewer flags than that). */
const MAX_AGENT_FLAGS = 64;

/** The options, `{ help: true }` for `--help`, or what is wrong. */
function parseSimArgs(args: readonly string[]): SimOptions | { readonly help: true } | string {
  const o: SimOptions = {
    scenario: DEFAULT_SCENARIO,
    speed: 1,
    keep: false,
    dcmiLibrary: MOCK_DCMI_LIBRARY,
    metricsAddress: '127.0.0.1:0',
    hold: false,
    agentFlags: [],
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const [name, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = (): string | undefined => inline ?? args[++i];
    switch (name) {
      case '--scenario':
      case '-scenario': {
        const v = value();
        if (!v) return `${name} needs a file`;
        o.scenario = path.resolve(v);
        break;
      }
      case '--timeline':
      case '-timeline': {
        const v = value();
        if (!v) return `${name} needs a file`;
        o.timeline = path.resolve(v);
        break;
      }
      case '--speed':
      case '-speed': {
        const n = Number(value());
        if (!Number.isFinite(n) || n <= 0 || n > 1000) return `${name} must be a number in (0, 1000]`;
        o.speed = n;
        break;
      }
      case '--dcmiLibrary':
      case '-dcmiLibrary': {
        const v = value();
        if (!v) return `${name} needs a file`;
        o.dcmiLibrary = path.resolve(v);
        break;
      }
      case '--metricsAddress':
      case '-metricsAddress': {
        const v = value() ?? '';
        if (parseListenAddress(v) === undefined) return `${name} must be [host]:port, got ${JSON.stringify(v)}`;
        o.metricsAddress = v;
        break;
      }
      case '--agentFlag':
      case '-agentFlag': {
        const v = value();
        if (v === undefined || !v.startsWith('-')) return `${name} needs an agent flag such as -shareDevCount=3`;
        if (o.agentFlags.length >= MAX_AGENT_FLAGS) return `at most ${MAX_AGENT_FLAGS} ${name} options`;
        o.agentFlags.push(v);
        break;
      }
      case '--keep':
        o.keep = true;
        break;
      case '--hold':
        o.hold = true;
        break;
      case '--help':
      case '-help':
      case '-h':
        return { help: true };
      default:
        return `unknown simulate argument ${a}; see simulate --help`;
    }
  }
  return o;
}

/** The default device nodes (spec C.4) as plain files in `devDir`. */
export function makeDeviceNodes(devDir: string, chips = 16): void {
  fs.mkdirSync(devDir, { recursive: true });
  const names = ['davinci_manager', 'hisi_hdc', 'devmm_svm'];
  for (let i = 0; i < chips; i++) names.push(`davinci${i}`);
  for (const n of names) fs.writeFileSync(path.join(devDir, n), '');
}

/** The agent flags that point every host path into `dir` (architecture §4). */
export function sandboxFlags(
  dir: string,
  extra: {
    kubeconfig?: string;
    logFile?: string;
    listWatchPeriod?: number;
    dcmiLibrary?: string;
    metricsAddress?: string;
  } = {},
): string[] {
  return [
    `-dcmiLibrary=${extra.dcmiLibrary ?? MOCK_DCMI_LIBRARY}`,
    `-hccnTool=${MOCK_HCCN_TOOL}`,
    `-kubeletDir=${path.join(dir, 'kubelet')}`,
    `-podResourcesSocket=${path.join(dir, 'pr.sock')}`,
    `-devDir=${path.join(dir, 'dev')}`,
    `-sysDir=${path.join(dir, 'sys')}`,
    `-hostRoot=${path.join(dir, 'host')}`,
    `-stateDir=${path.join(dir, 'state')}`,
    `-faultCodeFile=${path.join(dir, 'faultCode.json')}`,
    `-faultCustomizationFile=${path.join(dir, 'faultCustomization.json')}`,
    `-hangDetectionConfigFile=${path.join(dir, 'hangDetectionConfig.json')}`,
    `-nameCustomizationFile=${path.join(dir, 'deviceNameCustomization.json')}`, // spec L.6: absent unless a test writes it
    `-dpuConfigFile=${path.join(dir, 'dpu-config.json')}`, // A5 DPU health: absent (off) unless a test writes it
    `-npuNicMappingFile=${path.join(dir, 'npu-nic-mapping.json')}`, // A5 RoCE level: absent unless a test writes it
    `-a5TopoDir=${path.join(PROJECT_ROOT, 'scenarios', 'topo', '950')}`, // A5 levelList ports: the demo topology files
    `-logFile=${extra.logFile ?? ''}`,
    `-metricsAddress=${extra.metricsAddress ?? '127.0.0.1:0'}`,
    `-listWatchPeriod=${extra.listWatchPeriod ?? 3}`,
    `-deviceResetTimeout=10`,
    ...(extra.kubeconfig ? [`-kubeconfig=${extra.kubeconfig}`] : []),
  ];
}

/**
 * One line for a `SwitchInfoCfg` value (spec L.9): the node status, the level and the faults as
 * `<assembled code>@<chip>/<port>`; `quiet` when it holds no fault and the node status is Healthy.
 */
export function switchLine(value: string): { text: string; quiet: boolean } {
  let info: { FaultCode?: unknown; FaultLevel?: unknown; NodeStatus?: unknown };
  try {
    info = JSON.parse(value) as typeof info;
  } catch {
    return { text: `SwitchInfoCfg is not JSON (${value.length} bytes)`, quiet: false };
  }
  const faults = Array.isArray(info.FaultCode) ? info.FaultCode : [];
  const shown = faults.slice(0, 4).map((f) => {
    try {
      const o = JSON.parse(String(f)) as { AssembledFaultCode?: string; SwitchChipId?: number; SwitchPortId?: number };
      return `${o.AssembledFaultCode ?? '?'}@${o.SwitchChipId ?? '?'}/${o.SwitchPortId ?? '?'}`;
    } catch {
      return '?';
    }
  });
  const more = faults.length > shown.length ? ` … (${faults.length} in all)` : '';
  const status = typeof info.NodeStatus === 'string' ? info.NodeStatus : '';
  const level = typeof info.FaultLevel === 'string' && info.FaultLevel !== '' ? info.FaultLevel : '-';
  return {
    text: `NodeStatus=${status} FaultLevel=${level} faults=${faults.length}${shown.length ? ` ${shown.join(' ')}${more}` : ''}`,
    quiet: faults.length === 0 && status === 'Healthy',
  };
}

interface Row {
  chip: string;
  logicId: number;
  level: string;
  kubelet: string;
  network: string;
  manual: string;
}

/** Removes the chip's name from ManuallySeparateNPU as an operator would (GET + conditional PUT). */
export async function operatorRelease(core: k8s.CoreV1Api, nodeName: string, chipName: string): Promise<boolean> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const cm = await core.readNamespacedConfigMap({
      name: deviceInfoConfigMapName(nodeName),
      namespace: DEVICE_INFO_NAMESPACE,
    });
    const value = cm.data?.[KEY_MANUALLY_SEPARATE] ?? '';
    const names = value === '' ? [] : value.split(',');
    if (!names.includes(chipName)) return false;
    cm.data = { ...cm.data, [KEY_MANUALLY_SEPARATE]: names.filter((n) => n !== chipName).join(',') };
    try {
      await core.replaceNamespacedConfigMap({
        name: cm.metadata!.name!,
        namespace: DEVICE_INFO_NAMESPACE,
        body: cm,
        fieldManager: 'kubectl-edit',
      });
      return true;
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
    }
  }
  return false;
}

/** The URL of the agent's `/metrics` listening on `address` (every interface: this host's loopback). */
export function metricsUrl(address: string, port: number): string {
  const host = parseListenAddress(address)?.host ?? '';
  const shown =
    host === '' || host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${port}/metrics`;
}

/**
 * The resources registered with a device list, in registration order: waits for the first one, then for the
 * others the agent registers at the same time (310P mixed insert registers one resource per product type, B.3).
 */
async function registeredResources(kubelet: KubeletSimulator): Promise<string[]> {
  const withList = (): string[] =>
    [...new Set(kubelet.registrations.map((r) => r.resourceName))].filter((r) => kubelet.devices(r) !== undefined);
  await kubelet.waitFor(() => withList().length > 0, 'a registration with a device list', 15_000);
  let names = withList();
  for (let quiet = 0; quiet < 3;) {
    await new Promise((r) => setTimeout(r, 200));
    const now = withList();
    quiet = now.length === names.length ? quiet + 1 : 0;
    names = now;
  }
  return names;
}

/**
 * One line of what kubelet sees for `resource`: the number of IDs, the IDs (all of them up to {@link SHOWN_IDS},
 * else the first ones, `…` and the last one) and the Unhealthy IDs, shortened the same way.
 */
export function devicesLine(resource: string, devices: readonly { ID: string; health: string }[]): string {
  const ids = devices.map((d) => d.ID);
  const bad = devices.filter((d) => d.health !== 'Healthy').map((d) => d.ID);
  return (
    `${resource}: ${ids.length} ID${ids.length === 1 ? '' : 's'} ${short(ids)}; ` +
    (bad.length === 0 ? 'all Healthy' : `Unhealthy (${bad.length}): ${short(bad)}`)
  );
}

/** IDs for a line: all of them up to {@link SHOWN_IDS}, else the first ones, `…` and the last one. */
function short(ids: readonly string[]): string {
  return ids.length <= SHOWN_IDS ? ids.join(' ') : `${ids.slice(0, SHOWN_IDS - 2).join(' ')} … ${ids[ids.length - 1]}`;
}

/**
 * An Allocate response as lines, per container: the envs, the mounts (`container <- host`, ro/rw) and the device
 * nodes; host paths inside the temporary folder `dir` are shown from `{sandbox}`.
 */
export function allocateLines(res: AllocateResponse__Output, dir: string): string[] {
  const host = (p: string): string => (p === dir || p.startsWith(`${dir}/`) ? SANDBOX_TOKEN + p.slice(dir.length) : p);
  const out: string[] = [];
  res.containerResponses.forEach((c, i) => {
    const envs = Object.entries(c.envs).sort(([a], [b]) => a.localeCompare(b));
    out.push(`container ${i}: envs ${envs.length === 0 ? '(none)' : envs.map(([k, v]) => `${k}=${v}`).join(' ')}`);
    for (const m of c.mounts)
      out.push(`  mount ${m.containerPath} <- ${host(m.hostPath)} (${m.readOnly ? 'ro' : 'rw'})`);
    if (c.devices.length > 0) out.push(`  devices ${c.devices.map((d) => d.containerPath).join(' ')}`);
  });
  return out;
}

/** The mock's `vdevs` reply as a line: each vNPU (id, template, AI cores) and the free AI cores. */
function vdevsLine(reply: Record<string, unknown>): string {
  const vdevs = Array.isArray(reply.vdevs)
    ? (reply.vdevs as { vdevId?: unknown; template?: unknown; aicore?: unknown }[])
    : [];
  const list = vdevs.map((v) => `vNPU ${String(v.vdevId)} ${String(v.template)} (${String(v.aicore)} AI cores)`);
  return `chip ${String(reply.logicId)}: ${list.length === 0 ? 'no vNPU' : list.join(', ')}; ${String(reply.aicoreFree)} AI cores free`;
}

/**
 * kubelet's health of each chip (by phy id) over every resource: `Healthy` or `Unhealthy` when all the IDs naming the
 * chip agree (a whole chip, each share-mode copy `<name>-<phy>-<i>`, a per-type or public name), `mixed` otherwise.
 * The AI cores of dynamic vNPU (`huawei.com/npu-core`) name no chip and are left out (see the `devices` op).
 */
export function kubeletHealthByPhy(
  lists: readonly (readonly [string, readonly { ID: string; health: string }[]])[],
): Map<number, string> {
  const out = new Map<number, string>();
  for (const [resource, devices] of lists) {
    if (resource.endsWith('/npu-core')) continue;
    for (const d of devices) {
      // share-mode copies end in two numeric fields (`Ascend310P-3-0`); other names in one (`Ascend310P-IPro-2`)
      const phy = phyIdOfName(d.ID, /-\d+-\d+$/.test(d.ID));
      if (phy === undefined) continue;
      const prev = out.get(phy);
      out.set(phy, prev === undefined || prev === d.health ? d.health : 'mixed');
    }
  }
  return out;
}

/** Resolves at the first SIGINT or SIGTERM (the handlers are removed then). */
function nextSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (sig: NodeJS.Signals): void => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(sig);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

/** Runs the demo; returns the exit status. */
export async function runSimulate(args: readonly string[], io: SimulateIo): Promise<number> {
  const opts = parseSimArgs(args);
  // A reader that goes away (`npm start | head`) ends the table, not the demo: without a listener the EPIPE of the
  // next write would be an uncaught 'error' (a stack trace, the temporary folder left behind).
  let outClosed = false;
  const onOutError = (): void => void (outClosed = true);
  const say = (line = ''): void => {
    if (!outClosed) io.out.write(`${line}\n`);
  };
  if (typeof opts === 'object' && 'help' in opts) {
    say(SIMULATE_USAGE.trimEnd());
    return 0;
  }
  if (typeof opts === 'string') {
    io.err.write(`ascend-npu-agent simulate: ${opts}\n`);
    return 2;
  }
  let steps: TimelineStep[];
  let scenarioDoc: { timeline?: unknown };
  try {
    scenarioDoc = JSON.parse(fs.readFileSync(opts.scenario, 'utf8')) as { timeline?: unknown };
    if (opts.timeline) steps = readTimelineFile(opts.timeline);
    else if (Array.isArray(scenarioDoc.timeline)) steps = timelineFromArray(scenarioDoc.timeline, opts.scenario);
    else steps = readTimelineFile(DEFAULT_TIMELINE);
  } catch (err) {
    io.err.write(`ascend-npu-agent simulate: ${(err as Error).message}\n`);
    return 2;
  }
  const timelineName =
    opts.timeline ?? (Array.isArray(scenarioDoc.timeline) ? `${opts.scenario} (timeline)` : DEFAULT_TIMELINE);

  io.out.on('error', onOutError);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'npu-sim-'));
  const control = path.join(dir, 'mock.sock');
  const logFile = path.join(dir, 'agent.log');
  let api: KubeApiStandIn | undefined;
  let kubelet: KubeletSimulator | undefined;
  let agent: AgentHandle | undefined;
  let client: MockControlClient | undefined;
  const savedEnv = { scenario: process.env.ASCEND_MOCK_SCENARIO, control: process.env.ASCEND_MOCK_CONTROL };
  try {
    api = await KubeApiStandIn.start();
    // The Node object kubelet would have registered: the agent labels and annotates it at start (spec A.2 5.7).
    api.store.create(api.resourceType('', 'nodes'), undefined, { metadata: { name: SIM_NODE_NAME } });
    const kubeconfig = path.join(dir, 'kubeconfig');
    await api.writeKubeconfig(kubeconfig);
    makeDeviceNodes(path.join(dir, 'dev'));
    for (const sub of ['sys', 'host', 'state']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
    fs.copyFileSync(path.join(PROJECT_ROOT, 'faultCode.json'), path.join(dir, 'faultCode.json'));
    fs.copyFileSync(path.join(PROJECT_ROOT, 'faultCustomization.json'), path.join(dir, 'faultCustomization.json'));
    fs.copyFileSync(path.join(PROJECT_ROOT, 'SwitchFaultCode.json'), path.join(dir, 'SwitchFaultCode.json'));
    kubelet = await KubeletSimulator.start({
      dir: path.join(dir, 'kubelet'),
      podResourcesSocket: path.join(dir, 'pr.sock'),
    });
    // The mock reads these on the first dcmi_init (architecture §5); hccn_tool inherits them.
    process.env.ASCEND_MOCK_SCENARIO = opts.scenario;
    process.env.ASCEND_MOCK_CONTROL = control;
    const flags = sandboxFlags(dir, {
      kubeconfig,
      logFile,
      dcmiLibrary: opts.dcmiLibrary,
      metricsAddress: opts.metricsAddress,
    });
    // spec L.9: the switch library is opened on 910A3 nodes only; a scenario without `switch` makes lq_dcmi_init
    // fail there (switch faults off, one warning)
    flags.push(
      `-switchLibrary=${MOCK_SWITCH_LIBRARY}`,
      `-switchFaultCodeFile=${path.join(dir, 'SwitchFaultCode.json')}`,
    );
    const parsed = parseAgentArgs([...flags, ...opts.agentFlags.map((f) => f.replaceAll(SANDBOX_TOKEN, dir))], {
      NODE_NAME: SIM_NODE_NAME,
    });
    if (!parsed.ok) {
      // The agent's own words, as `ascend-npu-agent <flags>` prints them, and its exit status for a bad flag.
      for (const e of parsed.errors) io.err.write(`ascend-npu-agent simulate: ${e}\n`);
      return EXIT_BAD_FLAG;
    }
    // Opened synchronously: a file destination still opening when the process exits makes pino's exit flush throw
    // ("sonic boom is not ready yet") over the clear error of a start-up that failed at once (no mock library).
    const log = createLogger({ logLevel: 0, logFile, destination: pino.destination({ dest: logFile, sync: true }) });
    const started = Date.now();
    agent = await runAgent(parsed.config!, { logger: log, env: process.env, kubeConfig: api.kubeConfig() });
    const a = agent;
    const core = api.kubeConfig().makeApiClient(k8s.CoreV1Api);
    client = await MockControlClient.connect(control);
    const resource = a.resourceName;
    const resources = await registeredResources(kubelet);
    const devices = resources.flatMap((r) => kubelet!.devices(r) ?? []);
    say(
      `ascend-npu-agent simulate: ${a.store.snapshot().chips.length} chips (${resource}) from ${path.relative(PROJECT_ROOT, opts.scenario)}, ` +
        `registered with the kubelet simulator in ${Date.now() - started} ms (${devices.length} devices)`,
    );
    const printDevices = (): void => {
      for (const r of resources) say(`  ${devicesLine(r, kubelet!.devices(r) ?? [])}`);
    };
    // a mode whose IDs are not one per chip under the agent's resource: show them (share, names, mixed, vNPU)
    const otherIds =
      resources.length !== 1 || resources[0] !== resource || devices.length !== a.store.snapshot().chips.length;
    if (otherIds) printDevices();
    say(
      `timeline ${path.isAbsolute(timelineName) ? path.relative(PROJECT_ROOT, timelineName) : timelineName}: ${steps.length} steps; agent log ${opts.keep ? logFile : '(temporary)'}`,
    );
    const url = a.metricsPort === undefined ? undefined : metricsUrl(opts.metricsAddress, a.metricsPort);
    if (url !== undefined) {
      say(
        `metrics ${url} (also /healthz, /readyz, /status), served until the demo ends${opts.hold ? ' (--hold: until Ctrl-C)' : ''}`,
      );
    }
    say();

    const cmName = deviceInfoConfigMapName(SIM_NODE_NAME);
    let lastWrite = '-';
    let writes = 0;
    let lastRv = '';
    const cmState = (): { manual: string; update: string; valid: boolean; switchInfo?: string } | undefined => {
      const cm = api!.store.get(api!.resourceType('', 'configmaps'), DEVICE_INFO_NAMESPACE, cmName) as
        k8s.V1ConfigMap | undefined;
      if (!cm) return undefined;
      const rv = cm.metadata?.resourceVersion ?? '';
      if (rv !== lastRv) {
        lastRv = rv;
        writes = api!.writeCount({ resource: 'configmaps', namespace: DEVICE_INFO_NAMESPACE, name: cmName });
        lastWrite = `${((Date.now() - started) / 1000).toFixed(1)} s`;
      }
      const cfg = cm.data?.[KEY_DEVICE_INFO] ?? '';
      const sw = cm.data?.[KEY_SWITCH_INFO];
      return {
        manual: cm.data?.[KEY_MANUALLY_SEPARATE] ?? '',
        update: lastWrite,
        valid: verifyDeviceInfoCfg(cfg),
        ...(sw === undefined ? {} : { switchInfo: sw }),
      };
    };
    const rows = (): Row[] => {
      const seen = kubeletHealthByPhy(resources.map((r) => [r, kubelet!.devices(r) ?? []]));
      return a.store.snapshot().chips.map((c) => {
        const chip = chipName(resource.replace('huawei.com/', ''), c.phyId);
        return {
          chip,
          logicId: c.logicId,
          level: c.level,
          kubelet: seen.get(c.phyId) ?? '-',
          network: c.networkHealth,
          manual: c.manuallySeparated ? 'yes' : '',
        };
      });
    };
    const table = (title: string): void => {
      const cm = cmState();
      say(title);
      say(`  ${'chip'.padEnd(13)} ${'level'.padEnd(20)} ${'kubelet'.padEnd(10)} ${'network'.padEnd(10)} manual`);
      for (const r of rows()) {
        const plainKubelet = r.kubelet === 'Healthy' || r.kubelet === '-';
        if (r.level === 'NormalNPU' && plainKubelet && r.network === 'Healthy' && r.manual === '') continue;
        say(`  ${r.chip.padEnd(13)} ${r.level.padEnd(20)} ${r.kubelet.padEnd(10)} ${r.network.padEnd(10)} ${r.manual}`);
      }
      // spec L.9: the node's switch (910A3), shown once it has a fault or its node status is not Healthy
      const sw = cm?.switchInfo === undefined ? undefined : switchLine(cm.switchInfo);
      if (sw !== undefined && !sw.quiet) say(`  switch        ${sw.text}`);
      const known = rows().filter((r) => r.kubelet !== '-');
      const healthy = known.filter((r) => r.kubelet === 'Healthy').length;
      say(
        `  (${known.length === 0 ? 'kubelet lists AI cores, no chips: see a devices step' : `${healthy}/${known.length} Healthy in kubelet`}) ConfigMap: ManuallySeparateNPU="${cm?.manual ?? ''}" ` +
          `last write ${cm?.update ?? '-'} (${writes} writes, CheckCode ${cm?.valid ? 'valid' : 'n/a'})`,
      );
    };
    const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 300));
    const describe = (s: TimelineStep): string => {
      const { t, op, ...rest } = s;
      const shown = (v: unknown): string => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));
      return [`t=${(t / 1000).toFixed(1)} s ${op}`, ...Object.entries(rest).map(([k, v]) => `${k}=${shown(v)}`)].join(
        ' ',
      );
    };
    let lastVdevs = '';
    table('t=0.0 s start');
    await playTimeline(
      steps,
      {
        mock: async (req) => {
          const reply = await client!.expectOk(req);
          // the vNPUs of a chip are only seen in the reply (dynamic vNPU): printed after the step's title
          if (req.op === 'vdevs') lastVdevs = vdevsLine(reply);
        },
        pod: async (s) => {
          say(describe(s));
          const name = s.name as string;
          if (s.delete === true) {
            await core.deleteNamespacedPod({ name, namespace: 'default' });
            kubelet!.removePod('default', name);
            say(`  deleted pod default/${name}`);
            return;
          }
          const r = s.resource as string;
          await core.createNamespacedPod({
            namespace: 'default',
            body: {
              metadata: {
                name,
                namespace: 'default',
                labels: (s.labels ?? {}) as Record<string, string>,
                annotations: (s.annotations ?? {}) as Record<string, string>,
              },
              spec: {
                nodeName: SIM_NODE_NAME,
                containers: [{ name: 'c0', image: 'x', resources: { limits: { [r]: String(s.count) } } }],
              },
            },
          });
          say(`  created pod default/${name} (${r}: ${String(s.count)})`);
        },
        allocate: async (s) => {
          say(describe(s));
          const r = s.resource as string;
          const ids = Array.isArray(s.ids)
            ? (s.ids as string[])
            : (kubelet!.devices(r) ?? [])
                .filter((d) => d.health === 'Healthy')
                .slice(0, s.count as number)
                .map((d) => d.ID);
          if (ids.length === 0) {
            say(`  no Healthy ${r} IDs to allocate`);
            return;
          }
          const pod = typeof s.pod === 'string' ? { namespace: 'default', name: s.pod } : undefined;
          if (!Array.isArray(s.ids)) say(`  kubelet picks ${short(ids)}`);
          try {
            const res = await kubelet!.allocate(r, [ids], pod);
            for (const line of allocateLines(res, dir)) say(`  ${line}`);
          } catch (err) {
            const e = err as { code?: number; details?: string; message: string };
            say(
              `  refused: ${e.code === undefined ? '' : `${grpcStatus[e.code] ?? e.code}: `}${e.details ?? e.message}`,
            );
          }
        },
        release: async (logicId) => {
          const phy = a.store.chip(logicId)?.phyId ?? logicId;
          const name = chipName(resource.replace('huawei.com/', ''), phy);
          const done = await operatorRelease(core, SIM_NODE_NAME, name);
          if (!done) say(`  (operator: ${name} is not in ManuallySeparateNPU)`);
        },
        podUses: async (logicId, used) => {
          const phy = a.store.chip(logicId)?.phyId ?? logicId;
          const name = chipName(resource.replace('huawei.com/', ''), phy);
          const podName = `sim-pod-${logicId}`;
          if (used) {
            await core.createNamespacedPod({
              namespace: 'default',
              body: {
                metadata: { name: podName, namespace: 'default', annotations: { [resource]: name } },
                spec: { nodeName: SIM_NODE_NAME, containers: [{ name: 'c', image: 'x' }] },
                status: { phase: 'Running' },
              },
            });
          } else await core.deleteNamespacedPod({ name: podName, namespace: 'default' });
        },
        query: async (s) => {
          await settle();
          table(describe(s));
        },
        devices: async (s) => {
          await settle();
          say(describe(s));
          printDevices();
        },
        afterStep: async (s) => {
          if (s.op === 'query' || s.op === 'devices' || s.op === 'pod' || s.op === 'allocate') return;
          if (s.op === 'vdevs') {
            say(describe(s));
            say(`  mock: ${lastVdevs}`);
            return;
          }
          // a burst (the same op again within 300 ms, e.g. 16 switch ports going down): the table once, after the last
          const i = steps.indexOf(s);
          const next = steps[i + 1];
          if (next !== undefined && next.op === s.op && next.t - s.t <= 300) {
            say(describe(s));
            return;
          }
          // recoveries are held 1 s by the monitor (D.4); show the table once they have landed
          await new Promise((r) => setTimeout(r, PLAYER_OPS.has(s.op) ? 1200 : s.assertion === 'recover' ? 1300 : 300));
          table(describe(s));
        },
      },
      { speed: opts.speed },
    );
    await Promise.race([a.configMapIdle(), new Promise((r) => setTimeout(r, 3000))]);
    const final = rows();
    const cm = cmState();
    const counts = new Map<string, number>();
    for (const r of final) if (r.kubelet !== '-') counts.set(r.kubelet, (counts.get(r.kubelet) ?? 0) + 1);
    const events = api.store.list(api.resourceType('', 'events'), undefined);
    say();
    say('summary');
    say(`  steps played        ${steps.length} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    say(
      `  kubelet             ${[...counts].map(([h, n]) => `${n} ${h}`).join(', ') || 'no chips'}; registrations ${kubelet.registrations.length}, updates ${kubelet.updates.length}`,
    );
    if (otherIds) for (const r of resources) say(`  devices             ${devicesLine(r, kubelet.devices(r) ?? [])}`);
    say(
      `  ConfigMap           ${writes} writes, ManuallySeparateNPU="${cm?.manual ?? ''}", CheckCode ${cm?.valid ? 'valid' : 'invalid'}`,
    );
    if (cm?.switchInfo !== undefined) say(`  switch              ${switchLine(cm.switchInfo).text}`);
    say(`  Events              ${events.length}`);
    say(`  health mode         ${a.healthMode()}`);
    if (opts.hold) {
      say();
      say(`holding: the agent and ${url ?? 'its metrics'} keep running until Ctrl-C (SIGINT or SIGTERM)`);
      const sig = await nextSignal();
      say(`${sig}: stopping`);
    }
    return 0;
  } catch (err) {
    io.err.write(`ascend-npu-agent simulate: ${(err as Error).message}\n`);
    return err instanceof AgentStartError ? err.exitCode : 1;
  } finally {
    client?.close();
    await agent?.stop();
    await kubelet?.close();
    await api?.stop();
    if (savedEnv.scenario === undefined) delete process.env.ASCEND_MOCK_SCENARIO;
    else process.env.ASCEND_MOCK_SCENARIO = savedEnv.scenario;
    if (savedEnv.control === undefined) delete process.env.ASCEND_MOCK_CONTROL;
    else process.env.ASCEND_MOCK_CONTROL = savedEnv.control;
    if (!opts.keep) fs.rmSync(dir, { recursive: true, force: true });
    io.out.off('error', onOutError);
  }
}
