/**
 * Link status and RoCE counters through `hccn_tool` (spec dcmi-abi.md §7). The tool runs with an argument array
 * (never a shell), a minimal environment, bounded output and a timeout.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';

/** Default location (architecture §4 `-hccnTool`). */
export const DEFAULT_HCCN_TOOL = '/usr/local/Ascend/driver/tools/hccn_tool';
/** dcmi-abi.md §7: stdout and stderr are each captured up to 1 MiB. */
export const HCCN_OUTPUT_LIMIT = 1024 * 1024;

/** `Abnormal` = the tool failed or answered in an unexpected shape; the agent treats it as DOWN (§7). */
export type LinkStatus = 'UP' | 'DOWN' | 'Abnormal';

export interface HccnToolOptions {
  toolPath: string;
  /** the agent's environment; only PATH, LD_LIBRARY_PATH and ASCEND_MOCK_CONTROL are passed on */
  env: Readonly<Record<string, string | undefined>>;
  timeoutMs?: number;
}

export class HccnToolError extends Error {
  override readonly name = 'HccnToolError';
}

/** Runs `hccn_tool` with the given arguments and returns its stdout. */
export async function runHccnTool(options: HccnToolOptions, args: readonly string[]): Promise<string> {
  let real: string;
  try {
    real = fs.realpathSync(options.toolPath);
  } catch (err) {
    throw new HccnToolError(`${options.toolPath}: ${(err as NodeJS.ErrnoException).code ?? 'cannot be resolved'}`);
  }
  if (real !== options.toolPath) {
    throw new HccnToolError(
      `${options.toolPath} must be an absolute path without symbolic links (resolves to ${real})`,
    );
  }
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
