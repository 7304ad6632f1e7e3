#!/usr/bin/env node
/**
 * `ascend-fault-center`: composition root of the cluster fault center (architecture §1, §4): flags, logger,
 * metrics, Kubernetes client, the public-fault service, the Lease-elected {@link FaultCenter}.
 *
 * Signals (architecture §4 "0 stopped by a signal", issue [K] item 8): SIGTERM/SIGINT at any moment exit 0 within
 * 5 s. The handlers are installed before the fault center is loaded; the stop (Lease handed over, informers and
 * services stopped) is bounded by {@link STOP_BOUND_MS}, since an API server that does not answer (and, with a
 * kubeconfig only client-node serves, client-node's calls, which have no timeout of their own) would hold it; a
 * second signal exits at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import type { FaultCenter } from '../cluster/fault-center.js';
import type { ClusterKube } from '../cluster/kube.js';
import type { KubeAccess, KubeAccessSource, KubeClient } from '../kube/kube-client.js';
import type { FaultCenterFlags } from '../cluster/flags.js';
import type { Logger } from '../core/logger.js';
import type { LogLevelName } from '../observability/logger.js';
import { handleHelpAndVersion, packageVersion } from './common.js';

const HELP_HEAD = `Usage: ascend-fault-center [flags]

The cluster fault center: job-aware manual separation and public faults (one active replica via a Lease).

Flags (Go syntax: -name=value, -name value, --name=value, bare booleans):
`;

/** Bound of the orderly stop after a signal (the process then exits 0 anyway). */
const STOP_BOUND_MS = 4000;

/** What a signal has to stop; filled in as start-up proceeds. */
interface Running {
  signal: NodeJS.Signals | undefined;
  log: Logger | undefined;
  center: FaultCenter | undefined;
  http: { close(): Promise<void> } | undefined;
}

/** Installs the SIGTERM/SIGINT handlers: the first stops (bounded) and exits 0, a second exits 0 at once. */
function followSignals(): Running {
  const run: Running = { signal: undefined, log: undefined, center: undefined, http: undefined };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (run.signal !== undefined) {
      run.log?.warn({ signal }, 'second signal: exiting now');
      process.exit(0);
    }
    run.signal = signal;
    run.log?.info({ signal }, 'stopping');
    const bound = new Promise<'bound'>((r) => setTimeout(() => r('bound'), STOP_BOUND_MS).unref());
    const stopped = (run.center?.stop(true) ?? Promise.resolve()).then(
      () => 'stopped' as const,
      () => 'stopped' as const,
    );
    void Promise.race([stopped, bound]).then((how) => {
      if (how === 'bound') run.log?.warn({ boundMs: STOP_BOUND_MS }, 'stop not finished within its bound; exiting');
      void run.http?.close();
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  return run;
}

/** The service-account files of a pod (client-node's `loadFromCluster` reads them from here). */
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** No kubeconfig could be used: the message says every source tried and why each was not taken (exit 2). */
class KubeconfigError extends Error {
  override readonly name = 'KubeconfigError';
}

/** Where the access comes from: served by the kube layer's own client, or (`file`/`files`) by client-node. */
type Found =
  | { readonly kind: 'access'; readonly access: KubeAccess }
  | { readonly kind: 'clientNode'; readonly load: (kc: k8s.KubeConfig) => void; readonly reason: string };

/**
 * The API access of the fault center: `-kubeconfig`, else the in-cluster service account, else `$KUBECONFIG`, else
 * `~/.kube/config`. client-node's `loadFromDefault` alone falls back to `http://localhost:8080` when it finds
 * nothing, which client-node then refuses at every request ("HTTP protocol is not allowed when skipTLSVerify is not
 * set or false", retried every 2 s forever): here that, and a plain-http server without `insecure-skip-tls-verify`,
 * is a {@link KubeconfigError} naming what was tried.
 *
 * Issue [O] (start-up): the kube layer's own client reads the kubeconfig and serves the requests; client-node is
 * loaded only for what that client leaves to it (`exec`, `auth-provider`, `as`, `proxy-url`, and a `$KUBECONFIG`
 * of several files, which client-node merges).
 */
async function kubeOf(
  flags: FaultCenterFlags,
  env: NodeJS.ProcessEnv,
  home: string,
): Promise<{ kube: ClusterKube; from: string; reason?: string }> {
  const kc = await import('../kube/kube-client.js');
  const tried: string[] = [];
  let found: Found | undefined;
  let from: string | undefined;
  const load = (what: string, f: () => Found): void => {
    try {
      found = f();
    } catch (e) {
      throw new KubeconfigError(`${what}: ${(e as Error).message.split('\n')[0]}`);
    }
    from = what;
  };
  const file = (name: string) => (): Found => {
    let source: KubeAccessSource;
    try {
      source = kc.fromKubeconfigFile(name);
    } catch (e) {
      const m = (e as Error).message;
      throw new Error(m.startsWith(`${name}: `) ? m.slice(name.length + 2) : m, { cause: e });
    }
    return source.kind === 'access'
      ? { kind: 'access', access: source.access }
      : { kind: 'clientNode', load: (c) => c.loadFromFile(name), reason: source.reason };
  };
  if (flags.kubeconfig !== '') load(`-kubeconfig ${flags.kubeconfig}`, file(flags.kubeconfig));
  else tried.push('-kubeconfig: not given');
  if (from === undefined) {
    if (!env.KUBERNETES_SERVICE_HOST || !env.KUBERNETES_SERVICE_PORT) {
      tried.push('in-cluster service account: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT not set');
    } else if (!fs.existsSync(SERVICE_ACCOUNT_TOKEN)) {
      tried.push(`in-cluster service account: ${SERVICE_ACCOUNT_TOKEN} not mounted`);
    } else
      load('in-cluster service account', () => {
        const source = kc.loadKubeAccess('', {
          KUBERNETES_SERVICE_HOST: env.KUBERNETES_SERVICE_HOST,
          KUBERNETES_SERVICE_PORT: env.KUBERNETES_SERVICE_PORT,
        });
        if (source?.kind !== 'access') throw new Error('not an in-cluster access');
        return { kind: 'access', access: source.access };
      });
  }
  if (from === undefined) {
    const files = (env.KUBECONFIG ?? '').split(path.delimiter).filter((f) => f !== '');
    if (files.length === 0) tried.push('$KUBECONFIG: not set');
    else if (files.length === 1) load(`$KUBECONFIG ${files[0]}`, file(files[0]!));
    // client-node's own merge of the $KUBECONFIG files (loadFromDefault reads $KUBECONFIG first when it is set)
    else
      load(`$KUBECONFIG ${files.join(path.delimiter)}`, () => ({
        kind: 'clientNode',
        load: (c) => c.loadFromDefault(),
        reason: 'several $KUBECONFIG files',
      }));
  }
  if (from === undefined) {
    const f = path.join(home, '.kube', 'config');
    if (!fs.existsSync(f)) tried.push(`${f}: not found`);
    else load(f, file(f));
  }
  if (found === undefined || from === undefined) throw new KubeconfigError(`no kubeconfig: tried ${tried.join('; ')}`);
  const plainHttp = (server: string, skip: boolean | undefined): void => {
    if (server.startsWith('http://') && skip !== true) {
      throw new KubeconfigError(
        `${from}: server ${server} is plain http without insecure-skip-tls-verify: true (client-node refuses it)`,
      );
    }
  };
  if (found.kind === 'access') {
    plainHttp(found.access.server, found.access.insecureSkipTlsVerify);
    let client: KubeClient;
    try {
      client = new kc.KubeClient(found.access, { userAgent: 'ascend-fault-center' });
    } catch (e) {
      throw new KubeconfigError(`${from}: ${(e as Error).message}`);
    }
    const { builtInKube } = await import('../cluster/kube.js');
    return { kube: builtInKube(client), from };
  }
  const [m, { clientNodeKube }] = await Promise.all([
    import('@kubernetes/client-node'),
    import('../cluster/kube-client-node.js'),
  ]);
  const config = new m.KubeConfig();
  const what = from;
  const apply = found.load;
  try {
    apply(config);
  } catch (e) {
    throw new KubeconfigError(`${what}: ${(e as Error).message.split('\n')[0]}`);
  }
  const cluster = config.getCurrentCluster();
  if (!cluster?.server) throw new KubeconfigError(`${from}: its current context names no cluster with a server`);
  plainHttp(cluster.server, cluster.skipTLSVerify);
  return { kube: clientNodeKube(config), from, reason: found.reason };
}

async function main(): Promise<void> {
  const run = followSignals();
  const argv = process.argv.slice(2);
  const { FlagError, flagsHelp, parseFaultCenterFlags } = await import('../cluster/flags.js');
  if (handleHelpAndVersion(argv, 'ascend-fault-center', `${HELP_HEAD}${flagsHelp()}\n`)) return;
  let flags: FaultCenterFlags;
  try {
    flags = parseFaultCenterFlags(argv, process.env);
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    process.stderr.write(`ascend-fault-center: ${e.message}\n`);
    process.exitCode = 2;
    return;
  }
  const [
    os,
    { createLogger },
    prom,
    { collectNodeMetrics, EventLoopDelay },
    { FaultCenter, faultCenterReadiness },
    publicFault,
    { startObservabilityServer },
  ] = await Promise.all([
    import('node:os'),
    import('../observability/logger.js'),
    // the CommonJS module itself: a bundle's import() of it has only `default` (scripts/bundle-fault-center.ts)
    import('prom-client').then((m) => m.default),
    import('../observability/node-metrics.js'),
    import('../cluster/fault-center.js'),
    import('../cluster/public-fault/index.js'),
    import('../observability/http-server.js'),
  ]);
  // The agent's log format (src/observability/logger.ts): level names, ISO time, pid and the program's name.
  const log = createLogger({ logLevel: flags.logLevel as LogLevelName, logFile: '', name: 'ascend-fault-center' });
  run.log = log;
  if (run.signal !== undefined) log.info({ signal: run.signal }, 'stopping');
  const identity = flags.identity !== '' ? flags.identity : (process.env.HOSTNAME ?? os.hostname());
  log.info({ version: packageVersion(), config: { ...flags, identity } }, 'effective configuration');
  let kube: ClusterKube;
  try {
    const found = await kubeOf(flags, process.env, process.env.HOME ?? os.homedir());
    kube = found.kube;
    log.info(
      {
        from: found.from,
        server: kube.server,
        client: kube.client,
        ...(found.reason !== undefined ? { reason: found.reason } : {}),
      },
      'Kubernetes API client',
    );
  } catch (e) {
    if (!(e instanceof KubeconfigError)) throw e;
    log.error({ error: e.message }, 'no usable kubeconfig');
    process.stderr.write(`ascend-fault-center: ${e.message}\n`);
    process.exitCode = 2;
    return;
  }
  const registry = new prom.Registry();
  // prom-client's default series with one event-loop monitor at 500 ms, not prom-client's own at 10 ms (100
  // wake-ups a second of an idle center; src/observability/node-metrics.ts)
  collectNodeMetrics(registry, new EventLoopDelay());
  // WIRING POINT of the public-fault service (issue [G] part 2): one instance, started and stopped with each
  // leadership term; its processor runs first in the chain (§0.2, §2.9).
  const publicFaults = publicFault.createPublicFaultService({
    kube,
    grpcAddress: flags.grpcAddress,
    configFile: flags.publicFaultConfig !== '' ? flags.publicFaultConfig : publicFault.PACKAGED_PUBLIC_FAULT_CONFIG,
    stateNamespace: flags.leaseNamespace,
    logger: log.child({ feature: 'public-fault' }),
    registry,
  });
  const center = new FaultCenter({
    kube,
    identity,
    leaseName: flags.leaseName,
    leaseNamespace: flags.leaseNamespace,
    countJoblessFaults: flags.countJoblessFaults,
    logger: log,
    registry,
    stateDir: flags.stateDir === '' ? undefined : flags.stateDir,
    timings: {
      cycleMs: flags.cycleMs,
      releaseTickMs: flags.manualTickMs,
      leaseDurationSec: flags.leaseDurationSeconds,
      leaseRenewDeadlineMs: flags.leaseRenewDeadlineMs,
      leaseRetryPeriodMs: flags.leaseRetryPeriodMs,
    },
    extraServices: () => [publicFaults],
  });
  if (flags.metricsAddress !== '') {
    try {
      const http = await startObservabilityServer({
        address: flags.metricsAddress,
        registry,
        readiness: faultCenterReadiness(center),
      });
      run.http = http;
      log.info({ port: http.port }, 'metrics listening');
    } catch (e) {
      process.stderr.write(`ascend-fault-center: -metricsAddress: ${(e as Error).message}\n`);
      process.exitCode = 2;
      return;
    }
  }
  if (run.signal !== undefined) return; // the signal's handler closes the metrics server and exits
  run.center = center;
  center.start();
}

await main();
