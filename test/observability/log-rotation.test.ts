/**
 * Spec A.3 / issue [J] item 4: the agent's log file is rotated by size (20 MiB upstream; a few KiB here) through
 * pino-roll; `-maxBackups` rotated files are kept, none older than `-maxAge` days; `-logFile` links to the file
 * written now; an existing plain `-logFile` is taken over. Before the fix the file grew without bound.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from '@jest/globals';
import type { Logger } from 'pino';
import { createLogger, LOG_ROTATE_BYTES, LogFileError, openRotatingLog } from '../../src/observability/logger.js';

let dir: string | undefined;
let open: { close(): Promise<void> } | undefined;

afterEach(async () => {
  await open?.close();
  open = undefined;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function tmp(): string {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'log-rotation-'));
  return dir;
}

/** Polls `check` every 20 ms until truthy (deadline 10 s). */
async function until<T>(check: () => T | undefined | false, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Writes `lines` info lines of about 100 bytes, yielding now and then so that sonic-boom writes and rolls. */
async function write(log: Logger, lines: number): Promise<void> {
  for (let i = 0; i < lines; i++) {
    log.info({ i, pad: 'x'.repeat(40) }, 'line');
    if (i % 10 === 9) await new Promise((r) => setTimeout(r, 2));
  }
  await new Promise<void>((resolve) => log.flush(() => resolve()));
}

const ROTATE = 4096;

describe('A.3 log rotation (issue [J] item 4)', () => {
  test('rotates at the configured size and keeps -maxBackups rotated files besides the current one', async () => {
    const d = tmp();
    const file = path.join(d, 'devicePlugin.log');
    const rolling = (open = await openRotatingLog({ file, maxBackups: 3, maxAgeDays: 7, rotateBytes: ROTATE }));
    const log = createLogger({ logLevel: 0, logFile: file, destination: rolling.destination });
    await write(log, 400); // ~40 KiB: about 10 rolls
    const names = await until(() => {
      const n = fs.readdirSync(d).sort();
      return n.length === 5 && rolling.backups().length === 3 ? n : undefined;
    }, 'three rotated files, the current one and the link');
    const current = path.basename(rolling.current());
    expect(names).toEqual(
      expect.arrayContaining(['devicePlugin.log', current, ...rolling.backups().map((b) => path.basename(b))]),
    );
    expect(current).toMatch(/^devicePlugin\.\d+\.log$/);
    expect(Number(/\.(\d+)\.log$/.exec(current)?.[1])).toBeGreaterThan(4);
    expect(fs.readlinkSync(file)).toBe(current);
    for (const b of rolling.backups()) {
      const size = fs.statSync(b).size;
      // pino-roll decides to roll when its count reaches the size, but rolls at the next 'drain': the lines written
      // in between land in the old file and are counted for the new one, which then rolls a little early. So a
      // rotated file is not empty and ends at most about one sonic-boom batch after the size (3,160 bytes of 4,096
      // were seen under CI load); no lower bound of the size itself holds.
      expect(size).toBeGreaterThan(0);
      expect(size).toBeLessThan(ROTATE * 4);
      for (const l of fs.readFileSync(b, 'utf8').trim().split('\n')) expect(JSON.parse(l)).toHaveProperty('msg');
    }
  });

  test('-maxAge: rotated files older than the configured days are deleted at start', async () => {
    const d = tmp();
    const file = path.join(d, 'agent.log');
    const old = path.join(d, 'agent.1.log');
    const recent = path.join(d, 'agent.2.log');
    fs.writeFileSync(old, '{"msg":"old"}\n');
    fs.writeFileSync(recent, '{"msg":"recent"}\n');
    const day = 86_400_000;
    fs.utimesSync(old, new Date(Date.now() - 8 * day), new Date(Date.now() - 8 * day));
    fs.utimesSync(recent, new Date(Date.now() - 6 * day), new Date(Date.now() - 6 * day));
    const rolling = (open = await openRotatingLog({ file, maxBackups: 30, maxAgeDays: 7, rotateBytes: ROTATE }));
    const log = createLogger({ logLevel: 0, logFile: file, destination: rolling.destination });
    await write(log, 1);
    await until(() => !fs.existsSync(old), 'the 8-day-old file deleted');
    expect(fs.existsSync(recent)).toBe(true);
  });

  test('a plain file at -logFile is taken over as the newest numbered file and appended to', async () => {
    const d = tmp();
    const file = path.join(d, 'devicePlugin.log');
    fs.writeFileSync(file, '{"msg":"before"}\n');
    const rolling = (open = await openRotatingLog({ file, maxBackups: 30, maxAgeDays: 7, rotateBytes: ROTATE }));
    const log = createLogger({ logLevel: 0, logFile: file, destination: rolling.destination });
    await write(log, 1);
    await until(() => fs.lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink(), 'the link');
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
    expect(lines[0]).toBe('{"msg":"before"}');
    expect(JSON.parse(lines[1]!)).toEqual(expect.objectContaining({ msg: 'line', level: 'info' }));
  });

  test('the size is 20 MiB by default; a name pino-roll cannot number is refused with the reason', async () => {
    expect(LOG_ROTATE_BYTES).toBe(20 * 1024 * 1024);
    const d = tmp();
    await expect(openRotatingLog({ file: path.join(d, 'a.b.log'), maxBackups: 1, maxAgeDays: 7 })).rejects.toThrow(
      LogFileError,
    );
    expect(() => createLogger({ logLevel: 0, logFile: path.join(d, 'x.log') })).toThrow(/openRotatingLog/);
  });
});
