/**
 * `-stateDir` start-up check (issue [I] "Bad input": a read-only state dir gives one line naming it, exit 2). The
 * read-only mount itself (EROFS, which root cannot bypass) is exercised in the container: test/image/image.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { STATE_DIR_PROBE, stateDirProblem } from '../../src/agent/state-dir.js';

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'state-dir-'));
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('[I] Bad input: -stateDir', () => {
  test('a writable folder passes and keeps no probe file', () => {
    expect(stateDirProblem(tmp)).toBeUndefined();
    expect(fs.readdirSync(tmp)).not.toContain(STATE_DIR_PROBE);
  });

  test('a missing folder is created with mode 0700', () => {
    const dir = path.join(tmp, 'a', 'state');
    expect(stateDirProblem(dir)).toBeUndefined();
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
  });

  test('a file in its place is named as not a folder', () => {
    const file = path.join(tmp, 'state');
    fs.writeFileSync(file, 'x');
    expect(stateDirProblem(file)).toBe(`-stateDir ${file} is not a folder`);
  });

  test('a path through a file names the folder and the reason', () => {
    fs.writeFileSync(path.join(tmp, 'file'), 'x');
    const dir = path.join(tmp, 'file', 'state');
    expect(stateDirProblem(dir)).toBe(`-stateDir ${dir} cannot be read (ENOTDIR: not a directory)`);
  });
});
