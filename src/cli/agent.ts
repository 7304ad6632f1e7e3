#!/usr/bin/env -S node --max-semi-space-size=1 --v8-pool-size=1
/**
 * `ascend-npu-agent`: the node agent (composition in `src/agent/run-agent.ts`) and `simulate`, the demo on the mock
 * library with the embedded kubelet simulator and Kubernetes API stand-in (`src/sim/simulate.ts`).
 *
 * V8 settings for a small daemon (issue [P] item 1; docs/operations.md "Memory"), on the `#!` line so that the image's
 * `ascend-npu-agent` and the DaemonSet's `command` run with them (`env -S`, coreutils ≥ 8.30): a young generation of
 * 1 MiB semi-spaces (V8's default grows to 16 MiB) and one V8 worker thread instead of one per core.
 *
 * Exit statuses (architecture §4): 0 stopped by SIGTERM/SIGINT; 2 bad flag, environment or configuration; 3 the
 * DCMI library is unusable; 4 a start-up wait ran out (kubelet folder, device nodes); 1 anything unexpected.
 *
 * Signals (issue [K] item 8): SIGTERM/SIGINT at any moment end the process within 5 s with status 0. The handlers
 * are installed before the composition root is loaded; the first signal aborts one `AbortSignal` that runAgent's
 * start-up waits follow (what was started is stopped in reverse order), or calls the running agent's bounded
 * `stop()`; a second signal aborts `hurry` (the shutdown stops waiting for the ConfigMap and Event queues); a last
 * resort exits 0 at {@link SHUTDOWN_BOUND_MS} whatever still runs.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { pino, type Logger as PinoLogger } from 'pino';
import type { AgentHandle } from '../agent/run-agent.js';
import { errorMessage } from '../core/errors.js';
import { LogFileError, createLogger, openRotatingLog } from '../observability/logger.js';
import { agentUsage, effectiveConfig, parseAgentArgs } from './agent-flags.js';
import { CODE_CACHE_CHANNEL } from './code-cache.js';
import { packageVersion } from './common.js';

const NAME = 'ascend-npu-agent';

/** Exit statuses of architecture §4 (the same as run-agent's `EXIT`, which is loaded later). */
const EXIT = { OK: 0, FATAL: 1, BAD_CONFIG: 2 } as const;

/** Last resort after the first signal: exit 0 even if the shutdown has not finished (its own bound is 4 s). */
const SHUTDOWN_BOUND_MS = 4700;

function fail(line: string): void {
  process.stderr.write(`${NAME}: ${line}\n`);
}

/** The pino destination while it still opens its file (sonic-boom `fd` −1): `process.exit` would then throw. */
function openingDestination(log: PinoLogger): { once(event: 'ready', f: () => void): void } | undefined {
  const dest = (log as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    { fd?: unknown; once?: unknown } | undefined;
  if (dest && dest.fd === -1 && typeof dest.once === 'function') {
    return dest as { once(event: 'ready', f: () => void): void };
  }
  return undefined;
}

async function flushLogger(log: PinoLogger): Promise<void> {
  const opening = openingDestination(log);
  if (opening) {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 1000);
      opening.once('ready', () => {
        clearTimeout(t);
        resolve();
      });
    });
  }
  return new Promise((resolve) => {
    const t = setTimeout(resolve, 1000);
    try {
      log.flush(() => {
        clearTimeout(t);
        resolve();
      });
    } catch {
      clearTimeout(t);
      resolve();
    }
  });
}

/** `simulate`, loaded on demand: the stand-in and client-node stay out of the agent's memory. */
async function simulate(argv: readonly string[]): Promise<number> {
  const { runSimulate } = await import('../sim/simulate.js');
  return runSimulate(argv, { out: process.stdout, err: process.stderr });
}

/** The signals received so far, before and after the logger exists. */
interface SignalState {
  readonly stop: AbortController;
  readonly hurry: AbortController;
  first: NodeJS.Signals | undefined;
  log: PinoLogger | undefined;
}

/** Installs the SIGTERM/SIGINT handlers (first: stop; second: hurry) and returns their shared state. */
function followSignals(): SignalState {
  const st: SignalState = {
    stop: new AbortController(),
    hurry: new AbortController(),
    first: undefined,
    log: undefined,
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (st.first === undefined) {
      st.first = signal;
      st.log?.info({ signal }, 'signal received; stopping');
      const last = setTimeout(() => {
        st.log?.warn({ signal, boundMs: SHUTDOWN_BOUND_MS }, 'shutdown still running at its bound; exiting now');
        const out = st.log ? flushLogger(st.log) : Promise.resolve();
        void out.then(() => process.exit(EXIT.OK));
      }, SHUTDOWN_BOUND_MS);
      last.unref();
      st.stop.abort(signal);
      return;
    }
    if (st.hurry.signal.aborted) return;
    st.log?.warn({ signal }, 'second signal: stopping without waiting for the ConfigMap and Event queues');
    st.hurry.abort(signal);
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  return st;
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'simulate') return simulate(argv.slice(1));

  const args = parseAgentArgs(argv, process.env);
  if (!args.ok) {
    for (const e of args.errors) fail(e);
    fail('see --help');
    return EXIT.BAD_CONFIG;
  }
  if (args.version) {
    process.stdout.write(`${NAME} ${packageVersion()}\n`);
    return EXIT.OK;
  }
  if (args.help) {
    process.stdout.write(agentUsage());
    return EXIT.OK;
  }
  if (args.command === 'simulate') return simulate(args.commandArgs);
  const signals = followSignals(); // before the composition root is loaded (≈ 0.3 s of imports)
  const config = args.config!;
  let log: PinoLogger | undefined;
  try {
    const { logFile, maxBackups, maxAge } = config.flags;
    // spec A.3: rotated at 20 MiB, -maxBackups files kept, none older than -maxAge days (issue [J] item 4)
    const file =
      logFile === ''
        ? undefined
        : await openRotatingLog({
            file: logFile,
            maxBackups,
            maxAgeDays: maxAge,
            onProblem: (text) => (log ? log.warn({ logFile }, text) : fail(text)),
          });
    log = createLogger({
      logLevel: config.flags.logLevel,
      logFile,
      ...(file ? { destination: file.destination } : {}),
    });
  } catch (err) {
    fail(err instanceof LogFileError ? err.message : `cannot create the logger: ${String(err)}`);
    return EXIT.BAD_CONFIG;
  }
  signals.log = log;
  if (signals.first !== undefined) log.info({ signal: signals.first }, 'signal received; stopping');
  for (const w of args.warnings) log.warn({ warning: w }, 'flags and environment');
  log.info({ version: packageVersion(), config: effectiveConfig(config) }, 'effective configuration');

  let handle: AgentHandle | undefined;
  let resolveStop!: (code: number) => void;
  const stopped = new Promise<number>((r) => (resolveStop = r));
  let fatal = false;
  process.on('SIGHUP', () => {
    log.info('SIGHUP: re-registering with kubelet');
    handle?.reregister('SIGHUP');
  });

  // the bundle compiles the composition root from a V8 code cache; whether V8 took it (docs/operations.md "Start-up")
  const onCodeCache = (outcome: unknown): void => log.debug({ codeCache: outcome }, 'composition root compiled');
  subscribe(CODE_CACHE_CHANNEL, onCodeCache);
  const { AgentStartError, AgentStoppedError, runAgent } = await import('../agent/run-agent.js');
  unsubscribe(CODE_CACHE_CHANNEL, onCodeCache);
  try {
    handle = await runAgent(config, {
      logger: log,
      signal: signals.stop.signal,
      hurry: signals.hurry.signal,
      onFatal: (reason) => {
        log.fatal({ reason }, 'kubelet layer gave up');
        fatal = true;
        if (handle) void handle.stop().then(() => resolveStop(EXIT.FATAL));
      },
    });
  } catch (err) {
    if (err instanceof AgentStoppedError) {
      log.info({ signal: signals.first, phase: err.phase }, 'stopped by a signal');
      await flushLogger(log);
      return EXIT.OK;
    }
    const code = err instanceof AgentStartError ? err.exitCode : EXIT.FATAL;
    const text = errorMessage(err);
    log.error({ exitCode: code, error: text }, 'start-up failed');
    await flushLogger(log);
    fail(text);
    return code;
  }
  const running = handle;
  const stopOnSignal = (): void => {
    void running.stop().then(() => {
      if (!fatal) log.info({ signal: signals.first }, 'stopped by a signal');
      resolveStop(fatal ? EXIT.FATAL : EXIT.OK);
    });
  };
  if (signals.stop.signal.aborted) stopOnSignal();
  else signals.stop.signal.addEventListener('abort', stopOnSignal, { once: true });
  const code = await stopped;
  await flushLogger(log);
  return code;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exit(code);
  },
  (err: unknown) => {
    fail(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(EXIT.FATAL);
  },
);
