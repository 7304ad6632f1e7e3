/**
 * The duplicate-mount detector (spec L.5): which running containers hold which NPU, from containerd, and a warning
 * when two of them hold the same one. It only logs; it never changes a container.
 *
 * - The socket: `CONTAINERD_ADDRESS` when set (ctr's variable; `unix://` optional), else the first that exists of
 *   `/run/containerd/containerd.sock` and `/run/docker/containerd/containerd.sock` (upstream's order). None: one
 *   info line and the detector stays off. A socket that is a symbolic link, not a socket, owned by another user
 *   than root or the agent's, or writable by others is refused the same way (upstream checks owner and mode).
 * - A session: subscribe to the task start/exit/delete and container delete events of every namespace, then list
 *   every namespace's containers and tasks (the scan), then apply the events in order (those that came during the
 *   scan after it). A container holds its NPUs while its task runs (RUNNING, PAUSED, PAUSING in the scan; from
 *   `/tasks/start` until the init process's `/tasks/exit`, `/tasks/delete` or `/containers/delete`), as upstream
 *   counts containers from task start to task exit: a stopped container that is kept (kubelet keeps the last dead
 *   container of a pod) holds nothing.
 * - The warning: once per duplicate set (a device and the containers holding it), again when the set changes; an
 *   info line when a device is held by one container again. Bounded text.
 * - containerd gone (the stream ends, a call fails): one warning, then retries with backoff (1 s doubling to 30 s;
 *   each failed try after the first at debug); the next session's scan replaces what was known.
 */
import fs from 'node:fs';
import type { Logger } from '../core/logger.js';
import { errorMessage } from '../core/errors.js';
import { boundedText } from '../core/text.js';
import { Backoff } from '../kubelet/backoff.js';
import {
  boundedId,
  ContainerdClient,
  type ContainerdClientOptions,
  type ContainerEvent,
  type ContainerRecord,
  OCI_SPEC_TYPE,
} from './containerd-client.js';
import { devicesOfSpec, readNpuMajors } from './npu-devices.js';

/** upstream's default sockets, in its order */
export const DEFAULT_CONTAINERD_SOCKETS: readonly string[] = [
  '/run/containerd/containerd.sock',
  '/run/docker/containerd/containerd.sock',
];
/** The variable naming the socket (as for `ctr`). */
export const CONTAINERD_ADDRESS_ENV = 'CONTAINERD_ADDRESS';

/** Longest warning text (spec A.3: log lines of at most 1024 characters). */
export const MAX_WARNING_CHARS = 1024;
/** Events held while the scan runs; more end the session (the next one scans again). */
export const MAX_PENDING_EVENTS = 10_000;
/** Characters of a container ID in the warning (upstream: 12). */
const SHORT_ID = 12;
const K8S_CONTAINER_NAME = 'io.kubernetes.container.name';
const K8S_POD_NAME = 'io.kubernetes.pod.name';
const K8S_POD_NAMESPACE = 'io.kubernetes.pod.namespace';
/** Task states in which the container's process exists (the scan). */
const LIVE_STATES: ReadonlySet<string> = new Set(['RUNNING', 'PAUSED', 'PAUSING']);

/** A container holding NPUs. */
export interface Holder {
  readonly namespace: string;
  readonly id: string;
  readonly name: string;
  readonly podName: string;
  readonly podNamespace: string;
  readonly devices: readonly number[];
}

/** A device held by more than one container. */
export interface DuplicateMount {
  readonly device: number;
  readonly holders: readonly Holder[];
}

/** Options of {@link DuplicateMountDetector}. */
export interface DuplicateMountOptions {
  readonly log: Logger;
  /** The process environment (for {@link CONTAINERD_ADDRESS_ENV}). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Sockets tried in order when the variable is not set (default {@link DEFAULT_CONTAINERD_SOCKETS}). */
  readonly sockets?: readonly string[];
  /** Where the NPU majors are listed (default `/proc/devices`). */
  readonly procDevicesPath?: string;
  /** Backoff between sessions (default 1 s doubling to 30 s). */
  readonly retryInitialMs?: number;
  readonly retryMaxMs?: number;
  /** Options of each session's client (deadlines, message bound). */
  readonly client?: ContainerdClientOptions;
}

/** Which socket to use, or why none: the first that exists (or the variable's), checked as upstream checks it. */
export function resolveContainerdSocket(
  env: Readonly<Record<string, string | undefined>>,
  sockets: readonly string[],
): { path: string } | { off: string } {
  const fromEnv = env[CONTAINERD_ADDRESS_ENV];
  const candidates = fromEnv ? [fromEnv.replace(/^unix:\/\//, '')] : sockets;
  for (const p of candidates) {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(p);
    } catch {
      continue;
    }
    const where = boundedText(p, 256);
    if (st.isSymbolicLink()) return { off: `${where} is a symbolic link` };
    if (!st.isSocket()) return { off: `${where} is not a socket` };
    const uid = process.getuid?.() ?? 0;
    if (st.uid !== 0 && st.uid !== uid) return { off: `${where} is owned by uid ${st.uid}` };
    if (st.mode & 0o002) return { off: `${where} is writable by others` };
    return { path: p };
  }
  const named = fromEnv ? `${CONTAINERD_ADDRESS_ENV}=${boundedText(fromEnv, 256)}` : candidates.join(', ');
  return { off: `no containerd socket (${named})` };
}

/**
 * The duplicate-mount detector. `start()` returns at once; everything runs in the background and never throws;
 * `stop()` ends the session and the retries.
 */
export class DuplicateMountDetector {
  readonly #o: DuplicateMountOptions;
  readonly #log: Logger;
  readonly #backoff: Backoff;
  /** `namespace/id` → the container holding NPUs */
  #held = new Map<string, Holder>();
  /** device → the set last warned about (its holder keys, sorted) */
  readonly #warned = new Map<number, string>();
  #majors: ReadonlySet<number> = new Set();
  #majorsProblem: string | undefined;
  #stopped = false;
  #running: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #endSession: ((err?: Error) => void) | undefined;
  #connected = false;

  constructor(options: DuplicateMountOptions) {
    this.#o = options;
    this.#log = options.log;
    this.#backoff = new Backoff(options.retryInitialMs ?? 1000, options.retryMaxMs ?? 30_000);
  }

  /** Whether a session is established (scan done, events followed). */
  get connected(): boolean {
    return this.#connected;
  }

  /** The containers holding NPUs now (a copy). */
  holders(): Holder[] {
    return [...this.#held.values()];
  }

  /** The devices held by more than one container now. */
  duplicates(): DuplicateMount[] {
    const byDevice = new Map<number, Holder[]>();
    for (const h of this.#held.values()) {
      for (const d of h.devices) {
        const list = byDevice.get(d) ?? [];
        list.push(h);
        byDevice.set(d, list);
      }
    }
    const out: DuplicateMount[] = [];
    for (const [device, holders] of [...byDevice].sort((a, b) => a[0] - b[0])) {
      if (holders.length > 1) out.push({ device, holders: holders.sort((a, b) => keyOf(a).localeCompare(keyOf(b))) });
    }
    return out;
  }

  /** Resolves the socket and starts following containerd; logs one info line and does nothing when there is none. */
  start(): void {
    if (this.#running || this.#stopped) return;
    const socket = resolveContainerdSocket(this.#o.env ?? process.env, this.#o.sockets ?? DEFAULT_CONTAINERD_SOCKETS);
    if ('off' in socket) {
      this.#log.info({ reason: socket.off }, `duplicate-mount detector off: ${socket.off}`);
      return;
    }
    this.#running = this.#loop(socket.path);
  }

  /** Ends the session and the retries (idempotent). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#endSession?.();
    this.#wake?.();
    await this.#running;
  }

  async #loop(socketPath: string): Promise<void> {
    this.#log.info({ socket: socketPath }, 'duplicate-mount detector: following containerd');
    let failures = 0;
    while (!this.#stopped) {
      let err: Error | undefined;
      try {
        err = await this.#session(socketPath);
      } catch (e) {
        err = e instanceof Error ? e : new Error(String(e));
      }
      if (this.#connected) failures = 0; // a new outage: warn again
      this.#connected = false;
      if (this.#stopped) break;
      const delay = this.#backoff.next();
      const fields = { socket: socketPath, error: boundedText(errorMessage(err), 512), retryMs: delay };
      if (failures++ === 0) this.#log.warn(fields, 'duplicate-mount detector: containerd unreachable; retrying');
      else this.#log.debug(fields, 'duplicate-mount detector: containerd still unreachable');
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, delay);
        t.unref();
        this.#wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.#wake = undefined;
    }
    this.#connected = false;
  }

  /** One connection: subscribe, scan, follow. Resolves with why it ended. */
  async #session(socketPath: string): Promise<Error | undefined> {
    const client = new ContainerdClient(socketPath, this.#o.client);
    const pending: ContainerEvent[] = [];
    let scanned = false;
    let chain: Promise<void> = Promise.resolve();
    let ended!: (err?: Error) => void;
    const end = new Promise<Error | undefined>((resolve) => (ended = resolve));
    this.#endSession = (err) => ended(err);
    const enqueue = (e: ContainerEvent): void => {
      chain = chain
        .then(() => this.#apply(client, e))
        .catch((err: unknown) => {
          if (!this.#stopped) this.#problem(e, errorMessage(err));
        });
    };
    const sub = client.subscribe({
      onEvent: (e) => {
        if (scanned) enqueue(e);
        else if (pending.length < MAX_PENDING_EVENTS) pending.push(e);
        else ended(new Error(`more than ${MAX_PENDING_EVENTS} events during the scan`));
      },
      onProblem: (p) => this.#log.warn({ problem: boundedText(p, 512) }, 'duplicate-mount detector: unreadable event'),
      onEnd: (err) => ended(err),
    });
    try {
      const majors = await readNpuMajors(this.#o.procDevicesPath ?? '/proc/devices');
      // once, not at every retry
      if (majors.problem && majors.problem !== this.#majorsProblem) {
        this.#log.warn({ problem: majors.problem }, 'duplicate-mount detector: cannot read the NPU majors');
      }
      this.#majorsProblem = majors.problem;
      this.#majors = majors.majors;
      const scan = await Promise.race([
        this.#scan(client),
        end.then((err) => Promise.reject(err ?? new Error('stopped'))),
      ]);
      if (this.#stopped) return undefined;
      this.#held = scan;
      scanned = true;
      for (const e of pending.splice(0)) enqueue(e);
      this.#connected = true;
      this.#backoff.reset();
      this.#log.info(
        { containers: scan.size, npuMajors: [...this.#majors] },
        'duplicate-mount detector: containers scanned, following events',
      );
      this.#report();
      const why = await end;
      if (!this.#stopped) await chain; // a stop does not wait for a call in flight (it fails when the client closes)
      return why;
    } finally {
      this.#endSession = undefined;
      sub.cancel();
      client.close();
    }
  }

  /** Every namespace's containers with a live task, with their NPUs. */
  async #scan(client: ContainerdClient): Promise<Map<string, Holder>> {
    const held = new Map<string, Holder>();
    for (const ns of await client.namespaces()) {
      const live = new Set((await client.tasks(ns)).filter((t) => LIVE_STATES.has(t.status)).map((t) => t.containerId));
      if (!live.size) continue;
      for (const c of await client.containers(ns, (id) => live.has(id))) {
        const h = this.#holderOf(ns, c);
        if (h) held.set(keyOf(h), h);
      }
    }
    return held;
  }

  async #apply(client: ContainerdClient, e: ContainerEvent): Promise<void> {
    if (this.#stopped) return;
    const key = `${e.namespace}/${e.containerId}`;
    if (e.topic === '/tasks/start') {
      const c = await client.container(e.namespace, e.containerId);
      const h = c ? this.#holderOf(e.namespace, c) : undefined;
      if (h) this.#held.set(key, h);
      else this.#held.delete(key);
    } else {
      // an exec's exit or delete does not end the container's task
      if (e.topic !== '/containers/delete' && e.processId !== '' && e.processId !== e.containerId) return;
      if (!this.#held.delete(key)) return;
    }
    this.#report();
  }

  #holderOf(namespace: string, c: ContainerRecord): Holder | undefined {
    if (c.specType !== OCI_SPEC_TYPE) {
      if (c.specType !== '' || c.spec.length) {
        this.#problem(
          { namespace, containerId: c.id },
          `spec of type ${boundedText(c.specType, 128)} is not an OCI spec`,
        );
      }
      return undefined;
    }
    const r = devicesOfSpec(c.spec, this.#majors);
    for (const p of r.problems) this.#problem({ namespace, containerId: c.id }, p);
    if (!r.devices.length) return undefined;
    const label = (k: string): string => boundedId(c.labels[k] ?? '');
    return {
      namespace: boundedId(namespace),
      id: boundedId(c.id),
      name: label(K8S_CONTAINER_NAME),
      podName: label(K8S_POD_NAME),
      podNamespace: label(K8S_POD_NAMESPACE),
      devices: r.devices,
    };
  }

  #problem(where: { namespace: string; containerId: string }, problem: string): void {
    this.#log.warn(
      {
        namespace: boundedId(where.namespace),
        container: boundedId(where.containerId),
        problem: boundedText(problem, 512),
      },
      'duplicate-mount detector: cannot read a container',
    );
  }

  /** Warns about each new or changed duplicate set; notes each that is gone. */
  #report(): void {
    const now = new Map<number, string>();
    for (const dup of this.duplicates()) {
      const set = dup.holders.map(keyOf).join('\n');
      now.set(dup.device, set);
      if (this.#warned.get(dup.device) === set) continue;
      this.#warned.set(dup.device, set);
      this.#log.warn(
        {
          device: `/dev/davinci${dup.device}`,
          containers: dup.holders.slice(0, 16).map((h) => `${h.namespace}/${h.id}`),
          count: dup.holders.length,
        },
        duplicateWarning(dup),
      );
    }
    for (const device of [...this.#warned.keys()]) {
      if (now.has(device)) continue;
      this.#warned.delete(device);
      this.#log.info(
        { device: `/dev/davinci${device}` },
        `duplicate NPU device mount cleared: device /dev/davinci${device} is mounted by at most one container`,
      );
    }
  }
}

function keyOf(h: Holder): string {
  return `${h.namespace}/${h.id}`;
}

/**
 * Spec L.5's warning: `detected duplicate NPU device mount: device /dev/davinci<N> is mounted by multiple
 * containers: ID=<12 characters>, Name=<name>, Namespace=<ns>[, Pod=<pod namespace>/<pod name>]; …`, cut to
 * {@link MAX_WARNING_CHARS} with the number of containers left out.
 */
export function duplicateWarning(dup: DuplicateMount): string {
  const head = `detected duplicate NPU device mount: device /dev/davinci${dup.device} is mounted by multiple containers: `;
  const parts = dup.holders.map((h) => {
    let s = `ID=${h.id.slice(0, SHORT_ID)}, Name=${h.name}, Namespace=${h.namespace}`;
    if (h.podName !== '') s += `, Pod=${h.podNamespace}/${h.podName}`;
    return s;
  });
  let text = head;
  for (let i = 0; i < parts.length; i++) {
    const next = (i ? '; ' : '') + parts[i]!;
    const more = `; … ${parts.length - i} more`;
    if (text.length + next.length + (i < parts.length - 1 ? more.length : 0) > MAX_WARNING_CHARS) {
      return text + (i ? more : boundedText(parts[i]!, MAX_WARNING_CHARS - text.length));
    }
    text += next;
  }
  return text;
}
