/**
 * The reset ConfigMap `reset-config-<task>` and its companion `fault-config-<task>` (spec hot-reset.md §2): the
 * `reset.json` document with Go `encoding/json` reading and writing rules, the rank selection of a write
 * (`GetTaskResetInfo`), the two read predicates of §2.3, and the writer of §2.4–§2.6 over the {@link ConfigMapApi}
 * port (GET, then UPDATE with the resourceVersion that was read).
 *
 * Decisions against spec §7 (recorded in docs/hot-reset.md by the lead):
 * - D8 (§7.13): the isolate guard parses the old `reset.json` and refuses a non-empty write only when a rank of it
 *   has `Policy == "isolate"` (upstream: a substring test on the whole text).
 * - D9 (§7.14): `FaultFlushing`, `GracefulExit`, `RestartFaultProcess` are still reset on every write (copied), but
 *   data keys other than `reset.json`, `checkCode`, `restartType` are kept (upstream drops them). The same rule is
 *   applied to `fault-config-<task>` (keys other than `fault-npus` and `checkCode` are kept).
 */
import { createHash } from 'node:crypto';
import { goSlice, goStruct, marshalGo, type GoStruct } from '../core/go-json.js';
import { childPath, kindName, parseJsonText, preview, type JsonNode } from '../core/json-text.js';
import { needsReset, policyLevel } from './policy.js';
import type { ConfigMapApi, ConfigMapObject } from './types.js';

/** `Status` values the plugin writes (§2.2); ClusterD's `fault` is read but never written here. */
export type RankStatus = 'unrecovered' | 'recovered' | 'failed';

/** One rank object of `reset.json` (§2.2, Go field names and order). */
export interface ResetRank {
  readonly RankId: number;
  readonly LogicId: number;
  readonly Status: string;
  readonly Policy: string;
  readonly InitialPolicy: string;
  readonly ErrorCode: readonly number[];
  readonly ErrorCodeHex: string;
}

/** The `reset.json` document (§2.2, Go field names and order). */
export interface ResetJson {
  readonly RankList: readonly ResetRank[];
  readonly UpdateTime: number;
  readonly RetryTime: number;
  readonly FaultFlushing: boolean;
  readonly GracefulExit: number;
  readonly RestartFaultProcess: boolean;
}

/** §2.3: a `reset.json` longer than this many bytes is refused. */
export const MAX_RESET_JSON_BYTES = 1024 * 1024;

/** Data keys of the reset ConfigMap (§2.1). */
export const RESET_JSON_KEY = 'reset.json';
export const CHECK_CODE_KEY = 'checkCode';
export const RESTART_TYPE_KEY = 'restartType';
/** `restartType` value the plugin sets at the start of an episode (§2.4). */
export const RESTART_TYPE_HOT_RESET = 'hotReset';
/** Data key of `fault-config-<task>` (§2.5). */
export const FAULT_NPUS_KEY = 'fault-npus';

/** §2.1: name of a task's reset ConfigMap. */
export function resetConfigMapName(task: string): string {
  return `reset-config-${task}`;
}

/** §2.5: name of a task's optional fault-rank ConfigMap. */
export function faultConfigMapName(task: string): string {
  return `fault-config-${task}`;
}

/** One problem found while decoding `reset.json`: where (JSON path) and what was wrong. */
export interface ResetJsonProblem {
  readonly path: string;
  readonly message: string;
}

/** `reset.json` could not be read: too large, not JSON, or a member of the wrong type (Go would fail too). */
export class ResetJsonError extends Error {
  constructor(
    message: string,
    readonly problems: readonly ResetJsonProblem[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ResetJsonError';
  }
}

/** Why a reset / fault ConfigMap operation was refused (a failure of the API itself is rethrown unchanged). */
export type ResetConfigMapFailure =
  /** The ConfigMap does not exist. */
  | 'not-found'
  /** The ConfigMap has no `reset.json` key. */
  | 'missing-reset-json'
  /** `reset.json` is oversized or not a valid document. */
  | 'invalid-reset-json'
  /** §2.4 isolate guard (D8): the task is isolated and must be rescheduled first. */
  | 'isolated'
  /** The ranks, times or ids given to the writer are not representable. */
  | 'bad-argument';

/** A refused reset / fault ConfigMap operation; `reason` says why, `configMap` is `<ns>/<name>`. */
export class ResetConfigMapError extends Error {
  constructor(
    readonly reason: ResetConfigMapFailure,
    readonly configMap: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${configMap}: ${message}`, options);
    this.name = 'ResetConfigMapError';
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Encoding (§2.2: Go struct field order, no JSON tags)

function rankStruct(r: ResetRank): GoStruct {
  return goStruct([
    ['RankId', r.RankId],
    ['LogicId', r.LogicId],
    ['Status', r.Status],
    ['Policy', r.Policy],
    ['InitialPolicy', r.InitialPolicy],
    ['ErrorCode', goSlice(r.ErrorCode)],
    ['ErrorCodeHex', r.ErrorCodeHex],
  ]);
}

/**
 * The exact bytes Go's `json.Marshal` gives for `doc` (§2.2 field order; §2.9 examples). `RankList` and `ErrorCode`
 * are always arrays here (never `null`). Throws when a number is not a safe integer or `LogicId` is not an int32.
 */
export function encodeResetJson(doc: ResetJson): string {
  doc.RankList.forEach((r, i) => {
    if (!isInt32(r.LogicId)) throw new RangeError(`RankList[${i}].LogicId ${r.LogicId} is not an int32`);
  });
  return marshalGo(
    goStruct([
      ['RankList', goSlice(doc.RankList.map(rankStruct))],
      ['UpdateTime', doc.UpdateTime],
      ['RetryTime', doc.RetryTime],
      ['FaultFlushing', doc.FaultFlushing],
      ['GracefulExit', doc.GracefulExit],
      ['RestartFaultProcess', doc.RestartFaultProcess],
    ]),
  );
}

/** Lower-case hex SHA-256 of the UTF-8 bytes of `text` (§2.1 `checkCode`). */
export function checkCodeOf(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

// ---------------------------------------------------------------------------------------------------------------
// Decoding (§2.3: Go encoding/json into the struct — case-insensitive keys, unknown keys ignored, null = no change,
// a wrong type anywhere fails the document)

interface MutableRank {
  RankId: number;
  LogicId: number;
  Status: string;
  Policy: string;
  InitialPolicy: string;
  ErrorCode: number[];
  ErrorCodeHex: string;
}

interface MutableDoc {
  RankList: MutableRank[];
  UpdateTime: number;
  RetryTime: number;
  FaultFlushing: boolean;
  GracefulExit: number;
  RestartFaultProcess: boolean;
}

const zeroRank = (): MutableRank => ({
  RankId: 0,
  LogicId: 0,
  Status: '',
  Policy: '',
  InitialPolicy: '',
  ErrorCode: [],
  ErrorCodeHex: '',
});

const INT32_LIMIT = 2n ** 31n;
const INT64_LIMIT = 2n ** 63n;

function isInt32(n: number): boolean {
  return Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31;
}

/** Go's struct decoding, collecting every problem with its path. */
class Decoder {
  readonly problems: ResetJsonProblem[] = [];

  private bad(path: string, n: JsonNode, expected: string): void {
    this.problems.push({ path, message: `expected ${expected}, found ${kindName(n)} ${preview(n)}` });
  }

  /** Calls `set` for every member whose key equals one of `fields` case-insensitively, in document order. */
  members(n: JsonNode, path: string, fields: Record<string, (node: JsonNode, path: string) => void>): void {
    if (n.t === 'null') return; // Go: null into a struct leaves it unchanged
    if (n.t !== 'obj') {
      this.bad(path, n, 'an object');
      return;
    }
    const byLower = new Map(Object.entries(fields).map(([k, fn]) => [k.toLowerCase(), fn]));
    for (const [key, node] of n.entries) byLower.get(key.toLowerCase())?.(node, childPath(path, key));
  }

  int(n: JsonNode, path: string, bits: 32 | 64, set: (v: number) => void): void {
    if (n.t === 'null') return;
    if (n.t !== 'num' || !/^-?[0-9]+$/.test(n.raw)) {
      this.bad(path, n, `an int${bits}`);
      return;
    }
    const big = BigInt(n.raw);
    const limit = bits === 32 ? INT32_LIMIT : INT64_LIMIT;
    if (big < -limit || big >= limit) this.problems.push({ path, message: `${n.raw} overflows int${bits}` });
    else if (!Number.isSafeInteger(Number(big)))
      this.problems.push({ path, message: `${n.raw} is outside the safe integer range ±(2^53−1)` });
    else set(Number(big));
  }

  str(n: JsonNode, path: string, set: (v: string) => void): void {
    if (n.t === 'null') return;
    if (n.t !== 'str') this.bad(path, n, 'a string');
    else set(n.v);
  }

  bool(n: JsonNode, path: string, set: (v: boolean) => void): void {
    if (n.t === 'null') return;
    if (n.t !== 'bool') this.bad(path, n, 'a boolean');
    else set(n.v);
  }

  /**
   * Go's slice decoding: `null` makes the slice nil (here: empty); an array reuses existing elements in place
   * (a duplicate key decodes onto the previous elements) and truncates to its own length.
   */
  slice<T>(
    n: JsonNode,
    path: string,
    old: T[],
    zero: () => T,
    item: (node: JsonNode, path: string, base: T) => T,
  ): T[] | undefined {
    if (n.t === 'null') return [];
    if (n.t !== 'arr') {
      this.bad(path, n, 'an array');
      return undefined;
    }
    return n.items.map((node, i) => item(node, childPath(path, i), old[i] ?? zero()));
  }

  rank(n: JsonNode, path: string, base: MutableRank): MutableRank {
    const r = { ...base, ErrorCode: [...base.ErrorCode] };
    this.members(n, path, {
      RankId: (v, p) => this.int(v, p, 64, (x) => (r.RankId = x)),
      LogicId: (v, p) => this.int(v, p, 32, (x) => (r.LogicId = x)),
      Status: (v, p) => this.str(v, p, (x) => (r.Status = x)),
      Policy: (v, p) => this.str(v, p, (x) => (r.Policy = x)),
      InitialPolicy: (v, p) => this.str(v, p, (x) => (r.InitialPolicy = x)),
      ErrorCode: (v, p) => {
        const codes = this.slice(
          v,
          p,
          r.ErrorCode,
          () => 0,
          (node, q, old) => {
            let out = old;
            this.int(node, q, 64, (x) => (out = x));
            return out;
          },
        );
        if (codes !== undefined) r.ErrorCode = codes;
      },
      ErrorCodeHex: (v, p) => this.str(v, p, (x) => (r.ErrorCodeHex = x)),
    });
    return r;
  }

  doc(n: JsonNode): MutableDoc {
    const d: MutableDoc = {
      RankList: [],
      UpdateTime: 0,
      RetryTime: 0,
      FaultFlushing: false,
      GracefulExit: 0,
      RestartFaultProcess: false,
    };
    this.members(n, '$', {
      RankList: (v, p) => {
        const ranks = this.slice(v, p, d.RankList, zeroRank, (node, q, base) => this.rank(node, q, base));
        if (ranks !== undefined) d.RankList = ranks;
      },
      UpdateTime: (v, p) => this.int(v, p, 64, (x) => (d.UpdateTime = x)),
      RetryTime: (v, p) => this.int(v, p, 64, (x) => (d.RetryTime = x)),
      FaultFlushing: (v, p) => this.bool(v, p, (x) => (d.FaultFlushing = x)),
      GracefulExit: (v, p) => this.int(v, p, 64, (x) => (d.GracefulExit = x)),
      RestartFaultProcess: (v, p) => this.bool(v, p, (x) => (d.RestartFaultProcess = x)),
    });
    return d;
  }
}

/**
 * §2.3: decodes `reset.json` as Go's `json.Unmarshal` into the upstream struct: keys match case-insensitively
 * (the author's placeholder `{"status":"initializing"}` therefore decodes to `UpdateTime` 0 and no ranks), unknown
 * keys are ignored, `null` leaves the zero value. Throws {@link ResetJsonError} when the text exceeds
 * {@link MAX_RESET_JSON_BYTES}, is not JSON, or has a member of the wrong type (every such member is named with its
 * JSON path and the expected type).
 */
export function parseResetJson(text: string): ResetJson {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_RESET_JSON_BYTES) {
    throw new ResetJsonError(`reset.json is ${bytes} bytes, more than the limit of ${MAX_RESET_JSON_BYTES}`);
  }
  let node: JsonNode;
  try {
    node = parseJsonText(text);
  } catch (e) {
    throw new ResetJsonError(`reset.json is not valid JSON: ${(e as Error).message}`, [], { cause: e });
  }
  const dec = new Decoder();
  const doc = dec.doc(node);
  if (dec.problems.length > 0) {
    const list = dec.problems.map((p) => `${p.path}: ${p.message}`).join('; ');
    throw new ResetJsonError(`reset.json has members of the wrong type: ${list}`, dec.problems);
  }
  return doc;
}

/** The parsed `reset.json` of `cm`; throws {@link ResetConfigMapError} naming what is wrong. */
function documentOf(cm: ConfigMapObject): ResetJson {
  const where = `${cm.namespace}/${cm.name}`;
  const text = cm.data[RESET_JSON_KEY];
  if (text === undefined)
    throw new ResetConfigMapError('missing-reset-json', where, `data key "${RESET_JSON_KEY}" is missing`);
  try {
    return parseResetJson(text);
  } catch (e) {
    throw new ResetConfigMapError('invalid-reset-json', where, (e as Error).message, { cause: e });
  }
}

/**
 * §2.3 `ranks(cm)`: the RankList of `cm`, or `[]` while `UpdateTime` is 0 ("initialising"). Throws
 * {@link ResetConfigMapError} when `reset.json` is missing, oversized or invalid.
 */
export function ranksOf(cm: ConfigMapObject): readonly ResetRank[] {
  const doc = documentOf(cm);
  return doc.UpdateTime === 0 ? [] : doc.RankList;
}

// ---------------------------------------------------------------------------------------------------------------
// Rank selection (§2.4 GetTaskResetInfo)

/** One rank of the task on this node, as the engine knows it when it writes (§1.3 step 5). */
export interface RankSource {
  readonly logicId: number;
  readonly rankId: number;
  /** The chip's own policy (§1.4 vocabulary), used to find the faulty rings. */
  readonly policy: string;
  /** The codes to report in `ErrorCodeHex` (the episode-start snapshot for `recovered` writes, §2.2). */
  readonly codes: readonly number[];
}

/** {@link policyLevel} with the subject of the policy in the message. */
function checkPolicy(policy: string, what: string): void {
  try {
    policyLevel(policy);
  } catch (e) {
    throw new Error(`${what}: ${(e as Error).message}`, { cause: e });
  }
}

/** §2.2 `ErrorCodeHex`: upper-case hex without `0x`, joined by `,`, duplicates kept, `""` when none. */
export function errorCodeHex(codes: readonly number[]): string {
  return codes
    .map((c) => {
      if (!Number.isSafeInteger(c)) throw new RangeError(`fault code ${c} is not an integer`);
      return c.toString(16).toUpperCase();
    })
    .join(',');
}

/**
 * §2.4 `GetTaskResetInfo`: the ranks of every arithmetic ring (`⌊logicId / ringSize⌋`) that holds a chip whose own
 * policy needs a reset (level 2, 3 or 5), in logic-id order, each with the given `policy`, `initialPolicy` and
 * `status`, `ErrorCode` `[]` and `ErrorCodeHex` from its codes. Throws on an unknown policy (of a chip or of the
 * write) or a ring size that is not a positive integer.
 */
export function selectRanks(
  list: readonly RankSource[],
  ringSize: number,
  policy: string,
  initialPolicy: string,
  status: RankStatus,
): ResetRank[] {
  if (!Number.isSafeInteger(ringSize) || ringSize <= 0) {
    throw new RangeError(`ring size ${ringSize} is not a positive integer`);
  }
  checkPolicy(policy, 'policy of the write');
  checkPolicy(initialPolicy, 'initial policy of the write');
  if (!['unrecovered', 'recovered', 'failed'].includes(status)) {
    throw new Error(`unknown rank status ${JSON.stringify(status)}`);
  }
  const faultyRings = new Set<number>();
  for (const r of list) {
    if (!isInt32(r.logicId) || r.logicId < 0) throw new RangeError(`logic id ${r.logicId} is not a valid chip id`);
    if (!Number.isSafeInteger(r.rankId))
      throw new RangeError(`rank id ${r.rankId} of chip ${r.logicId} is not an integer`);
    checkPolicy(r.policy, `chip ${r.logicId}`);
    if (needsReset(r.policy)) faultyRings.add(Math.floor(r.logicId / ringSize));
  }
  return [...list]
    .sort((a, b) => a.logicId - b.logicId)
    .filter((r) => faultyRings.has(Math.floor(r.logicId / ringSize)))
    .map((r) => ({
      RankId: r.rankId,
      LogicId: r.logicId,
      Status: status,
      Policy: policy,
      InitialPolicy: initialPolicy,
      ErrorCode: [],
      ErrorCodeHex: errorCodeHex(r.codes),
    }));
}

// ---------------------------------------------------------------------------------------------------------------
// Predicates (§2.3)

/**
 * §2.3 `isTaskInReset` without the "this node runs a flow" check (the engine owns that): true when the ranks of
 * `cm` are non-empty and all `unrecovered` (another node's plugin is resetting the task). Throws
 * {@link ResetConfigMapError} when `cm` is absent (`undefined`) or its `reset.json` is missing or invalid.
 */
export function isTaskInResetByOthers(cm: ConfigMapObject | undefined): boolean {
  if (cm === undefined) throw new ResetConfigMapError('not-found', 'reset ConfigMap', 'not in the informer cache');
  const ranks = ranksOf(cm);
  return ranks.length > 0 && ranks.every((r) => r.Status === 'unrecovered');
}

/**
 * §2.3 `isDevShouldBeIsolate` from the task's ConfigMap: true when `cm` is absent, its `reset.json` is missing or
 * invalid, its ranks are empty (including `UpdateTime` 0), or some rank has `Policy == "isolate"`.
 */
export function hasIsolateDecision(cm: ConfigMapObject | undefined): boolean {
  if (cm === undefined) return true;
  let ranks: readonly ResetRank[];
  try {
    ranks = ranksOf(cm);
  } catch {
    return true; // §2.3: an unreadable ConfigMap keeps the chip isolated
  }
  return ranks.length === 0 || ranks.some((r) => r.Policy === 'isolate');
}

// ---------------------------------------------------------------------------------------------------------------
// Writer (§2.4–§2.6)

/** Options of {@link ResetConfigMapWriter}. */
export interface ResetConfigMapWriterOptions {
  readonly api: ConfigMapApi;
  /** Wall clock in milliseconds since the epoch; `UpdateTime` is its value in whole seconds. */
  readonly now: () => number;
}

/** Writes `reset-config-<task>` and `fault-config-<task>` with GET + UPDATE (optimistic concurrency). */
export class ResetConfigMapWriter {
  readonly #api: ConfigMapApi;
  readonly #now: () => number;

  constructor(o: ResetConfigMapWriterOptions) {
    this.#api = o.api;
    this.#now = o.now;
  }

  /**
   * §2.4 write(): reads `reset-config-<task>`, refuses a non-empty `ranks` when the stored document already has an
   * `isolate` rank (D8, reason `isolated`: "task should be rescheduled"), then replaces `reset.json` (ranks with
   * `ErrorCode` `[]`, `UpdateTime` now, `RetryTime` +1 when `addRetry`, the three flags reset), `checkCode`, and
   * `restartType` (kept; `hotReset` when `addRetry`), keeping other data keys (D9) and the labels and
   * resourceVersion that were read. Rejects with {@link ResetConfigMapError} naming the reason, or with the API's own
   * error (a conflict included) unchanged. Resolves to the `reset.json` text written.
   */
  async write(task: string, namespace: string, ranks: readonly ResetRank[], addRetry: boolean): Promise<string> {
    const name = resetConfigMapName(task);
    const old = await this.#api.get(namespace, name);
    if (old === undefined) throw new ResetConfigMapError('not-found', `${namespace}/${name}`, 'ConfigMap not found');
    return this.#writeOver(old, ranks, addRetry);
  }

  /**
   * §2.5: when `fault-config-<task>` exists, replaces its `fault-npus` with `{"FaultRank":[…],"UpdateTime":<s>}`
   * and `checkCode` with that text's SHA-256 (other keys kept, D9). Resolves false when the ConfigMap does not
   * exist; rejects with the API's error otherwise.
   */
  async writeFaultConfig(task: string, namespace: string, rankIds: readonly number[]): Promise<boolean> {
    const name = faultConfigMapName(task);
    const where = `${namespace}/${name}`;
    rankIds.forEach((id, i) => {
      if (!Number.isSafeInteger(id))
        throw new ResetConfigMapError('bad-argument', where, `FaultRank[${i}] ${id} is not an integer`);
    });
    const old = await this.#api.get(namespace, name);
    if (old === undefined) return false;
    const text = marshalGo(
      goStruct([
        ['FaultRank', goSlice([...rankIds])],
        ['UpdateTime', this.#nowSeconds(where)],
      ]),
    );
    const data = { ...old.data, [FAULT_NPUS_KEY]: text, [CHECK_CODE_KEY]: checkCodeOf(text) };
    await this.#api.replace({ ...copyMeta(old), data });
    return true;
  }

  /**
   * §2.6 clearing after rescheduling: when `reset-config-<task>` exists and its `UpdateTime` is not 0, writes an
   * empty RankList (`addRetry` false: RetryTime and `restartType` kept, `UpdateTime` now). Resolves false when the
   * ConfigMap does not exist or is still initialising (`UpdateTime` 0, left untouched). Rejects with
   * {@link ResetConfigMapError} when `reset.json` is missing or invalid (upstream skips it silently), or with the
   * API's error.
   */
  async clearAfterReschedule(task: string, namespace: string): Promise<boolean> {
    const name = resetConfigMapName(task);
    const old = await this.#api.get(namespace, name);
    if (old === undefined) return false;
    if (documentOf(old).UpdateTime === 0) return false;
    await this.#writeOver(old, [], false);
    return true;
  }

  async #writeOver(old: ConfigMapObject, ranks: readonly ResetRank[], addRetry: boolean): Promise<string> {
    const where = `${old.namespace}/${old.name}`;
    const previous = documentOf(old);
    // D8 (§7.13): the guard looks at the parsed ranks (whatever UpdateTime says), not at a substring of the text
    if (ranks.length > 0 && previous.RankList.some((r) => r.Policy === 'isolate')) {
      throw new ResetConfigMapError('isolated', where, 'a rank has policy "isolate": task should be rescheduled');
    }
    const doc: ResetJson = {
      RankList: ranks.map((r) => ({
        ...r,
        // §2.4: ErrorCodeHex is derived from ErrorCode when the caller still carries codes there; ErrorCode is []
        ErrorCodeHex: r.ErrorCode.length > 0 ? errorCodeHex(r.ErrorCode) : r.ErrorCodeHex,
        ErrorCode: [],
      })),
      UpdateTime: this.#nowSeconds(where),
      RetryTime: previous.RetryTime + (addRetry ? 1 : 0),
      FaultFlushing: false,
      GracefulExit: 0,
      RestartFaultProcess: false,
    };
    let text: string;
    try {
      text = encodeResetJson(doc);
    } catch (e) {
      throw new ResetConfigMapError('bad-argument', where, (e as Error).message, { cause: e });
    }
    // D9 (§7.14): other writers' keys survive; ours are replaced
    const data: Record<string, string> = { ...old.data, [RESET_JSON_KEY]: text, [CHECK_CODE_KEY]: checkCodeOf(text) };
    if (addRetry) data[RESTART_TYPE_KEY] = RESTART_TYPE_HOT_RESET;
    await this.#api.replace({ ...copyMeta(old), data });
    return text;
  }

  #nowSeconds(where: string): number {
    const ms = this.#now();
    if (!Number.isFinite(ms) || ms < 0) throw new ResetConfigMapError('bad-argument', where, `clock returned ${ms}`);
    return Math.floor(ms / 1000);
  }
}

/** The identity, labels and resourceVersion of the object that was read (§2.4: UPDATE with old's metadata). */
function copyMeta(old: ConfigMapObject): Omit<ConfigMapObject, 'data'> {
  return {
    namespace: old.namespace,
    name: old.name,
    labels: { ...old.labels },
    resourceVersion: old.resourceVersion,
  };
}
