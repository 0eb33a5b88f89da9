// `impersync explain` and `impersync validate` without -f: the same objects read live from a real
// API server through a kubeconfig (issue 2's live mode), giving the same answers as from files.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { run as explainRun } from '../../src/cli/explain.ts';
import { run as validateRun } from '../../src/cli/validate.ts';
import {
  applyRaw,
  createNamespace,
  parseYamlDocuments,
  startControlPlane,
  type TestControlPlane,
} from '../support/index.ts';
import { captureIO } from '../support/cli.ts';

let cp: TestControlPlane;

async function applyExample(file: string): Promise<void> {
  for (const doc of parseYamlDocuments(await readFile(new URL(`../../examples/${file}`, import.meta.url), 'utf8'))) {
    const kind = (doc as { kind?: string }).kind;
    // Only what explain reads: the example's Namespaces, ServiceAccounts and Roles are not needed here.
    if (kind === 'Application' || kind === 'AppProject' || kind === 'ConfigMap') await applyRaw(cp.admin, doc as never);
  }
}

before(async () => {
  cp = await startControlPlane();
  await createNamespace(cp.admin, 'argocd');
  await applyExample('argocd-cm.yaml');
  await applyExample('06-several-matching-entries.yaml');
});
after(() => cp?.stop());

test('explain reads argocd-cm, the project and the Application live and decides as from files (example 6)', async () => {
  const kubeconfig = cp.adminKubeconfigPath;
  const c = captureIO();
  const code = await explainRun(['--kubeconfig', kubeconfig, '--app', 'argocd/guestbook-dev', '-o', 'json'], c.io);
  assert.equal(code, 0, c.err());
  const live = JSON.parse(c.out()) as Record<string, unknown>;
  assert.equal(live['decision'], 'impersonate');
  assert.equal(live['serviceAccount'], 'system:serviceaccount:guestbook-dev:guestbook-generic-deployer');
  assert.deepEqual(live['impersonation'], { enabled: true, enforced: true });

  const f = captureIO();
  const fromFiles = await explainRun(
    [
      '-f',
      'examples/argocd-cm.yaml',
      '-f',
      'examples/06-several-matching-entries.yaml',
      '--app',
      'argocd/guestbook-dev',
      '-o',
      'json',
    ],
    f.io,
  );
  assert.equal(fromFiles, 0, f.err());
  const offline = JSON.parse(f.out()) as Record<string, unknown>;
  assert.deepEqual({ ...live, warnings: [] }, { ...offline, warnings: [] }, 'the live answer is the offline answer');
});

test('explain live: a missing Application is unusable input (exit 2, one line naming it)', async () => {
  const c = captureIO();
  const code = await explainRun(['--kubeconfig', cp.adminKubeconfigPath, '--app', 'argocd/nope', '-o', 'json'], c.io);
  assert.equal(code, 2);
  assert.equal(c.out(), '');
  assert.match(c.err(), /argocd\/nope/);
  assert.equal(c.err().trim().split('\n').length, 1);
});

test('validate live: the AppProjects of the control namespace are checked against §8', async () => {
  await applyRaw(cp.admin, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    metadata: { name: 'broken', namespace: 'argocd' },
    spec: { destinationServiceAccounts: [{ server: '!https://x', namespace: 'a', defaultServiceAccount: 'sa' }] },
  } as never);
  const c = captureIO();
  const code = await validateRun(['--kubeconfig', cp.adminKubeconfigPath, '-o', 'json'], c.io);
  assert.equal(code, 1, c.err());
  const reports = JSON.parse(c.out()) as Array<{ project: string; valid: boolean; errors: string[] }>;
  const broken = reports.find((r) => r.project === 'broken');
  assert.ok(broken, JSON.stringify(reports));
  assert.equal(broken.valid, false);
  assert.equal(broken.errors[0], "server has an invalid format, '!https://x'");
  assert.equal(reports.find((r) => r.project === 'my-project')?.valid, true);
});
