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
 * `-dcmiLibrary` (architecture §4: a regular file not writable by group or others). Undefined when the tool may run;
 * otherwise the reason names the file and the rule.
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
