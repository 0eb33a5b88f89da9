// A config management plugin end to end: Argo CD's real argocd-cmp-server (v3.6.1, from
// scripts/argocd-binaries) beside the controller's renderer, an Application naming the plugin with
// env and parameters, synced on the real control plane as the destination's ServiceAccount; the
// ConfigMap the plugin's shell script printed holds the values Argo CD's repo-server would pass.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestControlPlane } from '../support/index.ts';
import { applyRaw, getRaw } from '../support/index.ts';
import { pluginYaml, startCmpSidecars, type CmpSidecars } from '../support/cmp.ts';
import {
  application,
  operationPhase,
  startDeployersPlane,
  startFixture,
  waitForApp,
  type Fixture,
} from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;
let sidecars: CmpSidecars;

const GENERATE = `cat <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: greeting
data:
  greeting: "$ARGOCD_ENV_GREETING"
  color: "$PARAM_COLOR"
  app: "$ARGOCD_APP_NAME"
  namespace: "$ARGOCD_APP_NAMESPACE"
  file: "$(cat message.txt)"
EOF`;

before(async () => {
  sidecars = await startCmpSidecars({ greeter: pluginYaml('greeter', GENERATE) });
  cp = await startDeployersPlane({
    settings: { 'application.sync.impersonation.enabled': 'true' },
    project: 'plugins',
    namespaces: ['greet'],
  });
  fx = await startFixture(
    cp,
    { 'greet/message.txt': 'from git' },
    { rendererFlags: [`--plugin-sockets=${sidecars.socketDir}`] },
  );
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
  await sidecars?.stop();
});

test('an Application naming a plugin with env and parameters is rendered by the cmp-server and synced as its ServiceAccount', async () => {
  const base = application('greet', fx.repo.url, {
    project: 'plugins',
    path: 'greet',
    destination: { server: 'https://kubernetes.default.svc', namespace: 'greet' },
  });
  const spec = base['spec'] as Record<string, Record<string, unknown>>;
  const plugin = {
    name: 'greeter',
    env: [{ name: 'GREETING', value: 'hello from $ARGOCD_APP_NAME' }],
    parameters: [{ name: 'color', string: 'blue' }],
  };
  await applyRaw(cp.admin, { ...base, spec: { ...spec, source: { ...spec['source'], plugin } } });
  const app = await waitForApp(
    cp,
    'greet',
    'synced',
    (a) => operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string })?.status === 'Synced',
    90_000,
  );
  assert.equal((app.status?.['sourceType'] as string | undefined) ?? '', 'Plugin');
  const cm = await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'greeting', namespace: 'greet' });
  assert.deepEqual(cm?.['data'], {
    greeting: 'hello from greet',
    color: 'blue',
    app: 'greet',
    namespace: 'greet',
    file: 'from git',
  });
  const writes = (await cp.readAudit()).filter(
    (r) => r.resource === 'configmaps' && r.name === 'greeting' && r.verb === 'patch' && !r.dryRun,
  );
  assert.ok(writes.length > 0, 'the apply is in the audit log');
  for (const w of writes) assert.equal(w.impersonatedUser, 'system:serviceaccount:greet:deployer');
});
