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
import { build, transform, type Metafile } from 'esbuild';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { banner, bundleInputs, bundleOptions } from './bundle-common.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const entry = path.join(dist, 'cli', 'agent.js');
const chunks = path.join(dist, 'agent-chunks');
const MARK = '// bundled by scripts/bundle-agent.ts';
const BANNER = banner(MARK);
/** The module whose chunk is compiled from a V8 code cache (src/cli/code-cache.ts). */
const ROOT_MODULE = 'dist/agent/run-agent.js';

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
const result = await build(bundleOptions(root, dist, { 'cli/agent': entry }, 'agent-chunks', MARK));
const outputs = Object.entries(result.metafile.outputs).filter(([file]) => !file.endsWith('.map'));
// which modules each output holds, for test/integration/agent-modules.test.ts: a resolve hook sees the chunks the
// agent loads, this says what is in them
const inputs = bundleInputs(result.metafile);
const cached = await cacheRootChunk(result.metafile);
fs.writeFileSync(path.join(chunks, 'inputs.json'), `${JSON.stringify(inputs, null, 1)}\n`);

/**
 * The composition root's chunk as a script compiled from a V8 code cache (src/cli/code-cache.ts): its CommonJS form
 * wrapped in a function, an ES-module stub under the chunk's own name (its importers stay as they are) and the cache,
 * made by running the script in a `node` with the `#!` line's V8 flags.
 */
async function cacheRootChunk(meta: Metafile): Promise<string> {
  const found = Object.entries(meta.outputs).filter(
    ([file, o]) => file.endsWith('.js') && (o.inputs[ROOT_MODULE]?.bytesInOutput ?? 0) > 0,
  );
  if (found.length !== 1) throw new Error(`bundle-agent: ${found.length} chunks hold ${ROOT_MODULE}, expected 1`);
  const [file, out] = found[0]!;
  const chunkPath = path.join(root, file);
  const name = path.basename(file, '.js');
  const original = fs.readFileSync(chunkPath, 'utf8');
  if (!original.startsWith(BANNER)) throw new Error(`bundle-agent: ${file} does not start with the banner`);
  // the chunk as esbuild wrote it stays beside the script as `<name>.module.js`, with its source map: the stub loads
  // it instead of the script under --enable-source-maps (Node 20 maps no vm.Script's stack frames)
  const moduleFile = `${name}.module.js`;
  fs.writeFileSync(
    path.join(chunks, moduleFile),
    original.replace(/\/\/# sourceMappingURL=\S+\s*$/, `//# sourceMappingURL=${moduleFile}.map\n`),
  );
  fs.renameSync(`${chunkPath}.map`, path.join(chunks, `${moduleFile}.map`));
  const body = original.slice(BANNER.length);
  const cjs = await transform(body, {
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    minifyWhitespace: true,
    define: { 'import.meta.url': '__chunkUrl' },
    logLevel: 'warning',
  });
  const dynamic = out.imports.filter((i) => i.kind === 'dynamic-import').map((i) => path.basename(i.path));
  // the chunk's own import() calls load sibling chunks through the stub's loader (relative to the chunk's URL)
  const code = cjs.code.replace(/\bimport\("\.\/([^"]+)"\)/g, (all, target: string) => {
    if (!dynamic.includes(target)) throw new Error(`bundle-agent: ${file}: unexpected ${all}`);
    return `__chunkImport("./${target}")`;
  });
  if (/\bimport\s*\(/.test(code.replace(/"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/g, '""'))) {
    throw new Error(`bundle-agent: ${file} has an import() the script form cannot serve`);
  }
  const script = `${name}.script.js`;
  const cache = `${name}.script.cache`;
  fs.writeFileSync(
    path.join(chunks, script),
    `(function(require,module,exports,__chunkUrl,__chunkImport){\n${code}})\n`,
  );
  const deps = out.imports
    .filter((i) => i.kind === 'import-statement' && !i.external)
    .map((i) => path.basename(i.path));
  const spec = (d: string): string => JSON.stringify(`./${d}`);
  const exportsOf = out.exports;
  const chunkOptions = (url: string, depNames: string): string =>
    `{url:${url},script:${JSON.stringify(script)},cache:${JSON.stringify(cache)},deps:{${depNames}}}`;
  const depNames = deps.map((d, i) => `${spec(d)}:d${i}`).join(',');
  const stub = [
    MARK,
    `// ${file}: the stub of ${script}, compiled from ${cache} when V8 accepts it (src/cli/code-cache.ts)`,
    ...deps.map((d, i) => `import * as d${i} from ${spec(d)};`),
    `import { runCachedScript } from '../cli/code-cache.js';`,
    `// NODE_OPTIONS=--enable-source-maps: the ES-module form, whose stack frames Node maps to dist/ and src/`,
    `const m = process.sourceMapsEnabled ? await import(${spec(moduleFile)}) :`,
    `  runCachedScript(${chunkOptions('import.meta.url', depNames)});`,
    `export const { ${exportsOf.join(', ')} } = m;`,
    '',
  ].join('\n');
  fs.writeFileSync(chunkPath, stub);
  inputs[path.join(path.dirname(file), moduleFile)] = inputs[file]!;
  // the cache, made under the agent's V8 flags (V8 refuses a cache made under others)
  const flags = source
    .split('\n', 1)[0]!
    .replace(/^#!.*?\bnode\b/, '')
    .trim()
    .split(/\s+/)
    .filter(Boolean);
  const chunkUrl = pathToFileURL(chunkPath).href;
  const depUrl = (d: string): string => JSON.stringify(new URL(`./${d}`, chunkUrl).href);
  const maker = [
    `import fs from 'node:fs';`,
    ...deps.map((d, i) => `import * as d${i} from ${depUrl(d)};`),
    `import { makeCodeCache } from ${JSON.stringify(pathToFileURL(path.join(dist, 'cli', 'code-cache.js')).href)};`,
    `import { warmUpKubeletExchange } from ${JSON.stringify(pathToFileURL(path.join(dist, 'cli', 'code-cache-warm-up.js')).href)};`,
    `import { trainAgent } from ${JSON.stringify(pathToFileURL(path.join(dist, 'cli', 'code-cache-training.js')).href)};`,
    `const { data, exports } = await makeCodeCache(${chunkOptions(JSON.stringify(chunkUrl), depNames)}, async (x) => { await warmUpKubeletExchange(x); await trainAgent(x); });`,
    `const missing = ${JSON.stringify(exportsOf)}.filter((e) => exports[e] === undefined);`,
    `if (missing.length > 0) { console.error('bundle-agent: the script does not export ' + missing.join(', ')); process.exit(1); }`,
    `fs.writeFileSync(${JSON.stringify(path.join(chunks, cache))}, data);`,
    `process.exit(0);`,
  ].join('\n');
  const r = spawnSync(process.execPath, [...flags, '--input-type=module', '-e', maker], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`bundle-agent: making the code cache of ${file} failed (status ${r.status})`);
  const cacheBytes = fs.statSync(path.join(chunks, cache)).size;
  return `${file} compiled from a ${(cacheBytes / 1e6).toFixed(1)} MB code cache (node ${flags.join(' ')})`;
}
const bytes = outputs.reduce((a, [, o]) => a + o.bytes, 0);
const maps = Object.entries(result.metafile.outputs).reduce((a, [f, o]) => a + (f.endsWith('.map') ? o.bytes : 0), 0);
console.log(
  `bundle-agent: dist/cli/agent.js and ${outputs.length - 1} chunks in dist/agent-chunks, ${(bytes / 1e6).toFixed(1)} MB ` +
    `(source maps ${(maps / 1e6).toFixed(1)} MB); ${cached}`,
);
