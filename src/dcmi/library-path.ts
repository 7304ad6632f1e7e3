/**
 * Where `libdcmi.so` is loaded from, with the security checks of spec dcmi-abi.md §1.2 for the automatic lookup
 * and the explicit-path rule of architecture §4 for `-dcmiLibrary`. {@link checkTrustedFile} is the one check of a
 * file the (privileged) agent loads or executes; `hccn.ts` applies it to `-hccnTool` as well.
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
 * Finds the library to load. An explicit path must be a regular file not writable by group or others
 * (architecture §4); otherwise `LD_LIBRARY_PATH` then the ldconfig cache are searched with every check of
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
    return { path: p, source: 'explicit', rejected: [] };
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
 * {@link checkCandidate}); `explicit` = a path the operator named (architecture §4): a regular file (a symbolic link
 * is followed) not writable by group or others, its folders being the operator's choice.
 */
export type TrustRule = 'lookup' | 'explicit';

/** The outcome of {@link checkTrustedFile}: the path to use, or the rule that failed. */
export type TrustCheck = { ok: true; path: string } | { ok: false; reason: string };

/**
 * The one check of a file the agent loads (`libdcmi.so`) or executes (`hccn_tool`) with its privileges. `lookup`
 * answers the symlink-free path; `explicit` answers `p` as given. The reason names the file and the rule broken.
 */
export function checkTrustedFile(
  p: string,
  rule: TrustRule,
  ownUid: number,
  inspector: PathInspector = nodePathInspector,
): TrustCheck {
  if (rule === 'lookup') return checkCandidate(p, ownUid, inspector);
  let resolved: string;
  try {
    resolved = inspector.realpath(p);
  } catch (err) {
    return { ok: false, reason: `cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` };
  }
  const st = inspector.lstat(resolved);
  if (!st) return { ok: false, reason: 'cannot be read: ENOENT' };
  if (!st.isFile) return { ok: false, reason: 'is not a regular file' };
  if ((st.mode & GROUP_OR_OTHER_WRITE) !== 0) {
    return {
      ok: false,
      reason: `is writable by group or others (mode ${(st.mode & 0o777).toString(8)}); run chmod go-w on it`,
    };
  }
  return { ok: true, path: p };
}
