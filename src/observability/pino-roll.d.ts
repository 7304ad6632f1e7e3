/**
 * The part of pino-roll 4 (no bundled types) the agent's log file uses: the transport function, called in-process
 * (it returns the sonic-boom stream pino writes to).
 */
declare module 'pino-roll' {
  import type { EventEmitter } from 'node:events';

  /** The sonic-boom stream pino-roll returns; `file` is the file written now. */
  interface RollingStream extends EventEmitter {
    readonly file: string;
    /** -1 while the file is being opened. */
    readonly fd: number;
    write(data: string): boolean;
    flush(cb?: (err?: Error) => void): void;
    end(): void;
  }

  interface PinoRollOptions {
    /** Base path: files are `<file>.<n><extension>`. */
    file: string;
    /** Roll when the file reaches this size: a number of MB, or `<n>k` / `<n>m` / `<n>g`. */
    size?: string | number;
    extension?: string;
    mkdir?: boolean;
    /** sonic-boom options. */
    sync?: boolean;
    mode?: number;
    append?: boolean;
  }

  export default function pinoRoll(options: PinoRollOptions): Promise<RollingStream>;
}
