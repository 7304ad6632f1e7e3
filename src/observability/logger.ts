/**
 * The one logger of both programs (spec A.3, architecture §4, issue [H] item 5): JSON lines through pino, one format
 * for the agent and the fault center — `{"level":"info","time":"<ISO 8601 UTC>","pid":N,"name":"<program>",
 * "msg":"...", ...fields}`, children add their fields (`component`, `feature`, ...). The agent's lines go to stdout
 * when `-logFile` is "" (simulate, tests), else are appended to the file (its folder is created); the fault
 * center's go to stdout. Rotation by size with `-maxBackups`/`-maxAge` is not built yet: the flags are validated
 * and logged, and rotation is left to the node's logrotate (copytruncate) meanwhile.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';

/** A pino level name (the fault center's `-logLevel` takes these, but `fatal`). */
export type LogLevelName = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/** Spec A.1 `-logLevel` → pino level. */
export function pinoLevel(logLevel: number): 'debug' | 'info' | 'warn' | 'error' | 'fatal' {
  if (logLevel <= -1) return 'debug';
  if (logLevel === 0) return 'info';
  if (logLevel === 1) return 'warn';
  if (logLevel === 2) return 'error';
  return 'fatal';
}

export class LogFileError extends Error {
  override readonly name = 'LogFileError';
}

/**
 * Spec A.3: when not root, the log file (or its folder when the file does not exist yet) must be owned by the
 * process uid and gid. Throws {@link LogFileError} with the path and owner.
 */
export function checkLogFileOwnership(file: string, ids = { uid: process.getuid?.(), gid: process.getgid?.() }): void {
  if (ids.uid === undefined || ids.uid === 0) return;
  const target = fs.existsSync(file) ? file : path.dirname(file);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(target);
  } catch {
    return; // the folder will be created by us, so it will be ours
  }
  if (st.uid !== ids.uid || (ids.gid !== undefined && st.gid !== ids.gid)) {
    throw new LogFileError(
      `${target} is owned by ${st.uid}:${st.gid}, not by the agent's ${ids.uid}:${ids.gid ?? '?'} (spec A.3)`,
    );
  }
}

export interface LoggerOptions {
  /** The agent's `-logLevel` -1..3 (spec A.1, mapped by {@link pinoLevel}), or a level name (the fault center's). */
  readonly logLevel: number | LogLevelName;
  /** `-logFile`; "" = stdout. */
  readonly logFile: string;
  /** Program name in every line. */
  readonly name?: string;
  /** Explicit destination (tests). */
  readonly destination?: DestinationStream;
}

/** Creates the root logger; children carry a `component` field. Throws {@link LogFileError}. */
export function createLogger(options: LoggerOptions): PinoLogger {
  let dest: DestinationStream;
  if (options.destination) dest = options.destination;
  else if (options.logFile === '') dest = pino.destination({ dest: 1, sync: false });
  else {
    checkLogFileOwnership(options.logFile);
    try {
      fs.mkdirSync(path.dirname(options.logFile), { recursive: true, mode: 0o750 });
      dest = pino.destination({ dest: options.logFile, sync: false, mkdir: true });
    } catch (err) {
      throw new LogFileError(`cannot open the log file ${options.logFile}: ${(err as Error).message}`);
    }
  }
  return pino(
    {
      name: options.name ?? 'ascend-npu-agent',
      level: typeof options.logLevel === 'number' ? pinoLevel(options.logLevel) : options.logLevel,
      timestamp: pino.stdTimeFunctions.isoTime,
      base: { pid: process.pid },
      formatters: { level: (label) => ({ level: label }) },
    },
    dest,
  );
}
