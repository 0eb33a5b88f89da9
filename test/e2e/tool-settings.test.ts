// argocd-cm's tool settings end to end, on a real control plane with the controller and its child
// renderer: spec.source.kustomize.version runs the admin's kustomize.path.<version> (and an unknown
// version is Argo CD's error, nothing written), and helm.enable "false" reads a chart folder as
// plain YAML, as Argo CD's repo-server does (GetAppSourceType), instead of running helm.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { applyRaw, getRaw } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { toolsDir } from '../source/tools.ts';
import { application, condition, startDeployersPlane, startFixture, waitForApp } from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;
let top: string;
let marker: string;

const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  a: "1"\n`;
const NAMESPACES = ['kversion', 'kunknown', 'helmoff'];

function app(name: string, source: Record<string, unknown> = {}) {
  const base = application(name, fx.repo.url, {
    project: 'tools',
    path: name,
    destination: { server: 'https://kubernetes.default.svc', namespace: name },
  });
  const spec = base['spec'] as { source: Record<string, unknown> };
  return { ...base, spec: { ...spec, source: { ...spec.source, ...source } } };
}

const synced = (a: { status?: Record<string, unknown> }) =>
  (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced';
const configMap = (ns: string, name: string) =>
  getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name, namespace: ns });

before(async () => {
  top = await mkdtemp(path.join(os.tmpdir(), 'impersync-e2e-tools-'));
  // The admin's second kustomize: the real one behind a wrapper that leaves a mark.
  marker = path.join(top, 'admin-kustomize-ran');
  const wrapper = path.join(top, 'kustomize-v5.8.1');
  await writeFile(wrapper, `#!/bin/sh\ntouch '${marker}'\nexec '${path.join(toolsDir(), 'kustomize')}' "$@"\n`);
  await chmod(wrapper, 0o755);
  cp = await startDeployersPlane({
    settings: {
      'application.sync.impersonation.enabled': 'true',
      'kustomize.path.v5.8.1': wrapper,
      'helm.enable': 'false',
    },
    project: 'tools',
    namespaces: NAMESPACES,
  });
  fx = await startFixture(cp, {
    'kversion/kustomization.yaml': 'namePrefix: v-\nresources: [cm.yaml]\n',
    'kversion/cm.yaml': cm('one'),
    'kunknown/kustomization.yaml': 'resources: [cm.yaml]\n',
    'kunknown/cm.yaml': cm('never'),
    'helmoff/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
    'helmoff/templates/cm.yaml': cm('{{ .Release.Name }}-templated'),
    'helmoff/plain.yaml': cm('plain'),
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
  if (top) await rm(top, { recursive: true, force: true });
});

test("kustomize.version runs argocd-cm's kustomize.path.<version>; an unknown one is Argo CD's error", async () => {
  await applyRaw(cp.admin, app('kversion', { kustomize: { version: 'v5.8.1' } }));
  await applyRaw(cp.admin, app('kunknown', { kustomize: { version: 'v4.0.0' } }));
  await waitForApp(cp, 'kversion', 'Synced', synced);
  assert.ok(await configMap('kversion', 'v-one'), 'the kustomization was built and applied');
  assert.ok(existsSync(marker), "the admin's kustomize ran");
  const failed = await waitForApp(cp, 'kunknown', 'a ComparisonError', (a) => !!condition(a, 'ComparisonError'));
  assert.match(
    condition(failed, 'ComparisonError') ?? '',
    /error getting kustomize binary path: kustomize version v4\.0\.0 is not registered/,
  );
  assert.equal(await configMap('kunknown', 'never'), undefined);
});

test('helm.enable "false": a chart folder is applied as plain YAML, its templates not rendered', async () => {
  await applyRaw(cp.admin, app('helmoff'));
  const done = await waitForApp(cp, 'helmoff', 'Synced', synced);
  assert.equal((done.status?.['sourceType'] as string | undefined) ?? '', 'Directory');
  assert.ok(await configMap('helmoff', 'plain'));
  assert.equal(await configMap('helmoff', 'helmoff-templated'), undefined);
});
