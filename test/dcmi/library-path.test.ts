/**
 * Library path resolution and security checks (dcmi-abi.md §1.2; architecture §4 for an explicit path),
 * on a fake filesystem so that ownership and modes can be anything.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { MOCK_DCMI_LIBRARY, MOCK_HCCN_TOOL, MOCK_SWITCH_LIBRARY } from '../../src/core/paths.js';
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
    readlink(p) {
      const link = entries[p]?.link;
      if (link === undefined) throw Object.assign(new Error(`EINVAL ${p}`), { code: 'EINVAL' });
      return link;
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
      reason: `resolves to ${LIB}, which is writable by group or others (mode 666); run chmod go-w on it`,
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

/**
 * Issue [T] item 3, architecture §4 (`-dcmiLibrary`, changed): the explicit-path rule on the real filesystem. The
 * tests run as root; a foreign owner is an unused uid given with chown. Each refusal names the entry at fault.
 */
describe('architecture §4 explicit path rule on a real filesystem (issue [T] item 3)', () => {
  const FOREIGN = 4242;
  const own = process.getuid?.() ?? 0;
  const who = own === 0 ? 'root' : `root or the agent's user (uid ${own})`;

  /** A fresh 0755 folder (symlink-free path) under the system temp folder, with a 0644 `lib.so` in `safe/`. */
  function tree(): { base: string; safeLib: string } {
    const base = fs.realpathSync(tempDir('path-rule-'));
    fs.chmodSync(base, 0o755);
    fs.mkdirSync(path.join(base, 'safe'), { mode: 0o755 });
    const safeLib = path.join(base, 'safe', 'lib.so');
    fs.writeFileSync(safeLib, '', { mode: 0o644 });
    return { base, safeLib };
  }
  function folder(p: string, mode: number, uid?: number): string {
    fs.mkdirSync(p);
    fs.chmodSync(p, mode);
    if (uid !== undefined) fs.chownSync(p, uid, uid);
    return p;
  }
  const refused = (p: string): string => {
    const r = checkTrustedFile(p, 'explicit', own);
    if (r.ok) throw new Error(`${p} was accepted`);
    return r.reason;
  };

  test('refused: a symbolic link in a world-writable folder without the sticky bit, naming the folder', async () => {
    const { base, safeLib } = tree();
    const ww = folder(path.join(base, 'ww'), 0o777);
    const link = path.join(ww, 'libdcmi.so');
    fs.symlinkSync(safeLib, link);
    expect(refused(link)).toBe(
      `folder ${ww} is writable by group or others without the sticky bit (mode 777): another user can replace ` +
        'what it holds; run chmod go-w (or chmod +t) on it',
    );
    await expect(resolveDcmiLibrary({ explicitPath: link, env: {}, ownUid: own })).rejects.toThrow(
      `-dcmiLibrary ${link}: folder ${ww} is writable by group or others without the sticky bit`,
    );
  });

  test('refused: a file in a world-writable folder without the sticky bit, naming the folder', () => {
    const { base } = tree();
    const ww = folder(path.join(base, 'ww'), 0o777);
    const lib = path.join(ww, 'libdcmi.so');
    fs.writeFileSync(lib, '', { mode: 0o644 });
    expect(refused(lib)).toMatch(new RegExp(`^folder ${ww} is writable by group or others without the sticky bit`));
  });

  test('refused: a group-writable folder higher up, naming that folder', () => {
    const { base } = tree();
    const gw = folder(path.join(base, 'gw'), 0o775);
    const inner = folder(path.join(gw, 'lib64'), 0o755);
    const lib = path.join(inner, 'libdcmi.so');
    fs.writeFileSync(lib, '', { mode: 0o644 });
    expect(refused(lib)).toMatch(
      new RegExp(`^folder ${gw} is writable by group or others without the sticky bit \\(mode 775\\)`),
    );
  });

  test('refused: a file owned by another user, naming the uid', () => {
    const { safeLib } = tree();
    fs.chownSync(safeLib, FOREIGN, FOREIGN);
    expect(refused(safeLib)).toBe(`is owned by uid ${FOREIGN}, not ${who}`);
  });

  test('refused: a symbolic link owned by another user, naming the link (its target is fine)', () => {
    const { base, safeLib } = tree();
    const link = path.join(base, 'libdcmi.so');
    fs.symlinkSync(safeLib, link);
    fs.lchownSync(link, FOREIGN, FOREIGN);
    expect(refused(link)).toBe(
      `symbolic link ${link} is owned by uid ${FOREIGN}, not ${who}: that user can redirect it`,
    );
  });

  test('refused: a group-writable file, with the chmod to run', () => {
    const { safeLib } = tree();
    fs.chmodSync(safeLib, 0o664);
    expect(refused(safeLib)).toBe('is writable by group or others (mode 664); run chmod go-w on it');
  });

  test('refused: a folder owned by another user, naming the folder', () => {
    const { base } = tree();
    const theirs = folder(path.join(base, 'theirs'), 0o755, FOREIGN);
    const lib = path.join(theirs, 'libdcmi.so');
    fs.writeFileSync(lib, '', { mode: 0o644 });
    expect(refused(lib)).toBe(
      `folder ${theirs} is owned by uid ${FOREIGN}, not ${who}: that user can replace what it holds`,
    );
  });

  test('refused: a link to a file in a world-writable folder, naming the target folder', () => {
    const { base } = tree();
    const ww = folder(path.join(base, 'ww'), 0o777);
    const real = path.join(ww, 'libdcmi.so');
    fs.writeFileSync(real, '', { mode: 0o644 });
    const link = path.join(base, 'safe', 'libdcmi.so');
    fs.symlinkSync(real, link);
    expect(refused(link)).toMatch(new RegExp(`^folder ${ww} is writable by group or others without the sticky bit`));
  });

  test('refused: a folder link owned by another user in the middle of the path, naming the link', () => {
    const { base } = tree();
    const dirLink = path.join(base, 'driver');
    fs.symlinkSync('safe', dirLink); // relative target
    fs.lchownSync(dirLink, FOREIGN, FOREIGN);
    expect(refused(path.join(dirLink, 'lib.so'))).toBe(
      `symbolic link ${dirLink} is owned by uid ${FOREIGN}, not ${who}: that user can redirect it`,
    );
  });

  test('refused: every problem is named, the file first', () => {
    const { base } = tree();
    const ww = folder(path.join(base, 'ww'), 0o777);
    const lib = path.join(ww, 'libdcmi.so');
    fs.writeFileSync(lib, '');
    fs.chownSync(lib, FOREIGN, FOREIGN);
    fs.chmodSync(lib, 0o666);
    expect(refused(lib)).toMatch(
      new RegExp(
        `^is owned by uid ${FOREIGN}, not ${who}; is writable by group or others \\(mode 666\\).*; folder ${ww} is writable`,
      ),
    );
  });

  test('refused: a loop of links stops the walk', () => {
    const { base } = tree();
    fs.symlinkSync(path.join(base, 'b'), path.join(base, 'a'));
    fs.symlinkSync(path.join(base, 'a'), path.join(base, 'b'));
    expect(refused(path.join(base, 'a'))).toBe('more than 40 symbolic links (ELOOP)');
  });

  test('accepted: a sticky world-writable folder like /tmp holding a root-owned file and a root-owned link', () => {
    const { base, safeLib } = tree();
    const sticky = folder(path.join(base, 'tmp'), 0o1777);
    const lib = path.join(sticky, 'libdcmi.so');
    fs.writeFileSync(lib, '', { mode: 0o644 });
    expect(checkTrustedFile(lib, 'explicit', own)).toEqual({ ok: true, path: lib });
    const link = path.join(sticky, 'link.so');
    fs.symlinkSync(safeLib, link);
    expect(checkTrustedFile(link, 'explicit', own)).toEqual({ ok: true, path: safeLib });
  });

  test('accepted: a root-owned file in root-owned folders; a link is answered as its target', async () => {
    const { base, safeLib } = tree();
    const link = path.join(base, 'libdcmi.so');
    fs.symlinkSync('safe/lib.so', link);
    await expect(resolveDcmiLibrary({ explicitPath: link, env: {}, ownUid: own })).resolves.toEqual({
      path: safeLib,
      source: 'explicit',
      rejected: [],
    });
  });

  test("accepted: a build folder and file owned by the agent's own user (the user who runs the tests)", () => {
    const { base } = tree();
    const build = folder(path.join(base, 'build'), 0o755, FOREIGN);
    const lib = path.join(build, 'libdcmi.so');
    fs.writeFileSync(lib, '', { mode: 0o644 });
    fs.chownSync(lib, FOREIGN, FOREIGN);
    expect(checkTrustedFile(lib, 'explicit', FOREIGN)).toEqual({ ok: true, path: lib });
    // the same tree for an agent running as yet another user is refused
    expect(checkTrustedFile(lib, 'explicit', 4343)).toMatchObject({ ok: false });
  });

  test('accepted: the mock libdcmi.so, liblingqu-dcmi.so and hccn_tool of the build', () => {
    for (const f of [MOCK_DCMI_LIBRARY, MOCK_SWITCH_LIBRARY, MOCK_HCCN_TOOL]) {
      expect(checkTrustedFile(f, 'explicit', own)).toEqual({ ok: true, path: fs.realpathSync(f) });
    }
  });

  test('-switchLibrary gets the same rule, its error naming the flag and the folder', async () => {
    const { base } = tree();
    const ww = folder(path.join(base, 'ww'), 0o777);
    const lib = path.join(ww, 'liblingqu-dcmi.so');
    fs.writeFileSync(lib, '', { mode: 0o644 });
    await expect(
      resolveDcmiLibrary({ explicitPath: lib, env: {}, ownUid: own, flagName: '-switchLibrary' }),
    ).rejects.toThrow(`-switchLibrary ${lib}: folder ${ww} is writable by group or others without the sticky bit`);
  });

  test('-hccnTool gets the same rule: a 0755 tool in a 0777 folder is refused naming the folder', () => {
    const { base } = tree();
    const ww = folder(path.join(base, 'tools'), 0o777);
    const tool = path.join(ww, 'hccn_tool');
    fs.writeFileSync(tool, '', { mode: 0o755 });
    expect(hccnToolProblem(tool)?.reason).toBe(
      `${tool}: folder ${ww} is writable by group or others without the sticky bit (mode 777): another user can ` +
        'replace what it holds; run chmod go-w (or chmod +t) on it',
    );
  });
});
