/**
 * The kubelet `/pods` URL (spec A.1 `HOST_IP`, `KUBELET_PORT`; issue 18 item 4).
 */
import { describe, expect, test } from '@jest/globals';
import { KubeletPodsError, kubeletPodsUrl } from '../../src/kube/kubelet-pod-source.js';

describe('spec A.1 kubelet /pods URL', () => {
  test('A.1 HOST_IP and KUBELET_PORT make the https URL', () => {
    expect(kubeletPodsUrl({ HOST_IP: '10.0.0.5', KUBELET_PORT: '10255' })).toBe('https://10.0.0.5:10255/pods');
    expect(kubeletPodsUrl({ HOST_IP: 'fd00::5', KUBELET_PORT: '1' })).toBe('https://[fd00::5]:1/pods');
  });

  test('A.1 an absent or invalid KUBELET_PORT falls back to 10250 (upstream)', () => {
    for (const port of [undefined, '', 'x', '65536', '-1', '1e3']) {
      expect(kubeletPodsUrl({ HOST_IP: '10.0.0.5', KUBELET_PORT: port })).toBe('https://10.0.0.5:10250/pods');
    }
  });

  test('Bad input: a HOST_IP that is not an IP address is an error naming it', () => {
    expect(() => kubeletPodsUrl({ HOST_IP: 'node-1' })).toThrow(KubeletPodsError);
    expect(() => kubeletPodsUrl({})).toThrow(/HOST_IP "" is not an IP address/);
  });
});
