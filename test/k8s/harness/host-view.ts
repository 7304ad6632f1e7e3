/**
 * The host paths a real kubelet insists on (compiled in, no flag), shadowed by sandbox folders inside the suite's
 * own mount namespace, so that the host's folders are never written.
 *
 * kubelet keeps its device-plugin folder at `/var/lib/kubelet/device-plugins` whatever `--root-dir` says, and it
 * creates `/var/log/containers` for its legacy log links. `npm run test:cluster` (test/k8s/run.ts) starts jest under
 * `unshare --mount --propagation private`; every process the suites start inherits that namespace. A path that
 * exists is shadowed with a bind mount of a sandbox folder. A path that does not exist (a build machine has no
 * `/var/lib/kubelet`) cannot be a mount point without creating it on the host, so its nearest existing ancestor is
 * first covered by an overlay (the ancestor read-only below, a tmpfs above) in which the path is created.
 * Everything is unmounted again, deepest first, by {@link HostView.release}; when the namespace ends (jest exits,
 * killed or not) the kernel drops whatever is left.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The environment variable in which test/k8s/run.ts passes its own (the host's) mount namespace to jest. */
export const HOST_MNT_NS_ENV = 'ASCEND_K8S_HOST_MNT_NS';

/** `mnt:[<inode>]` of the calling process. */
export function currentMountNamespace(): string {
  return fs.readlinkSync('/proc/self/ns/mnt');
}

/** Thrown when the harness would write host paths: not inside the private mount namespace of test/k8s/run.ts. */
export class NotIsolatedError extends Error {
  constructor(reason: string) {
    super(
      `the real-cluster suites must run in their own mount namespace (${reason}); run them through ` +
        '`npm run test:cluster [-- <jest args>]`, which starts jest under `unshare --mount --propagation private`',
    );
    this.name = 'NotIsolatedError';
  }
}

/** Refuses to go on unless this process runs in a mount namespace other than the one test/k8s/run.ts ran in. */
export function assertIsolated(): void {
  const host = process.env[HOST_MNT_NS_ENV];
  if (!host) throw new NotIsolatedError(`${HOST_MNT_NS_ENV} is not set`);
  const own = currentMountNamespace();
  if (own === host) throw new NotIsolatedError(`this process shares the host's mount namespace ${own}`);
}

interface MountEntry {
  readonly id: number;
  readonly mountPoint: string;
}

/** The mount table of this process (`/proc/self/mountinfo`; octal escapes in paths decoded). */
export function mounts(): MountEntry[] {
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const f = l.split(' ');
      const mountPoint = (f[4] ?? '').replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
      return { id: Number(f[0]), mountPoint };
    });
}

/** Mount points at or below `dir`, deepest (and most recent) first. */
export function mountsUnder(dir: string): string[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return mounts()
    .filter((m) => m.mountPoint === dir || m.mountPoint.startsWith(prefix))
    .sort((a, b) => b.mountPoint.split('/').length - a.mountPoint.split('/').length || b.id - a.id)
    .map((m) => m.mountPoint);
}

function run(cmd: string, args: readonly string[]): void {
  try {
    execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`${cmd} ${args.join(' ')} failed${stderr ? `: ${stderr}` : ''}`, { cause: err });
  }
}

/** Unmounts `target` (lazily when busy: a process that still holds it must not stop the clean-up). */
export function unmount(target: string): void {
  try {
    run('umount', [target]);
  } catch {
    run('umount', ['--lazy', target]);
  }
}

/** The shadowed paths of one cluster, and how to undo them. */
export class HostView {
  /** Mount points made by this view, in the order made. */
  readonly #made: string[] = [];
  readonly #sandbox: string;
  #overlays = 0;

  /** `sandbox`: a folder of the run dir for the overlays' upper layers (on a tmpfs mounted there). */
  constructor(sandbox: string) {
    assertIsolated();
    this.#sandbox = sandbox;
    fs.mkdirSync(sandbox, { recursive: true, mode: 0o700 });
  }

  /** Makes `target` (absolute) show the folder `source` to every process of the namespace. */
  shadow(target: string, source: string): void {
    if (!path.isAbsolute(target)) throw new Error(`host view: ${target} is not an absolute path`);
    fs.mkdirSync(source, { recursive: true });
    if (!fs.existsSync(target)) this.#overlayAncestor(target);
    this.#mount(['--bind', source, target], target);
  }

  /** Covers the nearest existing ancestor of `target` with an overlay and creates `target` in it. */
  #overlayAncestor(target: string): void {
    let ancestor = path.dirname(target);
    while (!fs.existsSync(ancestor)) ancestor = path.dirname(ancestor);
    if (ancestor === '/') throw new Error(`host view: ${target} has no existing ancestor but /; refusing to cover /`);
    const below = mountsUnder(ancestor).filter((m) => m !== ancestor);
    if (below.length > 0) {
      // An overlay would hide these mounts from every process of the suite.
      throw new Error(`host view: cannot cover ${ancestor} to create ${target}: it holds mounts (${below.join(', ')})`);
    }
    const layer = path.join(this.#sandbox, `overlay-${this.#overlays++}`);
    fs.mkdirSync(layer, { recursive: true });
    this.#mount(['-t', 'tmpfs', '-o', 'mode=0700,size=64m', 'tmpfs', layer], layer);
    fs.mkdirSync(path.join(layer, 'upper'));
    fs.mkdirSync(path.join(layer, 'work'));
    const options = `lowerdir=${ancestor},upperdir=${path.join(layer, 'upper')},workdir=${path.join(layer, 'work')}`;
    this.#mount(['-t', 'overlay', '-o', options, 'overlay', ancestor], ancestor);
    fs.mkdirSync(target, { recursive: true });
  }

  #mount(args: readonly string[], target: string): void {
    run('mount', args);
    this.#made.push(target);
  }

  /** Undoes every mount of this view, last first. Returns the problems (empty when all went). */
  release(): string[] {
    const problems: string[] = [];
    for (const target of this.#made.splice(0).reverse()) {
      try {
        unmount(target);
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
    return problems;
  }
}
