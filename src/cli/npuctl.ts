#!/usr/bin/env node
/**
 * `npuctl`: the admin CLI (architecture §7). Composition root: `config check` and `policy replay` are built
 * here over src/faults; `status` reads a running agent's `/status` (issue [F]); `separation` reads and edits the
 * device-info ConfigMaps through the API server (issue [D]).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { PROJECT_ROOT } from '../core/paths.js';
import { MAX_CONFIG_BYTES, parsePolicy } from '../faults/index.js';
import { handleHelpAndVersion, packageVersion } from './common.js';
import { unknownCommandMessage } from './npuctl/commands.js';
import { checkConfig, renderConfigCheck } from './npuctl/config-check.js';
import { UsageError, readTextFile } from './npuctl/io.js';
import { DEFAULT_REPLAY_START, describeTransition, replay } from './npuctl/replay.js';
import {
  SeparationError,
  checkChipName,
  checkNodeName,
  listSeparation,
  openKube,
  releaseChip,
  renderList,
  renderRelease,
} from './npuctl/separation.js';
import { AgentUnreachableError, DEFAULT_AGENT_URL, DEFAULT_STATUS_TIMEOUT_MS, statusCommand } from './npuctl/status.js';
import { MAX_TIMELINE_BYTES, parseScenarioChips, parseTimeline } from './npuctl/timeline.js';

const HELP = `Usage: npuctl <command> [options]

Commands:
  config check [--fault-code F] [--customization F] [--switch-fault-code F] [--names F] [--json]
      Validate faultCode.json, faultCustomization.json, SwitchFaultCode.json and deviceNameCustomization.json as the
      agent does; report every rule as accepted / ignored / defaulted. Exit 0 all accepted, 1 something ignored or defaulted, 2 unusable file.
  policy replay --timeline F [--scenario F] [--fault-code F] [--customization F] [--start MS] [--json]
      Run the agent's fault engine on a simulated clock over a timeline (JSON lines); print one JSON line per
      query line and one at the end.
  status [--agent URL] [--json] [--timeout MS]
      Ask a running agent (default ${DEFAULT_AGENT_URL}) for its chips and chip-reset state: one row per chip
      and reset engine, then the tasks of the task-aware engine. Exit 1 when the agent cannot be reached.
  separation list [--node N] [--json] [--kubeconfig F]
      Show the manually separated chips (ManuallySeparateNPU) of one node's device-info ConfigMap or of every
      node's, and which device-info lists (Unhealthy, Fault, ...) name each.
  separation release --node N --chip NAME [--kubeconfig F]
      Delete one chip name from the node's ManuallySeparateNPU (conflict-checked; no other key is touched); the
      agent releases the chip at its next write. Exit 1 when the chip is not separated or the API call fails.

Options: --help, --version. Run "npuctl <command> --help" for a command's options.
`;

/** Agent default: /usr/local/<name> when present, else the packaged copy (architecture §4). */
function defaultFile(name: string): string {
  const host = path.join('/usr/local', name);
  return fs.existsSync(host) ? host : path.join(PROJECT_ROOT, name);
}

const out = (s: string): void => void process.stdout.write(s);
const err = (s: string): void => void process.stderr.write(s);

function buildProgram(): Command {
  const program = new Command('npuctl')
    .version(packageVersion())
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err });
  program.helpInformation = () => HELP;
  const config = program.command('config').description('fault configuration tools').exitOverride();
  config
    .command('check')
    .description('validate the fault files and explain every rule')
    .option('--fault-code <file>', 'faultCode.json (default: /usr/local/faultCode.json, else the packaged one)')
    .option('--customization <file>', 'faultCustomization.json (default: /usr/local/…, else the packaged one)')
    .option('--switch-fault-code <file>', 'SwitchFaultCode.json (910A3 switch faults; default as above)')
    .option('--names <file>', 'deviceNameCustomization.json (L.6; default: /usr/local/deviceNameCustomization.json)')
    .option('--json', 'machine-readable output')
    .exitOverride()
    .action(
      (o: { faultCode?: string; customization?: string; switchFaultCode?: string; names?: string; json?: boolean }) => {
        const report = checkConfig(
          o.faultCode ?? defaultFile('faultCode.json'),
          o.customization ?? defaultFile('faultCustomization.json'),
          {
            switchFaultCode: o.switchFaultCode ?? defaultFile('SwitchFaultCode.json'),
            names: o.names ?? '/usr/local/deviceNameCustomization.json',
          },
        );
        out(o.json ? `${JSON.stringify(report)}\n` : renderConfigCheck(report));
        process.exitCode = report.exitCode;
      },
    );
  const policy = program.command('policy').description('fault policy tools').exitOverride();
  policy
    .command('replay')
    .description('replay a fault timeline through the fault engine on a simulated clock')
    .requiredOption('--timeline <file>', 'timeline (JSON lines: {"t":ms,"op":...})')
    .option('--scenario <file>', 'hardware scenario (default: scenarios/910b-8chip.json)')
    .option('--fault-code <file>', 'faultCode.json (default: /usr/local/faultCode.json, else the packaged one)')
    .option('--customization <file>', 'faultCustomization.json (default: /usr/local/…, else the packaged one)')
    .option('--start <ms>', 'epoch ms of t=0', String(DEFAULT_REPLAY_START))
    .option('--json', 'JSON lines only (no explanation on stderr)')
    .exitOverride()
    .action(
      (o: {
        timeline: string;
        scenario?: string;
        faultCode?: string;
        customization?: string;
        start: string;
        json?: boolean;
      }) => {
        if (!/^[0-9]{1,15}$/.test(o.start))
          throw new UsageError(`--start must be epoch milliseconds, got ${JSON.stringify(o.start)}`);
        const fcFile = o.faultCode ?? defaultFile('faultCode.json');
        const cuFile = o.customization ?? defaultFile('faultCustomization.json');
        const parsed = parsePolicy(
          readTextFile(fcFile, MAX_CONFIG_BYTES, 'fault code file'),
          readTextFile(cuFile, MAX_CONFIG_BYTES, 'customization file'),
        );
        if (!parsed.policy) {
          const fatal = [
            ...(parsed.faultCode.ok ? [] : parsed.faultCode.fatal.map((f) => `${fcFile}: ${f}`)),
            ...(parsed.customization.ok ? [] : parsed.customization.fatal.map((f) => `${cuFile}: ${f}`)),
          ];
          throw new UsageError(
            `the fault configuration cannot be used:\n  ${fatal.join('\n  ')}\n(run "npuctl config check" for details)`,
          );
        }
        const scenarioFile = o.scenario ?? path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json');
        const chips = parseScenarioChips(readTextFile(scenarioFile, MAX_CONFIG_BYTES, 'scenario'), scenarioFile);
        const steps = parseTimeline(
          readTextFile(o.timeline, MAX_TIMELINE_BYTES, 'timeline'),
          new Set(chips.map((c) => c.logicId)),
          o.timeline,
        );
        replay(parsed.policy, chips, steps, {
          start: Number(o.start),
          onLine: (l) => out(`${JSON.stringify(l)}\n`),
          ...(o.json ? {} : { onTransition: (t: number, tr) => err(`${describeTransition(t, tr)}\n`) }),
        });
      },
    );
  program
    .command('status')
    .description("show a running agent's chips and chip-reset state (its /status document)")
    .option('--agent <url>', "the agent's metrics address", DEFAULT_AGENT_URL)
    .option('--json', 'print the document as the agent sent it (one JSON line)')
    .option('--timeout <ms>', 'time allowed for the request', String(DEFAULT_STATUS_TIMEOUT_MS))
    .exitOverride()
    .action(async (o: { agent: string; json?: boolean; timeout: string }) => {
      if (!/^[0-9]{1,7}$/.test(o.timeout) || Number(o.timeout) === 0)
        throw new UsageError(`--timeout must be a number of milliseconds > 0, got ${JSON.stringify(o.timeout)}`);
      out(await statusCommand({ agent: o.agent, json: o.json ?? false, timeoutMs: Number(o.timeout) }));
    });
  const separation = program
    .command('separation')
    .description('manually separated chips in the device-info ConfigMaps')
    .exitOverride();
  separation
    .command('list')
    .description('show the ManuallySeparateNPU chips of one node or of every node')
    .option('--node <name>', "one node's ConfigMap (default: every mindx-dl-deviceinfo-* of kube-system)")
    .option('--json', 'machine-readable output')
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster, else $KUBECONFIG, else ~/.kube/config)')
    .exitOverride()
    .action(async (o: { node?: string; json?: boolean; kubeconfig?: string }) => {
      const node = o.node !== undefined ? checkNodeName(o.node) : undefined;
      const kube = await openKube(o.kubeconfig, process.env);
      try {
        const nodes = await listSeparation(kube, node);
        out(o.json ? `${JSON.stringify({ server: kube.server, nodes })}\n` : renderList(nodes, kube.server));
      } finally {
        kube.close();
      }
    });
  separation
    .command('release')
    .description("delete one chip's name from a node's ManuallySeparateNPU (the agent then releases it)")
    .option('--node <name>', 'the node')
    .option('--chip <name>', 'the device name, e.g. Ascend910-3')
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster, else $KUBECONFIG, else ~/.kube/config)')
    .exitOverride()
    .action(async (o: { node?: string; chip?: string; kubeconfig?: string }) => {
      const node = checkNodeName(o.node);
      const chip = checkChipName(o.chip);
      const kube = await openKube(o.kubeconfig, process.env);
      try {
        out(renderRelease(await releaseChip(kube, node, chip)));
      } finally {
        kube.close();
      }
    });
  return program;
}

async function main(argv: string[]): Promise<void> {
  if (argv.length === 0 || argv[0]!.startsWith('-')) {
    if (handleHelpAndVersion(argv, 'npuctl', HELP)) return;
    err(argv.length === 0 ? HELP : `npuctl: unknown option ${argv[0]}; see --help\n`);
    process.exitCode = 2;
    return;
  }
  const program = buildProgram();
  // commander alone says "unknown command 'x'" (and a guess only for near misses): the closest command and the list
  const unknown = unknownCommandMessage(program, argv);
  if (unknown !== undefined) {
    err(unknown);
    process.exitCode = 2;
    return;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode =
        e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.exitCode === 0 ? 0 : 2;
    } else if (e instanceof UsageError) {
      err(`npuctl: ${e.message}\n`);
      process.exitCode = 2;
    } else if (e instanceof AgentUnreachableError || e instanceof SeparationError) {
      err(`npuctl: ${e.message}\n`);
      process.exitCode = 1;
    } else throw e;
  }
}

await main(process.argv.slice(2));
