/**
 * Helpers shared by the three composition roots: version, help output.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../core/paths.js';

/** The package version from package.json. */
export function packageVersion(): string {
  const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version?: string };
  return pkg.version ?? '0.0.0';
}

/** Handles `--help` / `--version` (and their single-dash forms); returns true when it printed something. */
export function handleHelpAndVersion(argv: readonly string[], name: string, help: string): boolean {
  if (argv.some((a) => ['--version', '-version', '-v'].includes(a))) {
    process.stdout.write(`${name} ${packageVersion()}\n`);
    return true;
  }
  if (argv.some((a) => ['--help', '-help', '-h'].includes(a))) {
    process.stdout.write(help);
    return true;
  }
  return false;
}
