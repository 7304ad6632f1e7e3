/**
 * What validation found, in one shape for the log, the config source report and `npuctl config check`.
 */

/** Status of a configuration rule or entry (architecture §7). */
export type RuleStatus = 'accepted' | 'ignored' | 'defaulted';

/**
 * One finding about a configuration file. `ignored` and `defaulted` change what the agent does with the file
 * (exit 1 of `npuctl config check`); `warning` does not.
 */
export interface ConfigProblem {
  kind: 'ignored' | 'defaulted' | 'warning';
  /** JSON path of the value, e.g. `$.FaultFrequency[2].Times`. */
  path: string;
  /** The value as written (JSON text), when there is one. */
  value?: string;
  reason: string;
  /** Spec section, e.g. `F.3`. */
  spec: string;
}

/** Thrown by the file readers for a document that cannot be used at all (not JSON, wrong JSON type, too big). */
export class ConfigError extends Error {
  constructor(
    message: string,
    /** One line per problem: path, value and rule. */
    readonly details: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ConfigError';
  }
}

/**
 * Largest configuration document accepted (each fault file, and each key of the `mindx-dl-fault-config`
 * ConfigMap): 1 MiB, the most a ConfigMap can hold, so a file mounted from one, or a key of one, always fits;
 * the shipped faultCode.json is 9.5 KB. The engine-state limit is derived from it (`MAX_STATE_BYTES`), and the
 * agent stays within its 256 MiB DaemonSet limit with both files at this size (docs/fault-engine.md "Limits and
 * durability", bench/hostile/state.ts).
 */
export const MAX_CONFIG_BYTES = 1024 * 1024;
