/**
 * The logging surface every layer takes: the call shape of pino (`log.info(obj, msg)` or `log.info(msg)`), so the
 * composition root can pass a pino logger or a child of it unchanged.
 */
export interface LogFn {
  (msg: string): void;
  (obj: object, msg?: string): void;
}

/** Minimal pino-compatible logger. */
export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

const noop: LogFn = () => undefined;

/** A logger that drops everything (the default when none is given). */
export const NOOP_LOGGER: Logger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop });
