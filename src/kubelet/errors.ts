/**
 * Typed errors of the kubelet layer. {@link KubeletRequestError} becomes a gRPC status in the servers; the start-up
 * errors are turned into exit statuses by the CLI (architecture §4: a start-up wait that runs out exits 4).
 */
import { status } from '@grpc/grpc-js';

/** A request the plugin refuses; `code` is the gRPC status sent to kubelet. */
export class KubeletRequestError extends Error {
  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
    this.name = 'KubeletRequestError';
  }
}

/** INVALID_ARGUMENT: the request itself is wrong (unknown or duplicate IDs, oversized, more chips than exist). */
export function invalidArgument(message: string): KubeletRequestError {
  return new KubeletRequestError(status.INVALID_ARGUMENT, message);
}

/** FAILED_PRECONDITION: the request is well formed but the node cannot honour it now (health, no volcano pod). */
export function failedPrecondition(message: string): KubeletRequestError {
  return new KubeletRequestError(status.FAILED_PRECONDITION, message);
}

/** A start-up wait ran out (kubelet directory, kubelet.sock, first registration). The CLI exits 4. */
export class KubeletWaitTimeoutError extends Error {
  constructor(
    readonly waitedFor: string,
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(`gave up after ${timeoutMs} ms waiting for ${waitedFor}`, options);
    this.name = 'KubeletWaitTimeoutError';
  }
}

/** A Unix socket path that the OS would silently truncate (sun_path holds 107 bytes plus NUL). */
export class SocketPathTooLongError extends Error {
  constructor(
    readonly socketPath: string,
    readonly maxBytes: number,
  ) {
    super(`socket path is ${Buffer.byteLength(socketPath)} bytes, the limit is ${maxBytes}: ${socketPath}`);
    this.name = 'SocketPathTooLongError';
  }
}

/** A mandatory device node (e.g. `/dev/davinci_manager`, spec C.4) is missing. */
export class DeviceNodeMissingError extends Error {
  constructor(readonly nodePath: string) {
    super(`mandatory device node ${nodePath} does not exist`);
    this.name = 'DeviceNodeMissingError';
  }
}

/** Spec A.4: the kubelet directory or kubelet.sock is a symbolic link or owned by someone else. */
export class UnsafeKubeletPathError extends Error {
  constructor(
    readonly unsafePath: string,
    readonly reason: string,
  ) {
    super(`${unsafePath}: ${reason} (spec A.4: must not be a symbolic link and must be owned by root)`);
    this.name = 'UnsafeKubeletPathError';
  }
}
