#!/usr/bin/env node
/**
 * `ascend-fault-center`: composition root of the cluster fault center (architecture §1, §4): flags, logger,
 * metrics, Kubernetes client, the public-fault service, the Lease-elected {@link FaultCenter}.
 *
 * Signals (architecture §4 "0 stopped by a signal", issue [K] item 8): SIGTERM/SIGINT at any moment exit 0 within
 * 5 s. The handlers are installed before client-node and the fault center are loaded (≈ 0.5 s of imports); the stop
 * (Lease handed over, informers and services stopped) is bounded by {@link STOP_BOUND_MS}, since client-node's calls
 * have no timeout of their own and an API server that does not answer would hold it forever; a second signal exits
 * at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import type { FaultCenter } from '../cluster/fault-center.js';
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

/**
 * The API access of the fault center: `-kubeconfig`, else the in-cluster service account, else `$KUBECONFIG`, else
 * `~/.kube/config`. client-node's `loadFromDefault` alone falls back to `http://localhost:8080` when it finds
 * nothing, which client-node then refuses at every request ("HTTP protocol is not allowed when skipTLSVerify is not
 * set or false", retried every 2 s forever): here that, and a plain-http server without `insecure-skip-tls-verify`,
 * is a {@link KubeconfigError} naming what was tried.
 */
function kubeConfigOf(
  m: typeof k8s,
  flags: FaultCenterFlags,
  env: NodeJS.ProcessEnv,
  home: string,
): { kc: k8s.KubeConfig; from: string } {
  const tried: string[] = [];
  const kc = new m.KubeConfig();
  let from: string | undefined;
  const load = (what: string, f: () => void): void => {
    try {
      f();
    } catch (e) {
      throw new KubeconfigError(`${what}: ${(e as Error).message.split('\n')[0]}`);
    }
    from = what;
  };
  if (flags.kubeconfig !== '') load(`-kubeconfig ${flags.kubeconfig}`, () => kc.loadFromFile(flags.kubeconfig));
  else tried.push('-kubeconfig: not given');
  if (from === undefined) {
    if (!env.KUBERNETES_SERVICE_HOST || !env.KUBERNETES_SERVICE_PORT) {
      tried.push('in-cluster service account: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT not set');
    } else if (!fs.existsSync(SERVICE_ACCOUNT_TOKEN)) {
      tried.push(`in-cluster service account: ${SERVICE_ACCOUNT_TOKEN} not mounted`);
    } else load('in-cluster service account', () => kc.loadFromCluster());
  }
  if (from === undefined) {
    const files = (env.KUBECONFIG ?? '').split(path.delimiter).filter((f) => f !== '');
    if (files.length === 0) tried.push('$KUBECONFIG: not set');
    // client-node's own merge of the $KUBECONFIG files (loadFromDefault reads $KUBECONFIG first when it is set)
    else load(`$KUBECONFIG ${files.join(path.delimiter)}`, () => kc.loadFromDefault());
  }
  if (from === undefined) {
    const file = path.join(home, '.kube', 'config');
    if (!fs.existsSync(file)) tried.push(`${file}: not found`);
    else load(file, () => kc.loadFromFile(file));
  }
  if (from === undefined) throw new KubeconfigError(`no kubeconfig: tried ${tried.join('; ')}`);
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) throw new KubeconfigError(`${from}: its current context names no cluster with a server`);
  if (cluster.server.startsWith('http://') && cluster.skipTLSVerify !== true) {
    throw new KubeconfigError(
      `${from}: server ${cluster.server} is plain http without insecure-skip-tls-verify: true (client-node refuses it)`,
    );
  }
  return { kc, from };
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
    m,
    { createLogger },
    prom,
    { FaultCenter, faultCenterReadiness },
    publicFault,
    { startObservabilityServer },
  ] = await Promise.all([
    import('node:os'),
    import('@kubernetes/client-node'),
    import('../observability/logger.js'),
    import('prom-client'),
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
  let kubeConfig: k8s.KubeConfig;
  try {
    const found = kubeConfigOf(m, flags, process.env, process.env.HOME ?? os.homedir());
    kubeConfig = found.kc;
    log.info({ from: found.from, server: kubeConfig.getCurrentCluster()?.server }, 'Kubernetes API client');
  } catch (e) {
    if (!(e instanceof KubeconfigError)) throw e;
    log.error({ error: e.message }, 'no usable kubeconfig');
    process.stderr.write(`ascend-fault-center: ${e.message}\n`);
    process.exitCode = 2;
    return;
  }
  const registry = new prom.Registry();
  prom.collectDefaultMetrics({ register: registry });
  // WIRING POINT of the public-fault service (issue [G] part 2): one instance, started and stopped with each
  // leadership term; its processor runs first in the chain (§0.2, §2.9).
  const publicFaults = publicFault.createPublicFaultService({
    kubeConfig,
    grpcAddress: flags.grpcAddress,
    configFile: flags.publicFaultConfig !== '' ? flags.publicFaultConfig : publicFault.PACKAGED_PUBLIC_FAULT_CONFIG,
    stateNamespace: flags.leaseNamespace,
    logger: log.child({ feature: 'public-fault' }),
    registry,
  });
  const center = new FaultCenter({
    kubeConfig,
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
