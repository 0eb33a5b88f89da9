// Issue 11, end to end through the controller: a tenant who controls only a Git repository tries to
// put the controller's credential into a ConfigMap of their namespace. Each repository below aims a
// chart's .Files.Get, a kustomize generator, a Helm value file or a chain of symlinks at the
// controller's kubeconfig (its path is known to the attacker here) or at the ServiceAccount token
// path. Every one ends in a ComparisonError naming the repository's own path, nothing is written to
// the namespace, and no byte of the credential shows up in the Application, its events or the log.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { applyRaw, getRaw, startControlPlane } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { git, TestRepo } from '../support/git.ts';
import {
  application,
  condition,
  deployer,
  grantControllerRights,
  guestbookFiles,
  IN_CLUSTER,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

const TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount/token';
let cp: TestControlPlane;
let fx: Fixture;
let secretBits: string[];
const repos: TestRepo[] = [];

/** A repository with these files and these symlinks (link → target), committed. */
async function attackRepo(files: Record<string, string>, links: Record<string, string>): Promise<TestRepo> {
  const repo = await TestRepo.create();
  repos.push(repo);
  await repo.commit(files, 'files');
  for (const [link, target] of Object.entries(links)) {
    await symlink(target, path.join(repo.dir, link));
  }
  git(repo.dir, 'add', '--all');
  git(repo.dir, 'commit', '--quiet', '--allow-empty', '-m', 'links');
  return repo;
}

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  await deployer(cp, 'victim', 'deployer');
  await applyRaw(
    cp.admin,
    project('tenant', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'victim', defaultServiceAccount: 'deployer' }],
    }),
  );
  fx = await startFixture(cp, guestbookFiles());
  // The credential's distinctive parts: whatever of them appears anywhere is a leak.
  const kubeconfig = await readFile(cp.controllerKubeconfigPath, 'utf8');
  secretBits = [...kubeconfig.matchAll(/(?:token|client-key-data|client-certificate-data):\s*(\S{24,})/g)].map((m) =>
    (m[1] as string).slice(0, 40),
  );
  assert.ok(secretBits.length > 0, 'the controller kubeconfig has a credential to look for');
});

after(async () => {
  await fx?.stop();
  for (const r of repos) await r.remove();
  await cp?.stop();
});

async function attack(name: string, repo: TestRepo, appPath: string, expected: RegExp): Promise<void> {
  await applyRaw(
    cp.admin,
    application(name, repo.url, {
      project: 'tenant',
      path: appPath,
      destination: { server: IN_CLUSTER, namespace: 'victim' },
    }),
  );
  const app = await waitForApp(cp, name, 'ComparisonError', (a) => condition(a, 'ComparisonError') !== undefined);
  const message = condition(app, 'ComparisonError') as string;
  assert.match(message, expected);
  // The link targets are the tenant's own text; the renderer's cache and work folders never show.
  assert.doesNotMatch(
    message,
    /impersync-ctl-|\/trees\/|\/work\/render-/,
    'the message names no folder of the renderer',
  );
  for (const cm of ['stolen', `${name}-stolen`]) {
    assert.equal(
      await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: cm, namespace: 'victim' }),
      undefined,
    );
  }
  const seen = JSON.stringify(app) + JSON.stringify(fx.events.events) + fx.logs.join('');
  for (const bit of secretBits) assert.ok(!seen.includes(bit), `the credential leaked through ${name}`);
}

const chart = (template: string) => ({
  'chart/Chart.yaml': 'apiVersion: v2\nname: steal\nversion: 0.1.0\n',
  'chart/templates/cm.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\ndata:\n  stolen: ${template}\n`,
});

test("a chart's .Files.Get of a symlink to the controller's kubeconfig is refused", async () => {
  const repo = await attackRepo(chart('{{ .Files.Get "kc" | quote }}'), { 'chart/kc': cp.controllerKubeconfigPath });
  await attack('helm-kubeconfig', repo, 'chart', /repository contains out-of-bounds symlinks\. file: chart\/kc\b/);
});

test("a chart's .Files.Get of a symlink to the ServiceAccount token path is refused", async () => {
  const repo = await attackRepo(chart('{{ .Files.Get "token" | quote }}'), { 'chart/token': TOKEN_PATH });
  await attack('helm-token', repo, 'chart', /repository contains out-of-bounds symlinks\. file: chart\/token\b/);
});

test('a chain of links that each look in bounds is refused', async () => {
  // `here` is the repository itself; `here/..` lexically stays inside, physically it is the parent.
  const depth = path.relative(path.dirname(cp.controllerKubeconfigPath), '/').split(path.sep).length;
  const repo = await attackRepo(
    {
      'kust/kustomization.yaml':
        'configMapGenerator:\n  - name: stolen\n    files: [kc]\ngeneratorOptions:\n  disableNameSuffixHash: true\n',
    },
    {
      here: '.',
      'kust/kc': `../here/${'../'.repeat(depth + 6)}${cp.controllerKubeconfigPath.slice(1)}`,
    },
  );
  await attack('chain', repo, 'kust', /repository contains out-of-bounds symlinks\. file: /);
});

test("a kustomize generator naming the kubeconfig's absolute path reads nothing outside the checkout", async () => {
  const repo = await attackRepo(
    {
      'kust/kustomization.yaml': `configMapGenerator:\n  - name: stolen\n    files: [${cp.controllerKubeconfigPath}]\ngeneratorOptions:\n  disableNameSuffixHash: true\n`,
    },
    {},
  );
  await attack('kustomize-absolute', repo, 'kust', /kust/);
});

test('a Helm value file pointing out of the repository at the kubeconfig is refused', async () => {
  const repo = await attackRepo(chart('{{ .Values | toJson | quote }}'), {});
  await applyRaw(cp.admin, {
    ...application('helm-values', repo.url, {
      project: 'tenant',
      path: 'chart',
      destination: { server: IN_CLUSTER, namespace: 'victim' },
    }),
    spec: {
      project: 'tenant',
      source: {
        repoURL: repo.url,
        path: 'chart',
        helm: { valueFiles: [`../../../../../../../..${cp.controllerKubeconfigPath}`] },
      },
      destination: { server: IN_CLUSTER, namespace: 'victim' },
      syncPolicy: { automated: {} },
    },
  });
  const app = await waitForApp(
    cp,
    'helm-values',
    'ComparisonError',
    (a) => condition(a, 'ComparisonError') !== undefined,
  );
  assert.match(condition(app, 'ComparisonError') as string, /value file .* is outside the repository/);
  assert.equal(
    await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'stolen', namespace: 'victim' }),
    undefined,
  );
  const seen = JSON.stringify(app) + fx.logs.join('');
  for (const bit of secretBits) assert.ok(!seen.includes(bit), 'the credential leaked through a value file');
});
