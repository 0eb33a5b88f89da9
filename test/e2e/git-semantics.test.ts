// Sources rendered as Argo CD renders them, end to end on a real control plane with the controller
// and its child renderer: a source parameter file that makes a folder a Helm source gets its chart
// dependencies; `operation.sync.manifests` (`argocd app sync --local`) are applied instead of the
// repository's, and one that does not parse is Argo CD's "Failed to load local manifests".
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { applyRaw, listRaw, startControlPlane } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { TestRepo } from '../support/git.ts';
import { chartArchive, startHelmRepo, type HelmRepoServer } from '../support/helm.ts';
import {
  IN_CLUSTER,
  NS,
  condition,
  deployer,
  grantControllerRights,
  guestbookFiles,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

const SA = 'deployer';
const NAMESPACES = ['gs-helm', 'gs-local'];

let cp: TestControlPlane;
let fx: Fixture;
let charts: HelmRepoServer;
const repos: TestRepo[] = [];

async function newRepo(files: Record<string, string>): Promise<TestRepo> {
  const r = await TestRepo.create();
  repos.push(r);
  await r.commit(files);
  return r;
}

function app(name: string, namespace: string, spec: Record<string, unknown>, proj = 'gs'): KubeObject {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace: NS },
    spec: {
      project: proj,
      destination: { server: IN_CLUSTER, namespace },
      syncPolicy: { automated: { prune: true } },
      ...spec,
    },
  } as unknown as KubeObject;
}

const synced = (a: { status?: Record<string, unknown> }) =>
  operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced';

async function configMapsIn(namespace: string): Promise<string[]> {
  const list = await listRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace });
  return list
    .map((c) => c.metadata.name)
    .filter((n) => n !== 'kube-root-ca.crt')
    .sort();
}

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  for (const ns of NAMESPACES) await deployer(cp, ns, SA);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  const dsa = [{ server: IN_CLUSTER, namespace: 'gs-*', defaultServiceAccount: SA }];
  await applyRaw(cp.admin, project('gs', { destinationServiceAccounts: dsa }));
  charts = await startHelmRepo({ plain: true });
  charts.setCharts([{ name: 'lib', version: '2.1.0', archive: chartArchive('lib', '2.1.0') }]);
  fx = await startFixture(cp, guestbookFiles(), { rendererLogs: true });
});

after(async () => {
  await fx?.stop();
  await charts?.close();
  for (const r of repos) await r.remove();
  await cp?.stop();
});

test('a source parameter file that makes a folder a Helm source gets its chart dependencies', async () => {
  // Chart.yaml and kustomization.yaml: discovery says Kustomize; the file's `helm` block says Helm.
  const repo = await newRepo({
    'both/Chart.yaml': `apiVersion: v2\nname: umbrella\nversion: 1.0.0\ndependencies:\n- name: lib\n  version: 2.1.0\n  repository: ${charts.url}\n`,
    'both/templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: umbrella\n',
    'both/kustomization.yaml': 'resources: []\n',
    'both/.argocd-source.yaml': 'helm:\n  releaseName: fromfile\n',
  });
  await applyRaw(
    cp.admin,
    app('gs-helm', 'gs-helm', { source: { repoURL: repo.url, targetRevision: 'HEAD', path: 'both' } }),
  );
  const a = await waitForApp(
    cp,
    'gs-helm',
    'synced or failed',
    (x) => synced(x) || condition(x, 'ComparisonError') !== undefined,
  );
  assert.equal(condition(a, 'ComparisonError'), undefined);
  assert.deepEqual(await configMapsIn('gs-helm'), ['lib-fromfile', 'umbrella']);
});

test("local manifests (argocd app sync --local) are applied instead of the repository's, and stay the target state", async () => {
  const repo = await newRepo({ 'app/git.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-git\n' });
  const spec = { source: { repoURL: repo.url, targetRevision: 'HEAD', path: 'app' }, syncPolicy: {} };
  const local = [
    JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'from-local' }, data: { a: '1' } }),
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-local-yaml\n',
  ];
  const op = (manifests: string[]) => ({
    operation: { sync: { revision: 'HEAD', manifests }, initiatedBy: { username: 'alice' } },
  });
  await applyRaw(cp.admin, { ...app('gs-local', 'gs-local', spec), ...op(local) } as unknown as KubeObject);
  const a = await waitForApp(cp, 'gs-local', 'synced', synced);
  assert.deepEqual(await configMapsIn('gs-local'), ['from-local', 'from-local-yaml']);
  // Argo CD compares with the last operation's manifests while it is the last operation: Synced.
  assert.equal((a.status?.['sync'] as { status?: string }).status, 'Synced');

  // An entry that is not one object fails the operation, with Argo CD's message; nothing applied.
  await applyRaw(cp.admin, {
    ...app('gs-local', 'gs-local', spec),
    ...op(['kind: [unclosed']),
  } as unknown as KubeObject);
  const failed = await waitForApp(cp, 'gs-local', 'the operation failed', (x) =>
    ['Error', 'Failed'].includes(operationPhase(x) ?? ''),
  );
  const message = (failed.status?.['operationState'] as { message?: string }).message ?? '';
  assert.match(message, /Failed to load local manifests: operation\.sync\.manifests\[0\]/);
  assert.deepEqual(await configMapsIn('gs-local'), ['from-local', 'from-local-yaml']);
});
