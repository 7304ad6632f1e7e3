/**
 * libfaketime (Debian `libfaketime`, installed by .ci/run) for the clock-step integration tests (issue [T] item 1):
 * a child process started with {@link FakeTime.env} reads its wall clock through the library, moved by the offset
 * or frozen at the time the test writes into a timestamp file (re-read at every call: `FAKETIME_NO_CACHE=1`), while
 * CLOCK_MONOTONIC stays the real one (`FAKETIME_DONT_FAKE_MONOTONIC=1`): exactly what an NTP step or a resumed VM
 * does to a process.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Where Debian and other distributions put the library. */
const CANDIDATES = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib64/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
  '/usr/local/lib/faketime/libfaketime.so.1',
];

/** The library's path; throws naming what was looked at when it is not installed (the test fails, never skips). */
export function libfaketimePath(): string {
  let listed: string[] = [];
  try {
    listed = execFileSync('dpkg', ['-L', 'libfaketime'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .split('\n')
      .filter((p) => p.endsWith('/libfaketime.so.1'));
  } catch {
    // not a Debian system, or the package is not installed: the usual paths below
  }
  const found = [...listed, ...CANDIDATES].find((p) => fs.existsSync(p));
  if (found === undefined) {
    throw new Error(
      `libfaketime not found (dpkg -L libfaketime, ${CANDIDATES.join(', ')}): install the Debian package ` +
        '`libfaketime` (apt-get install -y libfaketime; .ci/run does so when it is missing)',
    );
  }
  return found;
}

/** `YYYY-MM-DD hh:mm:ss` in UTC (the child runs with `TZ=UTC`). */
function utcText(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

/** The wall clock of the children started with {@link env}. */
export class FakeTime {
  readonly file: string;
  readonly #library: string;
  /** the offset from the real wall clock in ms, or the frozen time */
  #state: { kind: 'offset'; ms: number } | { kind: 'frozen'; at: number } = { kind: 'offset', ms: 0 };

  constructor(dir: string) {
    this.#library = libfaketimePath();
    this.file = path.join(dir, 'faketime.rc');
    this.#write('+0');
  }

  /** The environment that puts a child on this clock. */
  env(): Record<string, string> {
    return {
      LD_PRELOAD: this.#library,
      FAKETIME_TIMESTAMP_FILE: this.file,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
      TZ: 'UTC',
    };
  }

  /** The children's wall clock now (ms since the epoch). */
  now(): number {
    return this.#state.kind === 'frozen' ? this.#state.at : Date.now() + this.#state.ms;
  }

  /** Steps the children's wall clock by `ms` (negative: back); a frozen clock stays frozen at the new time. */
  step(ms: number): void {
    if (this.#state.kind === 'frozen') this.freeze(this.#state.at + ms);
    else this.#offset(this.#state.ms + ms);
  }

  /** Stops the children's wall clock (at `at`, default where it is now). */
  freeze(at = this.now()): void {
    const whole = Math.floor(at / 1000) * 1000;
    this.#state = { kind: 'frozen', at: whole };
    this.#write(utcText(whole));
  }

  /** Lets a frozen clock run on from where it stands. */
  thaw(): void {
    if (this.#state.kind === 'frozen') this.#offset(this.#state.at - Date.now());
  }

  #offset(ms: number): void {
    const s = Math.round(ms / 1000);
    this.#state = { kind: 'offset', ms: s * 1000 };
    this.#write(s >= 0 ? `+${s}` : String(s));
  }

  /** Replaces the file at once (a rename), so that a read never sees half a line. */
  #write(text: string): void {
    const tmp = `${this.file}.tmp`;
    fs.writeFileSync(tmp, `${text}\n`);
    fs.renameSync(tmp, this.file);
  }
}
