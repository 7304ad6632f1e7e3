/**
 * Facts about the upstream Go plugin used by the [I] item 6 tests (copied as data, not code): the flags its main.go
 * defines today and the arguments Huawei's shipped manifests pass.
 */

/** Upstream's main.go today (Ascend/mind-cluster component/ascend-device-plugin/main.go and the four healthz flags). */
export const UPSTREAM_MAIN_GO_FLAGS = [
  'fdFlag',
  'volcanoType',
  'version',
  'edgeLogFile',
  'listWatchPeriod',
  'autoStowing',
  'logLevel',
  'maxAge',
  'logFile',
  'maxBackups',
  'presetVirtualDevice',
  'use310PMixedInsert',
  'hotReset',
  'shareDevCount',
  'linkdownTimeout',
  'dealWatchHandler',
  'checkCachedPods',
  'enableSlowNode',
  'thirdPartyScanDelay',
  'deviceResetTimeout',
  'softShareDevConfigDir',
  'softShareCoreScaling',
  'useSingleDieMode',
  'getPodFromKubelet',
  'enable-healthz',
  'healthz-address',
  'tls-cert-file',
  'tls-private-key-file',
];

/**
 * Arguments of Huawei's shipped manifests (component/ascend-device-plugin/build/: ascendplugin-910.yaml,
 * ascendplugin-volcano.yaml, ascendplugin-310P-volcano.yaml, run_for_310P_1usoc.sh), as facts.
 */
export const HUAWEI_MANIFEST_ARGS: Record<string, string[]> = {
  'ascendplugin-910.yaml': [
    '-useAscendDocker=true',
    '-logFile=/var/log/mindx-dl/devicePlugin/devicePlugin.log',
    '-logLevel=0',
  ],
  'ascendplugin-volcano.yaml': [
    '-useAscendDocker=true',
    '-volcanoType=true',
    '-presetVirtualDevice=true',
    '-logFile=/var/log/mindx-dl/devicePlugin/devicePlugin.log',
    '-logLevel=0',
  ],
  'ascendplugin-310P-volcano.yaml': [
    '-volcanoType=true',
    '-presetVirtualDevice=true',
    '-logFile=/var/log/mindx-dl/devicePlugin/devicePlugin.log',
    '-logLevel=0',
  ],
  'run_for_310P_1usoc.sh': [
    '-useAscendDocker=false',
    '-volcanoType=true',
    '-presetVirtualDevice=true',
    '-logFile=/var/log/mindx-dl/devicePlugin/devicePlugin.log',
    '-logLevel=0',
    '--enable-healthz=true',
    '--healthz-address=11251',
  ],
};

/** `args` of Huawei's ascendplugin-910.yaml, the 910 training DaemonSet. */
export const HUAWEI_910_ARGS: readonly string[] = HUAWEI_MANIFEST_ARGS['ascendplugin-910.yaml']!;
