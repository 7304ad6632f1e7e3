/**
 * The start-up check of `-stateDir` (issue [I] "Bad input", architecture §4 exit 2): the folder must exist (or be
 * creatable, mode 0700) and take a write. Writability is proven by writing and removing a probe file, not read from
 * the mode bits: root passes every permission check, but a read-only mount (a `:ro` volume, or no volume at all under
 * `readOnlyRootFilesystem`) still answers EROFS. The composition root runs it before anything starts, so a bad state
 * folder stops the agent with one line naming it, instead of an agent that runs and fails every save.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Name of the probe file written and removed in the state folder. */
export const STATE_DIR_PROBE = '.ascend-npu-agent-write-check';

/** `EROFS: read-only file system` from a Node fs error (its text up to the path), else the error's text. */
function reason(err: unknown): string {
  const e = err as Partial<NodeJS.ErrnoException> | null;
  if (typeof e?.message !== 'string') return String(err);
  const text = e.message.split(',')[0] ?? e.message;
  return e.code && !text.startsWith(e.code) ? `${e.code}: ${text}` : text;
}

/**
 * Why `dir` cannot serve as `-stateDir`, as one line naming it, or undefined when it can. Creates the folder
 * (0700, with its parents) when it is missing.
 */
export function stateDirProblem(dir: string): string | undefined {
  let st: fs.Stats | undefined;
  try {
    st = fs.statSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return `-stateDir ${dir} cannot be read (${reason(err)})`;
  }
  if (st && !st.isDirectory()) return `-stateDir ${dir} is not a folder`;
  if (!st) {
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      return `-stateDir ${dir} does not exist and cannot be created (${reason(err)}): mount a writable folder there`;
    }
  }
  const probe = path.join(dir, STATE_DIR_PROBE);
  try {
    fs.writeFileSync(probe, '', { mode: 0o600 });
    fs.unlinkSync(probe);
  } catch (err) {
    return `-stateDir ${dir} is not writable (${reason(err)}): mount a writable folder there`;
  }
  return undefined;
}
