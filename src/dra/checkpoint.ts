/**
 * The DRA driver's checkpoint in `-stateDir` (issue [DRA] item 1): which claims are prepared on this node, each
 * device with its chip, vNPU and CDI name, so that a restarted agent answers kubelet the same as before and can undo
 * what a prepare cut short. One JSON file with a SHA-256 of its content, written atomically (a hidden temporary file
 * renamed over it: what survives a kill -9) before the answer it backs leaves the process, and durably (the file and
 * the folder fsynced: what survives a power loss) when it commits a change kubelet is told about.
 *
 * A claim is `preparing` from before anything is made for it (the intent) until its CDI spec is on disk, then
 * `prepared`. At start, `preparing` claims are undone (kubelet had no answer and asks again), `prepared` ones kept.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** The file in the state folder. */
export const DRA_CHECKPOINT_FILE = 'dra-checkpoint.json';
/** Format marker of the file. */
export const DRA_CHECKPOINT_FORMAT = 'ascend-npu-agent/dra-checkpoint';
/** Largest checkpoint read (ample: a claim is ≈ 300 bytes, a node holds at most a few hundred). */
export const MAX_CHECKPOINT_BYTES = 16 * 1024 * 1024;

/** One prepared (or preparing) device of a claim. */
export interface CheckpointDevice {
  /** The allocation result's request names (subrequests stripped). */
  readonly requests: readonly string[];
  readonly pool: string;
  readonly device: string;
  readonly logicId: number;
  readonly adminAccess?: boolean;
  readonly shareId?: string;
  /** vNPU partition: its DCMI template, and its vdev id once created. */
  readonly template?: string;
  readonly vdevId?: number;
  /** CDI device name (unqualified) in the claim's spec. */
  readonly cdiName: string;
}

/** One claim of the checkpoint. */
export interface CheckpointClaim {
  readonly namespace: string;
  readonly name: string;
  readonly state: 'preparing' | 'prepared';
  readonly devices: readonly CheckpointDevice[];
}

/** The claims by uid. */
export type CheckpointClaims = Readonly<Record<string, CheckpointClaim>>;

interface FileForm {
  readonly format: typeof DRA_CHECKPOINT_FORMAT;
  readonly version: 1;
  readonly node: string;
  readonly claims: CheckpointClaims;
  readonly sha256: string;
}

/** A checkpoint that cannot be used (unreadable, too large, not ours, damaged). */
export class CheckpointError extends Error {
  override readonly name = 'CheckpointError';
}

function digest(claims: CheckpointClaims): string {
  return createHash('sha256').update(JSON.stringify(claims)).digest('hex');
}

function fsyncPath(p: string): void {
  const fd = fs.openSync(p, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function checkDevice(d: unknown, where: string): void {
  if (!isObject(d)) throw new CheckpointError(`${where} is not an object`);
  const str = (k: string): boolean => typeof d[k] === 'string';
  if (!Array.isArray(d.requests) || !d.requests.every((r) => typeof r === 'string')) {
    throw new CheckpointError(`${where}.requests is not a list of names`);
  }
  if (!str('pool') || !str('device') || !str('cdiName')) throw new CheckpointError(`${where} lacks a name`);
  if (!Number.isInteger(d.logicId)) throw new CheckpointError(`${where}.logicId is not an integer`);
  if (d.vdevId !== undefined && !Number.isInteger(d.vdevId)) throw new CheckpointError(`${where}.vdevId is bad`);
  if (d.template !== undefined && typeof d.template !== 'string') throw new CheckpointError(`${where}.template is bad`);
}

/** Checks the shape of a parsed file; returns its claims. */
function validate(v: unknown, file: string): CheckpointClaims {
  if (!isObject(v) || v.format !== DRA_CHECKPOINT_FORMAT) throw new CheckpointError(`${file} is not a DRA checkpoint`);
  if (v.version !== 1)
    throw new CheckpointError(`${file} has version ${JSON.stringify(v.version)}, this agent reads 1`);
  if (!isObject(v.claims)) throw new CheckpointError(`${file}: claims is not an object`);
  const claims = v.claims as CheckpointClaims;
  if (v.sha256 !== digest(claims)) throw new CheckpointError(`${file}: the checksum does not match (damaged)`);
  for (const [uid, c] of Object.entries(v.claims)) {
    const where = `claim ${uid}`;
    if (!isObject(c)) throw new CheckpointError(`${where} is not an object`);
    if (typeof c.namespace !== 'string' || typeof c.name !== 'string')
      throw new CheckpointError(`${where} lacks a name`);
    if (c.state !== 'preparing' && c.state !== 'prepared') throw new CheckpointError(`${where} has a bad state`);
    if (!Array.isArray(c.devices)) throw new CheckpointError(`${where}.devices is not a list`);
    c.devices.forEach((d, i) => checkDevice(d, `${where}.devices[${i}]`));
  }
  return claims;
}

/** The checkpoint file of one node. */
export class DraCheckpoint {
  readonly file: string;

  constructor(
    readonly stateDir: string,
    readonly nodeName: string,
  ) {
    this.file = path.join(stateDir, DRA_CHECKPOINT_FILE);
  }

  /**
   * The claims of the file; {} when there is none. Throws {@link CheckpointError} for a file that cannot be used
   * (the caller moves it aside with {@link setAside} and says so).
   */
  load(): CheckpointClaims {
    let st: fs.Stats;
    try {
      st = fs.statSync(this.file);
    } catch {
      return {};
    }
    if (!st.isFile()) throw new CheckpointError(`${this.file} is not a regular file`);
    if (st.size > MAX_CHECKPOINT_BYTES) {
      throw new CheckpointError(`${this.file} is ${st.size} bytes, over the limit of ${MAX_CHECKPOINT_BYTES}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(fs.readFileSync(this.file, 'utf8'));
    } catch (err) {
      throw new CheckpointError(`${this.file} is not JSON: ${(err as Error).message}`);
    }
    return validate(parsed, this.file);
  }

  /** Moves an unusable file aside (`<file>.bad-<time>`); returns the new path. */
  setAside(now: number): string {
    const aside = `${this.file}.bad-${now}`;
    fs.renameSync(this.file, aside);
    return aside;
  }

  /** Replaces the file with `claims`, atomically, and durably unless `durable` is false (see the module comment). */
  save(claims: CheckpointClaims, options: { readonly durable?: boolean } = {}): void {
    const durable = options.durable ?? true;
    const body: FileForm = {
      format: DRA_CHECKPOINT_FORMAT,
      version: 1,
      node: this.nodeName,
      claims,
      sha256: digest(claims),
    };
    const text = `${JSON.stringify(body)}\n`;
    if (Buffer.byteLength(text) > MAX_CHECKPOINT_BYTES) {
      throw new CheckpointError(`the checkpoint would be over ${MAX_CHECKPOINT_BYTES} bytes`);
    }
    const tmp = path.join(this.stateDir, `.${DRA_CHECKPOINT_FILE}.${process.pid}.tmp`);
    try {
      fs.writeFileSync(tmp, text, { mode: 0o600 });
      if (durable) fsyncPath(tmp);
      fs.renameSync(tmp, this.file);
    } catch (err) {
      fs.rmSync(tmp, { force: true });
      throw err;
    }
    if (durable) fsyncPath(this.stateDir);
  }
}
