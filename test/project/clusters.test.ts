// Cluster tenancy (src/project/clusters.ts) as Argo CD's tables have it: project-scoped clusters
// with permitOnlyProjectScopedClusters (types_test.go
// TestAppProject_IsDestinationPermitted_PermitOnlyProjectScopedClusters), the implicit destinations
// of a project's clusters (argo.go GetAppProjectByName), and a namespace-scoped cluster's refusals
// (gitops-engine cluster.go GetManagedLiveObjs).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AppProject, Application, KubeObject } from '../../src/api/index.ts';
import {
  checkApplicationLimits,
  checkResourceLimits,
  implicitDestinations,
  namespacedModeRefusal,
  projectClusters,
  withProjectClusters,
} from '../../src/project/index.ts';

type Dest = { server?: string; name?: string; namespace: string };

function project(destinations: Dest[], permitOnly: boolean, name = 'foo-project'): AppProject {
  return {
    metadata: { name, namespace: 'argocd' },
    spec: { sourceRepos: ['*'], destinations, permitOnlyProjectScopedClusters: permitOnly },
  } as AppProject;
}

function app(destination: Dest): Application {
  return {
    metadata: { name: 'some-ns', namespace: 'argocd' },
    spec: { project: 'foo-project', source: { repoURL: 'https://git.example/a.git' }, destination },
  } as Application;
}

/** IsDestinationPermitted, through the admission-time check: no violation means permitted. */
function permitted(
  p: AppProject,
  dest: Dest,
  clusters: Array<{ server?: string; name?: string }>,
  cluster = { server: dest.server ?? '', name: dest.name ?? '' },
): boolean {
  const scoped = clusters.map((c) => ({ server: c.server ?? '', name: c.name ?? '' }));
  return checkApplicationLimits(p, app(dest), cluster, scoped).length === 0;
}

describe('permitOnlyProjectScopedClusters (Argo CD TestAppProject_IsDestinationPermitted_PermitOnlyProjectScopedClusters)', () => {
  const rows: Array<{
    projDest: Dest[];
    appDest: Dest;
    clusters: Array<{ server?: string; name?: string }>;
    isPermitted: boolean;
  }> = [
    {
      projDest: [{ server: 'https://team1-*', namespace: 'default' }],
      clusters: [],
      appDest: { server: 'https://team1-something.com', namespace: 'default' },
      isPermitted: false,
    },
    {
      projDest: [{ server: 'https://my-cluster.123.com', namespace: 'default' }],
      appDest: { server: 'https://my-cluster.123.com', namespace: 'default' },
      clusters: [{ server: 'https://my-cluster.123.com' }],
      isPermitted: true,
    },
    {
      projDest: [{ server: 'https://my-cluster.123.com', namespace: 'default' }],
      appDest: { server: 'https://some-other-cluster.example.com', namespace: 'default' },
      clusters: [{ server: 'https://my-cluster.123.com' }],
      isPermitted: false,
    },
    {
      projDest: [{ name: 'some-server', namespace: 'default' }],
      clusters: [],
      appDest: { name: 'some-server', namespace: 'default' },
      isPermitted: false,
    },
    {
      projDest: [{ name: 'some-other-server', namespace: 'default' }],
      appDest: { name: 'some-other-server', namespace: 'default' },
      clusters: [{ name: 'some-other-server' }],
      isPermitted: true,
    },
    {
      projDest: [{ name: 'some-server', namespace: 'default' }],
      appDest: { name: 'some-other-server', namespace: 'default' },
      clusters: [{ name: 'some-server' }],
      isPermitted: false,
    },
  ];
  for (const [i, row] of rows.entries()) {
    test(`row ${i}: ${JSON.stringify(row.appDest)} with project clusters ${JSON.stringify(row.clusters)} → ${row.isPermitted ? 'permitted' : 'refused'}`, () => {
      assert.equal(permitted(project(row.projDest, true), row.appDest, row.clusters), row.isPermitted);
    });
  }

  test("without permitOnlyProjectScopedClusters a matched destination needs no project cluster (Argo CD's default)", () => {
    const p = project([{ server: 'https://team1-*', namespace: 'default' }], false);
    assert.equal(permitted(p, { server: 'https://team1-something.com', namespace: 'default' }, []), true);
  });

  test("the refusal is Argo CD's message, naming the detail that decided", () => {
    const p = project([{ server: '*', namespace: '*' }], true);
    const [v] = checkApplicationLimits(p, app({ server: 'https://other.example', namespace: 'web' }), {
      server: 'https://other.example',
      name: 'other',
    });
    assert.equal(
      v?.message,
      "application destination server 'https://other.example' and namespace 'web' do not match any of the allowed destinations in project 'foo-project'",
    );
    assert.match(v?.detail ?? '', /permitOnlyProjectScopedClusters/);
  });

  test("a namespaced object's namespace is held to it too (validateSyncPermissions: namespace web is not permitted)", () => {
    const p = project([{ server: '*', namespace: '*' }], true);
    const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'web' } };
    const check = (scoped: Array<{ server: string; name: string }>) =>
      checkResourceLimits({
        project: { ...p, spec: { ...p.spec, namespaceResourceWhitelist: [{ group: '*', kind: '*' }] } },
        cluster: { server: 'https://other.example', name: 'other' },
        destinationNamespace: 'web',
        objects: [cm],
        isNamespaced: () => true,
        projectClusters: scoped,
      }).map((v) => v.message);
    assert.deepEqual(check([]), ["namespace web is not permitted in project 'foo-project'"]);
    assert.deepEqual(check([{ server: 'https://other.example', name: 'other' }]), []);
  });
});

describe("a project's own clusters are its destinations (Argo CD GetAppProjectByName)", () => {
  const clusters = [
    { name: 'a', server: 'https://a.example', project: 'foo-project' },
    { name: 'b', server: 'https://b.example', project: 'foo-project', namespaces: ['one', 'two'] },
    { name: 'c', server: 'https://c.example', project: 'bar-project' },
    { name: 'd', server: 'https://d.example' },
  ];

  test("only the Secrets whose `project` is the project's name", () => {
    assert.deepEqual(
      projectClusters(clusters, 'foo-project').map((c) => c.name),
      ['a', 'b'],
    );
  });

  test("namespace '*' for a whole cluster, each listed namespace for a namespace-scoped one", () => {
    assert.deepEqual(implicitDestinations(projectClusters(clusters, 'foo-project')), [
      { server: 'https://a.example', namespace: '*' },
      { server: 'https://b.example', namespace: 'one' },
      { server: 'https://b.example', namespace: 'two' },
    ]);
  });

  test('appended after the destinations the project writes; a project with no cluster is the same object', () => {
    const p = project([{ server: 'https://kubernetes.default.svc', namespace: 'x' }], false);
    const v = withProjectClusters(p, clusters);
    assert.deepEqual(
      v.spec.destinations?.map((d) => d.server),
      ['https://kubernetes.default.svc', 'https://a.example', 'https://b.example', 'https://b.example'],
    );
    assert.equal(withProjectClusters(project([], false, 'nobody'), clusters).spec.destinations?.length, 0);
    const lone = project([], false, 'nobody');
    assert.equal(withProjectClusters(lone, clusters), lone);
  });

  test("so a project with no destinations may use its own cluster, and not another project's", () => {
    const p = withProjectClusters(project([], true), clusters);
    const scoped = projectClusters(clusters, 'foo-project');
    const check = (server: string, namespace: string) =>
      checkApplicationLimits(p, app({ server, namespace }), { server, name: '' }, scoped).length === 0;
    assert.equal(check('https://a.example', 'anything'), true);
    assert.equal(check('https://b.example', 'one'), true);
    assert.equal(check('https://b.example', 'three'), false);
    assert.equal(check('https://c.example', 'anything'), false);
  });
});

describe('namespace-scoped clusters (gitops-engine GetManagedLiveObjs)', () => {
  const scoped = { namespaces: ['team-a', 'team-b'] };
  const cm = (namespace: string) => ({ kind: 'ConfigMap', name: 'c', namespace });
  const role = { kind: 'ClusterRole', name: 'reader', namespace: '' };

  test('a cluster with no namespaces manages everything', () => {
    assert.equal(namespacedModeRefusal({}, [cm('anywhere'), role]), undefined);
    assert.equal(namespacedModeRefusal({ namespaces: [] }, [role]), undefined);
  });

  test('objects in the listed namespaces are managed', () => {
    assert.equal(namespacedModeRefusal(scoped, [cm('team-a'), cm('team-b')]), undefined);
  });

  test('an object in another namespace: namespace "x" for ConfigMap "c" is not managed', () => {
    assert.equal(
      namespacedModeRefusal(scoped, [cm('team-a'), cm('team-c')]),
      'namespace "team-c" for ConfigMap "c" is not managed',
    );
  });

  test('a cluster-scoped object without clusterResources: cluster level ClusterRole "reader" can not be managed when in namespaced mode', () => {
    assert.equal(
      namespacedModeRefusal(scoped, [role]),
      'cluster level ClusterRole "reader" can not be managed when in namespaced mode',
    );
    assert.equal(namespacedModeRefusal({ ...scoped, clusterResources: true }, [role]), undefined);
  });

  test('clusterResources does not open other namespaces', () => {
    assert.equal(
      namespacedModeRefusal({ ...scoped, clusterResources: true }, [cm('team-c')]),
      'namespace "team-c" for ConfigMap "c" is not managed',
    );
  });
});
