/**
 * Flags of `ascend-fault-center` (architecture §4): Go flag syntax (`-name=value`, `-name value`, `--name=value`,
 * bare booleans), every flag mirrored by `ASCEND_FAULT_CENTER_<UPPER_SNAKE>` (the flag wins). Pure.
 */
import {
  LISTEN_ADDRESS_RULE,
  MAX_LISTEN_ADDRESS_CHARS,
  listenAddressProblem,
} from '../observability/listen-address.js';

/** A flag definition. */
interface FlagDef {
  readonly type: 'string' | 'bool' | 'int';
  readonly def: string;
  readonly help: string;
  readonly min?: number;
  readonly max?: number;
}

/** All flags. */
export const FAULT_CENTER_FLAGS = {
  kubeconfig: {
    type: 'string',
    def: '',
    help: 'kubeconfig file (default: in-cluster, else $KUBECONFIG, else ~/.kube/config)',
  },
  grpcAddress: { type: 'string', def: ':8899', help: 'address of the PubFault gRPC service' },
  metricsAddress: {
    type: 'string',
    def: ':9465',
    help: `/metrics, /healthz, /readyz: ${LISTEN_ADDRESS_RULE} ("" disables)`,
  },
  publicFaultConfig: { type: 'string', def: '', help: 'public-fault level/sender file (default: the packaged one)' },
  stateDir: { type: 'string', def: '/var/lib/ascend-fault-center', help: 'local cache of the persisted state' },
  leaseName: { type: 'string', def: 'ascend-fault-center', help: 'Lease of the leader election' },
  leaseNamespace: { type: 'string', def: 'cluster-system', help: 'namespace of the Lease and the state ConfigMap' },
  identity: { type: 'string', def: '', help: 'holder identity (default: $HOSTNAME)' },
  countJoblessFaults: {
    type: 'bool',
    def: 'false',
    help: 'count faults on NPUs without a job directly (RFC); false = upstream: ignore them',
  },
  leaseDurationSeconds: { type: 'int', def: '15', min: 1, max: 3600, help: 'Lease validity without renewal' },
  leaseRenewDeadlineMs: { type: 'int', def: '10000', min: 100, max: 3_600_000, help: 'leader steps down after this' },
  leaseRetryPeriodMs: { type: 'int', def: '2000', min: 10, max: 600_000, help: 'period of Lease attempts' },
  manualTickMs: { type: 'int', def: '15000', min: 10, max: 3_600_000, help: 'period of the manual-info step (§1.6)' },
  cycleMs: { type: 'int', def: '1000', min: 10, max: 60_000, help: 'period of the processing cycle (§0.2)' },
  logLevel: { type: 'string', def: 'info', help: 'trace, debug, info, warn, error' },
} as const satisfies Record<string, FlagDef>;

export type FlagName = keyof typeof FAULT_CENTER_FLAGS;

/** The parsed values. */
export type FaultCenterFlags = {
  [K in FlagName]: (typeof FAULT_CENTER_FLAGS)[K]['type'] extends 'bool'
    ? boolean
    : (typeof FAULT_CENTER_FLAGS)[K]['type'] extends 'int'
      ? number
      : string;
};

/** A bad flag or environment value (exit status 2). */
export class FlagError extends Error {
  override name = 'FlagError';
}

/** The environment name of a flag. */
export function envName(flag: string): string {
  return `ASCEND_FAULT_CENTER_${flag.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()}`;
}

function convert(name: FlagName, raw: string, source: string): string | number | boolean {
  const d: FlagDef = FAULT_CENTER_FLAGS[name];
  if (d.type === 'string') return raw;
  if (d.type === 'bool') {
    // Go strconv.ParseBool
    if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(raw)) return true;
    if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(raw)) return false;
    throw new FlagError(`invalid boolean value "${raw}" for ${source}`);
  }
  if (!/^[-+]?\d+$/.test(raw)) throw new FlagError(`invalid integer value "${raw}" for ${source}`);
  const n = Number(raw);
  if ((d.min !== undefined && n < d.min) || (d.max !== undefined && n > d.max)) {
    throw new FlagError(`${source}=${raw} is out of range [${d.min}, ${d.max}]`);
  }
  return n;
}

/** Parses argv and the environment. Throws {@link FlagError}. */
export function parseFaultCenterFlags(argv: readonly string[], env: NodeJS.ProcessEnv): FaultCenterFlags {
  const values: Record<string, string | number | boolean> = {};
  /** Where each value came from, for the errors of the checks below: `-name` or the environment variable. */
  const source: Record<string, string> = {};
  for (const name of Object.keys(FAULT_CENTER_FLAGS) as FlagName[]) {
    const e = env[envName(name)];
    source[name] = e !== undefined ? envName(name) : `-${name}`;
    values[name] = convert(name, e ?? FAULT_CENTER_FLAGS[name].def, source[name]);
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const m = /^--?([A-Za-z][A-Za-z0-9]*)(?:=(.*))?$/s.exec(arg);
    if (m === null) throw new FlagError(`unexpected argument "${arg}"`);
    const name = m[1]!;
    if (!(name in FAULT_CENTER_FLAGS)) throw new FlagError(`flag provided but not defined: -${name}`);
    const def: FlagDef = FAULT_CENTER_FLAGS[name as FlagName];
    let raw = m[2];
    if (raw === undefined) {
      if (def.type === 'bool') raw = 'true';
      else if (i + 1 < argv.length) raw = argv[++i]!;
      else throw new FlagError(`flag needs an argument: -${name}`);
    }
    source[name] = `-${name}`;
    values[name] = convert(name as FlagName, raw, `-${name}`);
  }
  if (!['trace', 'debug', 'info', 'warn', 'error'].includes(values.logLevel as string)) {
    throw new FlagError(`invalid -logLevel "${String(values.logLevel)}"`);
  }
  // The one listen-address rule of both programs (src/observability/listen-address.ts), checked here so that a bad
  // address is a flag error (exit 2) before anything starts.
  const metrics = values.metricsAddress as string;
  const problem = metrics === '' ? undefined : listenAddressProblem(metrics);
  if (problem !== undefined) {
    throw new FlagError(
      `${source.metricsAddress}=${metrics.slice(0, MAX_LISTEN_ADDRESS_CHARS)} must be ${LISTEN_ADDRESS_RULE}, or "" to disable: ${problem}`,
    );
  }
  return values as FaultCenterFlags;
}

/** The help text of the flags. */
export function flagsHelp(): string {
  return Object.entries(FAULT_CENTER_FLAGS)
    .map(
      ([n, d]) =>
        `  -${n} ${d.type === 'bool' ? '' : `<${d.type}> `}(default ${JSON.stringify(d.def)}; env ${envName(n)})\n      ${d.help}`,
    )
    .join('\n');
}
