/**
 * bench/mock-state: what the mock's chip state file costs (issue [T] item 4, scenarios/README.md "State file").
 *
 * A child process loads the real binding on the mock library, initialises it and sends `BENCH_MOCK_STATE_OPS`
 * (default 2,000) `processes` requests, one at a time, over one control connection; each changes a chip, so with
 * `ASCEND_MOCK_STATE` set each one rewrites the state file (temporary file + rename). Measured: the round trip of a
 * request, p50/p99 per run, median over `BENCH_RUNS` (default 5) runs, with the file against without it (baseline) in
 * the same run, interleaved. Run: `npx tsx bench/mock-state.ts` (after `npm ci`).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MOCK_DCMI_LIBRARY, PROJECT_ROOT } from '../src/core/paths.js';
import { fmt, median } from './stats.js';

const ADDON = path.join(PROJECT_ROOT, 'build', 'Release', 'dcmi_addon.node');
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const OPS = Number(process.env.BENCH_MOCK_STATE_OPS ?? 2000);

/** The child: argv addon, library, request count; prints {p50, p99} in ms. */
const CHILD = `
const net = require('node:net');
const lib = new (require(process.argv[1]).DcmiLibrary)(process.argv[2]);
const n = Number(process.argv[3]);
lib.init().then(async () => {
  const s = net.connect(process.env.ASCEND_MOCK_CONTROL);
  await new Promise((r) => s.on('connect', r));
  let buf = '';
  let done;
  s.on('data', (d) => { buf += d; const i = buf.indexOf('\\n'); if (i >= 0) { buf = buf.slice(i + 1); done(); } });
  const t = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await new Promise((r) => { done = r; s.write(JSON.stringify({ op: 'processes', logicId: i % 8, count: i % 3 }) + '\\n'); });
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  t.sort((a, b) => a - b);
  console.log(JSON.stringify({ p50: t[Math.floor(n / 2)], p99: t[Math.floor(n * 0.99)] }));
  s.end();
});`;

function once(withFile: boolean): Promise<{ p50: number; p99: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-mock-state-'));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    ASCEND_MOCK_SCENARIO: path.join(PROJECT_ROOT, 'scenarios', '910b-8chip.json'),
    ASCEND_MOCK_CONTROL: path.join(dir, 'ctl.sock'),
    ...(withFile ? { ASCEND_MOCK_STATE: path.join(dir, 'chips.json') } : {}),
  };
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', CHILD, ADDON, MOCK_DCMI_LIBRARY, String(OPS)], { env }, (err, stdout) => {
      fs.rmSync(dir, { recursive: true, force: true });
      if (err) reject(new Error(`bench child failed: ${err.message}`, { cause: err }));
      else resolve(JSON.parse(stdout) as { p50: number; p99: number });
    });
  });
}

const base: { p50: number; p99: number }[] = [];
const file: { p50: number; p99: number }[] = [];
for (let i = 0; i < RUNS; i++) {
  base.push(await once(false));
  file.push(await once(true));
}
const m = (xs: { p50: number; p99: number }[], k: 'p50' | 'p99'): number => median(xs.map((x) => x[k]));
const out = {
  bench: 'mock-state',
  ops: OPS,
  runs: RUNS,
  withoutFileMs: { p50: m(base, 'p50'), p99: m(base, 'p99') },
  withFileMs: { p50: m(file, 'p50'), p99: m(file, 'p99') },
  ratio: { p50: m(file, 'p50') / m(base, 'p50'), p99: m(file, 'p99') / m(base, 'p99') },
  loadAverage: os.loadavg()[0],
};
process.stdout.write(
  `mock-state: request round trip p50/p99 ${fmt(out.withFileMs.p50)}/${fmt(out.withFileMs.p99)} ms with the state ` +
    `file, ${fmt(out.withoutFileMs.p50)}/${fmt(out.withoutFileMs.p99)} ms without ` +
    `(${fmt(out.ratio.p50, 1)}× / ${fmt(out.ratio.p99, 1)}×)\n${JSON.stringify(out)}\n`,
);
