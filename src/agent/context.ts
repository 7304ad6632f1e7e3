/**
 * What every `wire-*.ts` takes: the configuration, the logger and clock, the stop signal, the named start-up steps
 * and the clean-up stack, and (from step 2 on) the metrics every layer reports into. The layers themselves talk to
 * each other only through the state store (docs/architecture.md).
 */
import type * as k8s from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { AgentConfig } from '../cli/agent-flags.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { AgentMetrics } from '../observability/metrics.js';
import type { CleanupStack, StartSteps } from './lifecycle.js';

/** The process environment (`LD_LIBRARY_PATH`, `KUBECONFIG`, in-cluster variables, `hccn_tool`'s env). */
export type Env = Readonly<Record<string, string | undefined>>;

/** The shared dependencies of the start-up, before the metrics exist. */
export interface AgentBase {
  readonly config: AgentConfig;
  readonly flags: AgentConfig['flags'];
  readonly env: Env;
  readonly log: Logger;
  readonly clock: Clock;
  /** Aborted when the agent must stop: every start-up wait ends at once. */
  readonly signal: AbortSignal | undefined;
  /** Bound of each start-up read from the API server: the kubelet path never waits longer. */
  readonly apiTimeoutMs: number;
  readonly steps: StartSteps;
  readonly cleanups: CleanupStack;
}

/** The shared dependencies of every layer's wiring. */
export interface AgentContext extends AgentBase {
  readonly metrics: AgentMetrics;
}

/** What the composition root takes from its environment (all optional but the logger; tests shorten the waits). */
export interface AgentDeps {
  /** The process environment (`LD_LIBRARY_PATH`, `KUBECONFIG`, in-cluster variables, `hccn_tool`'s env). */
  readonly env?: Env;
  /** Required: the logger created from `-logLevel`/`-logFile`. */
  readonly logger: Logger;
  readonly registry?: Registry;
  readonly clock?: Clock;
  /**
   * API server access through client-node: a KubeConfig, `null` for none; absent = the agent's own client
   * (`KubeClient`) on `-kubeconfig`, else in-cluster, else `$KUBECONFIG` (see `loadKube`).
   */
  readonly kubeConfig?: k8s.KubeConfig | null;
  /** Called when the kubelet layer gives up (15 consecutive failed sends). */
  readonly onFatal?: (reason: string) => void;
  /** Interval between `dcmi_init` attempts (default 10 s; upstream). */
  readonly dcmiInitRetryMs?: number;
  /** Deadline of the kubelet-directory wait and first registration (default `-kubeletWaitTimeout`, 300 s). */
  readonly kubeletWaitTimeoutMs?: number;
  /** Bound of each start-up read from the API server (default 3 s): the kubelet path never waits longer. */
  readonly apiStartupTimeoutMs?: number;
  /** Bound of the ConfigMap flush at shutdown (default 5 s). */
  readonly flushTimeoutMs?: number;
  /** Metrics from Node.js (process CPU, memory); default true. */
  readonly defaultMetrics?: boolean;
  /**
   * Aborted when the agent must stop (the CLI: SIGTERM/SIGINT). During start-up every wait ends at once and
   * `runAgent` rejects with `AgentStoppedError`; afterwards the caller calls `stop()`.
   */
  readonly signal?: AbortSignal;
  /** Aborted to stop without waiting any longer (the CLI: a second signal): the shutdown's waits end at once. */
  readonly hurry?: AbortSignal;
  /**
   * Bound of the whole `stop()` (default 4 s: the CLI exits within 5 s of a signal); the ConfigMap flush gets what is
   * left of it after a reserve for the rest, at most `flushTimeoutMs`.
   */
  readonly stopBudgetMs?: number;
}
