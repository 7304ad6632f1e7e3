/**
 * Library path resolution and security checks (dcmi-abi.md §1.2; architecture §4 for an explicit path),
 * on a fake filesystem so that ownership and modes can be anything.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { hccnToolProblem } from '../../src/dcmi/hccn.js';
import {
  checkCandidate,
  checkTrustedFile,
  DcmiLibraryPathError,
  ldLibraryPathCandidates,
  parseLdconfigCache,
  resolveDcmiLibrary,
  type PathEntry,
  type PathInspector,
} from '../../src/dcmi/library-path.js';
import { tempDir } from '../helpers/mock-dcmi.js';

type FakeEntry = Partial<PathEntry> & { link?: string };

/** A fake tree: every listed path; directories default to root-owned 0755, files to root-owned 0644. */
function fakeTree(entries: Record<string, FakeEntry>): PathInspector {
  const get = (p: string): PathEntry | undefined => {
    const e = entries[p];
    if (!e) return undefined;
    const isSymbolicLink = e.link !== undefined;
    const isDirectory = e.isDirectory ?? (!isSymbolicLink && !p.endsWith('.so'));
    return {
      uid: e.uid ?? 0,
      mode: e.mode ?? (isDirectory ? 0o40755 : 0o100644),
      isSymbolicLink,
      isFile: !isSymbolicLink && !isDirectory,
      isDirectory,
    };
  };
  return {
    lstat: get,
    realpath(p) {
      let cur = p;
      for (let i = 0; i < 10; i++) {
        const e = entries[cur];
        if (!e) throw new Error(`ENOENT ${cur}`);
        if (e.link === undefined) return cur;
        cur = path.resolve(path.dirname(cur), e.link);
      }
      throw new Error('ELOOP');
    },
  };
}

const GOOD: Record<string, FakeEntry> = {
  '/': {},
  '/usr': {},
  '/usr/local': {},
  '/usr/local/Ascend': {},
  '/usr/local/Ascend/driver': {},
  '/usr/local/Ascend/driver/lib64': {},
  '/usr/local/Ascend/driver/lib64/driver': {},
  '/usr/local/Ascend/driver/lib64/driver/libdcmi.so': {},
};
const LIB = '/usr/local/Ascend/driver/lib64/driver/libdcmi.so';

describe('dcmi-abi §1.2 candidate checks', () => {
  test('a root-owned file in root-owned, non-writable folders passes', () => {
    expect(checkCandidate(LIB, 1000, fakeTree(GOOD))).toEqual({ ok: true, path: LIB });
  });

  test('a file writable by group is rejected with a chmod hint', () => {
    const tree = fakeTree({ ...GOOD, [LIB]: { mode: 0o100664 } });
    const r = checkCandidate(LIB, 1000, tree);
    expect(r).toMatchObject({ ok: false, reason: expect.stringMatching(/writable by group or others.*chmod go-w/) });
  });

  test('a file owned by another user is rejected', () => {
    const r = checkCandidate(LIB, 1000, fakeTree({ ...GOOD, [LIB]: { uid: 1234 } }));
    expect(r).toMatchObject({ ok: false, reason: expect.stringMatching(/owned by uid 1234/) });
  });

  test('architecture §4 a file owned by the agent own uid is accepted', () => {
    expect(checkCandidate(LIB, 1234, fakeTree({ ...GOOD, [LIB]: { uid: 1234 } }))).toMatchObject({ ok: true });
  });

  test('a parent folder writable by others is rejected', () => {
    const tree = fakeTree({ ...GOOD, '/usr/local/Ascend': { mode: 0o40777 } });
    expect(checkCandidate(LIB, 1000, tree)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/parent \/usr\/local\/Ascend is writable/),
    });
  });

  test('a symbolic link must itself be owned by root; its target is checked', () => {
    const link = '/usr/local/Ascend/driver/lib64/libdcmi.so';
    const ok = fakeTree({ ...GOOD, [link]: { link: 'driver/libdcmi.so' } });
    expect(checkCandidate(link, 1000, ok)).toEqual({ ok: true, path: LIB });
    const bad = fakeTree({ ...GOOD, [link]: { link: 'driver/libdcmi.so', uid: 77 } });
    expect(checkCandidate(link, 1000, bad)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/link owned by uid 77/),
    });
  });

  test('more than 20 parent levels is rejected', () => {
    const entries: Record<string, FakeEntry> = { '/': {} };
    let dir = '';
    for (let i = 0; i < 21; i++) {
      dir += `/d${i}`;
      entries[dir] = {};
    }
    entries[`${dir}/libdcmi.so`] = {};
    expect(checkCandidate(`${dir}/libdcmi.so`, 1000, fakeTree(entries))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/more than 20 parent/),
    });
  });
});

describe('dcmi-abi §1.2 lookup order', () => {
  test('LD_LIBRARY_PATH entries are tried in order; missing files are not candidates', () => {
    const tree = fakeTree(GOOD);
    const env = { LD_LIBRARY_PATH: '/nowhere:/usr/local/Ascend/driver/lib64/driver::/also/nowhere' };
    expect(ldLibraryPathCandidates(env, tree)).toEqual([LIB]);
  });

  test('LD_LIBRARY_PATH longer than 1024 characters is ignored', () => {
    const env = { LD_LIBRARY_PATH: `${'/x'.repeat(520)}:/usr/local/Ascend/driver/lib64/driver` };
    expect(ldLibraryPathCandidates(env, fakeTree(GOOD))).toEqual([]);
  });

  test('ldconfig cache lines whose name is exactly libdcmi.so are taken', () => {
    const out = [
      "1234 libs found in cache `/etc/ld.so.cache'",
      '\tlibdcmi.so (libc6,x86-64) => /usr/local/Ascend/driver/lib64/driver/libdcmi.so',
      '\tlibdcmi.so.1 (libc6,x86-64) => /opt/other/libdcmi.so.1',
      '\tlibdcmi_partial.so (libc6,x86-64) => /opt/x/libdcmi_partial.so',
    ].join('\n');
    expect(parseLdconfigCache(out)).toEqual([LIB]);
  });

  test('falls back to the ldconfig cache when LD_LIBRARY_PATH has no valid candidate, listing what it rejected', async () => {
    const bad = '/opt/evil/libdcmi.so';
    const tree = fakeTree({ ...GOOD, '/opt': {}, '/opt/evil': { mode: 0o40777 }, [bad]: {} });
    const r = await resolveDcmiLibrary({
      env: { LD_LIBRARY_PATH: '/opt/evil' },
      ownUid: 1000,
      inspector: tree,
      ldconfigCache: () => Promise.resolve(`\tlibdcmi.so (libc6,x86-64) => ${LIB}\n`),
    });
    expect(r).toMatchObject({ path: LIB, source: 'ldconfig', rejected: [{ path: bad }] });
  });

  test('no valid candidate anywhere is an error naming each rejection', async () => {
    const tree = fakeTree({ ...GOOD, [LIB]: { mode: 0o100666 } });
    const p = resolveDcmiLibrary({
      env: { LD_LIBRARY_PATH: '/usr/local/Ascend/driver/lib64/driver' },
      ownUid: 1000,
      inspector: tree,
      ldconfigCache: () => Promise.resolve(''),
    });
    await expect(p).rejects.toBeInstanceOf(DcmiLibraryPathError);
    await expect(p).rejects.toThrow(/writable by group or others/);
  });
});

describe('architecture §4 explicit -dcmiLibrary path', () => {
  test('a regular file not writable by group or others is accepted as given', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'libdcmi.so');
    fs.writeFileSync(file, '');
    fs.chmodSync(file, 0o644);
    await expect(resolveDcmiLibrary({ explicitPath: file, env: {}, ownUid: 0 })).resolves.toMatchObject({
      path: file,
      source: 'explicit',
    });
  });

  test('a group-writable file is refused with the chmod to run', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'libdcmi.so');
    fs.writeFileSync(file, '');
    fs.chmodSync(file, 0o664);
    await expect(resolveDcmiLibrary({ explicitPath: file, env: {}, ownUid: 0 })).rejects.toThrow(/chmod go-w/);
  });

  test('a folder or a missing path is refused', async () => {
    const dir = tempDir();
    await expect(resolveDcmiLibrary({ explicitPath: dir, env: {}, ownUid: 0 })).rejects.toThrow(/not a regular file/);
    await expect(resolveDcmiLibrary({ explicitPath: path.join(dir, 'x.so'), env: {}, ownUid: 0 })).rejects.toThrow(
      /ENOENT/,
    );
  });
});

describe('issue [K] 9 one file check for the library and hccn_tool', () => {
  test('the explicit rule follows a symbolic link and checks its target', () => {
    const link = '/opt/libdcmi.so';
    const tree = fakeTree({ ...GOOD, '/opt': {}, [link]: { link: LIB }, [LIB]: { mode: 0o100666 } });
    expect(checkTrustedFile(link, 'explicit', 0, tree)).toEqual({
      ok: false,
      reason: 'is writable by group or others (mode 666); run chmod go-w on it',
    });
  });

  test('-dcmiLibrary and -hccnTool refuse the same 0777 file with the same rule', async () => {
    const file = path.join(fs.realpathSync(tempDir()), 'tool');
    fs.writeFileSync(file, '');
    fs.chmodSync(file, 0o777);
    const rule = 'is writable by group or others (mode 777); run chmod go-w on it';
    await expect(resolveDcmiLibrary({ explicitPath: file, env: {}, ownUid: 0 })).rejects.toThrow(
      `-dcmiLibrary ${file}: ${rule}`,
    );
    expect(hccnToolProblem(file)?.reason).toBe(`${file}: ${rule}`);
  });
});
