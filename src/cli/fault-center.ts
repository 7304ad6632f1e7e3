#!/usr/bin/env node
/**
 * `ascend-fault-center`: the cluster fault center. Not built yet (issue [G]); it answers --help and --version and refuses everything else.
 */
import { handleHelpAndVersion } from './common.js';

const HELP = `Usage: ascend-fault-center [--help] [--version]

The cluster fault center is not built yet (issue [G]).
`;

const argv = process.argv.slice(2);
if (!handleHelpAndVersion(argv, 'ascend-fault-center', HELP)) {
  process.stderr.write('ascend-fault-center: not built yet (issue [G]); see --help\n');
  process.exitCode = 2;
}
