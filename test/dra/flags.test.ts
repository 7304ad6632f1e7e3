/**
 * Architecture §4 (issue [DRA]): the DRA flags — defaults, environment mirrors, validation, --help.
 */
import { describe, expect, test } from '@jest/globals';
import { agentEnvName, agentUsage, parseAgentArgs } from '../../src/cli/agent-flags.js';

const ENV = { NODE_NAME: 'node-1' };

function flagsOf(argv: string[], env: Record<string, string> = {}) {
  const r = parseAgentArgs(argv, { ...ENV, ...env });
  if (!r.ok) throw new Error(r.errors.join('\n'));
  return r.config!.flags;
}

function errorsOf(argv: string[], env: Record<string, string> = {}): readonly string[] {
  const r = parseAgentArgs(argv, { ...ENV, ...env });
  return r.ok ? [] : r.errors;
}

describe('architecture §4: -deviceApi, -kubeletPluginsDir, -kubeletRegistryDir, -cdiDir, -cdiDevicePlugin', () => {
  test('defaults: the device plugin only, kubelet’s default folders, /var/run/cdi, no CDI answers', () => {
    const f = flagsOf([]);
    expect([f.deviceApi, f.kubeletPluginsDir, f.kubeletRegistryDir, f.cdiDir, f.cdiDevicePlugin]).toEqual([
      'plugin',
      '/var/lib/kubelet/plugins',
      '/var/lib/kubelet/plugins_registry',
      '/var/run/cdi',
      false,
    ]);
  });

  test('environment mirrors (the flag wins)', () => {
    expect(
      ['deviceApi', 'kubeletPluginsDir', 'kubeletRegistryDir', 'cdiDir', 'cdiDevicePlugin'].map((n) =>
        agentEnvName(n as 'cdiDir'),
      ),
    ).toEqual([
      'ASCEND_AGENT_DEVICE_API',
      'ASCEND_AGENT_KUBELET_PLUGINS_DIR',
      'ASCEND_AGENT_KUBELET_REGISTRY_DIR',
      'ASCEND_AGENT_CDI_DIR',
      'ASCEND_AGENT_CDI_DEVICE_PLUGIN',
    ]);
    expect(flagsOf([], { ASCEND_AGENT_DEVICE_API: 'both' }).deviceApi).toBe('both');
    expect(flagsOf(['-deviceApi=dra'], { ASCEND_AGENT_DEVICE_API: 'both' }).deviceApi).toBe('dra');
  });

  test('-deviceApi takes plugin, dra or both only', () => {
    expect(errorsOf(['-deviceApi=DRA'])).toEqual(['-deviceApi=DRA must be one of "plugin", "dra", "both"']);
  });

  test.each(['kubeletPluginsDir', 'kubeletRegistryDir', 'cdiDir'])('-%s must be absolute', (name) => {
    expect(errorsOf([`-${name}=relative/x`])).toEqual([`-${name}=relative/x must be an absolute path`]);
  });

  test('-cdiDevicePlugin needs the device plugin, static devices and the device specs it replaces', () => {
    expect(errorsOf(['-cdiDevicePlugin', '-deviceApi=dra'])).toEqual([
      '-cdiDevicePlugin=true requires -deviceApi=plugin or both',
    ]);
    expect(errorsOf(['-cdiDevicePlugin', '-presetVirtualDevice=false', '-volcanoType=true'])).toEqual([
      '-cdiDevicePlugin=true requires -presetVirtualDevice=true',
    ]);
    expect(errorsOf(['-cdiDevicePlugin'], { ASCEND_DOCKER_RUNTIME: 'True' })).toEqual([
      '-cdiDevicePlugin=true conflicts with ASCEND_DOCKER_RUNTIME=True (environment variables only, C.4)',
    ]);
    expect(flagsOf(['-cdiDevicePlugin', '-deviceApi=both']).cdiDevicePlugin).toBe(true);
  });

  test('-draPartitions (issue [DRA] item 5): on by default; with both, dynamic vNPU would destroy the partitions', () => {
    expect(flagsOf([]).draPartitions).toBe(true);
    expect(flagsOf(['-draPartitions=false']).draPartitions).toBe(false);
    expect(errorsOf(['-deviceApi=both', '-presetVirtualDevice=false', '-volcanoType=true'])).toEqual([
      '-deviceApi=both with -draPartitions=true requires -presetVirtualDevice=true (or -draPartitions=false)',
    ]);
    expect(
      errorsOf(['-deviceApi=both', '-presetVirtualDevice=false', '-volcanoType=true', '-draPartitions=false']),
    ).toEqual([]);
    expect(errorsOf(['-deviceApi=dra', '-presetVirtualDevice=false', '-volcanoType=true'])).toEqual([]);
  });

  test('--help lists each with its default and environment variable', () => {
    const help = agentUsage();
    expect(help).toContain('-deviceApi string  (default "plugin", env ASCEND_AGENT_DEVICE_API)');
    expect(help).toContain('-cdiDevicePlugin bool  (default false, env ASCEND_AGENT_CDI_DEVICE_PLUGIN)');
    expect(help).toContain(
      '-kubeletRegistryDir string  (default "/var/lib/kubelet/plugins_registry", env ASCEND_AGENT_KUBELET_REGISTRY_DIR)',
    );
  });
});
