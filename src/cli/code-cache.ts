/**
 * The composition root's chunk from a V8 code cache (issue [P] item 3; docs/operations.md "Start-up").
 *
 * Node 20 compiles every ES module from its source at each start (no `module.enableCompileCache`), which for the
 * agent's 1.4 MB composition-root chunk costs ≈ 50–70 ms before kubelet registration. `scripts/bundle-agent.ts`
 * therefore turns that one chunk into a classic script (a function of `require`, `module`, `exports`, the chunk's
 * URL and a dynamic `import`) and keeps an ES-module stub under the chunk's name that loads it through
 * {@link runCachedScript}; the other chunks stay ES modules and are handed in as `deps`, so every chunk still exists
 * once per process. At build time {@link makeCodeCache} compiles and runs the script in a `node` with the agent's V8
 * flags and keeps `createCachedData()` (taken after the run, so it also holds the functions the top-level code
 * compiled lazily), behind the script's SHA-256. Nothing is written at run time: a cache V8 refuses (another Node or V8, other flags, a changed
 * script) or a missing one means a plain compile, reported on the {@link CODE_CACHE_CHANNEL} diagnostics channel,
 * which the CLI logs at debug level.
 */
import { createHash } from 'node:crypto';
import { channel } from 'node:diagnostics_channel';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

/** The diagnostics channel that reports how the cached chunk was compiled ({@link CodeCacheOutcome}). */
export const CODE_CACHE_CHANNEL = 'ascend-npu-agent:code-cache';

/** How the chunk was compiled: `used` (from the cache), `rejected` (V8 refused it) or `absent` (no cache file). */
export interface CodeCacheOutcome {
  readonly state: 'used' | 'rejected' | 'absent';
  /** The script's path. */
  readonly script: string;
  /** The cache file's path. */
  readonly cache: string;
  /** Compilation time in ms (from the cache or from the source). */
  readonly compileMs: number;
  /** Why no cache was used (`absent`: the read error). */
  readonly reason?: string;
}

/** A chunk turned into a script by scripts/bundle-agent.ts. */
export interface CachedChunk {
  /** URL of the chunk's ES-module stub (`import.meta.url`): the script's `import.meta.url`, base of its paths. */
  readonly url: string;
  /** The script's and the cache's file names, beside the stub. */
  readonly script: string;
  readonly cache: string;
  /** The chunks the script imports, by the specifier it uses (`./chunk-X.js`), as ES-module namespaces. */
  readonly deps: Readonly<Record<string, object>>;
}

/** The script's function: what the stub wraps around the chunk's CommonJS form. */
type ChunkFunction = (
  require: (specifier: string) => unknown,
  module: { exports: Record<string, unknown> },
  exports: Record<string, unknown>,
  chunkUrl: string,
  chunkImport: (specifier: string) => Promise<unknown>,
) => void;

/**
 * V8 checks a cache against the script's length only, not its text: a cache of another script of the same length
 * would run that other script's code. The cache file therefore starts with the SHA-256 of the script it was made
 * from (≈ 1 ms for the 1.4 MB chunk).
 */
const HASH_BYTES = 32;

function sha256(source: Buffer): Buffer {
  return createHash('sha256').update(source).digest();
}

function compile(chunk: CachedChunk, source: Buffer, cachedData: Buffer | undefined): vm.Script {
  const file = fileURLToPath(new URL(chunk.script, chunk.url));
  return new vm.Script(source.toString('utf8'), {
    filename: file,
    ...(cachedData ? { cachedData } : {}),
    // the script's own `import()` calls go through `chunkImport`; this only answers any other one like a module would
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
}

function run(chunk: CachedChunk, script: vm.Script): Record<string, unknown> {
  const fn = script.runInThisContext() as ChunkFunction;
  const base = createRequire(chunk.url);
  const require = (specifier: string): unknown =>
    Object.hasOwn(chunk.deps, specifier) ? chunk.deps[specifier] : base(specifier);
  const module = { exports: {} as Record<string, unknown> };
  fn(require, module, module.exports, chunk.url, (specifier) => import(new URL(specifier, chunk.url).href));
  return module.exports;
}

/** Compiles the chunk's script (from its cache when V8 accepts it), runs it and returns its exports. */
export function runCachedScript(chunk: CachedChunk): Record<string, unknown> {
  const cache = fileURLToPath(new URL(chunk.cache, chunk.url));
  const scriptFile = fileURLToPath(new URL(chunk.script, chunk.url));
  const source = fs.readFileSync(scriptFile);
  let file: Buffer | undefined;
  let reason: string | undefined;
  try {
    file = fs.readFileSync(cache);
  } catch (err) {
    reason = err instanceof Error ? err.message : String(err);
  }
  const t0 = performance.now();
  const ours = file !== undefined && file.length > HASH_BYTES && file.subarray(0, HASH_BYTES).equals(sha256(source));
  const script = compile(chunk, source, ours ? file!.subarray(HASH_BYTES) : undefined);
  const compileMs = performance.now() - t0;
  let state: CodeCacheOutcome['state'] = 'used';
  if (file === undefined) state = 'absent';
  else if (!ours) {
    state = 'rejected';
    reason = 'the cache was made from another script (its SHA-256 differs)';
  } else if (script.cachedDataRejected === true) {
    state = 'rejected';
    reason = 'V8 refused the cache (another Node or V8 version, or other V8 flags)';
  }
  const outcome: CodeCacheOutcome = {
    state,
    script: scriptFile,
    cache,
    compileMs: Math.round(compileMs * 10) / 10,
    ...(reason !== undefined ? { reason } : {}),
  };
  channel(CODE_CACHE_CHANNEL).publish(outcome);
  return run(chunk, script);
}

/**
 * Build time: compiles the chunk's script without a cache, runs its top-level code, then `exercise` (start-up work
 * whose functions the cache should hold too), and returns V8's code cache behind the script's SHA-256. Run it in a
 * `node` with the agent's V8 flags (V8 refuses a cache made under other flags).
 */
export async function makeCodeCache(
  chunk: CachedChunk,
  exercise: (exports: Record<string, unknown>) => Promise<void> = () => Promise.resolve(),
): Promise<{ data: Buffer; exports: Record<string, unknown> }> {
  const source = fs.readFileSync(fileURLToPath(new URL(chunk.script, chunk.url)));
  const script = compile(chunk, source, undefined);
  const exports = run(chunk, script);
  await exercise(exports);
  return { data: Buffer.concat([sha256(source), script.createCachedData()]), exports };
}
