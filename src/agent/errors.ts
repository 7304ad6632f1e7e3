/**
 * How the agent's start-up ends when it does not run: the exit statuses of architecture §4, the start-up failure
 * that carries one of them, and the stop by a signal during start-up (exit 0).
 */

/** Exit statuses of architecture §4. */
export const EXIT = { OK: 0, FATAL: 1, BAD_CONFIG: 2, DCMI_UNUSABLE: 3, WAIT_TIMEOUT: 4 } as const;

/** A start-up failure with the exit status the CLI must use; the error that caused it, if any, is its `cause`. */
export class AgentStartError extends Error {
  override readonly name = 'AgentStartError';
  constructor(
    message: string,
    readonly exitCode: number,
    options?: { readonly cause?: unknown },
  ) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
  }
}

/**
 * The agent was asked to stop (its `deps.signal` aborted) before start-up completed: everything started was stopped
 * again. Not a failure: the CLI exits {@link EXIT}.OK (architecture §4).
 */
export class AgentStoppedError extends Error {
  override readonly name = 'AgentStoppedError';
  readonly exitCode = EXIT.OK;
  constructor(
    /** The start-up step that was running, e.g. `kubelet directory and registration`. */
    readonly phase: string,
    /** The abort reason (the CLI passes the signal's name). */
    readonly reason: string | undefined,
  ) {
    super(`stopped${reason !== undefined ? ` by ${reason}` : ''} during start-up (${phase})`);
  }
}

/** A start-up wait ended by the signal; `runAgent` turns it into {@link AgentStoppedError}. */
export class StartAborted extends Error {
  override readonly name = 'StartAborted';
}
