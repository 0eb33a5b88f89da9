// A Directory source of .jsonnet files end to end, on a real control plane with the controller and
// its child renderer: the Application is Argo CD YAML using spec.source.directory.jsonnet (an ext
// var with a build variable, a TLA as code, a lib from the repository root), what lands in the
// cluster is what Argo CD v3.6.1's repo-server evaluates, and an import outside the repository is
// Argo CD's error with nothing applied.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { parse } from 'yaml';
import { applyRaw, getRaw } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { NS, condition, startDeployersPlane, startFixture, waitForApp } from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;
const NAMESPACES = ['jsonnet-app', 'jsonnet-attack'];

/** An Application as Argo CD's documentation writes one, with `source` as YAML. */
function application(name: string, source: string): KubeObject {
  return parse(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ${name}
  namespace: ${NS}
spec:
  project: jsonnet
  destination:
    server: https://kubernetes.default.svc
    namespace: ${name}
  syncPolicy:
    automated: {prune: true}
  source:
    repoURL: ${fx.repo.url}
    targetRevision: HEAD
${source.replace(/^/gm, '    ')}
`) as KubeObject;
}

const synced = (a: { status?: Record<string, unknown> }) =>
  (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced';
const configMap = (ns: string, name: string) =>
  getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name, namespace: ns });

before(async () => {
  cp = await startDeployersPlane({
    settings: { 'application.sync.impersonation.enabled': 'true' },
    project: 'jsonnet',
    namespaces: NAMESPACES,
  });
  fx = await startFixture(cp, {
    'jsonnet-app/main.jsonnet': `local k = import 'k.libsonnet';
function(replicas) [
  k.configMap(std.extVar('app') + '-settings', { replicas: std.toString(replicas) }),
  k.configMap('second', { env: std.extVar('env') }),
]
`,
    'jsonnet-app/plain.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n',
    'lib/k.libsonnet':
      "{ configMap(name, data): { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: name }, data: data } }",
    'jsonnet-attack/main.jsonnet':
      "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'stolen' }, data: { p: importstr '/etc/passwd' } }",
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('directory.jsonnet: ext vars with build variables, a TLA as code and libs are what is applied', async () => {
  await applyRaw(
    cp.admin,
    application(
      'jsonnet-app',
      `path: jsonnet-app
directory:
  jsonnet:
    extVars:
    - name: app
      value: $ARGOCD_APP_NAME
    - name: env
      value: prod
    tlas:
    - name: replicas
      value: "1 + 2"
      code: true
    libs:
    - lib`,
    ),
  );
  await waitForApp(cp, 'jsonnet-app', 'Synced', synced);
  assert.deepEqual((await configMap('jsonnet-app', 'jsonnet-app-settings'))?.['data'], { replicas: '3' });
  assert.deepEqual((await configMap('jsonnet-app', 'second'))?.['data'], { env: 'prod' });
  assert.ok(await configMap('jsonnet-app', 'plain'), 'the YAML beside the jsonnet is applied too');
});

test("an import outside the repository is Argo CD's error and nothing is applied", async () => {
  await applyRaw(cp.admin, application('jsonnet-attack', 'path: jsonnet-attack'));
  const failed = await waitForApp(cp, 'jsonnet-attack', 'a ComparisonError', (a) => !!condition(a, 'ComparisonError'));
  assert.match(
    condition(failed, 'ComparisonError') ?? '',
    /Failed to evaluate jsonnet "main\.jsonnet": RUNTIME ERROR: jsonnet import "\/etc\/passwd" resolves outside repository root/,
  );
  assert.equal(await configMap('jsonnet-attack', 'stolen'), undefined);
});
