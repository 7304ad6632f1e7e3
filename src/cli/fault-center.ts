#!/usr/bin/env node
/**
 * `ascend-fault-center`: composition root of the cluster fault center (architecture §1, §4): flags, logger,
 * metrics, Kubernetes client, the public-fault service, the Lease-elected {@link FaultCenter}.
 */
import os from 'node:os';
import * as k8s from '@kubernetes/client-node';
import { pino } from 'pino';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { FaultCenter } from '../cluster/fault-center.js';
import { createPublicFaultService, PACKAGED_PUBLIC_FAULT_CONFIG } from '../cluster/public-fault/index.js';
import { FlagError, flagsHelp, parseFaultCenterFlags, type FaultCenterFlags } from '../cluster/flags.js';
import { startHttpServer } from '../cluster/http-server.js';
import { handleHelpAndVersion } from './common.js';

const HELP = `Usage: ascend-fault-center [flags]

The cluster fault center: job-aware manual separation and public faults (one active replica via a Lease).

Flags (Go syntax: -name=value, -name value, --name=value, bare booleans):
${flagsHelp()}
`;

function kubeConfigOf(flags: FaultCenterFlags): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (flags.kubeconfig !== '') kc.loadFromFile(flags.kubeconfig);
  else kc.loadFromDefault();
  return kc;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (handleHelpAndVersion(argv, 'ascend-fault-center', HELP)) return;
  let flags: FaultCenterFlags;
  try {
    flags = parseFaultCenterFlags(argv, process.env);
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    process.stderr.write(`ascend-fault-center: ${e.message}\n`);
    process.exitCode = 2;
    return;
  }
  const log = pino({ level: flags.logLevel, base: { component: 'ascend-fault-center' } });
  const identity = flags.identity !== '' ? flags.identity : (process.env.HOSTNAME ?? os.hostname());
  log.info({ flags: { ...flags, identity } }, 'effective configuration');
  let kubeConfig: k8s.KubeConfig;
  try {
    kubeConfig = kubeConfigOf(flags);
  } catch (e) {
    process.stderr.write(`ascend-fault-center: kubeconfig: ${(e as Error).message}\n`);
    process.exitCode = 2;
    return;
  }
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // WIRING POINT of the public-fault service (issue [G] part 2): one instance, started and stopped with each
  // leadership term; its processor runs first in the chain (§0.2, §2.9).
  const publicFaults = createPublicFaultService({
    kubeConfig,
    grpcAddress: flags.grpcAddress,
    configFile: flags.publicFaultConfig !== '' ? flags.publicFaultConfig : PACKAGED_PUBLIC_FAULT_CONFIG,
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
  let http: Awaited<ReturnType<typeof startHttpServer>> | undefined;
  if (flags.metricsAddress !== '') {
    try {
      http = await startHttpServer(flags.metricsAddress, registry, () => center.ready);
      log.info({ port: http.port }, 'metrics listening');
    } catch (e) {
      process.stderr.write(`ascend-fault-center: -metricsAddress: ${(e as Error).message}\n`);
      process.exitCode = 2;
      return;
    }
  }
  center.start();
  const shutdown = (signal: string) => {
    log.info({ signal }, 'stopping');
    void center.stop(true).finally(() => {
      http?.server.close();
      process.exit(0);
    });
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

await main();
