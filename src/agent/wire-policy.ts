/**
 * Step 3: the fault policy, an input of the store — the files (`-faultCodeFile`, `-faultCustomizationFile`; the
 * packaged copies when unusable), then the fault-config ConfigMap over them when there is an API server (spec F.8).
 * The state layer subscribes the store to it (`store.setPolicy`).
 */
import path from 'node:path';
import { FileFaultConfigSource, type FaultConfigSource } from '../config/fault-config-source.js';
import { PROJECT_ROOT } from '../core/paths.js';
import { FaultConfigConfigMapSource } from '../kube/fault-config-configmap.js';
import type { AgentBase } from './context.js';
import { untilAborted, withTimeout } from './lifecycle.js';
import type { ApiLayer } from './wire-api.js';

/** Opens the fault files (every flag's file, else the packaged one); registers their close. */
export async function openFaultFiles(ctx: AgentBase): Promise<FileFaultConfigSource> {
  const { flags, log } = ctx;
  const files = await FileFaultConfigSource.open({
    faultCodeFile: flags.faultCodeFile,
    customizationFile: flags.faultCustomizationFile,
    fallbackFaultCodeFile: path.join(PROJECT_ROOT, 'faultCode.json'),
    fallbackCustomizationFile: path.join(PROJECT_ROOT, 'faultCustomization.json'),
    log: (level, line) => log[level]({ source: 'fault-config' }, line),
  });
  ctx.cleanups.push('fault-config files', () => files.close());
  return files;
}

/** The policy source: the fault-config ConfigMap over the files (its first read bounded), or the files alone. */
export async function wirePolicy(
  ctx: AgentBase,
  files: FileFaultConfigSource,
  api: ApiLayer | undefined,
): Promise<FaultConfigSource> {
  if (!api) return files;
  const cm = new FaultConfigConfigMapSource({
    api: api.core,
    watch: api.watch,
    files,
    logger: ctx.log,
    events: api.events,
    backoff: api.backoff,
  });
  ctx.cleanups.push('fault-config configmap', () => cm.close());
  ctx.steps.step('fault-config ConfigMap read');
  await untilAborted(withTimeout(cm.start(), ctx.apiTimeoutMs, undefined), ctx.signal);
  return cm;
}
