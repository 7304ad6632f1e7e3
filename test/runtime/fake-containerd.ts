/**
 * A fake containerd for the detector's unit tests: the four read-only services of `proto/containerd/` served by
 * grpc-js on a Unix socket, over containers held in memory; events are pushed to every subscriber by the test.
 */
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import { loadContainerdServices, NAMESPACE_HEADER, OCI_SPEC_TYPE } from '../../src/runtime/containerd-client.js';

/** A container of the fake. */
export interface FakeContainer {
  id: string;
  labels?: Record<string, string>;
  /** The OCI spec (an object: sent as JSON; a Buffer: sent as is). */
  spec?: object | Buffer;
  specType?: string;
  /** Task status; undefined: no task. */
  task?: 'CREATED' | 'RUNNING' | 'STOPPED' | 'PAUSED';
}

/** An OCI spec with `env` and device cgroup rules. */
export function ociSpec(
  env: string[] = [],
  devices: { allow: boolean; type: string; major?: number; minor?: number }[] = [],
): object {
  return { ociVersion: '1.0.2', process: { env }, linux: { resources: { devices } } };
}

/** Encodes string fields (`field → value`) in the protobuf wire format (for event payloads). */
export function encodeStrings(fields: Record<number, string>): Buffer {
  const parts: Buffer[] = [];
  for (const [n, v] of Object.entries(fields)) {
    const b = Buffer.from(v);
    parts.push(Buffer.from([(Number(n) << 3) | 2, b.length]), b); // lengths < 128 in the tests
  }
  return Buffer.concat(parts);
}

/** The fake server. */
export class FakeContainerd {
  readonly namespaces = new Map<string, FakeContainer[]>();
  readonly #subscribers = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  #server: grpc.Server | undefined;
  /** Calls served, by method. */
  readonly calls: string[] = [];
  /** Extra message of ListStream (e.g. an oversized one), sent first. */
  hostileListMessage: object | undefined;

  constructor(readonly socket: string) {}

  /** Adds (or replaces) a container. */
  put(ns: string, c: FakeContainer): void {
    const list = this.namespaces.get(ns) ?? [];
    this.namespaces.set(ns, [...list.filter((x) => x.id !== c.id), c]);
  }

  /** The number of open event streams. */
  get subscribers(): number {
    return this.#subscribers.size;
  }

  /** Pushes an event to every subscriber. */
  emit(ns: string, topic: string, payload: Buffer): void {
    const type = `containerd.events.${topic}`;
    for (const s of this.#subscribers) {
      s.write({ namespace: ns, topic, event: { type_url: type, value: payload } });
    }
  }

  async start(): Promise<void> {
    fs.rmSync(this.socket, { force: true });
    const defs = loadContainerdServices();
    const server = new grpc.Server();
    const ns = (call: { metadata: grpc.Metadata }): FakeContainer[] =>
      this.namespaces.get(String(call.metadata.get(NAMESPACE_HEADER)[0] ?? '')) ?? [];
    const toMsg = (c: FakeContainer): object => ({
      id: c.id,
      labels: c.labels ?? {},
      spec:
        c.spec === undefined
          ? null
          : {
              type_url: c.specType ?? OCI_SPEC_TYPE,
              value: Buffer.isBuffer(c.spec) ? c.spec : Buffer.from(JSON.stringify(c.spec)),
            },
    });
    server.addService(defs.namespaces, {
      List: (_: unknown, cb: grpc.sendUnaryData<unknown>) => {
        this.calls.push('namespaces.List');
        cb(null, { namespaces: [...this.namespaces.keys()].map((name) => ({ name })) });
      },
    });
    server.addService(defs.containers, {
      ListStream: (call: grpc.ServerWritableStream<unknown, unknown>) => {
        this.calls.push('containers.ListStream');
        if (this.hostileListMessage) call.write(this.hostileListMessage);
        for (const c of ns(call)) call.write({ container: toMsg(c) });
        call.end();
      },
      Get: (call: grpc.ServerUnaryCall<{ id: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        this.calls.push('containers.Get');
        const c = ns(call).find((x) => x.id === call.request.id);
        if (!c) cb({ code: grpc.status.NOT_FOUND, details: 'not found' });
        else cb(null, { container: toMsg(c) });
      },
    });
    server.addService(defs.tasks, {
      List: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        this.calls.push('tasks.List');
        // as containerd: the task's ID in `id`, `container_id` empty
        cb(null, {
          tasks: ns(call)
            .filter((c) => c.task)
            .map((c) => ({ id: c.id, pid: 1, status: c.task })),
        });
      },
    });
    server.addService(defs.events, {
      Subscribe: (call: grpc.ServerWritableStream<unknown, unknown>) => {
        this.calls.push('events.Subscribe');
        this.#subscribers.add(call);
        call.on('cancelled', () => this.#subscribers.delete(call));
        call.on('close', () => this.#subscribers.delete(call));
      },
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${this.socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    fs.chmodSync(this.socket, 0o660);
    this.#server = server;
  }

  /** Goes away at once (open streams fail) and removes the socket. */
  stop(): void {
    this.#server?.forceShutdown();
    this.#server = undefined;
    this.#subscribers.clear();
    fs.rmSync(this.socket, { force: true });
  }
}
