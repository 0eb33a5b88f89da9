// One chart rendered by the renderer under both helm majors: Helm 4.3.1 (Argo CD v3.6.1's, the
// renderer's default) and Helm 3.22 (the renderer's before). What differs is what
// docs/semantics.md ("Helm 3 and Helm 4") says: the default .Capabilities.KubeVersion when the
// destination's version is not known, .Capabilities.HelmVersion, and a kube version's suffix, which
// Helm 4 keeps and the renderer drops first, as Argo CD's parseKubeVersion does. Objects, their
// order, CRDs, test hooks and schema errors are the same.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceError, SourceRenderer, type RenderInput } from '../../src/source/index.ts';
import { TestRepo } from '../support/git.ts';
import { helm3ToolsDir, toolsDir } from './tools.ts';

const CHART = {
  'c/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
  'c/values.yaml': 'replicas: 1\n',
  'c/values.schema.json': JSON.stringify({ type: 'object', properties: { replicas: { type: 'integer' } } }),
  'c/crds/crd.yaml':
    'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.example.com\n' +
    'spec:\n  group: example.com\n  names: {kind: Thing, plural: things}\n  scope: Namespaced\n' +
    '  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n',
  'c/templates/cm.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-caps\n  labels:\n' +
    '    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}\ndata:\n' +
    '  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n' +
    '  helm: {{ regexFind "^v[0-9]+" .Capabilities.HelmVersion.Version | quote }}\n' +
    '  apps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}\n  replicas: {{ .Values.replicas | quote }}\n',
  'c/templates/svc.yaml':
    'apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n---\n' +
    'apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1}\n',
  'c/templates/tests/t.yaml':
    'apiVersion: v1\nkind: Pod\nmetadata: {name: t, annotations: {helm.sh/hook: test}}\n' +
    'spec: {containers: [{name: c, image: x}]}\n',
};

describe('a chart under Helm 3 and Helm 4', () => {
  let top: string;
  let repo: TestRepo;
  let n = 0;
  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-majors-'));
    repo = await TestRepo.create(path.join(top, 'repo'));
    await repo.commit(CHART);
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  const render = (dir: string, helm: Record<string, unknown> = {}, extra: Partial<RenderInput> = {}) =>
    new SourceRenderer({
      cacheDir: path.join(top, `cache-${++n}`),
      toolsDir: dir,
      allowLocalRepositories: true,
    }).render({ source: { repoURL: repo.dir, path: 'c', helm } as ApplicationSource, appName: 'app', ...extra });
  const both = async (helm: Record<string, unknown> = {}, extra: Partial<RenderInput> = {}) => ({
    v3: await render(helm3ToolsDir(), helm, extra),
    v4: await render(toolsDir(), helm, extra),
  });
  const kinds = (r: Awaited<ReturnType<typeof render>>) =>
    r.objects.map((o) => `${o.object.kind}/${o.object.metadata.name}`);
  const caps = (r: Awaited<ReturnType<typeof render>>) =>
    (r.objects.find((o) => o.object.kind === 'ConfigMap')?.object as unknown as { data: Record<string, string> }).data;

  test('the same objects in the same order, CRDs included, tests kept; only the Helm version differs', async () => {
    const { v3, v4 } = await both({}, { kubeVersion: '1.34.3', apiVersions: ['apps/v1'] });
    assert.deepEqual(kinds(v4), [
      'CustomResourceDefinition/things.example.com',
      'Namespace/ns1',
      'ConfigMap/app-caps',
      'Service/s',
      'Pod/t',
    ]);
    assert.deepEqual(kinds(v3), kinds(v4));
    assert.deepEqual(caps(v3), { kube: 'v1.34.3', helm: 'v3', apps: 'true', replicas: '1' });
    assert.deepEqual(caps(v4), { kube: 'v1.34.3', helm: 'v4', apps: 'true', replicas: '1' });
    const skipped = await both({ skipCrds: true, skipTests: true });
    assert.deepEqual(kinds(skipped.v3), ['Namespace/ns1', 'ConfigMap/app-caps', 'Service/s']);
    assert.deepEqual(kinds(skipped.v4), kinds(skipped.v3));
  });

  test("without the destination's version each major has its own default Kubernetes version", async () => {
    const { v3, v4 } = await both();
    // Helm 3 built without its Makefile's flags says v1.20.0; Helm 4 derives it from its client-go (v0.37).
    assert.equal(caps(v3).kube, 'v1.20.0');
    assert.equal(caps(v4).kube, 'v1.37.0');
  });

  test("a kube version's suffix is dropped before helm, as Argo CD does: Helm 4 would keep it", async () => {
    const { v3, v4 } = await both({ kubeVersion: 'v1.30.2-gke.1' });
    assert.equal(caps(v3).kube, 'v1.30.2');
    assert.equal(caps(v4).kube, 'v1.30.2');
  });

  test('a value against the schema is the same error under both', async () => {
    for (const dir of [helm3ToolsDir(), toolsDir()])
      await assert.rejects(
        render(dir, { parameters: [{ name: 'replicas', value: 'x', forceString: true }] }),
        (err) => {
          assert.ok(err instanceof SourceError);
          assert.match(
            err.message,
            /values don't meet the specifications of the schema\(s\).*\n.*c:\n- at '\/replicas': got string, want integer/s,
          );
          return true;
        },
      );
  });
});
