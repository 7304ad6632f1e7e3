/**
 * The Kubernetes API stand-in of an {@link AgentSandbox} created with `apiProcess: true`, in its own process: the
 * stand-in with the Node object kubelet would have registered, and nothing else. The bench's fault path (issue
 * [P] item 5) then measures the agent and the kubelet stand-in without the device-info and Event writes each fault
 * causes being served in the same event loop as the kubelet stand-in that times the fault.
 *
 * Talks to its parent over IPC: sends `{ kubeconfig }` (the file's text) once listening; stops on `stop` or when the
 * parent goes away. Not a test.
 */
import { KubeApiStandIn, NODES } from '../../src/sim/kube-api.js';

const nodeName = process.env.SANDBOX_NODE_NAME ?? 'it-node';
const token = process.env.SANDBOX_TOKEN || undefined;

const api = await KubeApiStandIn.start();
api.store.create(NODES, undefined, { metadata: { name: nodeName } });
const stop = (): void => {
  void api.stop().finally(() => process.exit(0));
};
process.on('message', (m: { type?: string }) => {
  if (m?.type === 'stop') stop();
});
process.on('disconnect', stop);
process.send!({ kubeconfig: api.kubeconfigYaml(token) });
