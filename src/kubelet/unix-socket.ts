/**
 * Unix-socket helpers: a path that the OS would truncate is an error (toolchain pitfall 13), a stale file is
 * removed before listening (spec A.4), and the socket is identified by its inode so that its removal or
 * replacement can be noticed.
 */
import fs from 'node:fs';
import { SocketPathTooLongError, UnsafeKubeletPathError } from './errors.js';

/** sun_path is 108 bytes on Linux, including the terminating NUL. */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Throws {@link SocketPathTooLongError} when `socketPath` does not fit in sun_path. */
export function checkSocketPath(socketPath: string): void {
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
    throw new SocketPathTooLongError(socketPath, MAX_SOCKET_PATH_BYTES);
  }
}

/** Removes whatever non-directory file is at `socketPath` (spec A.4: a stale file is deleted before listening). */
export function removeStale(socketPath: string): void {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(socketPath);
  } catch {
    return;
  }
  if (st.isDirectory()) throw new Error(`${socketPath} is a directory, cannot listen there`);
  fs.rmSync(socketPath, { force: true });
}

/**
 * Identity of the socket at `socketPath` (inode plus creation time, so a re-created socket that reuses the inode
 * number still differs), or undefined when there is no socket there.
 */
export function socketIdentity(socketPath: string): string | undefined {
  try {
    const st = fs.lstatSync(socketPath);
    return st.isSocket() ? `${st.dev}:${st.ino}:${st.birthtimeMs}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Spec A.4: the kubelet directory and kubelet.sock must not be symbolic links and must be owned by root; the
 * agent's own uid is accepted too (architecture §4), so the simulator runs without root. Throws
 * {@link UnsafeKubeletPathError}; a path that does not exist passes (waiting for it is the caller's business).
 */
export function checkKubeletPathOwner(p: string, ownUid: number): void {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(p);
  } catch {
    return;
  }
  if (st.isSymbolicLink()) throw new UnsafeKubeletPathError(p, 'is a symbolic link');
  if (st.uid !== 0 && st.uid !== ownUid) throw new UnsafeKubeletPathError(p, `is owned by uid ${st.uid}`);
}

/** What {@link stopServerOnSocket} needs of a gRPC server. */
export interface StoppableServer {
  tryShutdown(callback: (error?: Error) => void): void;
  forceShutdown(): void;
}

/**
 * Stops a gRPC server listening on `socketPath` — gracefully, forced after `graceMs` — then removes the socket if it
 * is still the one it created (`identity`, from {@link socketIdentity}): a socket another process made since stays.
 */
export async function stopServerOnSocket(
  server: StoppableServer,
  socketPath: string,
  identity: string | undefined,
  graceMs = 1000,
): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
  if (identity !== undefined && socketIdentity(socketPath) === identity) fs.rmSync(socketPath, { force: true });
}
