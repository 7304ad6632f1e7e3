// The fault center's start-up bundle (issue [P] item 6; docs/operations.md "Start-up"), the last step of
// `npm run build`. As tsc wrote it, `dist/cli/fault-center.js` made Node's loaders resolve, stat, read and compile
// every module of the center and of the packages it imports before it could take the Lease: ≈ 180 ms of CPU at
// every start on this machine, on the way to the first publication. This step bundles what the center loads with
// esbuild into `dist/cli/fault-center.js` and `dist/fault-center-chunks/` (what it loads only on demand stays in
// chunks of its own), like scripts/bundle-agent.ts for the agent, without the agent's code cache.
//
// The output sits two folders below the package root, as the tsc output did (src/core/paths.ts finds the root from
// its own location); `require` is created from the file's own location, and node_modules stays beside dist/.
// Running it twice without tsc in between is refused (it would bundle a bundle).
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleInputs, bundleOptions } from './bundle-common.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const entry = path.join(dist, 'cli', 'fault-center.js');
const chunks = path.join(dist, 'fault-center-chunks');
const MARK = '// bundled by scripts/bundle-fault-center.ts';

const source = fs.readFileSync(entry, 'utf8');
if (source.includes(MARK)) {
  console.error(
    `bundle-fault-center: ${path.relative(root, entry)} is already a bundle; run tsc first (npm run build)`,
  );
  process.exit(1);
}
if (!source.startsWith('#!')) {
  console.error(`bundle-fault-center: ${path.relative(root, entry)} has no #! line (src/cli/fault-center.ts has one)`);
  process.exit(1);
}

fs.rmSync(chunks, { recursive: true, force: true });
const result = await build(bundleOptions(root, dist, { 'cli/fault-center': entry }, 'fault-center-chunks', MARK));
const outputs = Object.entries(result.metafile.outputs).filter(([file]) => !file.endsWith('.map'));
// which modules each output holds, for test/integration/fault-center-no-client-node.test.ts: a resolve hook sees
// the files, this says what is in them
const inputs = bundleInputs(result.metafile);
fs.writeFileSync(path.join(chunks, 'inputs.json'), `${JSON.stringify(inputs, null, 1)}\n`);
const bytes = outputs.reduce((a, [, o]) => a + o.bytes, 0);
console.log(
  `bundle-fault-center: dist/cli/fault-center.js and ${outputs.length - 1} chunks in dist/fault-center-chunks, ` +
    `${(bytes / 1e6).toFixed(1)} MB`,
);
