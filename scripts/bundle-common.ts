// What the start-up bundles of the agent (scripts/bundle-agent.ts) and the fault center
// (scripts/bundle-fault-center.ts) share: esbuild's options and the record of which modules each output holds.
import type { BuildOptions, Metafile } from 'esbuild';

/** The first lines of every output: the bundler's mark, and a `require` for the CommonJS packages' built-ins. */
export function banner(mark: string): string {
  return `${mark}\nimport { createRequire as __bundleRequire } from 'node:module';\nconst require = __bundleRequire(import.meta.url);`;
}

/** esbuild's options for a program's bundle in dist/: one entry, its on-demand parts in `chunkDir`. */
export function bundleOptions(
  root: string,
  dist: string,
  entry: Record<string, string>,
  chunkDir: string,
  mark: string,
) {
  return {
    entryPoints: entry,
    outdir: dist,
    chunkNames: `${chunkDir}/[name]-[hash]`,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // CommonJS packages call `require` for Node's built-ins; an ES module has none of its own
    banner: { js: banner(mark) },
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
  } satisfies BuildOptions;
}

/** Which modules each output holds (the code that survived tree shaking), by output file; source maps left out. */
export function bundleInputs(meta: Metafile): Record<string, string[]> {
  return Object.fromEntries(
    Object.entries(meta.outputs)
      .filter(([file]) => !file.endsWith('.map'))
      .map(([file, o]) => [
        file,
        Object.entries(o.inputs)
          .filter(([, i]) => i.bytesInOutput > 0)
          .map(([input]) => input)
          .sort(),
      ]),
  );
}
