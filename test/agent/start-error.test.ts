/**
 * Issue [H] item 5: a start-up failure rejects with `AgentStartError`, whose exit status is the CLI's and whose
 * `cause` is the original error (architecture §4 exit statuses; spec dcmi-abi §1.2 for the library checks).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { AgentStartError, EXIT } from '../../src/agent/errors.js';
import { runAgent } from '../../src/agent/run-agent.js';
import { NOOP_LOGGER } from '../../src/core/logger.js';
import { parseAgentArgs } from '../../src/cli/agent-flags.js';

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'start-error-'));
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

async function startError(argv: string[]): Promise<AgentStartError> {
  const args = parseAgentArgs([...argv, '-stateDir', path.join(tmp, 'state')], { NODE_NAME: 'node-1' });
  if (!args.ok || !args.config) throw new Error(`flags refused: ${JSON.stringify(args)}`);
  const err = await runAgent(args.config, { logger: NOOP_LOGGER, kubeConfig: null, defaultMetrics: false }).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof AgentStartError)) throw new Error(`expected an AgentStartError, got ${String(err)}`);
  return err;
}

describe('[H] 5 AgentStartError keeps the original error as cause', () => {
  test('dcmi-abi §1.2 a missing -dcmiLibrary: exit 3, the cause is the resolver error and its text is in the message', async () => {
    const err = await startError(['-dcmiLibrary', path.join(tmp, 'missing', 'libdcmi.so')]);
    const cause = err.cause as Error;
    expect([err.exitCode, cause instanceof Error, err.message.includes(cause.message)]).toEqual([
      EXIT.DCMI_UNUSABLE,
      true,
      true,
    ]);
  });

  test('a library that is not a shared object: exit 3, the cause is the loader error', async () => {
    const lib = path.join(tmp, 'libdcmi.so');
    fs.writeFileSync(lib, 'not an ELF file', { mode: 0o644 });
    const err = await startError(['-dcmiLibrary', lib]);
    const cause = err.cause as Error;
    expect([err.exitCode, cause instanceof Error, err.message.includes(cause.message)]).toEqual([
      EXIT.DCMI_UNUSABLE,
      true,
      true,
    ]);
  });
});
