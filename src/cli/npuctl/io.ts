/**
 * File reading with size limits for npuctl, and the error it reports.
 */
import fs from 'node:fs';

/** A problem that ends the command with exit status 2 (bad input). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Reads a UTF-8 file of at most `maxBytes`, or throws a {@link UsageError} naming the file and the problem. */
export function readTextFile(file: string, maxBytes: number, what: string): string {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch (e) {
    throw new UsageError(`cannot read ${what} ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  if (!st.isFile()) throw new UsageError(`${what} ${file} is not a regular file`);
  if (st.size > maxBytes) throw new UsageError(`${what} ${file} is ${st.size} bytes, over the limit of ${maxBytes}`);
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${what} ${file}: ${(e as Error).message}`);
  }
}
