/**
 * A read-only containerd client over its gRPC API on the Unix socket (spec L.5): namespaces, containers with their
 * OCI spec, tasks, and the event stream. Only the calls the duplicate-mount detector needs, from the minimal protos
 * in `proto/containerd/` (containerd's packages and field numbers). It never creates, changes or deletes anything.
 *
 * Limits: every unary call and every list stream has a deadline; every message is bounded by the channel's
 * `grpc.max_receive_message_length`; list results are bounded in count; an event payload is read by field number
 * with the bounded wire reader.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import path from 'node:path';
import { WIRE_LEN, WireReader } from '../core/proto-wire.js';
import { PROJECT_ROOT } from '../core/paths.js';
import { boundedText } from '../core/text.js';

/** Folder of the containerd protos. */
export const CONTAINERD_PROTO_DIR = path.join(PROJECT_ROOT, 'proto', 'containerd');
const PROTO_FILES = ['namespaces.proto', 'containers.proto', 'tasks.proto', 'events.proto'];
/** Same conventions as the other protos of the project (src/kubelet/proto.ts). */
const LOADER_OPTIONS: protoLoader.Options = {
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [CONTAINERD_PROTO_DIR],
};

/** The metadata header that selects the namespace of a call (containerd `namespaces.GRPCHeader`). */
export const NAMESPACE_HEADER = 'containerd-namespace';
/** The `Any` type of a container's spec: the OCI runtime spec as JSON. */
export const OCI_SPEC_TYPE = 'types.containerd.io/opencontainers/runtime-spec/1/Spec';

/** Bounds of what the client accepts. */
export const CONTAINERD_LIMITS = {
  /** Namespaces listed. */
  maxNamespaces: 256,
  /** Containers (and tasks) listed per namespace. */
  maxContainers: 10_000,
  /** One gRPC message (a container with its spec, one list response, one event). */
  maxMessageBytes: 4 * 1024 * 1024,
  /** One event payload (`Envelope.event.value`). */
  maxEventBytes: 64 * 1024,
  /** A container ID, a namespace, a label value kept for the log. */
  maxIdBytes: 256,
} as const;

/** A container as listed: its ID, its labels and its OCI spec (the raw JSON; parsed by the caller within limits). */
export interface ContainerRecord {
  readonly id: string;
  readonly labels: Readonly<Record<string, string>>;
  /** `Any.type_url` of the spec ('' when the container has none). */
  readonly specType: string;
  readonly spec: Buffer;
}

/** A task (its init process) as listed. */
export interface TaskRecord {
  readonly containerId: string;
  /** `UNKNOWN`, `CREATED`, `RUNNING`, `STOPPED`, `PAUSED`, `PAUSING`. */
  readonly status: string;
}

/** The event topics the detector follows (containerd's topic names). */
export type ContainerEventTopic = '/tasks/start' | '/tasks/exit' | '/tasks/delete' | '/containers/delete';

/** One event, decoded to what the detector needs. */
export interface ContainerEvent {
  readonly namespace: string;
  readonly topic: ContainerEventTopic;
  readonly containerId: string;
  /**
   * `/tasks/exit` and `/tasks/delete`: the process that ended (`id`); the task's own init process when it equals
   * the container ID or is empty (an exec ending does not free the container's devices).
   */
  readonly processId: string;
}

/** A response that breaks a limit or the expected shape. */
export class ContainerdResponseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ContainerdResponseError';
  }
}

/** Options of {@link ContainerdClient}. */
export interface ContainerdClientOptions {
  /** Deadline of each unary call and each list stream (default 5 s). */
  readonly callTimeoutMs?: number;
  /** Largest gRPC message accepted (default {@link CONTAINERD_LIMITS}.maxMessageBytes). */
  readonly maxMessageBytes?: number;
  /** Containers (and tasks) accepted per namespace (default {@link CONTAINERD_LIMITS}.maxContainers). */
  readonly maxContainers?: number;
}

/** A running event subscription. */
export interface EventSubscription {
  /** Ends the stream (idempotent); its `onEnd` is not called then. */
  cancel(): void;
}

interface AnyOut {
  type_url: string;
  value: Buffer;
}
interface ContainerOut {
  id: string;
  labels: Record<string, string>;
  spec: AnyOut | null;
}
interface ProcessOut {
  container_id: string;
  id: string;
  status: string;
}
interface EnvelopeOut {
  namespace: string;
  topic: string;
  event: AnyOut | null;
}
type ServiceCtor = new (address: string, creds: grpc.ChannelCredentials, options: grpc.ClientOptions) => grpc.Client;
interface Services {
  Namespaces: ServiceCtor;
  Containers: ServiceCtor;
  Tasks: ServiceCtor;
  Events: ServiceCtor;
}

/** Loads the containerd protos (each call parses the files; callers keep the result). */
export function loadContainerdServices(): {
  namespaces: grpc.ServiceDefinition;
  containers: grpc.ServiceDefinition;
  tasks: grpc.ServiceDefinition;
  events: grpc.ServiceDefinition;
} {
  const s = loadServices();
  const def = (c: ServiceCtor): grpc.ServiceDefinition => (c as unknown as { service: grpc.ServiceDefinition }).service;
  return { namespaces: def(s.Namespaces), containers: def(s.Containers), tasks: def(s.Tasks), events: def(s.Events) };
}

function loadServices(): Services {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_FILES, LOADER_OPTIONS)) as unknown as {
    containerd: { services: Record<string, { v1: Record<string, ServiceCtor> }> };
  };
  const s = pkg.containerd.services;
  return {
    Namespaces: s.namespaces!.v1.Namespaces!,
    Containers: s.containers!.v1.Containers!,
    Tasks: s.tasks!.v1.Tasks!,
    Events: s.events!.v1.Events!,
  };
}

const TOPICS: ReadonlySet<string> = new Set<ContainerEventTopic>([
  '/tasks/start',
  '/tasks/exit',
  '/tasks/delete',
  '/containers/delete',
]);

/** The subscription filters for {@link ContainerEventTopic} (containerd filter syntax; OR'ed). */
export const EVENT_FILTERS: readonly string[] = [...TOPICS].map((t) => `topic=="${t}"`);

/**
 * Reads the container ID and process ID of an event payload by containerd's field numbers (api/events): TaskStart
 * `container_id` = 1; TaskExit `container_id` = 1, `id` = 2; TaskDelete `container_id` = 1, `id` = 5;
 * ContainerDelete `id` = 1. Throws a `WireFormatError` on malformed bytes.
 */
export function decodeEventIds(topic: ContainerEventTopic, value: Buffer): { containerId: string; processId: string } {
  const processField = topic === '/tasks/exit' ? 2 : topic === '/tasks/delete' ? 5 : 0;
  const r = new WireReader(value);
  let containerId = '';
  let processId = '';
  while (!r.atLimit) {
    const tag = r.tag();
    const field = tag >>> 3;
    if ((tag & 7) === WIRE_LEN && field === 1) containerId = r.string(CONTAINERD_LIMITS.maxIdBytes);
    else if ((tag & 7) === WIRE_LEN && field === processField) processId = r.string(CONTAINERD_LIMITS.maxIdBytes);
    else r.skip(tag);
  }
  return { containerId, processId };
}

/** The read-only client; one instance per connection (the detector makes a new one after containerd went away). */
export class ContainerdClient {
  readonly #timeoutMs: number;
  readonly #maxContainers: number;
  readonly #clients: { ns: grpc.Client; containers: grpc.Client; tasks: grpc.Client; events: grpc.Client };

  constructor(
    readonly socketPath: string,
    opts: ContainerdClientOptions = {},
  ) {
    this.#timeoutMs = opts.callTimeoutMs ?? 5000;
    this.#maxContainers = opts.maxContainers ?? CONTAINERD_LIMITS.maxContainers;
    const s = loadServices();
    const address = `unix://${socketPath}`;
    const creds = grpc.credentials.createInsecure();
    const options: grpc.ClientOptions = {
      'grpc.max_receive_message_length': opts.maxMessageBytes ?? CONTAINERD_LIMITS.maxMessageBytes,
      // containerd's own clients connect with the socket path as authority
      'grpc.default_authority': 'localhost',
    };
    // one channel for the four services (the same target and options share a subchannel in grpc-js)
    this.#clients = {
      ns: new s.Namespaces(address, creds, options),
      containers: new s.Containers(address, creds, options),
      tasks: new s.Tasks(address, creds, options),
      events: new s.Events(address, creds, options),
    };
  }

  /** Every namespace's name. */
  async namespaces(): Promise<string[]> {
    const res = await this.#unary<{ namespaces: { name: string }[] }>(this.#clients.ns, 'List', {}, undefined);
    if (res.namespaces.length > CONTAINERD_LIMITS.maxNamespaces) {
      throw new ContainerdResponseError(
        `containerd listed ${res.namespaces.length} namespaces, the limit is ${CONTAINERD_LIMITS.maxNamespaces}`,
      );
    }
    return res.namespaces.map((n) => n.name);
  }

  /**
   * The containers of `namespace` (ListStream: one container per message); with `want`, only those whose ID it
   * accepts are kept (the others' specs are dropped as they arrive). All count towards the limit.
   */
  containers(namespace: string, want?: (id: string) => boolean): Promise<ContainerRecord[]> {
    return new Promise((resolve, reject) => {
      const out: ContainerRecord[] = [];
      // grpc-js takes deadlines as wall-clock times and turns them into a timer when the call starts (here, at
      // once): a wall-clock step afterwards does not move them (issue [T] item 1)
      const call = (this.#clients.containers as unknown as StreamMethod).ListStream(
        { filters: [] },
        this.#metadata(namespace),
        { deadline: Date.now() + this.#timeoutMs },
      );
      let failed = false;
      let seen = 0;
      call.on('data', (m: { container: ContainerOut | null }) => {
        if (failed) return;
        if (seen >= this.#maxContainers) {
          failed = true;
          call.cancel();
          reject(
            new ContainerdResponseError(
              `containerd listed more than ${this.#maxContainers} containers in namespace ${boundedId(namespace)}`,
            ),
          );
          return;
        }
        seen++;
        if (m.container && (!want || want(m.container.id))) out.push(toRecord(m.container));
      });
      call.on('error', (err: Error) => {
        if (!failed) reject(err);
        failed = true;
      });
      call.on('end', () => {
        if (!failed) resolve(out);
      });
    });
  }

  /** One container of `namespace`, or undefined when containerd does not know it (any more). */
  async container(namespace: string, id: string): Promise<ContainerRecord | undefined> {
    try {
      const res = await this.#unary<{ container: ContainerOut | null }>(
        this.#clients.containers,
        'Get',
        { id },
        namespace,
      );
      return res.container ? toRecord(res.container) : undefined;
    } catch (err) {
      if ((err as grpc.ServiceError).code === grpc.status.NOT_FOUND) return undefined;
      throw err;
    }
  }

  /** Every task (init process) of `namespace` with its status. */
  async tasks(namespace: string): Promise<TaskRecord[]> {
    const res = await this.#unary<{ tasks: ProcessOut[] }>(this.#clients.tasks, 'List', {}, namespace);
    if (res.tasks.length > this.#maxContainers) {
      throw new ContainerdResponseError(
        `containerd listed ${res.tasks.length} tasks in namespace ${boundedId(namespace)}, the limit is ${this.#maxContainers}`,
      );
    }
    // containerd fills `id` (the task's ID: its container's) and leaves `container_id` empty in a task list
    return res.tasks.map((t) => ({ containerId: t.container_id || t.id, status: t.status }));
  }

  /**
   * Subscribes to the events of {@link EVENT_FILTERS} in every namespace. `onEvent` gets each decoded event, and
   * `onProblem` each event that could not be decoded (the stream goes on); `onEnd` is called once when the stream
   * ends (containerd gone: with the error).
   */
  subscribe(handlers: {
    onEvent: (e: ContainerEvent) => void;
    onProblem: (problem: string) => void;
    onEnd: (err?: Error) => void;
  }): EventSubscription {
    const call = (this.#clients.events as unknown as StreamMethod).Subscribe(
      { filters: EVENT_FILTERS },
      new grpc.Metadata(),
      {},
    );
    let done = false;
    const end = (err?: Error): void => {
      if (done) return;
      done = true;
      handlers.onEnd(err);
    };
    call.on('data', (env: EnvelopeOut) => {
      if (done) return;
      const topic = env.topic;
      if (!TOPICS.has(topic)) return; // containerd applied the filters; anything else is not ours
      const value = env.event?.value ?? Buffer.alloc(0);
      if (value.length > CONTAINERD_LIMITS.maxEventBytes) {
        handlers.onProblem(
          `event ${topic}: payload of ${value.length} bytes, the limit is ${CONTAINERD_LIMITS.maxEventBytes}`,
        );
        return;
      }
      let ids: { containerId: string; processId: string };
      try {
        ids = decodeEventIds(topic as ContainerEventTopic, value);
      } catch (err) {
        handlers.onProblem(`event ${topic}: ${(err as Error).message}`);
        return;
      }
      if (ids.containerId === '') {
        handlers.onProblem(`event ${topic}: no container ID`);
        return;
      }
      handlers.onEvent({ namespace: boundedId(env.namespace), topic: topic as ContainerEventTopic, ...ids });
    });
    call.on('error', (err: Error) => end(err));
    call.on('end', () => end(new Error('containerd ended the event stream')));
    return {
      cancel: () => {
        done = true;
        call.cancel();
      },
    };
  }

  /** Closes the connection (idempotent). */
  close(): void {
    for (const c of Object.values(this.#clients)) c.close();
  }

  #metadata(namespace: string | undefined): grpc.Metadata {
    const md = new grpc.Metadata();
    if (namespace !== undefined) md.set(NAMESPACE_HEADER, namespace);
    return md;
  }

  #unary<T>(client: grpc.Client, method: string, req: object, namespace: string | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const fn = (client as unknown as Record<string, UnaryMethod<T>>)[method]!;
      fn.call(client, req, this.#metadata(namespace), { deadline: Date.now() + this.#timeoutMs }, (err, value) => {
        if (err) reject(err);
        else resolve(value as T);
      });
    });
  }
}

type UnaryMethod<T> = (
  req: object,
  md: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, value?: T) => void,
) => void;
interface StreamMethod {
  ListStream(req: object, md: grpc.Metadata, opts: grpc.CallOptions): grpc.ClientReadableStream<unknown>;
  Subscribe(req: object, md: grpc.Metadata, opts: grpc.CallOptions): grpc.ClientReadableStream<unknown>;
}

/** An ID or namespace cut for logging (containerd allows 76 characters; a hostile server anything). */
export function boundedId(s: string): string {
  return boundedText(s, CONTAINERD_LIMITS.maxIdBytes);
}

function toRecord(c: ContainerOut): ContainerRecord {
  return {
    id: c.id,
    labels: c.labels,
    specType: c.spec?.type_url ?? '',
    spec: c.spec?.value ?? Buffer.alloc(0),
  };
}
