// The agent's start-up bundle (issue [P] item 3; docs/operations.md "Start-up"), the second half of `npm run build`.
//
// tsc writes every module of src/ into dist/; the agent, started as `dist/cli/agent.js`, then made Node's ESM loader
// resolve, stat, read and compile some 400 files before it could register with kubelet: about half of its start-up.
// This step bundles what the agent loads from that tsc output (its own modules and the packages they import) with
// esbuild into `dist/cli/agent.js` and `dist/agent-chunks/`: the first file keeps the `#!` line and the V8 flags,
// and what the agent loads only later or never (the `simulate` demo, client-node for a kubeconfig our client cannot
// serve, pino-roll for `-logFile`, the CEL libraries of the DRA driver) stays in chunks of its own, loaded on demand.
// The rest of dist/ (the fault center, npuctl, every module the tests import) stays as tsc wrote it.
//
// Both outputs sit two folders below the package root, as every tsc output does: src/core/paths.ts finds the root
// from its own location, and so does the bundle. Packages that locate files beside their own sources at run time
// keep working because `require` is created per chunk from its own location and node_modules stays beside dist/;
// pino's transports (worker threads found by `__dirname`) do not, and the agent never uses them (pino-roll writes
// in the agent's own thread).
//
// Run by `npm run build` after tsc; running it twice without tsc in between is refused (it would bundle a bundle).
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const entry = path.join(dist, 'cli', 'agent.js');
const chunks = path.join(dist, 'agent-chunks');
const MARK = '// bundled by scripts/bundle-agent.ts';

const source = fs.readFileSync(entry, 'utf8');
if (source.includes(MARK)) {
  console.error(`bundle-agent: ${path.relative(root, entry)} is already a bundle; run tsc first (npm run build)`);
  process.exit(1);
}
if (!source.startsWith('#!')) {
  console.error(`bundle-agent: ${path.relative(root, entry)} has no #! line (src/cli/agent.ts starts with one)`);
  process.exit(1);
}

fs.rmSync(chunks, { recursive: true, force: true });
const result = await build({
  entryPoints: { 'cli/agent': entry },
  outdir: dist,
  chunkNames: 'agent-chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // CommonJS packages call `require` for Node's built-ins; an ES module has none of its own
  banner: {
    js: `${MARK}\nimport { createRequire as __bundleRequire } from 'node:module';\nconst require = __bundleRequire(import.meta.url);`,
  },
  // the addon is loaded by path at run time (src/dcmi/bindings.ts)
  external: ['*.node'],
  allowOverwrite: true,
  legalComments: 'eof',
  // whitespace only: names stay in stack traces; V8 keeps every script's source, 2.8 MiB less idle RSS with 16 chips
  minifyWhitespace: true,
  // readable stack traces on demand: NODE_OPTIONS=--enable-source-maps maps them to dist/ (docs/operations.md)
  sourcemap: 'linked',
  sourcesContent: false,
  logLevel: 'warning',
  metafile: true,
  absWorkingDir: root,
});
const outputs = Object.entries(result.metafile.outputs).filter(([file]) => !file.endsWith('.map'));
// which modules each output holds (the code that survived tree shaking), for test/integration/agent-modules.test.ts:
// a resolve hook sees the chunks the agent loads, this says what is in them
const inputs = Object.fromEntries(
  outputs.map(([file, o]) => [
    file,
    Object.entries(o.inputs)
      .filter(([, i]) => i.bytesInOutput > 0)
      .map(([input]) => input)
      .sort(),
  ]),
);
fs.writeFileSync(path.join(chunks, 'inputs.json'), `${JSON.stringify(inputs, null, 1)}\n`);
const bytes = outputs.reduce((a, [, o]) => a + o.bytes, 0);
const maps = Object.entries(result.metafile.outputs).reduce((a, [f, o]) => a + (f.endsWith('.map') ? o.bytes : 0), 0);
console.log(
  `bundle-agent: dist/cli/agent.js and ${outputs.length - 1} chunks in dist/agent-chunks, ${(bytes / 1e6).toFixed(1)} MB ` +
    `(source maps ${(maps / 1e6).toFixed(1)} MB)`,
);
