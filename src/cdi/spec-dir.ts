/**
 * The CDI spec folder (`-cdiDir`, default `/var/run/cdi`): specs written atomically (a hidden temporary file in the
 * same folder, renamed over the spec), so a runtime that reads the folder while the agent writes (or dies) sees the
 * old spec or the new one, never half of one; durably on request (the file and the folder fsynced too). Hidden files are what CDI runtimes
 * skip (they read `*.json` and `*.yaml`). Only the files this module names are ever touched.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CdiSpec } from './spec.js';

/** Spec files are readable by every runtime (they hold no secret), written by the agent alone. */
const SPEC_MODE = 0o644;
/** The folder, when the agent has to make it (`/var/run/cdi` is root's, 0755). */
const DIR_MODE = 0o755;

function fsyncPath(p: string): void {
  const fd = fs.openSync(p, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** One CDI spec folder. */
export class CdiSpecDir {
  constructor(readonly dir: string) {}

  /** The path of spec `stem` (`<dir>/<stem>.json`). */
  pathOf(stem: string): string {
    if (stem === '' || stem.includes('/') || stem.startsWith('.')) throw new Error(`bad CDI spec name ${stem}`);
    return path.join(this.dir, `${stem}.json`);
  }

  /**
   * Writes spec `stem` atomically, and durably unless `durable` is false (see the module comment); makes the folder
   * when missing.
   */
  write(stem: string, spec: CdiSpec, options: { readonly durable?: boolean } = {}): void {
    const durable = options.durable ?? true;
    const file = this.pathOf(stem);
    fs.mkdirSync(this.dir, { recursive: true, mode: DIR_MODE });
    const tmp = path.join(this.dir, `.${stem}.json.${process.pid}.tmp`);
    try {
      fs.writeFileSync(tmp, `${JSON.stringify(spec, null, 2)}\n`, { mode: SPEC_MODE });
      fs.chmodSync(tmp, SPEC_MODE); // the umask may have narrowed it
      if (durable) fsyncPath(tmp);
      fs.renameSync(tmp, file);
    } catch (err) {
      fs.rmSync(tmp, { force: true });
      throw err;
    }
    if (durable) fsyncPath(this.dir);
  }

  /** Removes spec `stem` (no error when it is not there); true when a file was removed. */
  remove(stem: string): boolean {
    const file = this.pathOf(stem);
    if (!fs.existsSync(file)) return false;
    fs.rmSync(file, { force: true });
    return true;
  }

  /** Whether spec `stem` exists. */
  has(stem: string): boolean {
    return fs.existsSync(this.pathOf(stem));
  }

  /** Stems of the spec files whose name matches `pattern` (tested on the stem); [] when the folder is missing. */
  list(pattern: RegExp): string[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return [];
    }
    return names
      .filter((n) => n.endsWith('.json'))
      .map((n) => n.slice(0, -'.json'.length))
      .filter((stem) => pattern.test(stem))
      .sort();
  }

  /** Removes temporary files a killed writer left (the hidden `.<stem>.json.<pid>.tmp`). */
  removeLeftovers(pattern: RegExp): number {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return 0;
    }
    let n = 0;
    for (const name of names) {
      const m = /^\.(.+)\.json\.\d+\.tmp$/.exec(name);
      if (m && pattern.test(m[1]!)) {
        fs.rmSync(path.join(this.dir, name), { force: true });
        n++;
      }
    }
    return n;
  }
}
