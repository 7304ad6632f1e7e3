import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  levelOf,
  parsePublicFaultConfig,
  PublicFaultConfigError,
  type PublicFaultConfig,
} from '../../../src/cluster/public-fault/config.js';
import { loadPublicFaultConfigFile, PublicFaultConfigSource } from '../../../src/cluster/public-fault/config-source.js';
import { noopPublicFaultMetrics } from '../../../src/cluster/public-fault/metrics.js';
import { recordingLogger, shippedConfig } from './fixtures.js';

describe('§2.3 configuration file', () => {
  test('§2.3 the shipped file allows the six documented senders', () => {
    expect(shippedConfig().senders).toEqual(['CCAE', 'fd-online', 'pingmesh', 'Netmind', 'dpcStorage', 'dtfsStorage']);
  });

  test('§4.2 TestGetFaultLevelByCode: Separate, SubHealth, NotHandle, undefined', () => {
    const c = shippedConfig();
    expect(['220001001', '010001001', '200001006', '110001022', '123456789'].map((k) => levelOf(c, k))).toEqual([
      'SeparateNPU',
      'SubHealthFault',
      'NotHandleFault',
      'PreSeparateNPU',
      '',
    ]);
  });

  test('§2.3 a code in several lists gets the most severe level', () => {
    const c = parsePublicFaultConfig(
      '{"publicFaultCode":{"NotHandleFaultCodes":["111111111"],"PreSeparateNPUCodes":["111111111"]}}',
    );
    expect(levelOf(c, '111111111')).toBe('PreSeparateNPU');
  });

  test('§2.3 duplicate senders are removed, order kept', () => {
    expect(parsePublicFaultConfig('{"publicFaultResource":["b","a","b"]}').senders).toEqual(['b', 'a']);
  });

  test('§2.3 a missing publicFaultResource allows no sender', () => {
    expect(parsePublicFaultConfig('{"publicFaultCode":{}}').senders).toEqual([]);
  });

  test('§2.3 field names match case-insensitively (Go encoding/json)', () => {
    expect(parsePublicFaultConfig('{"PUBLICFAULTRESOURCE":["CCAE"]}').senders).toEqual(['CCAE']);
  });

  const bad: [string, string][] = [
    ['§2.3 an empty file fails', ''],
    ['§2.3 invalid JSON fails', '{"publicFaultResource":'],
    ['§2.3 a JSON array fails', '[]'],
    ['§2.3 a number as a sender fails', '{"publicFaultResource":[1]}'],
    ['§2.3 a string instead of a list fails', '{"publicFaultCode":{"SeparateNPUCodes":"220001001"}}'],
  ];
  test.each(bad)('%s', (_n, text) => {
    expect(() => parsePublicFaultConfig(text)).toThrow(PublicFaultConfigError);
  });

  test('§2.3 a file larger than 10 MiB fails', () => {
    expect(() => parsePublicFaultConfig(' '.repeat(10 * 1024 * 1024 + 1))).toThrow(/larger than/);
  });

  test('§2.3 the error names the JSON path', () => {
    expect(() => parsePublicFaultConfig('{"publicFaultResource":["a",2]}')).toThrow('$.publicFaultResource[1]');
  });

  test('§2.3 a code that is not 9 bytes is loaded with a warning', () => {
    const c = parsePublicFaultConfig('{"publicFaultCode":{"SeparateNPUCodes":["12"]},"publicFaultResource":["a"]}');
    expect([levelOf(c, '12'), c.warnings]).toEqual(['SeparateNPU', [expect.stringContaining('9 bytes')]]);
  });
});

describe('§2.3 loading and hot reload', () => {
  let dir: string;
  let file: string;
  const good = (senders: string[]): string =>
    JSON.stringify({ publicFaultCode: { SeparateNPUCodes: ['220001001'] }, publicFaultResource: senders });

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-cfg-'));
    file = path.join(dir, 'publicFaultConfig.json');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('§4.2 TestLoadPubFaultCfgFromFile: a read error names the path', () => {
    expect(() => loadPublicFaultConfigFile(file)).toThrow(file);
  });

  test('§2.3 an unusable file at start falls back to the packaged one, logged as an error', () => {
    fs.writeFileSync(file, '{');
    const logger = recordingLogger();
    const c = new PublicFaultConfigSource({ file, logger, metrics: noopPublicFaultMetrics }).initial();
    expect([c.senders.length, logger.lines.some((l) => l.level === 'error')]).toEqual([6, true]);
  });

  function nextConfig(source: PublicFaultConfigSource): Promise<PublicFaultConfig> {
    return new Promise((resolve) => source.watch(resolve));
  }

  test('§2.3 a changed file is swapped in', async () => {
    fs.writeFileSync(file, good(['CCAE']));
    const source = new PublicFaultConfigSource({
      file,
      logger: recordingLogger(),
      metrics: noopPublicFaultMetrics,
      debounceMs: 10,
    });
    source.initial();
    const next = nextConfig(source);
    fs.writeFileSync(file, good(['pingmesh']));
    expect((await next).senders).toEqual(['pingmesh']);
    source.stop();
  });

  test('§2.3 a broken file keeps the previous configuration and says why', async () => {
    fs.writeFileSync(file, good(['CCAE']));
    const logger = recordingLogger();
    const applied: PublicFaultConfig[] = [];
    const source = new PublicFaultConfigSource({
      file,
      logger,
      metrics: noopPublicFaultMetrics,
      debounceMs: 10,
      attempts: 2,
      retryDelayMs: 10,
    });
    source.watch((c) => applied.push(c));
    fs.writeFileSync(file, '{"publicFaultResource": 7}');
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (logger.lines.some((l) => l.level === 'error')) {
          clearInterval(poll);
          resolve();
        }
      }, 5);
    });
    await source.settled();
    source.stop();
    const err = logger.lines.find((l) => l.level === 'error')!;
    expect([applied.length, err.msg, (err.obj as { err: string }).err]).toEqual([
      0,
      'public fault configuration not reloaded: the previous configuration stays in force',
      expect.stringContaining('$.publicFaultResource'),
    ]);
  });
});
