// AppProject limits (spec §9) with Argo CD's meaning: sourceRepos, destinations (globs and `!`),
// resource allow/deny lists, and the messages Argo CD users know.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AppProject, Application, KubeObject } from '../../src/api/index.ts';
import {
  checkApplicationLimits,
  checkResourceLimits,
  describeViolation,
  destinationDecision,
  normalizeGitURL,
  pathMatch,
  resourceDecision,
  sourceRepoDecision,
  type IsNamespaced,
} from '../../src/project/index.ts';

const IN_CLUSTER = { server: 'https://kubernetes.default.svc', name: 'in-cluster' };

function project(spec: AppProject['spec'], name = 'team-a'): AppProject {
  return { metadata: { name, namespace: 'argocd' }, spec } as AppProject;
}

function application(spec: Partial<Application['spec']>): Application {
  return { metadata: { name: 'guestbook', namespace: 'argocd' }, spec: { project: 'team-a', ...spec } } as Application;
}

const obj = (apiVersion: string, kind: string, name: string, namespace?: string): KubeObject => ({
  apiVersion,
  kind,
  metadata: namespace === undefined ? { name } : { name, namespace },
});

/** Discovery for the tests: the usual built-in kinds. */
const CLUSTER_SCOPED = new Set([
  '/Namespace',
  'rbac.authorization.k8s.io/ClusterRole',
  'rbac.authorization.k8s.io/ClusterRoleBinding',
  'apiextensions.k8s.io/CustomResourceDefinition',
  '/PersistentVolume',
]);
const NAMESPACED = new Set([
  '/ConfigMap',
  '/Service',
  '/Secret',
  'apps/Deployment',
  'rbac.authorization.k8s.io/Role',
  'batch/Job',
]);
const discovery: IsNamespaced = (group, kind) => {
  const key = `${group}/${kind}`;
  if (CLUSTER_SCOPED.has(key)) return false;
  if (NAMESPACED.has(key)) return true;
  return undefined;
};

describe('sourceRepos', () => {
  const permitted = (repos: string[], url: string): boolean => sourceRepoDecision(repos, url).permitted;

  test('exact URLs, compared after normalisation (case, .git suffix, scp-like ssh)', () => {
    assert.ok(permitted(['https://github.com/org/app.git'], 'https://github.com/org/app.git'));
    assert.ok(permitted(['https://GitHub.com/org/app'], 'https://github.com/org/app.git'));
    assert.ok(permitted(['git@github.com:org/app.git'], 'git@GITHUB.com:org/app'));
    assert.ok(!permitted(['https://github.com/org/app1'], 'https://github.com/org/app2'));
    assert.ok(!permitted(['https://github.com/org/app'], 'https://github.com/org/app-extra'));
    assert.equal(normalizeGitURL(' git@Host:Org/Repo.git '), 'git@host/org/repo');
  });

  test('`*` allows any repository; an empty list allows none', () => {
    assert.ok(permitted(['*'], 'https://anything.example/x/y/z.git'));
    assert.ok(permitted(['*'], '/srv/git/local-repo'));
    assert.deepEqual(sourceRepoDecision([], 'https://github.com/org/app'), {
      permitted: false,
      because: 'sourceRepos is empty',
    });
    assert.deepEqual(sourceRepoDecision(undefined, 'https://github.com/org/app'), {
      permitted: false,
      because: 'sourceRepos is empty',
    });
  });

  test('globs: `*` stays within one path segment, `**` crosses them', () => {
    assert.ok(permitted(['https://github.com/org/*'], 'https://github.com/org/app.git'));
    assert.ok(!permitted(['https://github.com/org/*'], 'https://github.com/other/app.git'));
    assert.ok(!permitted(['https://gitlab.com/group/*'], 'https://gitlab.com/group/sub/repo'));
    assert.ok(permitted(['https://gitlab.com/group/*/*'], 'https://gitlab.com/group/sub/repo'));
    assert.ok(permitted(['https://gitlab.com/group/**'], 'https://gitlab.com/group/sub/deeper/repo'));
    assert.ok(permitted(['https://github.com/org/app-?'], 'https://github.com/org/app-1'));
    assert.ok(permitted(['https://github.com/{org,team}/app'], 'https://github.com/team/app'));
  });

  test('`!` denies what it matches, whatever allowed it before', () => {
    assert.deepEqual(sourceRepoDecision(['*', '!https://github.com/evil/*'], 'https://github.com/evil/app'), {
      permitted: false,
      because: "denied by sourceRepos entry '!https://github.com/evil/*'",
    });
    assert.ok(
      !permitted(['https://github.com/org/app', '!https://github.com/org/app.git'], 'https://github.com/org/app'),
    );
    assert.ok(permitted(['*', '!https://github.com/evil/*'], 'https://github.com/good/app'));
  });

  test("a `!` entry that does not match allows on its own (Argo CD's reading)", () => {
    assert.ok(permitted(['!https://github.com/evil/*'], 'https://github.com/good/app'));
    assert.ok(!permitted(['!https://github.com/evil/*'], 'https://github.com/evil/app'));
  });

  test("a '..' in a URL is judged as where it leads, not as where it starts", () => {
    assert.ok(!permitted(['https://host/team-a/*'], 'https://host/team-a/../evil'));
    assert.ok(!permitted(['https://host/team-a/*'], 'https://host/team-a/%2e%2e/evil'));
    assert.ok(permitted(['https://host/evil'], 'https://host/team-a/../evil'));
    assert.ok(!permitted(['git@host:team-a/*'], 'git@host:team-a/../evil'));
  });

  test('an Application whose repoURL leads elsewhere than it reads is refused, saying where it leads', () => {
    const v = checkApplicationLimits(
      project({ sourceRepos: ['https://host/team-a/*'], destinations: [{ server: '*', namespace: '*' }] }),
      application({
        source: { repoURL: 'https://host/team-a/../team-b/app.git' },
        destination: { server: IN_CLUSTER.server, namespace: 'x' },
      }),
      IN_CLUSTER,
    );
    assert.equal(v.length, 1);
    assert.equal(v[0]?.rule, 'sourceRepos');
    assert.equal(
      v[0]?.message,
      "application repo https://host/team-a/../team-b/app.git is refused: its path has a '..' segment, so it does not say which repository it is (it would be read as 'https://host/team-b/app.git')",
    );
  });

  test("the Application-level message is Argo CD's", () => {
    const v = checkApplicationLimits(
      project({ sourceRepos: ['https://github.com/org/*'], destinations: [{ server: '*', namespace: '*' }] }),
      application({
        source: { repoURL: 'https://github.com/other/app.git' },
        destination: { server: IN_CLUSTER.server, namespace: 'x' },
      }),
      IN_CLUSTER,
    );
    assert.equal(v.length, 1);
    assert.equal(v[0]?.rule, 'sourceRepos');
    assert.equal(
      v[0]?.message,
      "application repo https://github.com/other/app.git is not permitted in project 'team-a'",
    );
    assert.equal(v[0]?.detail, 'no sourceRepos entry matches');
  });

  test('every source of a multi-source Application is checked', () => {
    const v = checkApplicationLimits(
      project({ sourceRepos: ['https://github.com/org/*'], destinations: [{ server: '*', namespace: '*' }] }),
      application({
        sources: [
          { repoURL: 'https://github.com/org/a' },
          { repoURL: 'https://github.com/x/b' },
          { repoURL: 'https://github.com/y/c' },
        ],
        destination: { server: IN_CLUSTER.server },
      }),
      IN_CLUSTER,
    );
    assert.deepEqual(
      v.map((x) => x.message),
      [
        "application repo https://github.com/x/b is not permitted in project 'team-a'",
        "application repo https://github.com/y/c is not permitted in project 'team-a'",
      ],
    );
  });
});

describe('destinations', () => {
  const permitted = (
    destinations: AppProject['spec']['destinations'],
    server: string,
    namespace: string,
    name = '',
  ): boolean => destinationDecision(destinations, { server, name, namespace }).permitted;
  const local = 'https://kubernetes.default.svc';

  test('server and namespace must both match; globs on each', () => {
    assert.ok(permitted([{ server: local, namespace: 'default' }], local, 'default'));
    assert.ok(!permitted([{ server: local, namespace: 'default' }], local, 'kube-system'));
    assert.ok(!permitted([{ server: 'https://other', namespace: 'default' }], local, 'default'));
    assert.ok(permitted([{ server: 'https://*.default.svc', namespace: 'team-*' }], local, 'team-a'));
    assert.ok(!permitted([{ server: local, namespace: 'team-*' }], local, 'team'));
    assert.ok(permitted([{ server: '*', namespace: '*' }], local, ''));
  });

  test('a destination is matched by its cluster name too; an absent pattern matches only the empty string', () => {
    assert.ok(permitted([{ name: 'in-cluster', namespace: '*' }], local, 'x', 'in-cluster'));
    assert.ok(!permitted([{ name: 'prod', namespace: '*' }], local, 'x', 'in-cluster'));
    assert.ok(!permitted([{ server: local }], local, 'x'), 'namespace absent means "" only');
    assert.ok(permitted([{ server: local }], local, ''));
  });

  test('`!` on the namespace: everything but', () => {
    assert.ok(permitted([{ server: local, namespace: '!kube-system' }], local, 'default'));
    assert.ok(!permitted([{ server: local, namespace: '!kube-system' }], local, 'kube-system'));
    assert.ok(!permitted([{ server: local, namespace: '!{kube-system,argocd}' }], local, 'argocd'));
  });

  test('a matching `!` entry denies even after an entry that allowed', () => {
    assert.deepEqual(
      destinationDecision(
        [
          { server: '*', namespace: '*' },
          { server: '*', namespace: '!kube-system' },
        ],
        { server: local, name: 'in-cluster', namespace: 'kube-system' },
      ),
      { permitted: false, because: "denied by destinations entry {server: '*', namespace: '!kube-system'}" },
    );
    assert.ok(
      !permitted(
        [
          { server: local, namespace: '*' },
          { server: `!${local}`, namespace: '*' },
        ],
        local,
        'apps',
      ),
    );
    assert.ok(
      !permitted(
        [
          { server: '*', namespace: '*' },
          { server: `!${local}`, namespace: 'kube-system' },
        ],
        local,
        'kube-system',
      ),
    );
    assert.ok(
      permitted(
        [
          { server: '*', namespace: '*' },
          { server: `!${local}`, namespace: 'kube-system' },
        ],
        local,
        'default',
      ),
    );
  });

  test('`!` on the server or name', () => {
    assert.ok(!permitted([{ server: `!${local}`, namespace: 'default' }], local, 'default'));
    assert.ok(permitted([{ server: '!https://other', namespace: 'default' }], local, 'default'));
    assert.ok(!permitted([{ name: '!in-cluster', namespace: '*' }], local, 'x', 'in-cluster'));
    assert.ok(permitted([{ name: '!prod', namespace: '*' }], local, 'x', 'in-cluster'));
  });

  test('a negated namespace on another server does not deny', () => {
    const eks = 'https://eks.example';
    assert.ok(
      permitted(
        [
          { server: local, namespace: '!{kube-system,argocd}' },
          { server: eks, namespace: '*' },
        ],
        eks,
        'kube-system',
      ),
    );
  });

  test('an invalid glob matches nothing', () => {
    assert.ok(!permitted([{ server: local, namespace: '[' }], local, '['));
  });

  test('the Application-level message names the server, or the name when the Application used one', () => {
    const proj = project({ sourceRepos: ['*'], destinations: [{ server: local, namespace: 'team-a-*' }] });
    const byServer = checkApplicationLimits(
      proj,
      application({ source: { repoURL: 'https://g/x' }, destination: { server: local, namespace: 'kube-system' } }),
      IN_CLUSTER,
    );
    assert.deepEqual(
      byServer.map((v) => [v.rule, v.message]),
      [
        [
          'destinations',
          "application destination server 'https://kubernetes.default.svc' and namespace 'kube-system' do not match any of the allowed destinations in project 'team-a'",
        ],
      ],
    );
    const byName = checkApplicationLimits(
      proj,
      application({
        source: { repoURL: 'https://g/x' },
        destination: { name: 'in-cluster', namespace: 'kube-system' },
      }),
      IN_CLUSTER,
    );
    assert.equal(
      byName[0]?.message,
      "application destination server 'in-cluster' and namespace 'kube-system' do not match any of the allowed destinations in project 'team-a'",
    );
    assert.deepEqual(
      checkApplicationLimits(
        proj,
        application({ source: { repoURL: 'https://g/x' }, destination: { server: local, namespace: 'team-a-web' } }),
        IN_CLUSTER,
      ),
      [],
    );
  });
});

describe('resource allow and deny lists', () => {
  test('namespaced: no whitelist allows all, the blacklist wins, an empty whitelist allows none', () => {
    assert.ok(resourceDecision({}, 'apps', 'Deployment', 'web', true).permitted);
    assert.deepEqual(
      resourceDecision({ namespaceResourceBlacklist: [{ group: '', kind: 'Secret' }] }, '', 'Secret', 's', true),
      {
        permitted: false,
        rule: 'namespaceResourceBlacklist',
        because: "matches namespaceResourceBlacklist entry {group: '', kind: 'Secret'}",
      },
    );
    assert.ok(!resourceDecision({ namespaceResourceWhitelist: [] }, '', 'ConfigMap', 'c', true).permitted);
    assert.ok(
      resourceDecision(
        { namespaceResourceWhitelist: [{ group: 'apps', kind: '*' }] },
        'apps',
        'Deployment',
        'web',
        true,
      ).permitted,
    );
    assert.deepEqual(
      resourceDecision({ namespaceResourceWhitelist: [{ group: 'apps', kind: '*' }] }, '', 'ConfigMap', 'c', true),
      { permitted: false, rule: 'namespaceResourceWhitelist', because: 'not in namespaceResourceWhitelist' },
    );
  });

  test('cluster-scoped: nothing unless whitelisted; the blacklist wins; names may narrow cluster entries', () => {
    assert.deepEqual(resourceDecision({}, '', 'Namespace', 'n', false), {
      permitted: false,
      rule: 'clusterResourceWhitelist',
      because: 'clusterResourceWhitelist is empty: no cluster-scoped resource is allowed',
    });
    assert.ok(
      resourceDecision(
        { clusterResourceWhitelist: [{ group: '*', kind: '*' }] },
        'rbac.authorization.k8s.io',
        'ClusterRole',
        'r',
        false,
      ).permitted,
    );
    assert.ok(
      !resourceDecision(
        {
          clusterResourceWhitelist: [{ group: '*', kind: '*' }],
          clusterResourceBlacklist: [{ group: 'rbac.authorization.k8s.io', kind: 'Cluster*' }],
        },
        'rbac.authorization.k8s.io',
        'ClusterRoleBinding',
        'b',
        false,
      ).permitted,
    );
    const named = { clusterResourceWhitelist: [{ group: '', kind: 'Namespace', name: 'team-a-*' }] };
    assert.ok(resourceDecision(named, '', 'Namespace', 'team-a-web', false).permitted);
    assert.ok(!resourceDecision(named, '', 'Namespace', 'kube-system', false).permitted);
  });

  test('group and kind are Go filepath.Match patterns (the core group is "")', () => {
    assert.ok(pathMatch('', ''));
    assert.ok(!pathMatch('', 'apps'));
    assert.ok(pathMatch('*', ''));
    assert.ok(pathMatch('*.k8s.io', 'rbac.authorization.k8s.io'));
    assert.ok(pathMatch('[CD]*', 'Deployment'));
    assert.ok(!pathMatch('[^CD]*', 'Deployment'));
    assert.ok(pathMatch('Dep?oyment', 'Deployment'));
    assert.ok(pathMatch('\\*', '*'));
    assert.ok(!pathMatch('*', 'a/b'), '* does not cross /');
    assert.ok(!pathMatch('[', '['), 'a malformed pattern matches nothing');
    assert.ok(!pathMatch('[]]', ']'));
  });
});

describe('checkResourceLimits', () => {
  const proj = project({
    sourceRepos: ['*'],
    destinations: [
      { server: 'https://kubernetes.default.svc', namespace: 'team-a' },
      { server: '*', namespace: '!kube-system' },
    ],
    clusterResourceWhitelist: [{ group: '', kind: 'Namespace' }],
    namespaceResourceBlacklist: [{ group: '', kind: 'Secret' }],
  });

  test("returns every violation, each naming the resource, the rule and Argo CD's message", () => {
    const objects = [
      { object: obj('v1', 'ConfigMap', 'ok'), location: { file: 'app/cm.yaml', document: 1 } },
      { object: obj('v1', 'Namespace', 'team-a'), location: { file: 'app/ns.yaml', document: 1 } },
      {
        object: obj('rbac.authorization.k8s.io/v1', 'ClusterRole', 'admin-ish'),
        location: { file: 'app/rbac.yaml', document: 1 },
      },
      { object: obj('v1', 'Secret', 'token', 'team-a'), location: { file: 'app/secret.yaml', document: 1 } },
      {
        object: obj('apps/v1', 'Deployment', 'web', 'kube-system'),
        location: { file: 'app/deploy.yaml', document: 2 },
      },
    ];
    const v = checkResourceLimits({
      project: proj,
      cluster: IN_CLUSTER,
      destinationNamespace: 'team-a',
      objects,
      isNamespaced: discovery,
    });
    assert.deepEqual(
      v.map((x) => [x.rule, x.message, `${x.resource?.kind}/${x.resource?.name}`, x.location?.file]),
      [
        [
          'clusterResourceWhitelist',
          'resource rbac.authorization.k8s.io:ClusterRole is not permitted in project team-a',
          'ClusterRole/admin-ish',
          'app/rbac.yaml',
        ],
        [
          'namespaceResourceBlacklist',
          'resource :Secret is not permitted in project team-a',
          'Secret/token',
          'app/secret.yaml',
        ],
        [
          'destinations',
          "namespace kube-system is not permitted in project 'team-a'",
          'Deployment/web',
          'app/deploy.yaml',
        ],
      ],
    );
    assert.equal(
      describeViolation(v[2]!),
      "apps/Deployment kube-system/web: namespace kube-system is not permitted in project 'team-a' (destinations: denied by destinations entry {server: '*', namespace: '!kube-system'})",
    );
  });

  test('objects without a namespace are checked in the destination namespace; cluster-scoped ones are not', () => {
    const v = checkResourceLimits({
      project: proj,
      cluster: IN_CLUSTER,
      destinationNamespace: 'kube-system',
      objects: [obj('v1', 'ConfigMap', 'c'), obj('v1', 'Namespace', 'kube-system')],
      isNamespaced: discovery,
    });
    assert.deepEqual(
      v.map((x) => [x.message, x.resource?.namespace]),
      [["namespace kube-system is not permitted in project 'team-a'", 'kube-system']],
    );
  });

  test('plain objects are accepted as well as {object, location}', () => {
    assert.deepEqual(
      checkResourceLimits({
        project: proj,
        cluster: IN_CLUSTER,
        destinationNamespace: 'team-a',
        objects: [obj('v1', 'ConfigMap', 'c')],
        isNamespaced: discovery,
      }),
      [],
    );
  });

  test('a kind discovery does not know takes its scope from a CRD among the objects, else is a violation', () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: { group: 'example.com', scope: 'Namespaced', names: { kind: 'Widget' } },
    } as KubeObject;
    const open = project({
      sourceRepos: ['*'],
      destinations: [{ server: '*', namespace: '*' }],
      clusterResourceWhitelist: [{ group: '*', kind: '*' }],
    });
    const withCRD = checkResourceLimits({
      project: open,
      cluster: IN_CLUSTER,
      destinationNamespace: 'team-a',
      objects: [crd, obj('example.com/v1', 'Widget', 'w')],
      isNamespaced: discovery,
    });
    assert.deepEqual(withCRD, []);
    const without = checkResourceLimits({
      project: open,
      cluster: IN_CLUSTER,
      destinationNamespace: 'team-a',
      objects: [obj('example.com/v1', 'Gadget', 'g')],
      isNamespaced: discovery,
    });
    assert.deepEqual(
      without.map((x) => [x.rule, x.message]),
      [['apiResource', 'failed to get API resource info for example.com/Gadget: unable to verify permissions']],
    );
  });

  test('SkipDryRunOnMissingResource=true: a kind nobody defines yet is checked at the step that applies it, not now', () => {
    const gadget = obj('example.com/v1', 'Gadget', 'g');
    const input = {
      project: project({
        sourceRepos: ['*'],
        destinations: [{ server: '*', namespace: '*' }],
      }),
      cluster: IN_CLUSTER,
      destinationNamespace: 'team-a',
      objects: [gadget, obj('example.com/v1', 'Other', 'o')],
      isNamespaced: discovery,
    };
    const v = checkResourceLimits({ ...input, unknownKindDeferred: (o: KubeObject) => o.kind === 'Gadget' });
    assert.deepEqual(
      v.map((x) => x.message),
      ['failed to get API resource info for example.com/Other: unable to verify permissions'],
    );
  });

  test("a cluster-scoped CRD's resources are checked against the cluster lists", () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'quotas.example.com' },
      spec: { group: 'example.com', scope: 'Cluster', names: { kind: 'Quota' } },
    } as KubeObject;
    const v = checkResourceLimits({
      project: proj,
      cluster: IN_CLUSTER,
      destinationNamespace: 'team-a',
      objects: [crd, obj('example.com/v1', 'Quota', 'q')],
      isNamespaced: discovery,
    });
    assert.deepEqual(
      v.map((x) => x.message),
      [
        'resource apiextensions.k8s.io:CustomResourceDefinition is not permitted in project team-a',
        'resource example.com:Quota is not permitted in project team-a',
      ],
    );
  });
});
