#!/usr/bin/env node
/**
 * `ascend-npu-agent`: composition root of the node agent. Today it offers `simulate`, a demonstration of the
 * DCMI foundation (binding + mock library); the agent proper (kubelet, ConfigMap) is issue [E].
 */
import { runDcmiDemo } from '../sim/dcmi-demo.js';
import { handleHelpAndVersion } from './common.js';

const HELP = `Usage: ascend-npu-agent [simulate] [--help] [--version]

  simulate   run the demo on the mock DCMI library (scenarios/910b-8chip.json): enumerate the
             chips, inject faults through the mock's control socket and show what DCMI reports.

The node agent itself (kubelet device plugin, device-info ConfigMap) is not built yet.
`;

async function main(argv: string[]): Promise<number> {
  if (handleHelpAndVersion(argv, 'ascend-npu-agent', HELP)) return 0;
  if (argv[0] === 'simulate') return runDcmiDemo(argv.slice(1), process.stdout);
  process.stderr.write(
    argv.length === 0
      ? 'ascend-npu-agent: the node agent is not built yet; try `ascend-npu-agent simulate` or --help\n'
      : `ascend-npu-agent: unknown argument ${argv[0]}; see --help\n`,
  );
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`ascend-npu-agent: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
