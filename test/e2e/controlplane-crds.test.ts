// deploy/crds/ on a real API server: structural and Established, the design document's YAML
// applies unchanged, Argo CD fields the schema does not list survive strict validation, wrong
// types are refused naming the field, status is an ordinary field (as in Argo CD's CRD) shown in the printer columns.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import type { ApiError, KubeObject, TestControlPlane } from '../support/index.ts';
import {
  applyRaw,
  createNamespace,
  getRaw,
  parseYamlDocuments,
  readYamlFile,
  request,
  requestOk,
  startControlPlane,
} from '../support/index.ts';

const examples = join(fileURLToPath(new URL('../support/fixtures/', import.meta.url)), 'design-examples.yaml');
let cp: TestControlPlane;

before(async () => {
  cp = await startControlPlane();
  await createNamespace(cp.admin, 'argocd');
});

after(() => cp?.stop());

/** As `kubectl apply --server-side` sends it: unknown fields are errors, not warnings. */
const kubectlApply = { fieldManager: 'kubectl', fieldValidation: 'Strict' } as const;

test('both CRDs are Established, their names accepted, and their schemas structural', async () => {
  for (const name of ['applications.argoproj.io', 'appprojects.argoproj.io']) {
    const crd = (await requestOk(cp.admin, {
      path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
    })) as {
      status: { conditions: { type: string; status: string; message: string }[] };
    };
    const conditions = Object.fromEntries(crd.status.conditions.map((c) => [c.type, c.status]));
    assert.equal(conditions['Established'], 'True', name);
    assert.equal(conditions['NamesAccepted'], 'True', name);
    assert.equal(conditions['NonStructuralSchema'], undefined, `${name}: ${JSON.stringify(crd.status.conditions)}`);
  }
});

test("the design document's Application and AppProject YAML applies unchanged and reads back as written", async () => {
  const docs = await readYamlFile(examples);
  assert.equal(docs.length, 6);
  for (const doc of docs) {
    const what = `${doc.kind} ${doc.metadata.name} (${JSON.stringify(doc['spec']).slice(0, 80)}...)`;
    await applyRaw(cp.admin, doc, kubectlApply);
    const live = await getRaw(cp.admin, {
      apiVersion: doc.apiVersion,
      kind: doc.kind,
      namespace: doc.metadata.namespace,
      name: doc.metadata.name,
    });
    assert.deepEqual(live?.['spec'], doc['spec'], what);
    assert.deepEqual(live?.metadata['finalizers'], doc.metadata['finalizers'], what);
  }
});

const fullApplication: KubeObject = {
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Application',
  metadata: { name: 'everything', namespace: 'argocd' },
  spec: {
    project: 'my-project',
    source: {
      repoURL: 'https://example.com/repo.git',
      targetRevision: 'main',
      path: 'apps/web',
      directory: { recurse: true, include: '*.yaml', jsonnet: { tlas: [{ name: 'a', value: 'b' }] } },
      helm: {
        releaseName: 'web',
        valuesObject: { replicas: 3, nested: { list: [1, 'two', { three: true }] } },
        parameters: [{ name: 'image.tag', value: 'v1' }],
      },
      kustomize: {
        namePrefix: 'p-',
        images: ['nginx:1.27'],
        patches: [{ target: { kind: 'Deployment' }, patch: '- op: add' }],
      },
      aFieldFromAFutureArgoCD: { anything: ['goes'] },
    },
    sources: [{ repoURL: 'https://example.com/values.git', ref: 'values' }],
    destination: { name: 'in-cluster', namespace: 'web' },
    syncPolicy: {
      automated: { prune: true, selfHeal: true, allowEmpty: false },
      syncOptions: ['CreateNamespace=true', 'ServerSideApply=true'],
      retry: { limit: 5, backoff: { duration: '5s', factor: 2, maxDuration: '3m' } },
      managedNamespaceMetadata: { labels: { team: 'web' } },
    },
    ignoreDifferences: [{ group: 'apps', kind: 'Deployment', jsonPointers: ['/spec/replicas'] }],
    info: [{ name: 'owner', value: 'web-team' }],
    revisionHistoryLimit: 10,
  },
  operation: {
    sync: {
      revision: 'abc123',
      prune: true,
      dryRun: false,
      syncOptions: ['Validate=false'],
      resources: [{ group: 'apps', kind: 'Deployment', name: 'web', namespace: 'web' }],
      syncStrategy: { hook: {} },
    },
    initiatedBy: { username: 'alice', automated: false },
    retry: { limit: 2 },
  },
};

test('Argo CD fields this schema does not list are kept, also under strict field validation', async () => {
  await applyRaw(cp.admin, fullApplication, kubectlApply);
  const live = await getRaw(cp.admin, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    namespace: 'argocd',
    name: 'everything',
  });
  assert.deepEqual(live?.['spec'], fullApplication['spec']);
  assert.deepEqual(live?.['operation'], fullApplication['operation']);
});

// Server-side apply reports a type mismatch while building the typed patch (HTTP 500, as kubectl
// shows it), and a missing required field in validation (422). Either way nothing is stored.
test('wrong types and missing required fields are refused, naming the field', async () => {
  const cases: { obj: KubeObject; status: number; message: RegExp }[] = [
    {
      obj: {
        ...fullApplication,
        metadata: { name: 'bad-retry', namespace: 'argocd' },
        spec: { ...(fullApplication['spec'] as object), syncPolicy: { retry: { limit: 'three' } } },
      },
      status: 500,
      message:
        /\(argocd\/bad-retry; argoproj\.io\/v1alpha1, Kind=Application\): \.spec\.syncPolicy\.retry\.limit: expected numeric \(int or float\), got string/,
    },
    {
      obj: {
        ...fullApplication,
        metadata: { name: 'bad-prune', namespace: 'argocd' },
        spec: { ...(fullApplication['spec'] as object), syncPolicy: { automated: { prune: 'yes' } } },
      },
      status: 500,
      message: /\.spec\.syncPolicy\.automated\.prune: expected boolean/,
    },
    {
      obj: {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'Application',
        metadata: { name: 'no-destination', namespace: 'argocd' },
        spec: { project: 'default' },
      },
      status: 422,
      message: /^Application\.argoproj\.io "no-destination" is invalid: spec\.destination: Required value$/,
    },
    {
      obj: {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'AppProject',
        metadata: { name: 'no-server', namespace: 'argocd' },
        spec: { destinationServiceAccounts: [{ namespace: 'a', defaultServiceAccount: 'sa' }] },
      },
      status: 422,
      message:
        /^AppProject\.argoproj\.io "no-server" is invalid: spec\.destinationServiceAccounts\[0\]\.server: Required value$/,
    },
    {
      // The design document's first sketch lists destinations as strings; Argo CD's CRD refuses that too.
      obj: parseYamlDocuments(
        "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: sketch, namespace: argocd}\nspec:\n  sourceRepos: ['*']\n  destinations: ['*']\n",
      )[0]!,
      status: 500,
      message: /\(argocd\/sketch; argoproj\.io\/v1alpha1, Kind=AppProject\): \.spec\.destinations\[0\]: expected map/,
    },
  ];
  for (const { obj, status, message } of cases) {
    await assert.rejects(applyRaw(cp.admin, obj, kubectlApply), (err: ApiError) => {
      assert.equal(err.status, status, err.message);
      assert.match(err.message, message);
      return true;
    });
    assert.equal(
      await getRaw(cp.admin, {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        namespace: 'argocd',
        name: obj.metadata.name,
      }),
      undefined,
    );
  }
});

test("status is an ordinary field, as in Argo CD's CRD: an update of the Application sets it, and the printer columns show it", async () => {
  const app: KubeObject = {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'columns', namespace: 'argocd' },
    spec: {
      project: 'my-project',
      source: { repoURL: 'https://example.com/r.git', path: '.' },
      destination: { server: 'https://kubernetes.default.svc', namespace: 'web' },
    },
    status: { sync: { status: 'Synced' } },
  };
  const applied = await applyRaw(cp.admin, app, { fieldManager: 'kubectl' });
  assert.deepEqual(applied['status'], { sync: { status: 'Synced' } }, 'no status subresource: status is kept');
  const sub = await request(cp.admin, {
    path: '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/columns/status',
  });
  assert.equal(sub.status, 404, 'there is no /status');

  const path = '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/columns';
  const status = {
    sync: { status: 'OutOfSync', revision: 'abc' },
    health: { status: 'Progressing' },
    somethingArgoCDAdds: { x: 1 },
  };
  await requestOk(cp.admin, {
    method: 'PATCH',
    path,
    contentType: 'application/json-patch+json',
    body: [{ op: 'add', path: '/status', value: status }],
  });
  const live = await getRaw(cp.admin, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    namespace: 'argocd',
    name: 'columns',
  });
  assert.deepEqual(live?.['status'], status);

  const table = (
    await request(cp.admin, {
      path: '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/columns',
      headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
    })
  ).body as { columnDefinitions: { name: string; priority: number }[]; rows: { cells: unknown[] }[] };
  const names = table.columnDefinitions.map((c) => c.name);
  const row = Object.fromEntries(names.map((n, i) => [n, table.rows[0]?.cells[i]]));
  assert.deepEqual(
    [row['Name'], row['Sync Status'], row['Health Status'], row['Project']],
    ['columns', 'OutOfSync', 'Progressing', 'my-project'],
  );
  assert.equal(table.columnDefinitions.find((c) => c.name === 'Project')?.priority, 0, 'Project shows without -o wide');
});
