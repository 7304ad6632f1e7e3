/**
 * RBAC of the API stand-in (issue [I] item 5, issue [K] item 9): request attributes as kube-apiserver's
 * RequestInfoFactory derives them, the RBAC authorizer's decision, the 403 `Status` it answers, loading of the
 * manifests, and the grant bookkeeping the least-privilege test relies on. Tables mirror Kubernetes semantics
 * (docs: "Using RBAC Authorization", "Referring to resources"; apiserver `requestinfo.go`, `rbac.go`, `errors.go`).
 */
import * as k8s from '@kubernetes/client-node';
import { afterEach, describe, expect, test } from '@jest/globals';
import {
  ADMIN_USER,
  ANONYMOUS_USER,
  RbacAuthorizer,
  RbacGate,
  RbacPolicyError,
  forbidden,
  parseRbacYaml,
  requestAttributes,
  serviceAccountUser,
  type RequestAttributes,
  type UserInfo,
} from '../../src/sim/kube-api-rbac.js';
import { KubeApiStandIn, LEASES } from '../../src/sim/kube-api.js';
import { KubeApiError, KubeClient } from '../../src/kube/kube-client.js';

const SA = serviceAccountUser('ops', 'robot');

function attrs(method: string, path: string, user: UserInfo = SA): RequestAttributes {
  return requestAttributes(method, new URL(path, 'http://x'), user);
}

describe('request attributes (apiserver RequestInfoFactory)', () => {
  test.each([
    // method, path, verb, resource/subresource, namespace, name
    ['GET', '/api/v1/namespaces/ns/configmaps/a', 'get', 'configmaps', 'ns', 'a'],
    ['GET', '/api/v1/namespaces/ns/configmaps', 'list', 'configmaps', 'ns', ''],
    ['GET', '/api/v1/namespaces/ns/configmaps?watch=true', 'watch', 'configmaps', 'ns', ''],
    ['GET', '/api/v1/namespaces/ns/configmaps?watch=1', 'watch', 'configmaps', 'ns', ''],
    ['GET', '/api/v1/namespaces/ns/configmaps?watch=', 'watch', 'configmaps', 'ns', ''],
    ['GET', '/api/v1/namespaces/ns/configmaps?watch=false', 'list', 'configmaps', 'ns', ''],
    ['GET', '/api/v1/namespaces/ns/configmaps?watch=0', 'list', 'configmaps', 'ns', ''],
    ['GET', '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da', 'list', 'configmaps', 'ns', 'a'],
    ['GET', '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3D%3Da', 'list', 'configmaps', 'ns', 'a'],
    [
      'GET',
      '/api/v1/namespaces/ns/configmaps?watch=true&fieldSelector=metadata.name%3Da',
      'watch',
      'configmaps',
      'ns',
      'a',
    ],
    ['GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1%2Cmetadata.name%3Dp', 'list', 'pods', '', 'p'],
    ['GET', '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name!%3Da', 'list', 'configmaps', 'ns', ''],
    ['GET', '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name', 'list', 'configmaps', 'ns', ''],
    [
      'GET',
      '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da&labelSelector=a%20in%20(',
      'list',
      'configmaps',
      'ns',
      '',
    ],
    ['GET', '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3D..', 'list', 'configmaps', 'ns', ''],
    ['GET', '/api/v1/watch/namespaces/ns/configmaps/a', 'watch', 'configmaps', 'ns', 'a'],
    // the legacy watch path is not a "get": its field selector does not name the object
    ['GET', '/api/v1/watch/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da', 'watch', 'configmaps', 'ns', ''],
    ['POST', '/api/v1/namespaces/ns/configmaps', 'create', 'configmaps', 'ns', ''],
    ['PUT', '/api/v1/namespaces/ns/configmaps/a', 'update', 'configmaps', 'ns', 'a'],
    ['PATCH', '/api/v1/namespaces/ns/configmaps/a', 'patch', 'configmaps', 'ns', 'a'],
    ['DELETE', '/api/v1/namespaces/ns/configmaps/a', 'delete', 'configmaps', 'ns', 'a'],
    ['DELETE', '/api/v1/namespaces/ns/configmaps', 'deletecollection', 'configmaps', 'ns', ''],
    ['PATCH', '/api/v1/namespaces/ns/pods/p/status', 'patch', 'pods/status', 'ns', 'p'],
    ['GET', '/api/v1/nodes/n1', 'get', 'nodes', '', 'n1'],
    ['PATCH', '/api/v1/nodes/n1/status', 'patch', 'nodes/status', '', 'n1'],
    ['GET', '/api/v1/pods', 'list', 'pods', '', ''],
    ['GET', '/api/v1/namespaces', 'list', 'namespaces', '', ''],
    ['GET', '/api/v1/namespaces/ns', 'get', 'namespaces', 'ns', 'ns'],
    ['PUT', '/api/v1/namespaces/ns/finalize', 'update', 'namespaces/finalize', 'ns', 'ns'],
    ['HEAD', '/api/v1/namespaces/ns/configmaps/a', 'get', 'configmaps', 'ns', 'a'],
  ])('%s %s → %s %s in "%s" named "%s"', (method, path, verb, resource, namespace, name) => {
    const a = attrs(method, path);
    const [res, sub] = resource.split('/');
    expect(a).toMatchObject({ isResourceRequest: true, verb, resource: res, subresource: sub ?? '', namespace, name });
  });

  test('API groups and versions come from /apis/<group>/<version>', () => {
    expect(attrs('GET', '/apis/coordination.k8s.io/v1/namespaces/cs/leases/l')).toMatchObject({
      apiGroup: 'coordination.k8s.io',
      apiVersion: 'v1',
      resource: 'leases',
      namespace: 'cs',
      name: 'l',
    });
    expect(attrs('GET', '/api/v1/nodes')).toMatchObject({ apiGroup: '', apiVersion: 'v1' });
  });

  test.each([
    ['GET', '/api', 'get'],
    ['GET', '/api/v1', 'get'],
    ['GET', '/apis/scheduling.volcano.sh/v1beta1', 'get'],
    ['GET', '/version', 'get'],
    ['POST', '/healthz', 'post'],
    ['GET', '/metrics', 'get'],
  ])('%s %s is a non-resource request with verb %s', (method, path, verb) => {
    expect(attrs(method, path)).toMatchObject({ isResourceRequest: false, verb, path });
  });
});

const POLICY = parseRbacYaml([
  {
    source: 'test.yaml',
    text: `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: named, namespace: ns }
rules:
  - { apiGroups: [''], resources: [configmaps], resourceNames: [a], verbs: [get, list, watch, update, create, deletecollection] }
  - { apiGroups: [''], resources: [pods/status], verbs: [patch] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: named, namespace: ns }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: named }
subjects: [{ kind: ServiceAccount, name: robot, namespace: ops }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: reader }
rules:
  - { apiGroups: [''], resources: [nodes, pods], verbs: [get, list, watch] }
  - { apiGroups: ['*'], resources: ['*/status'], verbs: [get] }
  - { nonResourceURLs: ['/healthz', '/logs/*'], verbs: [get] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: reader }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader }
subjects: [{ kind: ServiceAccount, name: robot, namespace: ops }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: lease-writer }
rules:
  - { apiGroups: [coordination.k8s.io], resources: [leases], verbs: ['*'] }
---
# a ClusterRole bound in one namespace only; the subject's namespace defaults to the binding's
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: lease-writer, namespace: ops }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: lease-writer }
subjects: [{ kind: ServiceAccount, name: robot }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: group-bound }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: lease-writer }
subjects: [{ kind: Group, name: lease-admins }]
---
# a ClusterRoleBinding's ServiceAccount subject without a namespace matches nobody
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: no-namespace }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: lease-writer }
subjects: [{ kind: ServiceAccount, name: robot }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: dangling, namespace: other }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: gone }
subjects: [{ kind: User, name: alice }]
`,
  },
]);
const authorizer = new RbacAuthorizer(POLICY);
const allowed = (method: string, path: string, user: UserInfo = SA): boolean =>
  authorizer.authorize(attrs(method, path, user)).allowed;

describe('RBAC decisions (rbac.RuleAllows, Referring to resources)', () => {
  test.each([
    ['GET', '/api/v1/namespaces/ns/configmaps/a', true],
    ['GET', '/api/v1/namespaces/ns/configmaps/b', false],
    ['GET', '/api/v1/namespaces/other/configmaps/a', false],
    ['PUT', '/api/v1/namespaces/ns/configmaps/a', true],
    ['PATCH', '/api/v1/namespaces/ns/configmaps/a', false],
    // resourceNames: a list or watch must select the name with metadata.name
    ['GET', '/api/v1/namespaces/ns/configmaps', false],
    ['GET', '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da', true],
    ['GET', '/api/v1/namespaces/ns/configmaps?watch=true&fieldSelector=metadata.name%3Da', true],
    ['GET', '/api/v1/namespaces/ns/configmaps?watch=true&fieldSelector=metadata.name%3Db', false],
    ['GET', '/api/v1/watch/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da', false],
    ['GET', '/api/v1/watch/namespaces/ns/configmaps/a', true],
    // create and deletecollection carry no name: a rule with resourceNames never allows them
    ['POST', '/api/v1/namespaces/ns/configmaps', false],
    ['DELETE', '/api/v1/namespaces/ns/configmaps', false],
  ])('named Role: %s %s → %s', (method, path, expected) => {
    expect(allowed(method, path)).toBe(expected);
  });

  test.each([
    ['GET', '/api/v1/nodes/n1', true],
    ['GET', '/api/v1/nodes', true],
    ['GET', '/api/v1/pods', true],
    ['GET', '/api/v1/namespaces/any/pods?watch=true', true],
    ['PATCH', '/api/v1/nodes/n1', false],
    // subresources are separate resources; */status matches every status subresource in every group
    ['PATCH', '/api/v1/namespaces/ns/pods/p/status', true],
    ['PATCH', '/api/v1/namespaces/other/pods/p/status', false],
    ['PATCH', '/api/v1/namespaces/ns/pods/p', false],
    ['GET', '/api/v1/nodes/n1/status', true],
    ['GET', '/apis/apps/v1/namespaces/x/deployments/d/status', true],
    ['GET', '/apis/apps/v1/namespaces/x/deployments/d', false],
    ['GET', '/api/v1/configmaps', false],
  ])('ClusterRole through a ClusterRoleBinding: %s %s → %s', (method, path, expected) => {
    expect(allowed(method, path)).toBe(expected);
  });

  test.each([
    ['GET', '/apis/coordination.k8s.io/v1/namespaces/ops/leases/l', true],
    ['DELETE', '/apis/coordination.k8s.io/v1/namespaces/ops/leases', true],
    ['POST', '/apis/coordination.k8s.io/v1/namespaces/ops/leases', true],
    ['GET', '/apis/coordination.k8s.io/v1/namespaces/other/leases/l', false],
    ['GET', '/apis/coordination.k8s.io/v1/leases', false],
    ['GET', '/api/v1/namespaces/ops/leases/l', false],
  ])('ClusterRole through a RoleBinding applies in that namespace only: %s %s → %s', (method, path, expected) => {
    expect(allowed(method, path)).toBe(expected);
  });

  test.each([
    ['GET', '/healthz', true],
    ['GET', '/healthz/etcd', false],
    ['GET', '/logs/kube.log', true],
    ['POST', '/healthz', false],
    // bootstrap system:discovery for system:authenticated
    ['GET', '/api', true],
    ['GET', '/apis/coordination.k8s.io/v1', true],
    ['GET', '/metrics', false],
  ])('non-resource URLs: %s %s → %s', (method, path, expected) => {
    expect(allowed(method, path)).toBe(expected);
  });

  test('anonymous: public-info-viewer only', () => {
    expect(allowed('GET', '/version', ANONYMOUS_USER)).toBe(true);
    expect(allowed('GET', '/api', ANONYMOUS_USER)).toBe(false);
    expect(allowed('GET', '/api/v1/nodes', ANONYMOUS_USER)).toBe(false);
  });

  test('subjects: a group; a User; system:masters is allowed everything', () => {
    const bob = { username: 'bob', groups: ['lease-admins', 'system:authenticated'] };
    expect(allowed('DELETE', '/apis/coordination.k8s.io/v1/namespaces/any/leases/l', bob)).toBe(true);
    expect(allowed('GET', '/api/v1/nodes', bob)).toBe(false);
    expect(allowed('DELETE', '/api/v1/nodes/n1', ADMIN_USER)).toBe(true);
    // a ServiceAccount of the same name in another namespace is another user
    expect(allowed('GET', '/api/v1/nodes', serviceAccountUser('other', 'robot'))).toBe(false);
  });

  test('a binding to a missing role denies with the RBAC "not found" reason', () => {
    const alice = { username: 'alice', groups: ['system:authenticated'] };
    const d = authorizer.authorize(attrs('GET', '/api/v1/namespaces/other/configmaps/a', alice));
    expect(d).toEqual({ allowed: false, reason: 'RBAC: role.rbac.authorization.k8s.io "gone" not found', grants: [] });
  });

  test('an allowed request reports every grant that allows it, with the name it used', () => {
    const d = authorizer.authorize(attrs('GET', '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da'));
    expect(d.grants).toEqual(['list configmaps "a" in ns (RoleBinding ns/named → Role named rule 0)']);
    expect(d.reason).toBe('RBAC: allowed by RoleBinding "named/ns" of Role "named" to system:serviceaccount:ops:robot');
  });
});

describe('attribution of a request to its most specific grant', () => {
  const overlap = new RbacAuthorizer(
    parseRbacYaml([
      {
        source: 'o.yaml',
        text: `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: broad }
rules: [{ apiGroups: [''], resources: ['*'], verbs: [get, update] }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: broad }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: broad }
subjects: [{ kind: ServiceAccount, name: robot, namespace: ops }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: narrow, namespace: ns }
rules:
  - { apiGroups: [''], resources: [configmaps], verbs: [get] }
  - { apiGroups: [''], resources: [configmaps], resourceNames: [a], verbs: [get] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: narrow, namespace: ns }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: narrow }
subjects: [{ kind: ServiceAccount, name: robot, namespace: ops }]
`,
      },
    ]),
  );

  test('a RoleBinding before a ClusterRoleBinding, a named rule before an unnamed one; all matches are listed', () => {
    const d = overlap.authorize(attrs('GET', '/api/v1/namespaces/ns/configmaps/a'));
    expect(d.grant).toBe('get configmaps "a" in ns (RoleBinding ns/narrow → Role narrow rule 1)');
    expect(d.grants).toHaveLength(3);
    expect(overlap.authorize(attrs('GET', '/api/v1/namespaces/ns/configmaps/b')).grant).toBe(
      'get configmaps in ns (RoleBinding ns/narrow → Role narrow rule 0)',
    );
    expect(overlap.authorize(attrs('PUT', '/api/v1/namespaces/ns/configmaps/b')).grant).toBe(
      'update * cluster-wide (ClusterRoleBinding broad → ClusterRole broad rule 0)',
    );
  });
});

describe('403 Status as kube-apiserver writes it (responsewriters.Forbidden)', () => {
  const status = (method: string, path: string, user: UserInfo = SA) =>
    forbidden(attrs(method, path, user), '').toStatus();

  test.each([
    [
      'PUT',
      '/api/v1/namespaces/kube-system/configmaps/mindx-dl-deviceinfo-other',
      'configmaps "mindx-dl-deviceinfo-other" is forbidden: User "system:serviceaccount:ops:robot" cannot update resource "configmaps" in API group "" in the namespace "kube-system"',
      { name: 'mindx-dl-deviceinfo-other', kind: 'configmaps' },
    ],
    [
      'GET',
      '/api/v1/nodes',
      'nodes is forbidden: User "system:serviceaccount:ops:robot" cannot list resource "nodes" in API group "" at the cluster scope',
      { kind: 'nodes' },
    ],
    [
      'POST',
      '/apis/coordination.k8s.io/v1/namespaces/cs/leases',
      'leases.coordination.k8s.io is forbidden: User "system:serviceaccount:ops:robot" cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "cs"',
      { group: 'coordination.k8s.io', kind: 'leases' },
    ],
    [
      'PATCH',
      '/api/v1/namespaces/ns/pods/p/status',
      'pods "p" is forbidden: User "system:serviceaccount:ops:robot" cannot patch resource "pods/status" in API group "" in the namespace "ns"',
      { name: 'p', kind: 'pods' },
    ],
    ['GET', '/metrics', 'forbidden: User "system:serviceaccount:ops:robot" cannot get path "/metrics"', {}],
  ])('%s %s', (method, path, message, details) => {
    expect(status(method, path)).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason: 'Forbidden',
      details,
      code: 403,
    });
  });

  test('a reason is appended after a colon', () => {
    expect(
      forbidden(attrs('GET', '/api/v1/nodes'), 'RBAC: clusterrole.rbac.authorization.k8s.io "x" not found').message,
    ).toMatch(/at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "x" not found$/);
  });
});

describe('loading RBAC manifests', () => {
  const load = (text: string) => () => parseRbacYaml([{ source: 'f.yaml', text }]);
  const role = (rules: string, kind = 'Role', ns = 'namespace: n') =>
    `apiVersion: rbac.authorization.k8s.io/v1\nkind: ${kind}\nmetadata: { name: r, ${ns} }\nrules: ${rules}\n`;

  test.each([
    [role('[]', 'Role', ''), /f.yaml: Role r: a Role needs metadata.namespace/],
    [role('[{ resources: [pods], verbs: [get] }]'), /rule 0: resource rules must supply at least one api group/],
    [role("[{ apiGroups: [''], resources: [pods], verbs: [] }]"), /rule 0: verbs must contain at least one value/],
    [role("[{ nonResourceURLs: ['/x'], verbs: [get] }]"), /namespaced rules cannot apply to non-resource URLs/],
    [
      role("[{ apiGroups: [''], resources: [pods], nonResourceURLs: ['/x'], verbs: [get] }]", 'ClusterRole', ''),
      /cannot apply to both regular resources and non-resource URLs/,
    ],
    [
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: { name: agg }\naggregationRule: { clusterRoleSelectors: [] }\n',
      /aggregationRule is not supported/,
    ],
    [role('[]').replace('rbac.authorization.k8s.io/v1', 'rbac.authorization.k8s.io/v1beta1'), /apiVersion is not/],
    [
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: { name: b }\nroleRef: { kind: Role, name: r }\n',
      /a ClusterRoleBinding can only refer to a ClusterRole/,
    ],
    ['a: [', /f.yaml: not YAML/],
  ])('refuses %#', (text, message) => {
    expect(load(text)).toThrow(RbacPolicyError);
    expect(load(text)).toThrow(message);
  });

  test('other kinds (ServiceAccount, admission policies) are skipped', () => {
    const p = parseRbacYaml([
      {
        source: 'f.yaml',
        text: 'apiVersion: v1\nkind: ServiceAccount\nmetadata: { name: s, namespace: n }\n---\n' + role('[]'),
      },
    ]);
    expect([p.roles.length, p.bindings.length]).toEqual([1, 0]);
  });

  test('grants are expanded per verb × group × resource × name', () => {
    const keys = authorizer.grantsOf(SA).map((g) => g.key);
    expect(keys.filter((k) => k.includes('Role named rule 0'))).toHaveLength(6);
    expect(keys).toContain('update configmaps "a" in ns (RoleBinding ns/named → Role named rule 0)');
    expect(keys).toContain('get /healthz cluster-wide (ClusterRoleBinding reader → ClusterRole reader rule 2)');
    expect(keys).toContain(
      '* leases.coordination.k8s.io in ops (RoleBinding ops/lease-writer → ClusterRole lease-writer rule 0)',
    );
    // bootstrap grants are not the manifests' and are not listed
    expect(keys.some((k) => k.includes('system:discovery'))).toBe(false);
  });
});

describe('the stand-in with an RbacGate', () => {
  let api: KubeApiStandIn | undefined;
  afterEach(async () => {
    await api?.stop();
    api = undefined;
  });

  async function start(): Promise<{ api: KubeApiStandIn; gate: RbacGate }> {
    const gate = new RbacGate({ policy: POLICY, users: { admin: ADMIN_USER, robot: SA } });
    api = await KubeApiStandIn.start({ gate });
    api.store.create(api.resourceType('', 'configmaps'), 'ns', { metadata: { name: 'a' }, data: { k: 'v' } });
    return { api, gate };
  }

  test('an allowed request is served and its grant recorded; a forbidden one gets the 403 Status', async () => {
    const { api: s, gate } = await start();
    const ok = await fetch(`${s.url}/api/v1/namespaces/ns/configmaps/a`, {
      headers: { authorization: 'Bearer robot' },
    });
    expect(ok.status).toBe(200);
    const no = await fetch(`${s.url}/api/v1/namespaces/ns/configmaps/b`, {
      headers: { authorization: 'Bearer robot' },
    });
    expect([no.status, await no.json()]).toEqual([
      403,
      {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message:
          'configmaps "b" is forbidden: User "system:serviceaccount:ops:robot" cannot get resource "configmaps" in API group "" in the namespace "ns"',
        reason: 'Forbidden',
        details: { name: 'b', kind: 'configmaps' },
        code: 403,
      },
    ]);
    expect(gate.usage().get('get configmaps "a" in ns (RoleBinding ns/named → Role named rule 0)')).toBe(1);
    expect(gate.denied().map((r) => r.url)).toEqual(['/api/v1/namespaces/ns/configmaps/b']);
    expect(gate.unusedGrants(SA).map((g) => g.key)).not.toContain(
      'get configmaps "a" in ns (RoleBinding ns/named → Role named rule 0)',
    );
  });

  test('an unknown token is 401; the admin token is allowed everything', async () => {
    const { api: s } = await start();
    const bad = await fetch(`${s.url}/api/v1/nodes`, { headers: { authorization: 'Bearer nope' } });
    expect([bad.status, ((await bad.json()) as { reason: string }).reason]).toEqual([401, 'Unauthorized']);
    const core = s.kubeConfig('admin').makeApiClient(k8s.CoreV1Api);
    await expect(core.listNode()).resolves.toMatchObject({ items: [] });
  });

  test('a forbidden watch is refused with 403 before the stream starts', async () => {
    const { api: s } = await start();
    const client = new KubeClient({ server: s.url, token: 'robot' });
    const err = await new Promise<unknown>((resolve) => {
      void client.watch('/api/v1/namespaces/ns/configmaps', {}, () => undefined, resolve);
    });
    expect((err as { statusCode?: number }).statusCode).toBe(403);
    client.close();
  });

  test("the agent's client sees a 403 as a KubeApiError with code 403 and the server's message", async () => {
    const { api: s } = await start();
    const client = new KubeClient({ server: s.url, token: 'robot' });
    const err = await client
      .replaceNamespacedConfigMap({ name: 'b', namespace: 'ns', body: { metadata: { name: 'b' } } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).code).toBe(403);
    expect((err as KubeApiError).message).toContain(
      'cannot update resource "configmaps" in API group "" in the namespace "ns"',
    );
    client.close();
  });

  test('client-node: a Lease created through a RoleBinding-bound ClusterRole', async () => {
    const { api: s } = await start();
    const coord = s.kubeConfig('robot').makeApiClient(k8s.CoordinationV1Api);
    await coord.createNamespacedLease({ namespace: 'ops', body: { metadata: { name: 'l' } } });
    expect(s.store.get(LEASES, 'ops', 'l')).toBeDefined();
    await expect(
      coord.createNamespacedLease({ namespace: 'other', body: { metadata: { name: 'l' } } }),
    ).rejects.toMatchObject({
      code: 403,
    });
  });
});
