/**
 * The composition root's chunk from a V8 code cache (issue [P] item 3, src/cli/code-cache.ts): a cache made at
 * build time is used, and a cache V8 refuses or a missing one falls back to a plain compile that runs the same code
 * and says why on the diagnostics channel.
 */
import { afterAll, describe, expect, test } from '@jest/globals';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  CODE_CACHE_CHANNEL,
  type CachedChunk,
  type CodeCacheOutcome,
  makeCodeCache,
  runCachedScript,
} from '../../src/cli/code-cache.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'code-cache-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A chunk script as scripts/bundle-agent.ts writes one: it uses a dep, a built-in and its own URL. */
function chunk(name: string): CachedChunk {
  const body = [
    '(function(require,module,exports,__chunkUrl,__chunkImport){',
    'const dep = require("./dep.js"); const p = require("node:path");',
    'function twice(x) { return dep.base * 2 + x; }',
    'module.exports = { answer: twice(1), file: p.basename(new URL(__chunkUrl).pathname), load: __chunkImport };',
    '})',
  ].join('\n');
  fs.writeFileSync(path.join(dir, `${name}.script.js`), body);
  return {
    url: pathToFileURL(path.join(dir, `${name}.js`)).href,
    script: `${name}.script.js`,
    cache: `${name}.script.cache`,
    deps: { './dep.js': { base: 20 } },
  };
}

/** Runs the chunk and returns its exports and what it reported on the channel. */
function runReporting(c: CachedChunk): { exports: Record<string, unknown>; outcomes: CodeCacheOutcome[] } {
  const outcomes: CodeCacheOutcome[] = [];
  const on = (o: unknown): void => void outcomes.push(o as CodeCacheOutcome);
  subscribe(CODE_CACHE_CHANNEL, on);
  try {
    return { exports: runCachedScript(c), outcomes };
  } finally {
    unsubscribe(CODE_CACHE_CHANNEL, on);
  }
}

describe('code cache of the composition root (issue [P] item 3)', () => {
  test('a cache made by makeCodeCache is used and the script runs with its deps and its URL', async () => {
    const c = chunk('made');
    const made = await makeCodeCache(c);
    fs.writeFileSync(path.join(dir, c.cache), made.data);
    const { exports, outcomes } = runReporting(c);
    expect([exports.answer, exports.file, made.exports.answer]).toEqual([41, 'made.js', 41]);
    expect(outcomes.map((o) => o.state)).toEqual(['used']);
  });

  test('a cache file that is not one of ours (other bytes) falls back to a plain compile and says rejected', () => {
    const c = chunk('refused');
    fs.writeFileSync(path.join(dir, c.cache), Buffer.from('not a V8 code cache, only bytes'));
    const { exports, outcomes } = runReporting(c);
    expect(exports.answer).toBe(41);
    expect(outcomes.map((o) => o.state)).toEqual(['rejected']);
  });

  test('a cache made for another script of the same length is refused, not run (V8 checks only the length)', async () => {
    const a = chunk('first');
    fs.writeFileSync(path.join(dir, 'other.script.cache'), (await makeCodeCache(a)).data);
    const b = chunk('other');
    fs.writeFileSync(path.join(dir, b.script), fs.readFileSync(path.join(dir, b.script), 'utf8').replace('* 2', '* 3'));
    const { exports, outcomes } = runReporting(b);
    expect([exports.answer, outcomes.map((o) => o.state)]).toEqual([61, ['rejected']]);
  });

  test("makeCodeCache runs the start-up exercise on the script's exports before it takes the cache", async () => {
    const c = chunk('exercised');
    const seen: unknown[] = [];
    await makeCodeCache(c, (exports) => {
      seen.push(exports.answer);
      return Promise.resolve();
    });
    expect(seen).toEqual([41]);
  });

  test('no cache file: a plain compile, reported absent with the read error', () => {
    const c = chunk('absent');
    const { exports, outcomes } = runReporting(c);
    expect(exports.answer).toBe(41);
    expect(outcomes.map((o) => [o.state, o.reason?.includes('ENOENT')])).toEqual([['absent', true]]);
  });

  test("the script's import() loads a module relative to the chunk's URL", async () => {
    const c = chunk('imports');
    fs.writeFileSync(path.join(dir, 'sibling.mjs'), 'export const sibling = 7;\n');
    const { exports } = runReporting(c);
    const load = exports.load as (s: string) => Promise<{ sibling: number }>;
    expect((await load('./sibling.mjs')).sibling).toBe(7);
  });
});
