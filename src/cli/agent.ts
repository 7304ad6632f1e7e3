#!/usr/bin/env node
/**
 * `ascend-npu-agent`: the node agent (composition in `src/agent/run-agent.ts`) and `simulate`, the demo on the mock
 * library with the embedded kubelet simulator and Kubernetes API stand-in (`src/sim/simulate.ts`).
 *
 * Exit statuses (architecture §4): 0 stopped by SIGTERM/SIGINT; 2 bad flag, environment or configuration; 3 the
 * DCMI library is unusable; 4 a start-up wait ran out (kubelet folder, device nodes); 1 anything unexpected.
 */
import { pino, type Logger as PinoLogger } from 'pino';
import { AgentStartError, EXIT, runAgent, type AgentHandle } from '../agent/run-agent.js';
import { LogFileError, createLogger } from '../observability/logger.js';
import { agentUsage, effectiveConfig, parseAgentArgs } from './agent-flags.js';
import { packageVersion } from './common.js';

const NAME = 'ascend-npu-agent';

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
  const config = args.config!;
  let log: PinoLogger;
  try {
    log = createLogger({ logLevel: config.flags.logLevel, logFile: config.flags.logFile });
  } catch (err) {
    fail(err instanceof LogFileError ? err.message : `cannot create the logger: ${String(err)}`);
    return EXIT.BAD_CONFIG;
  }
  for (const w of args.warnings) log.warn({ warning: w }, 'flags and environment');
  log.info({ version: packageVersion(), config: effectiveConfig(config) }, 'effective configuration');

  let handle: AgentHandle | undefined;
  let resolveStop!: (code: number) => void;
  const stopped = new Promise<number>((r) => (resolveStop = r));
  let signalled: string | undefined;
  const onSignal = (signal: string): void => {
    if (signalled) return;
    signalled = signal;
    log.info({ signal }, 'signal received');
    if (handle) void handle.stop().then(() => resolveStop(EXIT.OK));
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGHUP', () => {
    log.info('SIGHUP: re-registering with kubelet');
    handle?.reregister('SIGHUP');
  });

  try {
    handle = await runAgent(config, {
      logger: log,
      onFatal: (reason) => {
        log.fatal({ reason }, 'kubelet layer gave up');
        if (handle) void handle.stop().then(() => resolveStop(EXIT.FATAL));
      },
    });
  } catch (err) {
    const code = err instanceof AgentStartError ? err.exitCode : EXIT.FATAL;
    const text = err instanceof Error ? err.message : String(err);
    log.error({ exitCode: code, error: text }, 'start-up failed');
    await flushLogger(log);
    fail(text);
    return code;
  }
  if (signalled) void handle.stop().then(() => resolveStop(EXIT.OK));
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
