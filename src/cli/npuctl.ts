#!/usr/bin/env node
/**
 * `npuctl`: the admin CLI (config check, policy replay, separation, status). Not built yet (issue [B]/[D]); it answers --help and --version and refuses everything else.
 */
import { handleHelpAndVersion } from './common.js';

const HELP = `Usage: npuctl [--help] [--version]

The admin CLI (config check, policy replay, separation, status) is not built yet (issue [B]/[D]).
`;

const argv = process.argv.slice(2);
if (!handleHelpAndVersion(argv, 'npuctl', HELP)) {
  process.stderr.write('npuctl: not built yet (issue [B]/[D]); see --help\n');
  process.exitCode = 2;
}
