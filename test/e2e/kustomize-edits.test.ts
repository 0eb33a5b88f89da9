// spec.source.kustomize's overrides (namePrefix, images, labels with forceCommonLabels,
// labelWithoutSelector and labelIncludeTemplates, annotations, namespace, replicas, patches,
// components) and spec.source.helm.fileParameters, end to end on a real control plane with the controller and its child renderer: the Applications are
// Argo CD YAML as its documentation writes them (a replica count as a string and as an integer), and
// what lands in the cluster is what Argo CD v3.6.1's repo-server renders for them.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { parse } from 'yaml';
import { applyRaw, getRaw } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { NS, condition, startDeployersPlane, startFixture, waitForApp } from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;
const NAMESPACES = ['kedits', 'kmissing', 'hfiles', 'klabels'];

const deploy = (name: string) =>
  `apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ${name}}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: ${name}}}\n  template:\n    metadata: {labels: {app: ${name}}}\n    spec:\n      containers: [{name: c, image: nginx}]\n`;

/** An Application as Argo CD's documentation writes one, with `source` as YAML. */
function application(name: string, source: string): KubeObject {
  return parse(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ${name}
  namespace: ${NS}
spec:
  project: edits
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
const get = (kind: string, apiVersion: string, ns: string, name: string) =>
  getRaw(cp.admin, { apiVersion, kind, name, namespace: ns });

before(async () => {
  cp = await startDeployersPlane({
    settings: { 'application.sync.impersonation.enabled': 'true' },
    project: 'edits',
    namespaces: NAMESPACES,
  });
  fx = await startFixture(cp, {
    'kedits/kustomization.yaml': 'namePrefix: base-\nresources: [web.yaml, api.yaml]\n',
    'kedits/web.yaml': deploy('web'),
    'kedits/api.yaml': deploy('api'),
    'kedits/components/settings/kustomization.yaml':
      'apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [cm.yaml]\n',
    'kedits/components/settings/cm.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: "1"}\n',
    'kmissing/kustomization.yaml': 'resources: [cm.yaml]\n',
    'kmissing/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: never}\n',
    'hfiles/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
    'hfiles/templates/cm.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-file\ndata:\n  script: {{ .Values.script | quote }}\n',
    'hfiles/files/script.sh': 'echo hello\n',
    'klabels/kustomization.yaml':
      'namePrefix: base-\nnamespace: elsewhere\nresources: [web.yaml]\ncommonAnnotations: {note: base}\nlabels:\n- pairs: {tier: base}\n  includeTemplates: true\nimages:\n- {name: nginx, newName: registry.local/nginx}\n',
    'klabels/web.yaml': deploy('web'),
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test('kustomize replicas (count as a string and an integer), patches and components are what is applied', async () => {
  await applyRaw(
    cp.admin,
    application(
      'kedits',
      `path: kedits
kustomize:
  replicas:
  - name: web
    count: "3"
  - name: api
    count: 2
  patches:
  - target:
      kind: Deployment
      name: web
    patch: |-
      - op: add
        path: /metadata/annotations
        value: {patched: "yes"}
  components:
  - components/settings`,
    ),
  );
  await waitForApp(cp, 'kedits', 'Synced', synced);
  const web = await get('Deployment', 'apps/v1', 'kedits', 'base-web');
  const api = await get('Deployment', 'apps/v1', 'kedits', 'base-api');
  assert.equal((web?.['spec'] as { replicas?: number } | undefined)?.replicas, 3);
  assert.equal((api?.['spec'] as { replicas?: number } | undefined)?.replicas, 2);
  assert.equal((web?.['metadata'] as { annotations?: Record<string, string> }).annotations?.['patched'], 'yes');
  // The component is part of the app's kustomization: its ConfigMap gets the namePrefix too.
  assert.ok(await get('ConfigMap', 'v1', 'kedits', 'base-settings'));
});

test("namePrefix, namespace and images replace the kustomization's own; forced labels without selectors, annotations", async () => {
  await applyRaw(
    cp.admin,
    application(
      'klabels',
      `path: klabels
kustomize:
  namePrefix: app-
  namespace: klabels
  images: [nginx:1.27]
  commonLabels: {tier: front}
  forceCommonLabels: true
  labelWithoutSelector: true
  labelIncludeTemplates: true
  commonAnnotations: {note: app, by: $ARGOCD_APP_NAME}
  forceCommonAnnotations: true
  commonAnnotationsEnvsubst: true`,
    ),
  );
  await waitForApp(cp, 'klabels', 'Synced', synced);
  // Argo CD's `kustomize edit set nameprefix` and `set namespace` replace the file's own.
  const web = await get('Deployment', 'apps/v1', 'klabels', 'app-web');
  assert.ok(web, 'app-web in klabels');
  type Web = {
    metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec: {
      selector: { matchLabels: Record<string, string> };
      template: { metadata: { labels: Record<string, string> }; spec: { containers: Array<{ image: string }> } };
    };
  };
  const w = web as unknown as Web;
  assert.equal(w.metadata.labels?.['tier'], 'front');
  assert.equal(w.spec.template.metadata.labels['tier'], 'front');
  assert.deepEqual(w.spec.selector.matchLabels, { app: 'web' });
  assert.equal(w.metadata.annotations?.['note'], 'app');
  assert.equal(w.metadata.annotations?.['by'], 'klabels');
  assert.equal(w.spec.template.spec.containers[0]?.image, 'nginx:1.27');
});

test("a missing component is kustomize's error and nothing is applied", async () => {
  await applyRaw(cp.admin, application('kmissing', 'path: kmissing\nkustomize:\n  components: [nope]'));
  const failed = await waitForApp(cp, 'kmissing', 'a ComparisonError', (a) => !!condition(a, 'ComparisonError'));
  assert.match(
    condition(failed, 'ComparisonError') ?? '',
    /kustomize edit add component of 'kmissing' failed: .*nope has no match/s,
  );
  assert.equal(await get('ConfigMap', 'v1', 'kmissing', 'never'), undefined);
});

test('helm fileParameters are --set-file from the repository', async () => {
  await applyRaw(
    cp.admin,
    application('hfiles', 'path: hfiles\nhelm:\n  fileParameters:\n  - name: script\n    path: files/script.sh'),
  );
  await waitForApp(cp, 'hfiles', 'Synced', synced);
  const cm = await get('ConfigMap', 'v1', 'hfiles', 'from-file');
  assert.deepEqual(cm?.['data'], { script: 'echo hello\n' });
});
