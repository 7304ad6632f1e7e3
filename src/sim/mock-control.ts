/**
 * Client of the mock DCMI library's control socket (architecture §5): one JSON request per line, one JSON reply
 * per line, answered in order on one connection.
 */
import net from 'node:net';

/** A reply of the mock: `{"ok":true,...}` or `{"ok":false,"error":"..."}`. */
export type MockReply = { ok: true; [key: string]: unknown } | { ok: false; error: string };

/** One chip of the `state` reply. */
export interface MockChipState {
  logicId: number;
  phyId: number;
  cardId: number;
  deviceId: number;
  health: number;
  errorCodes: string[];
  link: string;
  processes: number;
  dropped: boolean;
  resets: number;
  [key: string]: unknown;
}

export interface MockState {
  chips: MockChipState[];
  counters: { subscribeCalls: number; callsByName: Record<string, number>; [key: string]: unknown };
}

export class MockControlError extends Error {
  override readonly name = 'MockControlError';
}

/** Largest reply line accepted (the `state` of 256 chips fits easily). */
const MAX_REPLY_BYTES = 4 * 1024 * 1024;

export class MockControlClient {
  private readonly pending: { resolve: (r: MockReply) => void; reject: (e: Error) => void }[] = [];
  private buffer = '';
  private failure: Error | undefined;

  private constructor(private readonly socket: net.Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', (err) => this.fail(new MockControlError(`control socket: ${err.message}`)));
    socket.on('close', () => this.fail(new MockControlError('control socket closed')));
  }

  /** Connects to the control socket at `socketPath`. */
  static connect(socketPath: string): Promise<MockControlClient> {
    return new Promise((resolve, reject) => {
      const socket = net.createConnection(socketPath);
      socket.once('connect', () => {
        socket.removeAllListeners('error');
        resolve(new MockControlClient(socket));
      });
      socket.once('error', (err) => reject(new MockControlError(`cannot connect to ${socketPath}: ${err.message}`)));
    });
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    if (this.buffer.length > MAX_REPLY_BYTES) {
      this.fail(new MockControlError('reply larger than 4 MiB'));
      this.socket.destroy();
      return;
    }
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + 1);
      const waiter = this.pending.shift();
      if (!waiter) continue;
      try {
        waiter.resolve(JSON.parse(line) as MockReply);
      } catch {
        waiter.reject(new MockControlError(`reply is not JSON: ${line.slice(0, 200)}`));
      }
    }
  }

  private fail(err: Error): void {
    this.failure ??= err;
    for (const waiter of this.pending.splice(0)) waiter.reject(err);
  }

  /** Sends one raw line (no newline inside) and resolves with the reply. */
  sendLine(line: string): Promise<MockReply> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.socket.write(`${line}\n`);
    });
  }

  /** Sends a request object; resolves with the reply whether ok or not. */
  request(req: Record<string, unknown>): Promise<MockReply> {
    return this.sendLine(JSON.stringify(req));
  }

  /** Sends a request and throws when the mock answers `ok:false`. */
  async expectOk(req: Record<string, unknown>): Promise<Record<string, unknown>> {
    const reply = await this.request(req);
    if (!reply.ok) throw new MockControlError(`${JSON.stringify(req)}: ${reply.error}`);
    return reply;
  }

  /** The whole mock state (`{"op":"state"}`). */
  async state(): Promise<MockState> {
    return (await this.expectOk({ op: 'state' })) as unknown as MockState;
  }

  close(): void {
    this.socket.end();
    this.socket.destroy();
  }
}
