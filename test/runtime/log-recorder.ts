/** A {@link Logger} that keeps every line (level, message, fields), for the detector's tests. */
import type { Logger, LogFn } from '../../src/core/logger.js';

/** One recorded line. */
export interface LogLine {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly msg: string;
  readonly fields: Record<string, unknown>;
}

/** The recorder: `log` to pass on, `lines` to look at. */
export function recordingLogger(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const fn =
    (level: LogLine['level']): LogFn =>
    (a: object | string, b?: string): void => {
      if (typeof a === 'string') lines.push({ level, msg: a, fields: {} });
      else lines.push({ level, msg: b ?? '', fields: a as Record<string, unknown> });
    };
  return { log: { debug: fn('debug'), info: fn('info'), warn: fn('warn'), error: fn('error') }, lines };
}

/** Polls `check` every 50 ms until truthy; rejects after `ms` naming `what`. */
export async function until<T>(check: () => T | undefined | null | false, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
