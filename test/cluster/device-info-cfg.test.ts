/**
 * Issue [O] item 6: `DeviceInfoCfg` read as ClusterD reads it (`ParseDeviceInfoCM`: `json.Unmarshal` into its
 * struct, then the CheckCode, spec cluster-faults §0.1), and every refusal naming its real cause; the intake passes
 * the reason on.
 */
import { describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { DeviceInfoIntake, parseDeviceInfoConfigMap } from '../../src/cluster/device-info-intake.js';
import { buildDeviceInfo, checkCodeOf, decodeDeviceInfoCfg, verifyDeviceInfoCfg } from '../../src/kube/device-info.js';
import { deviceInfoCm } from './helpers.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
/** ClusterD's own test value: the CheckCode over a nil DeviceList. */
const NIL_LIST_CFG = JSON.stringify({
  DeviceInfo: { DeviceList: null, UpdateTime: 0 },
  CheckCode: sha('{"DeviceList":null,"UpdateTime":0}'),
});

function cm(cfg: string) {
  return {
    metadata: { name: 'mindx-dl-deviceinfo-node-1', namespace: 'kube-system' },
    data: { DeviceInfoCfg: cfg },
  };
}

const reason = (text: string) => {
  const r = decodeDeviceInfoCfg(text);
  return r.ok ? 'ok' : `${r.reason}: ${r.detail}`;
};

describe('0.1 / issue [O] item 6: DeviceInfoCfg as ClusterD decodes it', () => {
  test('0.1 a null DeviceList with the CheckCode of {"DeviceList":null,"UpdateTime":0} is valid (ClusterD accepts it)', () => {
    expect([verifyDeviceInfoCfg(NIL_LIST_CFG), reason(NIL_LIST_CFG)]).toEqual([true, 'ok']);
  });

  test('0.1 an absent DeviceInfo is the zero struct: the nil-list CheckCode verifies', () => {
    expect(reason(JSON.stringify({ CheckCode: sha('{"DeviceList":null,"UpdateTime":0}') }))).toBe('ok');
  });

  test('0.1 a null DeviceList does not verify against the CheckCode of an empty map {}', () => {
    const text = JSON.stringify({
      DeviceInfo: { DeviceList: null, UpdateTime: 0 },
      CheckCode: sha('{"DeviceList":{},"UpdateTime":0}'),
    });
    expect(reason(text)).toBe('check-code: CheckCode is not the SHA-256 of the Go serialisation of DeviceInfo');
  });

  test('0.1 member names match case-insensitively, as Go does', () => {
    const list = { 'huawei.com/Ascend910': 'Ascend910-0' };
    const text = JSON.stringify({
      deviceinfo: { devicelist: list, updatetime: 7 },
      checkcode: checkCodeOf(list, 7),
    });
    expect(reason(text)).toBe('ok');
  });

  test('0.1 a DeviceList key "__proto__" is an ordinary key: hashed and kept as such', () => {
    const text = `{"DeviceInfo":{"DeviceList":{"__proto__":"x","a":"y"},"UpdateTime":1},"CheckCode":"${sha('{"DeviceList":{"__proto__":"x","a":"y"},"UpdateTime":1}')}"}`;
    const r = decodeDeviceInfoCfg(text);
    expect(r.ok && [Object.keys(r.value.deviceList), Object.getPrototypeOf(r.value.deviceList)]).toEqual([
      ['__proto__', 'a'],
      Object.prototype,
    ]);
  });

  test('0.1 a null value next to a "__proto__" key: "" for the null, the key stays ordinary', () => {
    const text = `{"DeviceInfo":{"DeviceList":{"__proto__":null,"a":"y"},"UpdateTime":1},"CheckCode":"${sha('{"DeviceList":{"__proto__":"","a":"y"},"UpdateTime":1}')}"}`;
    const r = decodeDeviceInfoCfg(text);
    expect(r.ok && [Object.keys(r.value.deviceList), Object.getPrototypeOf(r.value.deviceList)]).toEqual([
      ['__proto__', 'a'],
      Object.prototype,
    ]);
  });

  test('0.1 a null value in DeviceList decodes as "" (Go map[string]string)', () => {
    const text = JSON.stringify({
      DeviceInfo: { DeviceList: { a: null }, UpdateTime: 1 },
      CheckCode: checkCodeOf({ a: '' }, 1),
    });
    const r = decodeDeviceInfoCfg(text);
    expect(r.ok && r.value.deviceList).toEqual({ a: '' });
  });

  test.each([
    ['not JSON', '{"DeviceInfo":', 'malformed: not JSON'],
    ['an array', '[]', 'malformed: not a JSON object but an array'],
    [
      'a DeviceList value that is a number',
      '{"DeviceInfo":{"DeviceList":{"k":1}}}',
      'malformed: DeviceInfo.DeviceList["k"] is not a string',
    ],
    [
      'a DeviceList that is a string',
      '{"DeviceInfo":{"DeviceList":"x"}}',
      'malformed: DeviceInfo.DeviceList is not an object of strings',
    ],
    [
      'an UpdateTime that is a fraction',
      '{"DeviceInfo":{"UpdateTime":1.5}}',
      'malformed: DeviceInfo.UpdateTime is not an integer',
    ],
    [
      'an UpdateTime written 1e3 (Go: not an int64)',
      '{"DeviceInfo":{"UpdateTime":1e3},"CheckCode":"x"}',
      'malformed: $.DeviceInfo.UpdateTime is 1e3, not int64',
    ],
    ['a SuperPodID that is a string', '{"SuperPodID":"2","CheckCode":"x"}', 'malformed: SuperPodID is not an integer'],
    ['a CheckCode that is a number', '{"CheckCode":5}', 'malformed: CheckCode is not a string'],
    ['no CheckCode', '{"DeviceInfo":{"DeviceList":{},"UpdateTime":1}}', 'check-code: CheckCode is empty'],
    ['the top-level null (the zero struct: no CheckCode)', 'null', 'check-code: CheckCode is empty'],
  ])('0.1 %s is refused with the reason naming it', (_what, text, expected) => {
    expect(reason(text).startsWith(expected)).toBe(true);
  });

  test('H.3 the ConfigMap the agent writes still verifies (agent-side behaviour kept)', () => {
    const content = buildDeviceInfo({
      runMode: 'Ascend910',
      resourceName: 'huawei.com/Ascend910',
      chips: [],
      superPodId: -2,
      serverIndex: -2,
      updateTimeSec: 1744182144,
    });
    expect(verifyDeviceInfoCfg(content.data.DeviceInfoCfg!)).toBe(true);
  });

  test('H.3 a changed byte of a written DeviceInfoCfg fails with check-code', () => {
    const text = deviceInfoCm('node-1', []).data.DeviceInfoCfg!.replace('1772359200', '1772359201');
    expect(reason(text)).toBe('check-code: CheckCode is not the SHA-256 of the Go serialisation of DeviceInfo');
  });
});

describe('0.1 / issue [O] item 6: the intake', () => {
  test('0.1 the intake takes a device-info ConfigMap with a null DeviceList (device type npu, no faults)', () => {
    const r = parseDeviceInfoConfigMap(cm(NIL_LIST_CFG));
    expect(r.ok && [r.view.deviceType, r.view.faults.size, r.view.deviceList]).toEqual(['npu', 0, {}]);
  });

  test('0.1 a malformed DeviceInfoCfg is refused as malformed, not check-code', () => {
    const r = parseDeviceInfoConfigMap(cm('{"DeviceInfo":{"DeviceList":{"k":[]}}}'));
    expect(r.ok ? 'ok' : [r.reason, r.detail]).toEqual([
      'malformed',
      'DeviceInfoCfg: DeviceInfo.DeviceList["k"] is not a string',
    ]);
  });

  test('0.1 an unreadable -Fault list is refused as malformed naming the key', () => {
    const list = { 'huawei.com/Ascend910': '', 'huawei.com/Ascend910-Fault': '{"not":"a list"}' };
    const text = JSON.stringify({ DeviceInfo: { DeviceList: list, UpdateTime: 1 }, CheckCode: checkCodeOf(list, 1) });
    const r = parseDeviceInfoConfigMap(cm(text));
    expect(r.ok ? 'ok' : [r.reason, r.detail]).toEqual([
      'malformed',
      'huawei.com/Ascend910-Fault: the -Fault value is not a JSON array',
    ]);
  });

  test('0.1 an update after a refused version is ignored once (old-invalid), without the caller keeping the old object', () => {
    const i = new DeviceInfoIntake();
    const bad = i.offer({ type: 'add', cm: deviceInfoCm('node-1', [], { tamper: true }) });
    const second = i.offer({ type: 'update', old: undefined, cm: deviceInfoCm('node-1', []) });
    const third = i.offer({ type: 'update', old: undefined, cm: deviceInfoCm('node-1', []) });
    expect([
      bad.accepted ? 'ok' : bad.reason,
      second.accepted ? 'ok' : second.reason,
      third.accepted ? 'ok' : third.reason,
    ]).toEqual(['check-code', 'old-invalid', 'ok']);
  });
});
