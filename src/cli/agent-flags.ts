/**
 * Flags and environment of `ascend-npu-agent` (spec device-plugin.md A.1, architecture §4): the typed table with
 * defaults and ranges, environment mirrors `ASCEND_AGENT_<UPPER_SNAKE_NAME>` (the flag wins), the cross-flag rules
 * in the spec's validation order, the "not supported yet" guard for features not built, the upstream flags that
 * are accepted and ignored with one deprecation warning (docs/migration.md), and `NODE_NAME`.
 * Pure: reads only the argv and environment it is given. A failed parse is exit status 2 for the caller.
 */
import path from 'node:path';
import { LISTEN_ADDRESS_RULE, listenAddressProblem, parseListenAddress } from '../observability/listen-address.js';
import { parseGoBool, parseGoFlags, parseGoFloat, parseGoInt, type GoFlagKind } from './go-flags.js';

export { parseListenAddress };

/** How a flag relates to what is built. */
export type FlagSupport =
  /** Implemented. */
  | 'yes'
  /** Validated and stored, no runtime effect (upstream has none either, spec M.1, or a documented choice). */
  | 'no-effect'
  /** A feature not built yet: the default is accepted, any other value is refused. */
  | 'not-yet'
  /**
   * An upstream flag with no meaning here (removed upstream, or it chose something this agent decides by itself):
   * validated as upstream did, then ignored with one warning naming it, so that an operator's manifest keeps
   * starting (docs/migration.md).
   */
  | 'deprecated';

interface FlagDef {
  readonly kind: GoFlagKind;
  readonly def: string | number | boolean;
  readonly help: string;
  readonly min?: number;
  readonly max?: number;
  readonly support: FlagSupport;
  /** For `not-yet`: the feature, for the message. */
  readonly feature?: string;
  /** For `deprecated`: why it is ignored, for the warning. */
  readonly deprecation?: string;
  /** For `string` flags with a fixed set of values (upstream's own check). */
  readonly oneOf?: readonly string[];
  /** Environment name when the generic rule gives an awkward one. */
  readonly env?: string;
}

/** Every agent flag: spec A.1 (upstream) then architecture §4 (ours). */
export const AGENT_FLAGS = {
  // ---- spec A.1 ----------------------------------------------------------------------------------------------
  version: { kind: 'bool', def: false, support: 'yes', help: 'print the version and exit' },
  logFile: {
    kind: 'string',
    def: '/var/log/mindx-dl/devicePlugin/devicePlugin.log',
    support: 'yes',
    help: 'run log file ("" = JSON lines on stdout)',
  },
  edgeLogFile: {
    kind: 'string',
    def: '/var/alog/AtlasEdge_log/devicePlugin.log',
    support: 'not-yet',
    feature: 'edge mode (-fdFlag)',
    help: 'log file used with -fdFlag',
  },
  logLevel: {
    kind: 'int',
    def: 0,
    min: -1,
    max: 3,
    support: 'yes',
    help: '-1 debug, 0 info, 1 warning, 2 error, 3 critical',
  },
  maxAge: { kind: 'int', def: 7, min: 7, max: 700, support: 'yes', help: 'days to keep rotated logs (A.3)' },
  maxBackups: {
    kind: 'int',
    def: 30,
    min: 1,
    max: 180,
    support: 'yes',
    help: 'rotated log files kept (A.3, 20 MiB each)',
  },
  fdFlag: { kind: 'bool', def: false, support: 'not-yet', feature: 'edge (FD) mode', help: 'edge mode' },
  listWatchPeriod: {
    kind: 'int',
    def: 5,
    min: 3,
    max: 1800,
    support: 'yes',
    help: 'seconds between periodic cycles (polling, compensation, time-based rules)',
  },
  autoStowing: {
    kind: 'bool',
    def: true,
    support: 'yes',
    help: 'recovered chips return to scheduling at once (false: they wait in the huawei.com/Ascend910-Recover label)',
  },
  volcanoType: { kind: 'bool', def: false, support: 'yes', help: 'Volcano scheduler mode for Allocate' },
  presetVirtualDevice: {
    kind: 'bool',
    def: true,
    support: 'yes',
    help: 'true: static vNPU; false: dynamic vNPU (huawei.com/npu-core; 310P, 910B, 910A3 with -volcanoType=true)',
  },
  use310PMixedInsert: {
    kind: 'bool',
    def: false,
    support: 'yes',
    help: '310P mixed insert: one resource per product type (Ascend310P-V, -VPro, -IPro)',
    env: 'ASCEND_AGENT_USE_310P_MIXED_INSERT',
  },
  hotReset: {
    kind: 'int',
    def: -1,
    support: 'yes',
    help: '-1 off; 0 and 2 offline reset of idle rings; 1 task-aware reset plus offline (docs/hot-reset.md)',
  },
  shareDevCount: {
    kind: 'uint',
    def: 1,
    min: 1,
    max: 100,
    support: 'yes',
    help: '310P/310B share mode: advertise each chip N times as <name>-<phy>-<i> (no effect on other kinds)',
  },
  linkdownTimeout: {
    kind: 'int64',
    def: 30,
    min: 1,
    max: 30,
    support: 'no-effect',
    help: 'no runtime effect (spec M.1)',
  },
  dealWatchHandler: {
    kind: 'bool',
    def: false,
    support: 'no-effect',
    help: 're-list pods after a watch error (the pod watcher always does)',
  },
  checkCachedPods: { kind: 'bool', def: true, support: 'no-effect', help: 'pod-cache inspector (I.6)' },
  enableSlowNode: {
    kind: 'bool',
    def: false,
    support: 'yes',
    help: 'add PERF_DUMP_PATH/PERF_DUMP_CONFIG (ConfigMap kube-system/steptime-dtpgroup) in Allocate',
  },
  thirdPartyScanDelay: {
    kind: 'int',
    def: 300,
    min: 0,
    support: 'no-effect',
    help: '910A3 rescan after a failed out-of-band reset: not built (docs/hot-reset.md)',
  },
  deviceResetTimeout: {
    kind: 'int',
    def: 600,
    min: 10,
    max: 600,
    support: 'yes',
    help: 'seconds to wait at start-up for DCMI to report all cards',
  },
  softShareDevConfigDir: {
    kind: 'string',
    def: '',
    support: 'yes',
    help: "soft share (L.7): folder of the chips' shared-memory entries <dir>/<phy>/<dieId>",
  },
  // upstream main.go: an oversell ratio of soft share; range-checked, not used by this agent (docs/inference.md)
  softShareCoreScaling: {
    kind: 'float64',
    def: 1,
    min: 1,
    max: 5,
    support: 'no-effect',
    help: 'soft-share oversell ratio; range-checked, not used (docs/inference.md)',
  },
  useSingleDieMode: { kind: 'bool', def: false, support: 'yes', help: '910A3: multi-die policy "independent"' },
  getPodFromKubelet: {
    kind: 'bool',
    def: false,
    support: 'yes',
    help: 'read pods from the kubelet /pods (HOST_IP, KUBELET_PORT) instead of the API server',
  },
  'enable-healthz': {
    kind: 'bool',
    def: false,
    support: 'yes',
    help: 'start the upstream liveness endpoint (L.2)',
  },
  'healthz-address': { kind: 'string', def: '11251', support: 'yes', help: 'liveness port, 1025..65535' },
  'tls-cert-file': { kind: 'string', def: '', support: 'yes', help: 'HTTPS certificate of the liveness endpoint' },
  'tls-private-key-file': { kind: 'string', def: '', support: 'yes', help: 'HTTPS key of the liveness endpoint' },
  // ---- upstream flags removed since, still in operators' manifests (accepted, one warning, ignored) ------------
  useAscendDocker: {
    kind: 'bool',
    def: true,
    support: 'deprecated',
    deprecation: 'removed upstream; the ascend-docker mode follows ASCEND_DOCKER_RUNTIME=True (spec C.4)',
    help: 'removed upstream: the ascend-docker mode follows ASCEND_DOCKER_RUNTIME',
  },
  mode: {
    kind: 'string',
    def: '',
    oneOf: ['', 'ascend310', 'ascend310P', 'ascend710', 'ascend910'],
    support: 'deprecated',
    deprecation: 'removed upstream; the chip kind is detected from DCMI (spec B.2)',
    help: 'removed upstream: the chip kind is detected from DCMI',
  },
  useLargeModel: {
    kind: 'bool',
    def: false,
    support: 'deprecated',
    deprecation: 'removed upstream, no effect',
    help: 'removed upstream, no effect',
  },
  cacheExpirePeriod: {
    kind: 'int64',
    def: 30,
    min: 0,
    max: 60,
    support: 'deprecated',
    deprecation: 'removed upstream; the pod cache is a watch (spec I.6)',
    help: 'removed upstream: the pod cache is a watch',
  },
  // ---- architecture §4 ---------------------------------------------------------------------------------------
  kubeletDir: {
    kind: 'string',
    def: '/var/lib/kubelet/device-plugins',
    support: 'yes',
    help: 'folder of kubelet.sock and the plugin sockets',
  },
  podResourcesSocket: {
    kind: 'string',
    def: '/var/lib/kubelet/pod-resources/kubelet.sock',
    support: 'yes',
    help: 'podresources socket',
  },
  kubeconfig: { kind: 'string', def: '', support: 'yes', help: 'kubeconfig (default: in-cluster, else $KUBECONFIG)' },
  dcmiLibrary: { kind: 'string', def: '', support: 'yes', help: 'explicit libdcmi.so (default: upstream lookup)' },
  switchLibrary: {
    kind: 'string',
    def: '',
    support: 'yes',
    help: '910A3: explicit liblingqu-dcmi.so (default: upstream lookup; absent = switch faults off)',
  },
  switchFaultCodeFile: {
    kind: 'string',
    def: '/usr/local/SwitchFaultCode.json',
    support: 'yes',
    help: '910A3 switch fault levels (the packaged copy when unusable)',
  },
  hccnTool: {
    kind: 'string',
    def: '/usr/local/Ascend/driver/tools/hccn_tool',
    support: 'yes',
    help: 'link-status tool',
  },
  faultCodeFile: {
    kind: 'string',
    def: '/usr/local/faultCode.json',
    support: 'yes',
    help: 'fault-level table (the packaged copy when unusable)',
  },
  faultCustomizationFile: {
    kind: 'string',
    def: '/usr/local/faultCustomization.json',
    support: 'yes',
    help: 'frequency/duration/grace rules (the packaged copy when unusable)',
  },
  metricsAddress: { kind: 'string', def: ':9464', support: 'yes', help: '/metrics, /healthz, /readyz ("" disables)' },
  stateDir: { kind: 'string', def: '/var/lib/ascend-npu-agent', support: 'yes', help: 'local persistence' },
  devDir: { kind: 'string', def: '/dev', support: 'yes', help: 'where device nodes are looked for' },
  sysDir: { kind: 'string', def: '/sys', support: 'yes', help: 'NUMA and PCI lookups' },
  hostRoot: { kind: 'string', def: '/', support: 'yes', help: 'prefix of the host folders the agent writes' },
  nameCustomizationFile: {
    kind: 'string',
    def: '/usr/local/deviceNameCustomization.json',
    support: 'yes',
    help: 'public-name customisation (L.6; no customisation when absent or unusable)',
  },
  hangDetectionConfigFile: {
    kind: 'string',
    def: '/usr/local/hangDetectionConfig.json',
    support: 'yes',
    help: 'hang detection config (D.9; defaults when absent or unusable)',
  },
  dpuConfigFile: {
    kind: 'string',
    def: '/user/mindx-dl/dpu/dpu-config.json',
    support: 'yes',
    help: 'A5 DPU switch file (DPU health off when absent or unusable); the DPUs are read under -sysDir',
  },
  a5TopoDir: {
    kind: 'string',
    def: '/usr/local/Ascend/driver/topo/950/',
    support: 'yes',
    help: 'folder of the A5 topology files read for the levelList ports (L.8; none read when absent or unusable)',
  },
  npuNicMappingFile: {
    kind: 'string',
    def: '/user/mindx-dl/npu/npu-nic-mapping.json',
    support: 'yes',
    help: 'A5 NPU-NIC mapping file for the levelList RoCE level (L.8; no RoCE level when absent or unusable)',
  },
  resetTimePercent: {
    kind: 'int',
    def: 100,
    min: 1,
    max: 100,
    support: 'yes',
    help: 'percent of every fixed chip-reset wait and timeout (tests and demos shorten them; 100 in production)',
  },
  linkQueryInterval: {
    kind: 'int',
    def: 300,
    min: 1,
    max: 86400,
    support: 'yes',
    help: 'seconds between two real hccn_tool link queries of one chip',
  },
  deviceApi: {
    kind: 'string',
    def: 'plugin',
    oneOf: ['plugin', 'dra', 'both'],
    support: 'yes',
    help: 'plugin: kubelet device plugin; dra: DRA driver npu.huawei.com; both: the two from one store (migration)',
  },
  kubeletPluginsDir: {
    kind: 'string',
    def: '/var/lib/kubelet/plugins',
    support: 'yes',
    help: "DRA: folder of the driver's socket <dir>/npu.huawei.com/dra.sock (follows kubelet's --root-dir)",
  },
  kubeletRegistryDir: {
    kind: 'string',
    def: '/var/lib/kubelet/plugins_registry',
    support: 'yes',
    help: "DRA: kubelet's plugin registry (npu.huawei.com-reg.sock; follows kubelet's --root-dir)",
  },
  cdiDir: {
    kind: 'string',
    def: '/var/run/cdi',
    support: 'yes',
    help: 'CDI specs of prepared claims (DRA) and of -cdiDevicePlugin (kind ascend.com/npu)',
  },
  cdiDevicePlugin: {
    kind: 'bool',
    def: false,
    support: 'yes',
    help: 'device plugin: answer Allocate with CDI devices (ascend.com/npu=<device>) instead of device specs',
  },
  draPartitions: {
    kind: 'bool',
    def: true,
    support: 'yes',
    help: 'DRA: publish the static vNPU templates as partitions of each chip (910B, 910A3, 310P; no effect elsewhere)',
  },
  kubeletWaitTimeout: {
    kind: 'int',
    def: 300,
    min: 1,
    max: 86400,
    support: 'yes',
    help: 'seconds to wait at start-up for the kubelet folder and the first registration (then exit 4)',
  },
} as const satisfies Record<string, FlagDef>;

export type AgentFlagName = keyof typeof AGENT_FLAGS;

type ValueOf<K extends AgentFlagName> = (typeof AGENT_FLAGS)[K]['kind'] extends 'bool'
  ? boolean
  : (typeof AGENT_FLAGS)[K]['kind'] extends 'string'
    ? string
    : number;

/** `-deviceApi` (architecture §4, issue [DRA]): which kubelet API the agent serves. */
export type DeviceApi = 'plugin' | 'dra' | 'both';

/** `-deviceApi` as its type (the value was checked against the flag's `oneOf` when parsed). */
export function deviceApiOf(flags: Pick<AgentFlags, 'deviceApi'>): DeviceApi {
  return flags.deviceApi as DeviceApi;
}

/** The parsed flag values, by flag name. */
export type AgentFlags = { readonly [K in AgentFlagName]: ValueOf<K> };

/** Where a value came from. */
export type ValueSource = 'flag' | 'env' | 'default';

/** Flags plus the environment facts of spec A.1. */
export interface AgentConfig {
  readonly flags: AgentFlags;
  readonly sources: { readonly [K in AgentFlagName]: ValueSource };
  /** `NODE_NAME`. */
  readonly nodeName: string;
  /** `HOSTNAME` (the agent's pod name, for Events), when set. */
  readonly podName?: string;
  /** `HOST_IP`, when set. */
  readonly hostIp?: string;
  /** `KUBELET_PORT` (default 10250). */
  readonly kubeletPort: number;
  /** `ASCEND_DOCKER_RUNTIME == "True"` (spec C.4). */
  readonly ascendDockerRuntime: boolean;
}

export type AgentArgs =
  | {
      readonly ok: true;
      /** `-version` was given: print the version and exit 0, nothing else is validated. */
      readonly version: boolean;
      /** `-h`/`-help`/`--help`: print {@link agentUsage} and exit 0. */
      readonly help: boolean;
      /** The first positional argument (e.g. `simulate`), if any. */
      readonly command?: string;
      /** Arguments after the command, unparsed. */
      readonly commandArgs: readonly string[];
      /** Absent with `version`/`help`. */
      readonly config?: AgentConfig;
      /** Not errors: e.g. an `ASCEND_AGENT_*` variable that names no flag. */
      readonly warnings: readonly string[];
    }
  | { readonly ok: false; readonly errors: readonly string[] };

export interface ParseOptions {
  /** Commands accepted as the first positional argument. Default `['simulate']`. */
  readonly commands?: readonly string[];
  /** Require `NODE_NAME` (default true). */
  readonly requireNodeName?: boolean;
}

/** `listWatchPeriod` → `ASCEND_AGENT_LIST_WATCH_PERIOD`, `enable-healthz` → `ASCEND_AGENT_ENABLE_HEALTHZ`. */
export function agentEnvName(flag: AgentFlagName): string {
  const def: FlagDef = AGENT_FLAGS[flag];
  if (def.env) return def.env;
  const snake = flag
    .replace(/-/g, '_')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2');
  return `ASCEND_AGENT_${snake.toUpperCase()}`;
}

/** Spec A.1 `NODE_NAME` rule (also `HOSTNAME`, ≤ 253). */
export const DNS_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const FLAG_NAMES = Object.keys(AGENT_FLAGS) as AgentFlagName[];
const SHAPES = new Map(FLAG_NAMES.map((n) => [n, { kind: AGENT_FLAGS[n].kind }]));

function convert(
  name: AgentFlagName,
  text: string,
  where: string,
): { value?: string | number | boolean; error?: string } {
  const def: FlagDef = AGENT_FLAGS[name];
  if (def.kind === 'string') return { value: text };
  if (def.kind === 'float64') {
    const f = parseGoFloat(text);
    return f === undefined ? { error: `invalid float value "${text}" for ${where}` } : { value: f };
  }
  if (def.kind === 'bool') {
    const b = parseGoBool(text);
    return b === undefined ? { error: `invalid boolean value "${text}" for ${where}` } : { value: b };
  }
  const n = parseGoInt(text, def.kind === 'uint');
  if (n === undefined) {
    const what = def.kind === 'uint' ? 'unsigned integer' : 'integer';
    return { error: `invalid ${what} value "${text}" for ${where}` };
  }
  return { value: n };
}

function rangeText(def: FlagDef): string {
  if (def.min !== undefined && def.max !== undefined) return `[${def.min}, ${def.max}]`;
  if (def.min !== undefined) return `≥ ${def.min}`;
  return `≤ ${def.max}`;
}

/**
 * Parses the command line and environment. Flag syntax and value errors, then the validation rules in the spec's
 * order (A.1 "Validation order"), then the not-supported-yet guard, then the environment; every problem is
 * listed, one line each.
 */
export function parseAgentArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  options: ParseOptions = {},
): AgentArgs {
  const parsed = parseGoFlags(argv, SHAPES);
  const errors = [...parsed.errors];
  const warnings: string[] = [];
  const commands = options.commands ?? ['simulate'];
  const [command, ...commandArgs] = parsed.rest;
  if (command !== undefined && !commands.includes(command)) {
    const hint = ['true', 'false', '0', '1'].includes(command)
      ? ' (a boolean flag takes its value as -name=value)'
      : '';
    errors.push(`unknown command "${command}"${hint}; commands: ${commands.join(', ')}`);
  }

  // -version short-circuits (A.2 step 1) once the syntax is valid; so does help.
  const versionRaw = parsed.flags.get('version');
  const version = versionRaw !== undefined && parseGoBool(versionRaw.text) === true;
  if (errors.length === 0 && (version || parsed.help)) {
    return { ok: true, version, help: parsed.help && !version, command, commandArgs, warnings };
  }

  const values: Record<string, string | number | boolean> = {};
  const sources: Record<string, ValueSource> = {};
  const known = new Set<string>();
  for (const name of FLAG_NAMES) {
    const def: FlagDef = AGENT_FLAGS[name];
    const envName = agentEnvName(name);
    known.add(envName);
    const raw = parsed.flags.get(name);
    const envText = env[envName];
    let value: string | number | boolean = def.def;
    let source: ValueSource = 'default';
    if (raw) {
      const r = convert(name, raw.text, raw.spelling);
      if (r.error) errors.push(r.error);
      else [value, source] = [r.value!, 'flag'];
    } else if (envText !== undefined) {
      const r = convert(name, envText, `environment variable ${envName}`);
      if (r.error) errors.push(r.error);
      else [value, source] = [r.value!, 'env'];
    }
    values[name] = value;
    sources[name] = source;
  }
  for (const key of Object.keys(env)) {
    if (key.startsWith('ASCEND_AGENT_') && !known.has(key)) warnings.push(`${key} names no agent flag; ignored`);
  }
  if (errors.length > 0) return { ok: false, errors };

  const flags = values as AgentFlags;
  const where = (n: AgentFlagName): string =>
    sources[n] === 'env' ? `${agentEnvName(n)}=${String(flags[n])}` : `${flagSpelling(n)}=${String(flags[n])}`;
  const inRange = (n: AgentFlagName): void => {
    const def: FlagDef = AGENT_FLAGS[n];
    const v = flags[n] as number;
    if (Number.isNaN(v) || (def.min !== undefined && v < def.min) || (def.max !== undefined && v > def.max)) {
      errors.push(`${where(n)} is out of range ${rangeText(def)}`);
    }
  };

  // A.1 validation order.
  // 1. log parameters
  inRange('logLevel');
  inRange('maxAge');
  inRange('maxBackups');
  if (flags.logFile !== '' && !path.isAbsolute(flags.logFile))
    errors.push(`${where('logFile')} must be an absolute path`);
  // 2. healthz
  const port = parseGoInt(flags['healthz-address']);
  if (port === undefined || port < 1025 || port > 65535 || !/^\d+$/.test(flags['healthz-address'])) {
    errors.push(`${where('healthz-address')} must be a TCP port number in [1025, 65535]`);
  }
  if ((flags['tls-cert-file'] === '') !== (flags['tls-private-key-file'] === '')) {
    errors.push('--tls-cert-file and --tls-private-key-file must be given together');
  }
  // 3. listWatchPeriod
  inRange('listWatchPeriod');
  // 4. preset/volcano, mixed-insert/volcano, mixed-insert/shareDevCount, preset/shareDevCount
  if (!flags.presetVirtualDevice && !flags.volcanoType) {
    errors.push('-presetVirtualDevice=false requires -volcanoType=true');
  }
  if (flags.use310PMixedInsert && flags.volcanoType) {
    errors.push('-use310PMixedInsert=true requires -volcanoType=false');
  }
  if (flags.use310PMixedInsert && flags.shareDevCount !== 1) {
    errors.push('-use310PMixedInsert=true requires -shareDevCount=1');
  }
  if (!flags.presetVirtualDevice && flags.shareDevCount !== 1) {
    errors.push('-presetVirtualDevice=false requires -shareDevCount=1');
  }
  // 5. hotReset (hot-reset.md §1.2: mode 1, removed upstream in 2026-05, is restored here)
  if (![-1, 0, 1, 2].includes(flags.hotReset)) {
    errors.push(`${where('hotReset')} must be -1, 0, 1 or 2`);
  }
  // 6. (BuildScene: always "center" here) 7. linkdownTimeout 8. thirdPartyScanDelay 9. deviceResetTimeout
  inRange('linkdownTimeout');
  inRange('thirdPartyScanDelay');
  inRange('deviceResetTimeout');
  // 10. shareDevCount range and soft-share rules (upstream main.go checkShareDevFeatureParam and
  // checkSoftShareDevFeatureParam; the oversell ratio is range-checked always, upstream only with the folder set)
  inRange('shareDevCount');
  if (flags.shareDevCount > 1 && flags.softShareDevConfigDir === '' && flags.volcanoType) {
    errors.push('-shareDevCount > 1 without -softShareDevConfigDir requires -volcanoType=false');
  }
  inRange('softShareCoreScaling');
  if (flags.softShareDevConfigDir !== '') {
    if (!path.isAbsolute(flags.softShareDevConfigDir)) {
      errors.push(`${where('softShareDevConfigDir')} must be an absolute path`);
    }
    if (flags.shareDevCount !== 100) errors.push('-softShareDevConfigDir requires -shareDevCount=100');
    if (!flags.volcanoType) errors.push('-softShareDevConfigDir requires -volcanoType=true');
  }
  // Removed upstream flags: upstream's old checks still apply (a value it refused is refused).
  inRange('cacheExpirePeriod');
  for (const n of FLAG_NAMES) {
    const def: FlagDef = AGENT_FLAGS[n];
    if (def.oneOf && !def.oneOf.includes(flags[n] as string)) {
      errors.push(`${where(n)} must be one of ${def.oneOf.map((v) => JSON.stringify(v)).join(', ')}`);
    }
  }
  // Ours (architecture §4).
  inRange('linkQueryInterval');
  inRange('kubeletWaitTimeout');
  inRange('resetTimePercent');
  for (const n of [
    'kubeletDir',
    'podResourcesSocket',
    'hccnTool',
    'faultCodeFile',
    'faultCustomizationFile',
    'switchFaultCodeFile',
    'stateDir',
    'devDir',
    'sysDir',
    'hostRoot',
    'hangDetectionConfigFile',
    'nameCustomizationFile',
    'dpuConfigFile',
    'kubeletPluginsDir',
    'kubeletRegistryDir',
    'cdiDir',
  ] as const) {
    if (!path.isAbsolute(flags[n])) errors.push(`${where(n)} must be an absolute path`);
  }
  // DRA and CDI (issue [DRA]): the device plugin's CDI answer needs the device plugin, static devices and the
  // device specs it replaces (not the ascend-docker variables, not vNPUs created at Allocate)
  if (flags.cdiDevicePlugin) {
    if (flags.deviceApi === 'dra') errors.push('-cdiDevicePlugin=true requires -deviceApi=plugin or both');
    if (!flags.presetVirtualDevice) errors.push('-cdiDevicePlugin=true requires -presetVirtualDevice=true');
    if (env.ASCEND_DOCKER_RUNTIME === 'True') {
      errors.push('-cdiDevicePlugin=true conflicts with ASCEND_DOCKER_RUNTIME=True (environment variables only, C.4)');
    }
  }
  // dynamic vNPU destroys every vNPU no pod's annotation names (spec D.2 step 1): DRA's partitions among them
  if (flags.deviceApi === 'both' && flags.draPartitions && !flags.presetVirtualDevice) {
    errors.push(
      '-deviceApi=both with -draPartitions=true requires -presetVirtualDevice=true (or -draPartitions=false)',
    );
  }
  for (const n of ['kubeconfig', 'dcmiLibrary', 'switchLibrary'] as const) {
    if (flags[n] !== '' && !path.isAbsolute(flags[n])) errors.push(`${where(n)} must be an absolute path`);
  }
  const addressProblem = flags.metricsAddress === '' ? undefined : listenAddressProblem(flags.metricsAddress);
  if (addressProblem !== undefined) {
    errors.push(`${where('metricsAddress')} must be ${LISTEN_ADDRESS_RULE}, or "" to disable: ${addressProblem}`);
  }

  // Features not built yet: accepted at their default only.
  for (const n of FLAG_NAMES) {
    const def: FlagDef = AGENT_FLAGS[n];
    const already = errors.some((e) => e.startsWith(where(n)));
    if (def.support === 'not-yet' && flags[n] !== def.def && !already) {
      errors.push(
        `${where(n)}: ${def.feature ?? n} is not supported yet (only the default ${JSON.stringify(def.def)} is accepted)`,
      );
    }
  }

  // Environment (A.1).
  const nodeName = env.NODE_NAME ?? '';
  if (options.requireNodeName ?? true) {
    if (nodeName === '') errors.push('NODE_NAME is not set (the node name is mandatory)');
    else if (nodeName.length > 230) errors.push(`NODE_NAME is ${nodeName.length} characters long, over 230`);
    else if (!DNS_NAME_PATTERN.test(nodeName)) {
      errors.push(`NODE_NAME "${nodeName}" is not a valid node name (lower-case DNS subdomain)`);
    }
  }
  const podName = env.HOSTNAME;
  if (podName !== undefined && (podName.length > 253 || !DNS_NAME_PATTERN.test(podName))) {
    errors.push(`HOSTNAME "${podName}" is not a valid pod name (lower-case DNS subdomain, ≤ 253 characters)`);
  }
  let kubeletPort = 10250;
  if (env.KUBELET_PORT !== undefined) {
    const p = /^\d+$/.test(env.KUBELET_PORT) ? Number(env.KUBELET_PORT) : NaN;
    if (!(p >= 0 && p <= 65535)) errors.push(`KUBELET_PORT "${env.KUBELET_PORT}" must be a number in [0, 65535]`);
    else kubeletPort = p;
  }
  if (errors.length > 0) return { ok: false, errors };

  // Accepted and ignored: one warning per deprecated flag that was given (flag or environment).
  for (const n of FLAG_NAMES) {
    const def: FlagDef = AGENT_FLAGS[n];
    if (def.support === 'deprecated' && sources[n] !== 'default') {
      warnings.push(`${where(n)}: deprecated upstream flag, ignored (${def.deprecation ?? 'no effect here'})`);
    }
  }

  const config: AgentConfig = Object.freeze({
    flags: Object.freeze(flags),
    sources: Object.freeze(sources as AgentConfig['sources']),
    nodeName,
    ...(podName !== undefined ? { podName } : {}),
    ...(env.HOST_IP !== undefined ? { hostIp: env.HOST_IP } : {}),
    kubeletPort,
    ascendDockerRuntime: env.ASCEND_DOCKER_RUNTIME === 'True',
  });
  return { ok: true, version: false, help: false, command, commandArgs, config, warnings };
}

/** `-name`, or `--name` for the dashed upstream names (`--enable-healthz`). */
function flagSpelling(n: AgentFlagName): string {
  return n.includes('-') ? `--${n}` : `-${n}`;
}

/** The effective configuration as one flat object, for the single start-up log line. */
export function effectiveConfig(config: AgentConfig): Record<string, unknown> {
  const setBy: Record<string, ValueSource> = {};
  for (const n of FLAG_NAMES) if (config.sources[n] !== 'default') setBy[n] = config.sources[n];
  return {
    ...config.flags,
    nodeName: config.nodeName,
    podName: config.podName,
    hostIp: config.hostIp,
    kubeletPort: config.kubeletPort,
    ascendDockerRuntime: config.ascendDockerRuntime,
    setBy,
  };
}

/** Usage text generated from the table (Go `flag`-style). */
export function agentUsage(): string {
  const lines = [
    'Usage: ascend-npu-agent [flags] [simulate [--scenario FILE]]',
    '',
    'Flags (Go syntax: -name=value, -name value, --name=value; booleans may be bare).',
    'Every flag is mirrored by the environment variable shown; the flag wins.',
    '',
  ];
  for (const n of FLAG_NAMES) {
    const def: FlagDef = AGENT_FLAGS[n];
    const range = def.min !== undefined || def.max !== undefined ? ` ${rangeText(def)}` : '';
    const note =
      def.support === 'not-yet'
        ? ' (not supported yet: default only)'
        : def.support === 'deprecated'
          ? ' (deprecated: accepted and ignored)'
          : '';
    lines.push(
      `  ${flagSpelling(n)} ${def.kind}  (default ${JSON.stringify(def.def)}${range}, env ${agentEnvName(n)})`,
    );
    lines.push(`        ${def.help}${note}`);
  }
  return `${lines.join('\n')}\n`;
}
