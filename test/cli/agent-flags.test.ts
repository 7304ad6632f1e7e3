import { describe, expect, test } from '@jest/globals';
import {
  AGENT_FLAGS,
  agentEnvName,
  agentUsage,
  effectiveConfig,
  parseAgentArgs,
  parseListenAddress,
  type AgentConfig,
} from '../../src/cli/agent-flags.js';
import { parseGoFlags, parseGoFloat, parseGoInt } from '../../src/cli/go-flags.js';
import { HUAWEI_MANIFEST_ARGS, UPSTREAM_MAIN_GO_FLAGS } from '../helpers/upstream-manifests.js';

const ENV = { NODE_NAME: 'node-1' };

function ok(argv: string[], env: Record<string, string> = ENV): AgentConfig {
  const r = parseAgentArgs(argv, env);
  if (!r.ok) throw new Error(r.errors.join('\n'));
  expect(r.config).toBeDefined();
  return r.config!;
}

function errors(argv: string[], env: Record<string, string> = ENV): string[] {
  const r = parseAgentArgs(argv, env);
  if (r.ok) throw new Error('expected a failure');
  return [...r.errors];
}

describe('A.1 Go flag syntax', () => {
  test('-name=value, -name value, --name=value and --name value all set the flag', () => {
    for (const argv of [
      ['-listWatchPeriod=7'],
      ['-listWatchPeriod', '7'],
      ['--listWatchPeriod=7'],
      ['--listWatchPeriod', '7'],
    ]) {
      expect(ok(argv).flags.listWatchPeriod).toBe(7);
    }
  });

  test('a bare boolean is true and -flag=false turns it off', () => {
    expect(ok(['-volcanoType']).flags.volcanoType).toBe(true);
    expect(ok(['-volcanoType', '-volcanoType=false']).flags.volcanoType).toBe(false);
  });

  test('an unknown flag is an error that names it', () => {
    expect(errors(['-nosuchFlag=1'])).toEqual(['flag provided but not defined: -nosuchFlag']);
  });

  test('a value flag at the end without its value is an error', () => {
    expect(errors(['-logLevel'])).toEqual(['flag needs an argument: -logLevel']);
  });

  test('the first positional is the command; the rest is returned untouched', () => {
    const r = parseAgentArgs(['-logLevel=1', 'simulate', '--scenario', 'x.json'], ENV);
    expect(r.ok && [r.command, r.commandArgs]).toEqual(['simulate', ['--scenario', 'x.json']]);
  });

  test('-- ends the flags', () => {
    const r = parseGoFlags(['-a', '--', '-b'], new Map([['a', { kind: 'bool' as const }]]));
    expect([r.errors, r.rest]).toEqual([[], ['-b']]);
  });

  test('an unknown command is an error, with a hint for a space-separated boolean', () => {
    expect(errors(['-volcanoType', 'false'])[0]).toMatch(/unknown command "false".*-name=value/);
  });

  test('integers are read as Go strconv.ParseInt base 0 (hex, octal, sign)', () => {
    expect([parseGoInt('0x10'), parseGoInt('010'), parseGoInt('-1'), parseGoInt('1_0'), parseGoInt('abc')]).toEqual([
      16,
      8,
      -1,
      undefined,
      undefined,
    ]);
    expect(parseGoInt('-1', true)).toBeUndefined();
  });

  test('a malformed value names the flag', () => {
    expect(errors(['-listWatchPeriod=five'])).toEqual(['invalid integer value "five" for -listWatchPeriod']);
    expect(errors(['-volcanoType=yes'])).toEqual(['invalid boolean value "yes" for -volcanoType']);
  });
});

describe('A.1 -version and --help', () => {
  test('-version short-circuits without NODE_NAME', () => {
    const r = parseAgentArgs(['-version'], {});
    expect(r.ok && r.version).toBe(true);
  });

  test('--help and -h ask for the usage', () => {
    for (const a of ['--help', '-h', '-help']) {
      const r = parseAgentArgs([a], {});
      expect(r.ok && r.help).toBe(true);
    }
    expect(agentUsage()).toContain('ASCEND_AGENT_LIST_WATCH_PERIOD');
  });
});

describe('A.1 defaults', () => {
  test('every flag has its table default when nothing is given', () => {
    const c = ok([]);
    for (const [name, def] of Object.entries(AGENT_FLAGS)) {
      expect([name, c.flags[name as keyof typeof AGENT_FLAGS]]).toEqual([name, def.def]);
    }
    expect(c.flags.metricsAddress).toBe(':9464');
    expect(c.kubeletPort).toBe(10250);
  });
});

describe('A.1 ranges', () => {
  const cases: [string, string, string][] = [
    ['logLevel', '-2', '4'],
    ['maxAge', '6', '701'],
    ['maxBackups', '0', '181'],
    ['listWatchPeriod', '2', '1801'],
    ['linkdownTimeout', '0', '31'],
    ['deviceResetTimeout', '9', '601'],
    ['shareDevCount', '0', '101'],
    ['linkQueryInterval', '0', '86401'],
    ['resetTimePercent', '0', '101'],
    ['kubeletWaitTimeout', '0', '86401'],
  ];
  test.each(cases)('-%s rejects %s and %s, accepts both bounds', (name, low, high) => {
    expect(errors([`-${name}=${low}`])[0]).toMatch(new RegExp(`^-${name}=${low} is out of range`));
    expect(errors([`-${name}=${high}`])[0]).toMatch(new RegExp(`^-${name}=${high} is out of range`));
    const def = AGENT_FLAGS[name as keyof typeof AGENT_FLAGS] as { min: number; max: number };
    expect(ok([`-${name}=${def.min}`]).flags).toBeDefined();
    expect(ok([`-${name}=${def.max}`]).flags).toBeDefined();
  });

  test('-thirdPartyScanDelay must be ≥ 0', () => {
    expect(errors(['-thirdPartyScanDelay=-1'])[0]).toMatch(/out of range ≥ 0/);
  });

  test('-shareDevCount is unsigned: a sign is a syntax error', () => {
    expect(errors(['-shareDevCount=-1'])).toEqual(['invalid unsigned integer value "-1" for -shareDevCount']);
  });

  test('hot-reset §1.2 -hotReset accepts -1, 0, 1 (restored) and 2; other values are refused', () => {
    for (const v of [-1, 0, 1, 2]) expect(ok([`-hotReset=${v}`]).flags.hotReset).toBe(v);
    expect(errors(['-hotReset=3'])).toEqual(['-hotReset=3 must be -1, 0, 1 or 2']);
  });

  test('--healthz-address must be a port in [1025, 65535]', () => {
    expect(errors(['--healthz-address=80'])[0]).toMatch(/\[1025, 65535\]/);
    expect(errors(['--healthz-address=localhost:2000'])[0]).toMatch(/\[1025, 65535\]/);
    expect(ok(['--enable-healthz', '--healthz-address=2000']).flags['healthz-address']).toBe('2000');
  });

  test('-metricsAddress takes [host]:port or "" (disabled)', () => {
    expect(ok(['-metricsAddress=']).flags.metricsAddress).toBe('');
    expect(ok(['-metricsAddress=127.0.0.1:0']).flags.metricsAddress).toBe('127.0.0.1:0');
    expect(errors(['-metricsAddress=9464'])[0]).toMatch(/-metricsAddress=9464 must be \[host\]:port/);
    expect(parseListenAddress('[::1]:9464')).toEqual({ host: '::1', port: 9464 });
  });

  test('path flags must be absolute', () => {
    expect(errors(['-kubeletDir=relative/dir'])).toEqual(['-kubeletDir=relative/dir must be an absolute path']);
  });
});

describe('A.1 cross-flag rules, in the spec validation order', () => {
  test('TLS certificate and key must be given together', () => {
    expect(errors(['--tls-cert-file=/c.pem'])).toEqual([
      '--tls-cert-file and --tls-private-key-file must be given together',
    ]);
  });

  test('-presetVirtualDevice=false needs -volcanoType=true (before the not-supported guard)', () => {
    expect(errors(['-presetVirtualDevice=false'])).toEqual(['-presetVirtualDevice=false requires -volcanoType=true']);
  });

  test('-use310PMixedInsert needs -volcanoType=false and -shareDevCount=1', () => {
    expect(errors(['-use310PMixedInsert', '-volcanoType', '-shareDevCount=2'])).toEqual([
      '-use310PMixedInsert=true requires -volcanoType=false',
      '-use310PMixedInsert=true requires -shareDevCount=1',
      '-shareDevCount > 1 without -softShareDevConfigDir requires -volcanoType=false',
    ]);
  });

  test('issue 17 item 4: -use310PMixedInsert=true without -volcanoType is accepted (the node is checked at start)', () => {
    expect(ok(['-use310PMixedInsert=true']).flags.use310PMixedInsert).toBe(true);
  });

  test('issue 17 item 3: -presetVirtualDevice=false -volcanoType is accepted (dynamic vNPU; the node is checked at start)', () => {
    expect(ok(['-presetVirtualDevice=false', '-volcanoType']).flags.presetVirtualDevice).toBe(false);
  });

  test('-presetVirtualDevice=false needs -shareDevCount=1', () => {
    expect(errors(['-presetVirtualDevice=false', '-volcanoType', '-shareDevCount=2'])[0]).toBe(
      '-presetVirtualDevice=false requires -shareDevCount=1',
    );
  });

  test('upstream main.go: -shareDevCount > 1 without -softShareDevConfigDir needs -volcanoType=false', () => {
    expect(errors(['-shareDevCount=2', '-volcanoType'])[0]).toBe(
      '-shareDevCount > 1 without -softShareDevConfigDir requires -volcanoType=false',
    );
  });

  test('issue 17 item 1: -shareDevCount 2..100 without -volcanoType is accepted (310P/310B share mode)', () => {
    expect(ok(['-shareDevCount=2']).flags.shareDevCount).toBe(2);
    expect(ok(['-shareDevCount=100']).flags.shareDevCount).toBe(100);
  });

  test('-softShareDevConfigDir needs -shareDevCount=100 and -volcanoType=true', () => {
    expect(errors(['-softShareDevConfigDir=/etc/soft']).slice(0, 2)).toEqual([
      '-softShareDevConfigDir requires -shareDevCount=100',
      '-softShareDevConfigDir requires -volcanoType=true',
    ]);
  });

  test('issue 17 item 2: -shareDevCount=100 -softShareDevConfigDir=<abs> -volcanoType is accepted (soft share, L.7)', () => {
    const f = ok(['-shareDevCount=100', '-softShareDevConfigDir=/share_device', '-volcanoType']).flags;
    expect([f.shareDevCount, f.softShareDevConfigDir, f.volcanoType]).toEqual([100, '/share_device', true]);
  });

  test('L.7 a relative -softShareDevConfigDir is refused', () => {
    expect(errors(['-shareDevCount=100', '-softShareDevConfigDir=share', '-volcanoType'])).toEqual([
      '-softShareDevConfigDir=share must be an absolute path',
    ]);
  });

  test('errors come in the spec order: log, healthz, listWatchPeriod, …, deviceResetTimeout', () => {
    const e = errors(['-deviceResetTimeout=1', '-listWatchPeriod=1', '-logLevel=9', '--healthz-address=1']);
    expect(e.map((x) => x.split(/[= ]/)[0])).toEqual([
      '-logLevel',
      '--healthz-address',
      '-listWatchPeriod',
      '-deviceResetTimeout',
    ]);
  });
});

describe('A.1 features not built yet', () => {
  const notYet: [string, string][] = [
    ['fdFlag', 'true'],
    ['edgeLogFile', '/tmp/x.log'],
  ];
  test.each(notYet)('-%s=%s is refused with "not supported yet"', (name, value) => {
    const [v, ...more] = value.split(' ');
    const e = errors([`-${name}=${v}`, ...more]);
    expect(e).toEqual([expect.stringMatching(new RegExp(`^-${name}=${v}: .* is not supported yet`))]);
  });

  test('the same flags are accepted at their defaults', () => {
    const c = ok(['-presetVirtualDevice=true', '-hotReset=-1', '-shareDevCount=1', '-fdFlag=false']);
    expect(c.flags.hotReset).toBe(-1);
  });
});

describe('architecture §4 environment mirrors', () => {
  test('names are ASCEND_AGENT_<UPPER_SNAKE_NAME>', () => {
    expect(agentEnvName('listWatchPeriod')).toBe('ASCEND_AGENT_LIST_WATCH_PERIOD');
    expect(agentEnvName('enable-healthz')).toBe('ASCEND_AGENT_ENABLE_HEALTHZ');
    expect(agentEnvName('use310PMixedInsert')).toBe('ASCEND_AGENT_USE_310P_MIXED_INSERT');
    expect(agentEnvName('dcmiLibrary')).toBe('ASCEND_AGENT_DCMI_LIBRARY');
  });

  test('an environment mirror sets the flag', () => {
    const c = ok([], { ...ENV, ASCEND_AGENT_LIST_WATCH_PERIOD: '9' });
    expect([c.flags.listWatchPeriod, c.sources.listWatchPeriod]).toEqual([9, 'env']);
  });

  test('the flag wins over its environment mirror', () => {
    const c = ok(['-listWatchPeriod=11'], { ...ENV, ASCEND_AGENT_LIST_WATCH_PERIOD: '9' });
    expect([c.flags.listWatchPeriod, c.sources.listWatchPeriod]).toEqual([11, 'flag']);
  });

  test('a bad environment value names the variable', () => {
    expect(errors([], { ...ENV, ASCEND_AGENT_VOLCANO_TYPE: 'maybe' })).toEqual([
      'invalid boolean value "maybe" for environment variable ASCEND_AGENT_VOLCANO_TYPE',
    ]);
    expect(errors([], { ...ENV, ASCEND_AGENT_LOG_LEVEL: '7' })).toEqual([
      'ASCEND_AGENT_LOG_LEVEL=7 is out of range [-1, 3]',
    ]);
  });

  test('an ASCEND_AGENT_ variable that names no flag is a warning, not an error', () => {
    const r = parseAgentArgs([], { ...ENV, ASCEND_AGENT_NOPE: '1' });
    expect(r.ok && r.warnings).toEqual(['ASCEND_AGENT_NOPE names no agent flag; ignored']);
  });
});

describe('A.1 environment variables', () => {
  test('NODE_NAME is mandatory', () => {
    expect(errors([], {})).toEqual(['NODE_NAME is not set (the node name is mandatory)']);
  });

  test('NODE_NAME must match the DNS pattern and be ≤ 230 characters', () => {
    expect(errors([], { NODE_NAME: 'Node_1' })[0]).toMatch(/not a valid node name/);
    expect(errors([], { NODE_NAME: 'a'.repeat(231) })[0]).toMatch(/over 230/);
    expect(ok([], { NODE_NAME: 'a.b-c.d' }).nodeName).toBe('a.b-c.d');
  });

  test('HOSTNAME, KUBELET_PORT and ASCEND_DOCKER_RUNTIME', () => {
    const c = ok([], { ...ENV, HOSTNAME: 'agent-x', KUBELET_PORT: '10255', ASCEND_DOCKER_RUNTIME: 'True' });
    expect([c.podName, c.kubeletPort, c.ascendDockerRuntime]).toEqual(['agent-x', 10255, true]);
    expect(ok([], { ...ENV, ASCEND_DOCKER_RUNTIME: 'true' }).ascendDockerRuntime).toBe(false);
    expect(errors([], { ...ENV, KUBELET_PORT: 'x' })[0]).toMatch(/KUBELET_PORT/);
    expect(errors([], { ...ENV, HOSTNAME: 'Bad_Name' })[0]).toMatch(/HOSTNAME/);
  });
});

describe('A.2 the effective configuration', () => {
  test('is one flat object with the node name and what was set', () => {
    const e = effectiveConfig(ok(['-logLevel=1'], { ...ENV, ASCEND_AGENT_VOLCANO_TYPE: 'true' }));
    expect(e).toMatchObject({
      logLevel: 1,
      volcanoType: true,
      nodeName: 'node-1',
      setBy: { logLevel: 'flag', volcanoType: 'env' },
    });
  });
});

describe('[I] upstream flag compatibility (docs/migration.md)', () => {
  test('every flag upstream main.go defines today is accepted at its default', () => {
    const table = AGENT_FLAGS as Record<string, { def: unknown }>;
    for (const name of UPSTREAM_MAIN_GO_FLAGS) {
      expect([name, name in table]).toEqual([name, true]);
      if (name === 'version') continue; // short-circuits
      const c = ok([`${name.includes('-') ? '--' : '-'}${name}=${String(table[name]!.def)}`]);
      expect(c.sources[name as keyof typeof AGENT_FLAGS]).toBe('flag');
    }
  });

  test.each(Object.entries(HUAWEI_MANIFEST_ARGS))('the arguments of Huawei %s are accepted', (_file, argv) => {
    const r = parseAgentArgs(argv, ENV);
    expect(r.ok && r.config?.flags.logLevel).toBe(0);
  });

  test('a deprecated flag (-useAscendDocker) is accepted, ignored, and warned about once, by name', () => {
    const r = parseAgentArgs(['-useAscendDocker=true', '-logLevel=0', '-useAscendDocker'], ENV);
    expect(r.ok && r.warnings).toEqual([
      expect.stringMatching(/^-useAscendDocker=true: deprecated upstream flag, ignored \(.*ASCEND_DOCKER_RUNTIME/),
    ]);
    // ignored: the ascend-docker mode still follows ASCEND_DOCKER_RUNTIME only (spec C.4)
    expect(r.ok && r.config?.ascendDockerRuntime).toBe(false);
  });

  test('every deprecated flag warns only when given, on the command line or through its environment mirror', () => {
    expect(parseAgentArgs([], ENV)).toMatchObject({ ok: true, warnings: [] });
    const given = parseAgentArgs(['-mode=ascend910', '-useLargeModel=false', '-cacheExpirePeriod=0'], {
      ...ENV,
      ASCEND_AGENT_USE_ASCEND_DOCKER: 'false',
    });
    expect(given.ok && given.warnings.map((w) => w.split(':')[0])).toEqual([
      'ASCEND_AGENT_USE_ASCEND_DOCKER=false',
      '-mode=ascend910',
      '-useLargeModel=false',
      '-cacheExpirePeriod=0',
    ]);
  });

  test("a deprecated flag's value out of upstream's range still exits 2", () => {
    expect(errors(['-cacheExpirePeriod=61'])).toEqual(['-cacheExpirePeriod=61 is out of range [0, 60]']);
    expect(errors(['-mode=ascend950'])).toEqual([
      '-mode=ascend950 must be one of "", "ascend310", "ascend310P", "ascend710", "ascend910"',
    ]);
    expect(errors(['-useAscendDocker=yes'])).toEqual(['invalid boolean value "yes" for -useAscendDocker']);
  });

  test('-softShareCoreScaling (no effect without soft share) takes [1, 5] and nothing else', () => {
    for (const v of ['1', '2.5', '5', '1e0'])
      expect(ok([`-softShareCoreScaling=${v}`]).flags.softShareCoreScaling).toBe(Number(v));
    expect(parseAgentArgs(['-softShareCoreScaling=2'], ENV)).toMatchObject({ ok: true, warnings: [] });
    for (const v of ['0.5', '5.01', 'NaN', 'Inf', '-Infinity']) {
      expect(errors([`-softShareCoreScaling=${v}`])).toEqual([
        `-softShareCoreScaling=${v === 'Inf' ? 'Infinity' : v} is out of range [1, 5]`,
      ]);
    }
    expect(errors(['-softShareCoreScaling=two'])).toEqual(['invalid float value "two" for -softShareCoreScaling']);
  });

  test('floats are read as Go strconv.ParseFloat (decimal forms, Inf, NaN; beyond float64 is an error)', () => {
    expect([parseGoFloat('1.5'), parseGoFloat('.5'), parseGoFloat('-2e1'), parseGoFloat('inf')]).toEqual([
      1.5,
      0.5,
      -20,
      Infinity,
    ]);
    expect([parseGoFloat('1e400'), parseGoFloat('1.2.3'), parseGoFloat(''), parseGoFloat('+nan')]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(parseGoFloat('NaN')).toBeNaN();
  });

  test('--help marks the deprecated flags', () => {
    expect(agentUsage()).toMatch(/-useAscendDocker bool[^\n]*\n[^\n]*\(deprecated: accepted and ignored\)/);
  });
});
