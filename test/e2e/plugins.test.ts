// Config management plugins end to end, on the real control plane: a plugin source with no plugin
// configured is a ComparisonError in Argo CD's words and nothing of its folder is applied (the
// audit log shows no write to its namespace), whether spec.source.plugin names it or a source
// parameter file sets it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestControlPlane } from '../support/index.ts';
import { applyRaw } from '../support/index.ts';
import {
  application,
  condition,
  startDeployersPlane,
  startFixture,
  waitForApp,
  type Fixture,
} from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

// argocd-vault-plugin's input: a Secret whose values are placeholders the plugin would fill in.
const SECRET = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: <password>\n';
const CM = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: beside\ndata:\n  a: "1"\n';

before(async () => {
  cp = await startDeployersPlane({
    settings: { 'application.sync.impersonation.enabled': 'true' },
    project: 'plugins',
    namespaces: ['avp', 'by-file'],
  });
  fx = await startFixture(cp, {
    'avp/secret.yaml': SECRET,
    'avp/cm.yaml': CM,
    'by-file/secret.yaml': SECRET,
    'by-file/.argocd-source.yaml': 'plugin:\n  name: argocd-vault-plugin\n',
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

function pluginApp(name: string, plugin: Record<string, unknown> | undefined) {
  const base = application(name, fx.repo.url, {
    project: 'plugins',
    path: name,
    destination: { server: 'https://kubernetes.default.svc', namespace: name },
  });
  const spec = base['spec'] as Record<string, Record<string, unknown>>;
  return { ...base, spec: { ...spec, source: { ...spec['source'], ...(plugin ? { plugin } : {}) } } };
}

/** Every write the API server recorded of the folder's objects in `ns`, dry-runs included. */
async function writesIn(ns: string) {
  return (await cp.readAudit()).filter(
    (r) =>
      r.namespace === ns &&
      ['secrets', 'configmaps'].includes(r.resource ?? '') &&
      ['db', 'beside'].includes(r.name ?? '') &&
      ['create', 'update', 'patch', 'delete'].includes(r.verb),
  );
}

for (const [name, plugin, message] of [
  [
    'avp',
    { name: 'argocd-vault-plugin', env: [{ name: 'AVP_TYPE', value: 'vault' }] },
    'could not find cmp-server plugin with name "argocd-vault-plugin" supporting the given repository',
  ],
  [
    'by-file',
    undefined,
    'could not find cmp-server plugin with name "argocd-vault-plugin" supporting the given repository',
  ],
] as const) {
  test(`a plugin ${plugin ? 'named by spec.source.plugin' : 'set by .argocd-source.yaml'} that is not configured is a ComparisonError naming it; nothing is applied`, async () => {
    await applyRaw(cp.admin, pluginApp(name, plugin));
    const app = await waitForApp(cp, name, 'a ComparisonError', (a) => condition(a, 'ComparisonError') !== undefined);
    assert.match(
      condition(app, 'ComparisonError') ?? '',
      new RegExp(`CMP processing failed for application "${name}": ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
    // An automated sync would have been started by now, had the folder rendered.
    await new Promise((r) => setTimeout(r, 3000));
    assert.deepEqual(await writesIn(name), [], 'no write reached the namespace');
    assert.equal((app.status?.['operationState'] as unknown) ?? undefined, undefined, 'no operation was started');
  });
}
