/**
 * Where `libdcmi.so` is loaded from, with the security checks of spec dcmi-abi.md §1.2 for the automatic lookup
 * and the explicit-path rule of architecture §4 for `-dcmiLibrary` (also `-switchLibrary`). {@link checkTrustedFile}
 * is the one check of a file the (privileged) agent loads or executes; `hccn.ts` applies it to `-hccnTool` as well.
 *
 * The explicit-path rule (issue [T] item 3) walks the path one component at a time, as the kernel resolves it, so
 * that every entry another user could swap is seen: each folder passed through, each symbolic link followed (and
 * the folders its target passes through) and the file itself.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Limits of dcmi-abi.md §1.2. */
export const LIBRARY_PATH_LIMITS = { envLength: 1024, pathLength: 1024, parentLevels: 20 } as const;
export const DCMI_LIBRARY_NAME = 'libdcmi.so';

/** What the checks need to know about one filesystem entry (no symlink following). */
export interface PathEntry {
  uid: number;
  mode: number;
  isSymbolicLink: boolean;
  isFile: boolean;
  isDirectory: boolean;
}

/** The filesystem access the resolver uses; the default is `node:fs`, tests inject a fake tree. */
export interface PathInspector {
  /** `lstat`, or undefined when the entry does not exist */
  lstat(p: string): PathEntry | undefined;
  /** `realpath`: absolute and symlink-free */
  realpath(p: string): string;
  /** `readlink`: the target text of one symbolic link (relative or absolute); throws when `p` is none */
  readlink(p: string): string;
}

export const nodePathInspector: PathInspector = {
  lstat(p) {
    try {
      const s = fs.lstatSync(p);
      return {
        uid: s.uid,
        mode: s.mode,
        isSymbolicLink: s.isSymbolicLink(),
        isFile: s.isFile(),
        isDirectory: s.isDirectory(),
      };
    } catch {
      return undefined;
    }
  },
  realpath: (p) => fs.realpathSync(p),
  readlink: (p) => fs.readlinkSync(p),
};

/** A candidate that failed a check, with the reason (reported to the operator, never dropped). */
export interface RejectedCandidate {
  path: string;
  reason: string;
}

export interface ResolvedLibrary {
  path: string;
  source: 'explicit' | 'LD_LIBRARY_PATH' | 'ldconfig';
  /** candidates tried before the winner */
  rejected: RejectedCandidate[];
}

export class DcmiLibraryPathError extends Error {
  override readonly name = 'DcmiLibraryPathError';
  constructor(
    message: string,
    readonly rejected: RejectedCandidate[],
  ) {
    super(message);
  }
}

export interface ResolveOptions {
  /** `-dcmiLibrary`; when set, only the explicit-path rule applies */
  explicitPath?: string;
  /** the process environment (`LD_LIBRARY_PATH`) */
  env: Readonly<Record<string, string | undefined>>;
  /** owners accepted besides root: the agent's own uid (architecture §4) */
  ownUid: number;
  inspector?: PathInspector;
  /** output of `/sbin/ldconfig --print-cache`; the default runs it without a shell */
  ldconfigCache?: () => Promise<string>;
  /** the file looked up (default `libdcmi.so`; the 910A3 switch library uses the same routine, dcmi-abi.md §1.2) */
  libraryName?: string;
  /** the flag named in an explicit path's error (default `-dcmiLibrary`) */
  flagName?: string;
}

const GROUP_OR_OTHER_WRITE = 0o022;

function ownerOk(uid: number, ownUid: number): boolean {
  return uid === 0 || uid === ownUid;
}

/**
 * Checks one candidate as dcmi-abi.md §1.2 requires; returns the symlink-free path or the reason it fails.
 * The link itself (if the candidate is one) must be owned by root or us; the target file and every parent
 * directory up to `/` (at most 20 levels) must be owned by root or us and not writable by group or others.
 */
export function checkCandidate(
  candidate: string,
  ownUid: number,
  inspector: PathInspector = nodePathInspector,
): { ok: true; path: string } | { ok: false; reason: string } {
  const entry = inspector.lstat(candidate);
  if (!entry) return { ok: false, reason: 'does not exist' };
  if (entry.isSymbolicLink && !ownerOk(entry.uid, ownUid)) {
    return { ok: false, reason: `symbolic link owned by uid ${entry.uid}, not root` };
  }
  let resolved: string;
  try {
    resolved = inspector.realpath(candidate);
  } catch (err) {
    return { ok: false, reason: `cannot resolve: ${(err as Error).message}` };
  }
  const target = inspector.lstat(resolved);
  if (!target || !target.isFile) return { ok: false, reason: `${resolved} is not a regular file` };
  const fileProblem = ownershipProblem(resolved, target, ownUid);
  if (fileProblem) return { ok: false, reason: fileProblem };
  let dir = path.dirname(resolved);
  for (let level = 0; ; level++) {
    if (level >= LIBRARY_PATH_LIMITS.parentLevels) {
      return { ok: false, reason: `more than ${LIBRARY_PATH_LIMITS.parentLevels} parent directories` };
    }
    const d = inspector.lstat(dir);
    if (!d) return { ok: false, reason: `parent ${dir} cannot be read` };
    const problem = ownershipProblem(dir, d, ownUid);
    if (problem) return { ok: false, reason: `parent ${problem}` };
    if (dir === '/') break;
    dir = path.dirname(dir);
  }
  return { ok: true, path: resolved };
}

function ownershipProblem(p: string, e: PathEntry, ownUid: number): string | undefined {
  if (!ownerOk(e.uid, ownUid)) return `${p} is owned by uid ${e.uid}, not root`;
  if ((e.mode & GROUP_OR_OTHER_WRITE) !== 0) {
    return `${p} is writable by group or others (mode ${(e.mode & 0o777).toString(8)}); run chmod go-w on it`;
  }
  return undefined;
}

/** The `LD_LIBRARY_PATH` candidates of dcmi-abi.md §1.2, in order. */
export function ldLibraryPathCandidates(
  env: Readonly<Record<string, string | undefined>>,
  inspector: PathInspector = nodePathInspector,
  libraryName: string = DCMI_LIBRARY_NAME,
): string[] {
  const value = env.LD_LIBRARY_PATH ?? '';
  if (value === '' || value.length > LIBRARY_PATH_LIMITS.envLength) return [];
  const out: string[] = [];
  for (const dir of value.split(':')) {
    if (dir === '') continue;
    const candidate = path.join(dir, libraryName);
    if (candidate.length > LIBRARY_PATH_LIMITS.pathLength) continue;
    if (inspector.lstat(candidate)) out.push(candidate);
  }
  return out;
}

/** Paths of `libdcmi.so` in `ldconfig --print-cache` output: lines `<name> (<flags>) => <path>`. */
export function parseLdconfigCache(output: string, libraryName: string = DCMI_LIBRARY_NAME): string[] {
  const out: string[] = [];
  for (const line of output.split('\n')) {
    const arrow = line.indexOf('=>');
    if (arrow < 0) continue;
    const name = line.slice(0, arrow).trim().split(/\s+/)[0];
    const target = line.slice(arrow + 2).trim();
    if (name === libraryName && target !== '') out.push(target);
  }
  return out;
}

/** Runs `/sbin/ldconfig --print-cache` with an argument array and a timeout (no shell, no grep). */
export function runLdconfigCache(): Promise<string> {
  return new Promise((resolve) => {
    execFile('/sbin/ldconfig', ['--print-cache'], { timeout: 5000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout) =>
      resolve(err ? '' : stdout),
    );
  });
}

/**
 * Finds the library to load. An explicit path must pass {@link checkExplicitPath} (architecture §4) and is answered
 * symlink-free, so the file loaded is the file checked; otherwise `LD_LIBRARY_PATH` then the ldconfig cache are searched with every check of
 * dcmi-abi.md §1.2, and the first candidate passing all checks wins.
 */
export async function resolveDcmiLibrary(options: ResolveOptions): Promise<ResolvedLibrary> {
  const inspector = options.inspector ?? nodePathInspector;
  if (options.explicitPath !== undefined) {
    const p = path.resolve(options.explicitPath);
    const r = checkTrustedFile(p, 'explicit', options.ownUid, inspector);
    if (!r.ok) {
      throw new DcmiLibraryPathError(`${options.flagName ?? '-dcmiLibrary'} ${p}: ${r.reason}`, [
        { path: p, reason: r.reason },
      ]);
    }
    return { path: r.path, source: 'explicit', rejected: [] };
  }
  const rejected: RejectedCandidate[] = [];
  const tryAll = (candidates: string[]): string | undefined => {
    for (const c of candidates) {
      const r = checkTrustedFile(c, 'lookup', options.ownUid, inspector);
      if (r.ok) return r.path;
      rejected.push({ path: c, reason: r.reason });
    }
    return undefined;
  };
  const name = options.libraryName ?? DCMI_LIBRARY_NAME;
  const fromEnv = tryAll(ldLibraryPathCandidates(options.env, inspector, name));
  if (fromEnv) return { path: fromEnv, source: 'LD_LIBRARY_PATH', rejected };
  const cache = await (options.ldconfigCache ?? runLdconfigCache)();
  const fromCache = tryAll(parseLdconfigCache(cache, name));
  if (fromCache) return { path: fromCache, source: 'ldconfig', rejected };
  const detail = rejected.length
    ? `; rejected: ${rejected.map((r) => `${r.path} (${r.reason})`).join('; ')}`
    : '; none found in LD_LIBRARY_PATH or the ldconfig cache';
  throw new DcmiLibraryPathError(`cannot find a valid ${name}${detail}`, rejected);
}

/**
 * Which rules {@link checkTrustedFile} applies: `lookup` = every check of the automatic lookup (dcmi-abi.md §1.2,
 * {@link checkCandidate}); `explicit` = a path the operator named (architecture §4, {@link checkExplicitPath}).
 */
export type TrustRule = 'lookup' | 'explicit';

/** The outcome of {@link checkTrustedFile}: the path to use, or the rule that failed. */
export type TrustCheck = { ok: true; path: string } | { ok: false; reason: string };

/**
 * The one check of a file the agent loads (`libdcmi.so`, `liblingqu-dcmi.so`) or executes (`hccn_tool`) with its
 * privileges. Both rules answer the symlink-free path, the one to load or run. The reason names the file and the
 * rule broken.
 */
export function checkTrustedFile(
  p: string,
  rule: TrustRule,
  ownUid: number,
  inspector: PathInspector = nodePathInspector,
): TrustCheck {
  return rule === 'lookup' ? checkCandidate(p, ownUid, inspector) : checkExplicitPath(p, ownUid, inspector);
}

/** Symbolic links followed in one resolution before giving up (the kernel's limit, `ELOOP`). */
const MAX_LINKS = 40;
const STICKY = 0o1000;

/**
 * Architecture §4, the rule of an explicit `-dcmiLibrary`, `-switchLibrary` or `-hccnTool` (issue [T] item 3): the
 * path is resolved one component at a time from `/`, and
 * - the file it ends at is a regular file owned by root or the agent's own user, not writable by group or others;
 * - every symbolic link followed on the way is owned by root or the agent's user (the link is resolved first, its
 *   target checked like the rest of the path);
 * - every folder passed through (those of the given path and those of each link's target, `/` included) is owned by
 *   root or the agent's user and is not writable by group or others, unless it has the sticky bit (`/tmp`): there
 *   only the owner of an entry may rename or remove it, so another user cannot replace ours.
 * A build folder owned by the user who runs the tests passes. Every problem found is reported, the file's first,
 * each naming its entry; a missing entry, a loop of links or a non-folder in the middle stops the walk.
 */
export function checkExplicitPath(p: string, ownUid: number, inspector: PathInspector = nodePathInspector): TrustCheck {
  if (!path.isAbsolute(p)) return { ok: false, reason: 'must be an absolute path' };
  const who = ownUid === 0 ? 'root' : `root or the agent's user (uid ${ownUid})`;
  const fileProblems: string[] = [];
  const otherProblems: string[] = [];
  const seenFolders = new Set<string>();
  const checkFolder = (dir: string, e: PathEntry): void => {
    if (seenFolders.has(dir)) return;
    seenFolders.add(dir);
    if (!ownerOk(e.uid, ownUid)) {
      otherProblems.push(`folder ${dir} is owned by uid ${e.uid}, not ${who}: that user can replace what it holds`);
    } else if ((e.mode & GROUP_OR_OTHER_WRITE) !== 0 && (e.mode & STICKY) === 0) {
      otherProblems.push(
        `folder ${dir} is writable by group or others without the sticky bit (mode ${(e.mode & 0o7777).toString(8)}): ` +
          'another user can replace what it holds; run chmod go-w (or chmod +t) on it',
      );
    }
  };
  const root = inspector.lstat('/');
  if (!root) return { ok: false, reason: 'cannot be read: / cannot be read' };
  checkFolder('/', root);
  let todo = p.split('/').filter((c) => c !== '');
  let cur = '/';
  let links = 0;
  let final: string | undefined;
  while (todo.length > 0) {
    const name = todo.shift()!;
    if (name === '.') continue;
    if (name === '..') {
      cur = path.dirname(cur); // `cur` is symlink-free: its parent is the physical one, already checked
      continue;
    }
    const next = path.join(cur, name);
    const e = inspector.lstat(next);
    if (!e) return { ok: false, reason: next === p ? 'cannot be read: ENOENT' : `cannot be read: ${next}: ENOENT` };
    if (e.isSymbolicLink) {
      if (++links > MAX_LINKS) return { ok: false, reason: `more than ${MAX_LINKS} symbolic links (ELOOP)` };
      if (!ownerOk(e.uid, ownUid)) {
        otherProblems.push(`symbolic link ${next} is owned by uid ${e.uid}, not ${who}: that user can redirect it`);
      }
      let target: string;
      try {
        target = inspector.readlink(next);
      } catch (err) {
        return { ok: false, reason: `cannot be read: ${next}: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
      }
      if (target.startsWith('/')) cur = '/';
      todo = [...target.split('/').filter((c) => c !== ''), ...todo];
      continue;
    }
    if (todo.length > 0) {
      if (!e.isDirectory) return { ok: false, reason: `cannot be read: ${next} is not a folder (ENOTDIR)` };
      checkFolder(next, e);
      cur = next;
      continue;
    }
    if (!e.isFile) return { ok: false, reason: next === p ? 'is not a regular file' : `${next} is not a regular file` };
    final = next;
    const subject = next === p ? '' : `resolves to ${next}, which `;
    if (!ownerOk(e.uid, ownUid)) fileProblems.push(`${subject}is owned by uid ${e.uid}, not ${who}`);
    if ((e.mode & GROUP_OR_OTHER_WRITE) !== 0) {
      fileProblems.push(
        `${subject}is writable by group or others (mode ${(e.mode & 0o777).toString(8)}); run chmod go-w on it`,
      );
    }
  }
  if (final === undefined) return { ok: false, reason: 'is not a regular file' };
  const problems = [...fileProblems, ...otherProblems];
  return problems.length > 0 ? { ok: false, reason: problems.join('; ') } : { ok: true, path: final };
}
