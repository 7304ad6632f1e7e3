/**
 * Link status and RoCE counters through `hccn_tool` (spec dcmi-abi.md §7). The tool runs with an argument array
 * (never a shell), a minimal environment, bounded output and a timeout, and only after the file checks of the DCMI
 * library ({@link hccnToolProblem}): the agent runs privileged, so a tool anyone can rewrite is never executed.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { checkTrustedFile, nodePathInspector, type PathInspector } from './library-path.js';

/** Default location (architecture §4 `-hccnTool`). */
export const DEFAULT_HCCN_TOOL = '/usr/local/Ascend/driver/tools/hccn_tool';
/** dcmi-abi.md §7: stdout and stderr are each captured up to 1 MiB. */
export const HCCN_OUTPUT_LIMIT = 1024 * 1024;

/** `Abnormal` = the tool failed or answered in an unexpected shape; the agent treats it as DOWN (§7). */
export type LinkStatus = 'UP' | 'DOWN' | 'Abnormal';

/** How to run `hccn_tool`. */
export interface HccnToolOptions {
  toolPath: string;
  /** the agent's environment; only PATH, LD_LIBRARY_PATH and ASCEND_MOCK_CONTROL are passed on */
  env: Readonly<Record<string, string | undefined>>;
  timeoutMs?: number;
  /** owner accepted besides root (architecture §4); default the process's uid */
  ownUid?: number;
  /** filesystem access of the checks; the default is `node:fs`, tests inject a fake tree */
  inspector?: PathInspector;
}

/** `hccn_tool` could not be run (refused by a check, failed, timed out) or exited non-zero. */
export class HccnToolError extends Error {
  override readonly name = 'HccnToolError';
}

/** Why `hccn_tool` must not be executed; `missing` when the file does not exist (yet). */
export interface HccnToolProblem {
  readonly reason: string;
  readonly missing: boolean;
}

/**
 * The checks `hccn_tool` passes before each execution (issue [K] item 9): an absolute path that resolves without
 * symbolic links (dcmi-abi.md §7), then the DCMI library's {@link checkTrustedFile}: the default location with every
 * rule of the §1.2 lookup (owner root or the agent's own uid, not writable by group or others, a regular file, and
 * each parent folder up to `/` owned and protected likewise), any other `-hccnTool` path with the rule of an explicit
 * `-dcmiLibrary` (architecture §4, `checkExplicitPath`: a regular file owned by root or the agent's user, not writable
 * by group or others, in folders no other user can write without the sticky bit). §7's "no symbolic link" is the
 * stricter of the two on links, so it stays. Undefined when the tool may run; otherwise the reason names the file,
 * or the folder, and the rule.
 */
export function hccnToolProblem(
  toolPath: string,
  ownUid: number = process.getuid?.() ?? 0,
  inspector: PathInspector = nodePathInspector,
): HccnToolProblem | undefined {
  const fail = (why: string, missing = false): HccnToolProblem => ({ reason: `${toolPath}: ${why}`, missing });
  if (!path.isAbsolute(toolPath)) return fail('must be an absolute path');
  let real: string;
  try {
    real = inspector.realpath(toolPath);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return fail(code ?? 'cannot be resolved', inspector.lstat(toolPath) === undefined);
  }
  if (real !== toolPath) return fail(`must be an absolute path without symbolic links (resolves to ${real})`);
  const r = checkTrustedFile(toolPath, toolPath === DEFAULT_HCCN_TOOL ? 'lookup' : 'explicit', ownUid, inspector);
  return r.ok ? undefined : fail(r.reason);
}

/** Runs `hccn_tool` with the given arguments and returns its stdout; refused (never run) when a check fails. */
export async function runHccnTool(options: HccnToolOptions, args: readonly string[]): Promise<string> {
  const problem = hccnToolProblem(options.toolPath, options.ownUid, options.inspector);
  if (problem) throw new HccnToolError(problem.reason);
  const real = options.toolPath;
  const env: Record<string, string> = {};
  for (const key of ['PATH', 'LD_LIBRARY_PATH', 'ASCEND_MOCK_CONTROL']) {
    const v = options.env[key];
    if (v !== undefined) env[key] = v;
  }
  return new Promise((resolve, reject) => {
    execFile(
      real,
      [...args],
      { env, timeout: options.timeoutMs ?? 10_000, maxBuffer: HCCN_OUTPUT_LIMIT, windowsHide: true },
      (err, stdout, stderr) => {
        if (err) {
          const why = stderr.trim().split('\n')[0] || err.message;
          reject(new HccnToolError(`hccn_tool ${args.join(' ')}: ${why}`, { cause: err }));
        } else {
          resolve(stdout);
        }
      },
    );
  });
}

/**
 * Parses `link status: UP` as dcmi-abi.md §7 says: delete every newline, split on single spaces, exactly three
 * fields, the third is the status. Anything else is `Abnormal`.
 */
export function parseLinkStatus(stdout: string): LinkStatus {
  const fields = stdout.replaceAll('\n', '').split(' ');
  if (fields.length !== 3) return 'Abnormal';
  const status = fields[2];
  return status === 'UP' || status === 'DOWN' ? status : 'Abnormal';
}

/** `hccn_tool -i <phyId> -link -g`; a failure of the tool is reported as `Abnormal`, with the reason. */
export async function queryLinkStatus(
  options: HccnToolOptions,
  phyId: number,
): Promise<{ status: LinkStatus; error?: string }> {
  try {
    return { status: parseLinkStatus(await runHccnTool(options, ['-i', String(phyId), '-link', '-g'])) };
  } catch (err) {
    return { status: 'Abnormal', error: (err as Error).message };
  }
}

/**
 * Parses `-stat -g` output: `key:value` lines; a line that does not split into exactly two parts on `:` or whose
 * value is not an integer is skipped (dcmi-abi.md §7).
 */
export function parseRoceStats(stdout: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const line of stdout.split('\n')) {
    const parts = line.split(':');
    if (parts.length !== 2) continue;
    const key = parts[0]!.trim();
    const value = parts[1]!.trim();
    if (key === '' || !/^-?\d+$/.test(value)) continue;
    out.set(key, BigInt(value));
  }
  return out;
}

/** `hccn_tool -i <phyId> -stat -g` parsed. */
export async function queryRoceStats(options: HccnToolOptions, phyId: number): Promise<Map<string, bigint>> {
  return parseRoceStats(await runHccnTool(options, ['-i', String(phyId), '-stat', '-g']));
}

// ---------------------------------------------------------------------------------------------------------------
// A5 (Ascend950): ports by UDie and port id, `-i` is the logic id (upstream ascend-common devmanager/hccn)

/** Port types of the A5 port table: UB (hyper plane) and UBoE (the bonding ports of the parameter plane). */
export type PortType = 'UB' | 'UBoE';

/** One row of the A5 port table. A link text other than `UP`/`DOWN` is `Abnormal` (counted as DOWN, §7). */
export interface PortEntry {
  readonly udie: number;
  readonly port: number;
  readonly type: PortType;
  readonly link: LinkStatus;
}

/** The port table of one chip, or why it could not be read (the whole snapshot is then `Abnormal`: DOWN). */
export type PortTable = { ok: true; ports: readonly PortEntry[] } | { ok: false; reason: string };

/** Most rows a port table may have (a chip has a handful of ports); more is a bad shape. */
export const MAX_PORT_ROWS = 64;
/** UDie and port ids above these are a bad shape. */
const MAX_UDIE = 255;
const MAX_PORT_ID = 1023;

function decimal(text: string, max: number): number | undefined {
  if (!/^(0|[1-9]\d{0,5})$/.test(text)) return undefined;
  const n = Number(text);
  return n <= max ? n : undefined;
}

/**
 * Parses the port table of `hccn_tool -g -dev_info -i <logicId>` (the first table of its output): lines are trimmed,
 * empty ones skipped; lines starting with `+-` are the table's rules and the third one ends it (what follows, the
 * netdev and udev tables, is not read); between them, rows start with `|` and only rows containing `ub` in any case
 * are ports (which leaves out the header), as upstream's reader. A port row is `| UDie ID | Port ID | Speed | Port
 * Type | Link Status | Media Type |`. Stricter than upstream, which skips a row it cannot read: a port row with
 * fewer than five columns, ids that are not decimal integers in range, a type other than `UB`/`UBoE` or a
 * duplicate (UDie, port), more than {@link MAX_PORT_ROWS} rows, or no port row at all make the whole table
 * unreadable (`ok: false` with the reason), which the health layer counts as DOWN (dcmi-abi.md §7).
 */
export function parsePortTable(stdout: string): PortTable {
  const ports: PortEntry[] = [];
  const seen = new Set<string>();
  let rules = 0;
  let lineNo = 0;
  for (const raw of stdout.split('\n')) {
    lineNo++;
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('+-')) {
      if (++rules === 3) break;
      continue;
    }
    if (rules === 0 || !line.startsWith('|') || !line.toLowerCase().includes('ub')) continue;
    const cols = line
      .replace(/^\|/, '')
      .replace(/\|$/, '')
      .split('|')
      .map((c) => c.trim());
    const bad = (why: string): PortTable => ({ ok: false, reason: `port table line ${lineNo}: ${why}` });
    if (cols.length < 5) return bad(`${cols.length} columns, expected at least 5`);
    const udie = decimal(cols[0]!, MAX_UDIE);
    const port = decimal(cols[1]!, MAX_PORT_ID);
    if (udie === undefined)
      return bad(`UDie ID ${JSON.stringify(cols[0]!.slice(0, 20))} is not an integer 0-${MAX_UDIE}`);
    if (port === undefined)
      return bad(`Port ID ${JSON.stringify(cols[1]!.slice(0, 20))} is not an integer 0-${MAX_PORT_ID}`);
    const type = cols[3];
    if (type !== 'UB' && type !== 'UBoE')
      return bad(`Port Type ${JSON.stringify(type!.slice(0, 20))} is not UB or UBoE`);
    const key = `${udie}/${port}`;
    if (seen.has(key)) return bad(`duplicate port (UDie ${udie}, port ${port})`);
    seen.add(key);
    if (ports.length >= MAX_PORT_ROWS) return bad(`more than ${MAX_PORT_ROWS} ports`);
    const link: LinkStatus = cols[4] === 'UP' || cols[4] === 'DOWN' ? cols[4] : 'Abnormal';
    ports.push({ udie, port, type, link });
  }
  if (ports.length === 0) return { ok: false, reason: 'no port rows in the port table' };
  return { ok: true, ports };
}

/** `hccn_tool -g -dev_info -i <logicId>` parsed; a failure of the tool is an unreadable table with the reason. */
export async function queryPortTable(options: HccnToolOptions, logicId: number): Promise<PortTable> {
  try {
    return parsePortTable(await runHccnTool(options, ['-g', '-dev_info', '-i', String(logicId)]));
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}

/** `hccn_tool -g -link -i <logicId> -u <udie> -p <port>` (the `link status: X` answer of §7); failure = Abnormal. */
export async function queryPortLink(
  options: HccnToolOptions,
  logicId: number,
  udie: number,
  port: number,
): Promise<{ status: LinkStatus; error?: string }> {
  const args = ['-g', '-link', '-i', String(logicId), '-u', String(udie), '-p', String(port)];
  try {
    return { status: parseLinkStatus(await runHccnTool(options, args)) };
  } catch (err) {
    return { status: 'Abnormal', error: (err as Error).message };
  }
}

/**
 * Parses `-g -stat -i <logicId> -u <udie> -p <port>` output as upstream does: lines that split into exactly two
 * parts on `:` give key and value, both trimmed (values stay text); other lines are skipped; at most
 * {@link MAX_PORT_ROWS} × 16 keys are kept.
 */
export function parsePortStats(stdout: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const parts = line.split(':');
    if (parts.length !== 2) continue;
    const key = parts[0]!.trim();
    if (key === '') continue;
    if (out.size >= MAX_PORT_ROWS * 16) break;
    out.set(key, parts[1]!.trim());
  }
  return out;
}

/** `hccn_tool -g -stat -i <logicId> -u <udie> -p <port>` parsed. */
export async function queryPortStats(
  options: HccnToolOptions,
  logicId: number,
  udie: number,
  port: number,
): Promise<Map<string, string>> {
  const args = ['-g', '-stat', '-i', String(logicId), '-u', String(udie), '-p', String(port)];
  return parsePortStats(await runHccnTool(options, args));
}
