/**
 * The one logger of both programs (spec A.3, architecture §4, issue [H] item 5): JSON lines through pino, one format
 * for the agent and the fault center — `{"level":"info","time":"<ISO 8601 UTC>","pid":N,"name":"<program>",
 * "msg":"...", ...fields}`, children add their fields (`component`, `feature`, ...). The agent's lines go to stdout
 * when `-logFile` is "" (simulate, tests), else to a rotating file ({@link openRotatingLog}); the fault center's go
 * to stdout.
 *
 * Rotation (spec A.3, issue [J] item 4): pino-roll writes `<name>.<n><ext>` beside `-logFile` and starts the next
 * number when a file reaches {@link LOG_ROTATE_BYTES} (20 MiB, fixed as upstream); `-logFile` itself is a symbolic
 * link to the file written now, so `tail -F <-logFile>` follows the rotation. After each roll (and at start) the
 * rotated files beyond `-maxBackups` (the oldest first) and those older than `-maxAge` days are deleted. A regular
 * file at `-logFile` (an older agent's, or upstream's) is taken over as the newest rotated file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';

/** Spec A.3: a log file is rotated at 20 MiB. */
export const LOG_ROTATE_BYTES = 20 * 1024 * 1024;

/** Mode of the log files (upstream's 0640). */
const LOG_FILE_MODE = 0o640;

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
  /** `-logFile`; "" = stdout (a file is written through {@link openRotatingLog}'s destination). */
  readonly logFile: string;
  /** Program name in every line. */
  readonly name?: string;
  /** Explicit destination (tests). */
  readonly destination?: DestinationStream;
}

/** Options of {@link openRotatingLog}. */
export interface RotatingLogOptions {
  /** `-logFile`: the link to the current file; the files are `<name>.<n><ext>` in its folder. */
  readonly file: string;
  /** `-maxBackups`: rotated files kept besides the current one (spec A.1: 1..180). */
  readonly maxBackups: number;
  /** `-maxAge`: rotated files older than this many days are deleted (spec A.1: 7..700). */
  readonly maxAgeDays: number;
  /** Size at which a file is rotated; default {@link LOG_ROTATE_BYTES}. Whole KiB (pino-roll's unit). */
  readonly rotateBytes?: number;
  /** Clock of the age rule (ms); default `Date.now`. */
  readonly now?: () => number;
  /** Told what went wrong after the start (the link could not be replaced); default: a line on stderr. */
  readonly onProblem?: (text: string) => void;
}

/** The rotating log file: the pino destination and what it keeps. */
export interface RotatingLog {
  readonly destination: DestinationStream;
  /** The file written now. */
  current(): string;
  /** Rotated files kept now, oldest first (not the current one). */
  backups(): string[];
  /** Writes what is buffered and closes the file. */
  close(): Promise<void>;
}

/** The rotated files of `base`/`ext` in `dir`, by number. */
function numberedFiles(dir: string, name: string, ext: string): { file: string; n: number }[] {
  const out: { file: string; n: number }[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!e.startsWith(`${name}.`) || !e.endsWith(ext)) continue;
    const middle = e.slice(name.length + 1, e.length - ext.length);
    if (/^\d{1,9}$/.test(middle)) out.push({ file: path.join(dir, e), n: Number(middle) });
  }
  return out.sort((a, b) => a.n - b.n);
}

/**
 * Opens `-logFile` with size-based rotation (see the module comment). Throws {@link LogFileError} naming the file
 * and what is wrong (ownership, spec A.3; a folder that cannot be made; a name pino-roll cannot number).
 */
export async function openRotatingLog(o: RotatingLogOptions): Promise<RotatingLog> {
  const file = o.file;
  checkLogFileOwnership(file);
  const dir = path.dirname(file);
  const ext = path.extname(file) === '' ? '.log' : path.extname(file);
  const name = path.basename(file, path.extname(file));
  if (name === '' || name.includes('.')) {
    throw new LogFileError(
      `-logFile ${file}: the name before the extension must be non-empty and have no dot (files are <name>.<n>${ext})`,
    );
  }
  const rotateBytes = o.rotateBytes ?? LOG_ROTATE_BYTES;
  if (!Number.isInteger(rotateBytes / 1024) || rotateBytes <= 0) {
    throw new LogFileError(`log rotation size ${rotateBytes} is not a positive number of whole KiB`);
  }
  const now = o.now ?? Date.now;
  let stream;
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o750 });
    // A regular file at -logFile (an older agent's or upstream's): it becomes the newest numbered file, so nothing
    // is lost and pino-roll appends to it.
    const st = fs.lstatSync(file, { throwIfNoEntry: false });
    if (st?.isFile()) {
      const last = numberedFiles(dir, name, ext).at(-1)?.n ?? 0;
      fs.renameSync(file, path.join(dir, `${name}.${last + 1}${ext}`));
    } else if (st && !st.isSymbolicLink()) {
      throw new Error('it is neither a file nor a symbolic link');
    }
    // loaded here, not with this module: pino-roll pulls in date-fns (≈ 0.2 s of module loading at every start of
    // both programs, issue [O] start-up), and only a -logFile needs it
    const { default: pinoRoll } = await import('pino-roll');
    stream = await pinoRoll({
      file: path.join(dir, name),
      extension: ext,
      size: `${rotateBytes / 1024}k`,
      mkdir: true,
      mode: LOG_FILE_MODE,
      sync: false,
    });
  } catch (err) {
    throw new LogFileError(`cannot open the log file ${file}: ${(err as Error).message}`);
  }
  const s = stream;
  const problem = o.onProblem ?? ((text: string) => process.stderr.write(`${text}\n`));
  /** Points -logFile at the current file (atomically) and applies -maxBackups / -maxAge to the others. */
  const afterOpen = (): void => {
    const current = s.file;
    try {
      const tmp = `${file}.link-${process.pid}`;
      fs.rmSync(tmp, { force: true });
      fs.symlinkSync(path.basename(current), tmp);
      fs.renameSync(tmp, file);
    } catch (err) {
      problem(`cannot link ${file} to ${current}: ${(err as Error).message}`);
    }
    const old = numberedFiles(dir, name, ext).filter((f) => f.file !== current);
    const cutoff = now() - o.maxAgeDays * 86_400_000;
    const excess = old.length - o.maxBackups;
    old.forEach((f, i) => {
      let drop = i < excess;
      if (!drop) {
        try {
          drop = fs.statSync(f.file).mtimeMs < cutoff;
        } catch {
          return; // gone meanwhile
        }
      }
      if (!drop) return;
      try {
        fs.rmSync(f.file, { force: true });
      } catch (err) {
        problem(`cannot delete the rotated log ${f.file}: ${(err as Error).message}`);
      }
    });
  };
  // sonic-boom emits `ready` at every open: the first one and each roll's
  s.on('ready', afterOpen);
  // a write or roll that fails (the folder removed, the disk full) is reported; without a listener it would end the
  // process
  s.on('error', (err: Error) => problem(`log file ${s.file}: ${err.message}`));
  if (s.fd >= 0) afterOpen();
  return {
    destination: s as unknown as DestinationStream,
    current: () => s.file,
    backups: () =>
      numberedFiles(dir, name, ext)
        .filter((f) => f.file !== s.file)
        .map((f) => f.file),
    close: () =>
      new Promise<void>((resolve) => {
        s.once('close', () => resolve());
        s.end();
      }),
  };
}

/**
 * Creates the root logger; children carry a `component` field. Lines go to `destination`, else to stdout when
 * `logFile` is ""; a file needs its destination ({@link openRotatingLog}): throws {@link LogFileError} without.
 */
export function createLogger(options: LoggerOptions): PinoLogger {
  let dest: DestinationStream;
  if (options.destination) dest = options.destination;
  else if (options.logFile === '') dest = pino.destination({ dest: 1, sync: false });
  else throw new LogFileError(`-logFile ${options.logFile}: open it with openRotatingLog and pass its destination`);
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
