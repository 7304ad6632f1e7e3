/**
 * `npuctl status` (issue [F] item 4): reads the agent's `/status` document (src/observability/status.ts) over HTTP
 * and prints the chips with their reset state per engine, then the tasks of the task-aware engine. Everything read
 * from the network is bounded (size, time) and checked before use.
 */
import { MAX_STATUS_BYTES } from '../../observability/http-server.js';
import { STATUS_VERSION } from '../../observability/status.js';
import { UsageError } from './io.js';
import { table } from './table.js';

/** The agent's default `-metricsAddress` (`:9464`) seen from the node itself. */
export const DEFAULT_AGENT_URL = 'http://127.0.0.1:9464';

/** Default time allowed for the whole request. */
export const DEFAULT_STATUS_TIMEOUT_MS = 5000;

/** The agent could not be reached or did not answer with a status document: exit status 1. */
export class AgentUnreachableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentUnreachableError';
  }
}

/**
 * The URL of the status document from `--agent`: `http(s)://host:port` gets `/status` appended (after any path
 * prefix); a URL already ending in `/status` is used as given. Throws {@link UsageError} for anything else.
 */
export function statusUrl(agent: string): URL {
  let url: URL;
  try {
    url = new URL(agent);
  } catch {
    throw new UsageError(`--agent ${JSON.stringify(agent)} is not a URL (example: ${DEFAULT_AGENT_URL})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`--agent ${JSON.stringify(agent)}: only http:// and https:// are supported`);
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new UsageError(`--agent ${JSON.stringify(agent)}: give only scheme, host, port and path`);
  }
  if (!url.pathname.endsWith('/status')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/status`;
  return url;
}

function describeFetchError(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'no answer in time';
  const code = e.cause?.code;
  if (code === 'ECONNREFUSED') return 'connection refused (is the agent running, with -metricsAddress?)';
  if (code !== undefined) return `${code}${e.cause?.message ? `: ${e.cause.message}` : ''}`;
  return e.cause?.message ?? e.message ?? String(err);
}

/**
 * GETs the status document; throws {@link AgentUnreachableError} naming the URL when the agent cannot be reached,
 * answers with another status than 200, sends more than {@link MAX_STATUS_BYTES} or something that is not JSON.
 */
export async function fetchStatus(url: URL, timeoutMs = DEFAULT_STATUS_TIMEOUT_MS): Promise<unknown> {
  const where = url.toString();
  const signal = AbortSignal.timeout(timeoutMs);
  let res: Response;
  try {
    res = await fetch(url, { signal, redirect: 'error', headers: { accept: 'application/json' } });
  } catch (err) {
    throw new AgentUnreachableError(`cannot reach the agent at ${where}: ${describeFetchError(err)}`);
  }
  let text: string;
  try {
    text = await readBounded(res, MAX_STATUS_BYTES);
  } catch (err) {
    throw new AgentUnreachableError(
      `the agent at ${where}: ${err instanceof RangeError ? err.message : describeFetchError(err)}`,
    );
  }
  if (res.status === 404) {
    throw new AgentUnreachableError(
      `the agent at ${where} has no status document (HTTP 404): an agent without the reset layer, or not the agent`,
    );
  }
  if (res.status !== 200) {
    const first = text.split('\n')[0]?.slice(0, 200) ?? '';
    throw new AgentUnreachableError(`the agent at ${where} answered HTTP ${res.status}${first ? `: ${first}` : ''}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new AgentUnreachableError(`the agent at ${where} sent something that is not JSON: ${(err as Error).message}`);
  }
}

async function readBounded(res: Response, maxBytes: number): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) {
    await res.body?.cancel();
    throw new RangeError(`the status document is ${declared} bytes, over the limit of ${maxBytes}`);
  }
  if (!res.body) return '';
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new RangeError(`the status document is over the limit of ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A chip row of the document, as far as npuctl reads it. */
interface Chip {
  logicId: number;
  name: string;
  health: string;
}
interface OfflineChip {
  logicId: number;
  state: string;
  tokens: number;
  lastError?: string;
}
interface OnlineChip {
  logicId: number;
  state: string;
  task?: string;
  resetCount?: number;
}
interface OnlineTask {
  task: string;
  namespace: string;
  state: string;
  since: number;
  policy?: string;
  rankChips?: number[];
  abandoned?: string;
  crossNodeIsolation?: boolean;
}
/** The checked document. */
export interface StatusView {
  node: string;
  time: string;
  chips: Chip[];
  reset: {
    mode: number;
    offline: OfflineChip[];
    online: { tasks: OnlineTask[]; chips: OnlineChip[] } | null;
    resetting: Record<string, string>;
    problems: string[];
  } | null;
}

type Obj = Record<string, unknown>;

function obj(v: unknown, where: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${where} is not an object`);
  return v as Obj;
}
function arr(v: unknown, where: string): unknown[] {
  if (!Array.isArray(v)) throw new Error(`${where} is not an array`);
  return v;
}
function str(o: Obj, k: string, where: string, optional = false): string {
  const v = o[k];
  if (v === undefined && optional) return '';
  if (typeof v !== 'string') throw new Error(`${where}.${k} is not a string`);
  return v;
}
function num(o: Obj, k: string, where: string, optional = false): number {
  const v = o[k];
  if (v === undefined && optional) return Number.NaN;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${where}.${k} is not a number`);
  return v;
}
function ids(o: Obj, k: string, where: string): number[] | undefined {
  if (o[k] === undefined) return undefined;
  const a = arr(o[k], `${where}.${k}`);
  if (a.some((x) => !Number.isSafeInteger(x))) throw new Error(`${where}.${k} holds something that is not a chip id`);
  return a as number[];
}

/** Checks the document read from the agent; throws {@link AgentUnreachableError} naming the first problem. */
export function parseStatus(raw: unknown, where: string): StatusView {
  try {
    const d = obj(raw, '$');
    if (d.version !== STATUS_VERSION) {
      throw new Error(`$.version is ${JSON.stringify(d.version)}, this npuctl reads version ${STATUS_VERSION}`);
    }
    const chips = arr(d.chips, '$.chips').map((c, i) => {
      const p = `$.chips[${i}]`;
      const o = obj(c, p);
      return { logicId: num(o, 'logicId', p), name: str(o, 'name', p), health: str(o, 'health', p) };
    });
    let reset: StatusView['reset'] = null;
    if (d.reset !== null && d.reset !== undefined) {
      const r = obj(d.reset, '$.reset');
      const offline = arr(r.offline, '$.reset.offline').map((c, i) => {
        const p = `$.reset.offline[${i}]`;
        const o = obj(c, p);
        const lastError = str(o, 'lastError', p, true);
        return {
          logicId: num(o, 'logicId', p),
          state: str(o, 'state', p),
          tokens: num(o, 'tokens', p),
          ...(lastError !== '' && { lastError }),
        };
      });
      let online: NonNullable<StatusView['reset']>['online'] = null;
      if (r.online !== null && r.online !== undefined) {
        const on = obj(r.online, '$.reset.online');
        online = {
          tasks: arr(on.tasks, '$.reset.online.tasks').map((t, i) => {
            const p = `$.reset.online.tasks[${i}]`;
            const o = obj(t, p);
            const policy = str(o, 'policy', p, true);
            const abandoned = str(o, 'abandoned', p, true);
            const rankChips = ids(o, 'rankChips', p);
            return {
              task: str(o, 'task', p),
              namespace: str(o, 'namespace', p),
              state: str(o, 'state', p),
              since: num(o, 'since', p),
              ...(policy !== '' && { policy }),
              ...(rankChips && { rankChips }),
              ...(abandoned !== '' && { abandoned }),
              ...(o.crossNodeIsolation === true && { crossNodeIsolation: true }),
            };
          }),
          chips: arr(on.chips, '$.reset.online.chips').map((c, i) => {
            const p = `$.reset.online.chips[${i}]`;
            const o = obj(c, p);
            const task = str(o, 'task', p, true);
            const resetCount = num(o, 'resetCount', p, true);
            return {
              logicId: num(o, 'logicId', p),
              state: str(o, 'state', p),
              ...(task !== '' && { task }),
              ...(Number.isFinite(resetCount) && { resetCount }),
            };
          }),
        };
      }
      const resetting: Record<string, string> = {};
      for (const [k, v] of Object.entries(obj(r.resetting ?? {}, '$.reset.resetting'))) {
        if (typeof v !== 'string') throw new Error(`$.reset.resetting.${k} is not a string`);
        resetting[k] = v;
      }
      const problems = arr(r.problems ?? [], '$.reset.problems').map((p, i) => {
        if (typeof p !== 'string') throw new Error(`$.reset.problems[${i}] is not a string`);
        return p;
      });
      reset = { mode: num(r, 'mode', '$.reset'), offline, online, resetting, problems };
    }
    return { node: str(d, 'node', '$'), time: str(d, 'time', '$'), chips, reset };
  } catch (err) {
    throw new AgentUnreachableError(
      `the agent at ${where} sent an unexpected status document: ${(err as Error).message}`,
    );
  }
}

const since = (ms: number): string => (ms > 0 ? new Date(ms).toISOString() : '-');

/** The human-readable rendering of a checked document. */
export function renderStatus(v: StatusView): string {
  const name = new Map(v.chips.map((c) => [c.logicId, c.name]));
  const health = new Map(v.chips.map((c) => [c.logicId, c.health]));
  const chipName = (id: number): string => name.get(id) ?? `logic ${id}`;
  let out = `node ${v.node} at ${v.time}\n`;
  const r = v.reset;
  if (r === null) {
    out += 'reset layer: not running\n\n';
    out += table(
      ['CHIP', 'LOGIC', 'HEALTH'],
      v.chips.map((c) => [c.name, String(c.logicId), c.health]),
    );
    return out;
  }
  out += `reset: -hotReset=${r.mode}, task-aware engine ${r.online ? 'on' : 'off'}\n\n`;
  const online = new Map((r.online?.chips ?? []).map((c) => [c.logicId, c]));
  const ids = [...new Set([...v.chips.map((c) => c.logicId), ...r.offline.map((c) => c.logicId), ...online.keys()])];
  ids.sort((a, b) => a - b);
  const offline = new Map(r.offline.map((c) => [c.logicId, c]));
  const rows: string[][] = [];
  for (const id of ids) {
    const base = [chipName(id), String(id)];
    const h = health.get(id) ?? '-';
    const off = offline.get(id);
    const held = r.resetting[String(id)];
    if (off) rows.push([...base, 'offline', off.state, held === 'offline' ? 'offline' : '-', String(off.tokens), h]);
    const on = online.get(id);
    if (on) {
      const task = on.task ?? (held !== undefined && held !== 'offline' ? held : '-');
      const resets = on.resetCount !== undefined ? ` (${on.resetCount} reset${on.resetCount === 1 ? '' : 's'})` : '';
      rows.push([...base, 'online', `${on.state}${resets}`, task, '-', h]);
    }
  }
  out += table(['CHIP', 'LOGIC', 'ENGINE', 'STATE', 'TASK', 'TOKENS', 'HEALTH'], rows);
  const errors = r.offline.filter((c) => c.lastError !== undefined);
  if (errors.length > 0) {
    out += '\nlast offline reset errors:\n';
    for (const c of errors) out += `  ${chipName(c.logicId)}: ${c.lastError}\n`;
  }
  if (r.online) {
    out += '\n';
    if (r.online.tasks.length === 0) out += 'tasks: none on this node\n';
    else {
      out += table(
        ['TASK', 'NAMESPACE', 'STATE', 'SINCE', 'POLICY', 'CHIPS', 'NOTE'],
        r.online.tasks.map((t) => [
          t.task,
          t.namespace || '-',
          t.state,
          since(t.since),
          t.policy ?? '-',
          t.rankChips && t.rankChips.length > 0 ? t.rankChips.join(',') : '-',
          [t.crossNodeIsolation ? 'isolating for another node (§3.8)' : '', t.abandoned ? `ending: ${t.abandoned}` : '']
            .filter((x) => x !== '')
            .join('; '),
        ]),
      );
    }
  }
  if (r.problems.length > 0) {
    out += '\nproblems:\n';
    for (const p of r.problems) out += `  ${p}\n`;
  }
  return out;
}

/** `npuctl status`: the text (or JSON line) to print; throws UsageError (exit 2) or AgentUnreachableError (exit 1). */
export async function statusCommand(o: {
  readonly agent: string;
  readonly json?: boolean;
  readonly timeoutMs?: number;
}): Promise<string> {
  const url = statusUrl(o.agent);
  const raw = await fetchStatus(url, o.timeoutMs ?? DEFAULT_STATUS_TIMEOUT_MS);
  const view = parseStatus(raw, url.toString());
  return o.json ? `${JSON.stringify(raw)}\n` : renderStatus(view);
}
