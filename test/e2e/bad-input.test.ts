// Bad input to a running controller (a real `impersync run` process): malformed argocd-cm values,
// Applications and AppProjects that are wrong (the CRDs refuse wrong types, so: wrong values),
// manifests that are not Kubernetes, repository and repo-creds Secrets that do not parse, an
// AppProject with garbage in sourceRepos and destinations, a status another writer left in a shape
// impersync rejects, and a repository of 10,000 manifests. Each gets a clear condition on its
// Application; the process never dies and keeps syncing a good Application.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApiError, applyRaw, getRaw, requestOk, startControlPlane } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { TestRepo } from '../support/git.ts';
import { spawnController } from '../support/faults.ts';
import type { ControllerProcess } from '../support/faults.ts';
import {
  application,
  condition,
  deployer,
  grantControllerRights,
  guestbookFiles,
  IN_CLUSTER,
  operationPhase,
  project,
  setSettings,
  waitForApp,
} from './controller-fixture.ts';

let cp: TestControlPlane;
let repo: TestRepo;
let cacheDir: string;
let ctl: ControllerProcess;
const extraRepos: TestRepo[] = [];
const GOOD_SETTINGS = { 'application.sync.impersonation.enabled': 'true', 'timeout.reconciliation': '3s' };

const manyConfigMaps = (n: number): string => {
  const docs: string[] = [];
  for (let i = 0; i < n; i++)
    docs.push(`apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${i}\ndata:\n  i: "${i}"\n`);
  return docs.join('---\n');
};

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, GOOD_SETTINGS);
  for (const ns of ['good', 'bad', 'many']) await deployer(cp, ns, 'deployer');
  await applyRaw(
    cp.admin,
    project('tenant', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: '*', defaultServiceAccount: 'deployer' }],
    }),
  );
  await applyRaw(
    cp.admin,
    project('empty-sa', { destinationServiceAccounts: [{ server: '*', namespace: '*', defaultServiceAccount: '' }] }),
  );
  repo = await TestRepo.create();
  await repo.commit({
    ...guestbookFiles(),
    // A YAML file that does not look like a manifest is ignored (as Argo CD does); JSON is never.
    'notk8s/readme.yaml': 'title: not a Kubernetes object\nitems: [1, 2]\n',
    'notk8s/data.json': '{"title": "not a Kubernetes object", "items": [1, 2]}\n',
    'scalar/x.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\njust a sentence\n',
    'broken/x.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n',
    // 10,000 objects in 100 files, as a big monorepo folder would hold them.
    ...Object.fromEntries(
      Array.from({ length: 100 }, (_, f) => [
        `many/f${f}.yaml`,
        manyConfigMaps(100).replaceAll('name: cm-', `name: f${f}-cm-`),
      ]),
    ),
  });
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-bad-'));
  ctl = spawnController({ kubeconfig: await cp.kubeconfigFileFor('controller'), cacheDir });
  await applyRaw(
    cp.admin,
    application('good', repo.url, { project: 'tenant', destination: { server: IN_CLUSTER, namespace: 'good' } }),
  );
  await waitForApp(cp, 'good', 'the good Application synced', (a) => operationPhase(a) === 'Succeeded', 60_000).catch(
    (err: Error) => {
      throw new Error(`${err.message}\n${ctl.output().slice(-3000)}`);
    },
  );
});

after(async () => {
  await ctl?.kill();
  await repo?.remove();
  for (const r of extraRepos) await r.remove();
  if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
  await cp?.stop();
});

/** The controller is alive and still reconciles: a fresh Application is synced. */
async function stillWorking(name: string): Promise<void> {
  assert.equal(ctl.child.exitCode, null, `the controller exited:\n${ctl.output().slice(-3000)}`);
  await applyRaw(
    cp.admin,
    application(name, repo.url, { project: 'tenant', destination: { server: IN_CLUSTER, namespace: 'good' } }),
  );
  await waitForApp(cp, name, 'synced while bad input is around', (a) => operationPhase(a) === 'Succeeded', 30_000);
}

const clear = (m: string | undefined) =>
  m !== undefined && m.trim() !== '' && !/(?<!received )undefined|\[object /.test(m);

test('malformed argocd-cm values: an ImpersonationWarning naming each key, defaults used, nothing crashes', async () => {
  await setSettings(cp, {
    ...GOOD_SETTINGS,
    globalProjects: '- projectName: [unclosed',
    'timeout.reconciliation': 'every now and then',
  });
  const app = await waitForApp(
    cp,
    'good',
    'warnings for both keys',
    (a) =>
      /globalProjects/.test(condition(a, 'ImpersonationWarning') ?? '') &&
      /timeout\.reconciliation/.test(condition(a, 'ImpersonationWarning') ?? ''),
    30_000,
  );
  const warning = condition(app, 'ImpersonationWarning') ?? '';
  assert.match(warning, /ConfigMap argocd\/argocd-cm data\.globalProjects: not valid YAML/);
  assert.match(
    warning,
    /ConfigMap argocd\/argocd-cm data\.timeout\.reconciliation: invalid duration 'every now and then' .*using 120s/,
  );
  assert.ok(clear(warning), warning);
  // A value past any sensible duration must not turn into a hot refresh loop either.
  await setSettings(cp, { ...GOOD_SETTINGS, 'timeout.reconciliation': '9'.repeat(30) });
  await waitForApp(
    cp,
    'good',
    'too large',
    (a) => /too large/.test(condition(a, 'ImpersonationWarning') ?? ''),
    30_000,
  );
  const before = (await cp.readAudit()).length;
  await new Promise((r) => setTimeout(r, 2000));
  const gets = (await cp.readAudit()).slice(before).filter((r) => r.user === cp.controllerUserName);
  assert.ok(gets.length < 100, `the controller is quiet at rest, not looping: ${gets.length} requests in 2 s`);
  await stillWorking('good-after-settings');
  await setSettings(cp, GOOD_SETTINGS);
});

test('wrong types are refused by the CRDs with the field named; wrong values get a condition naming the field', async () => {
  await assert.rejects(
    applyRaw(cp.admin, {
      ...application('typed', repo.url, { project: 'tenant' }),
      spec: {
        project: 'tenant',
        source: { repoURL: repo.url, path: 7 },
        destination: { server: IN_CLUSTER, namespace: 'bad' },
      },
    }),
    (err: unknown) => err instanceof ApiError && /spec\.source\.path/.test(err.message),
  );
  await assert.rejects(
    applyRaw(
      cp.admin,
      project('typed', { destinationServiceAccounts: [{ server: '*', namespace: '*', defaultServiceAccount: ['x'] }] }),
    ),
    (err: unknown) => err instanceof ApiError && /defaultServiceAccount/.test(err.message),
  );

  // Values of the right type that mean nothing usable.
  const bad = (name: string, spec: Record<string, unknown>) =>
    applyRaw(cp.admin, {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name, namespace: 'argocd' },
      spec: { project: 'tenant', ...spec },
    });
  await bad('no-source', { destination: { server: IN_CLUSTER, namespace: 'bad' } });
  await bad('no-destination', { source: { repoURL: repo.url, path: 'app' }, destination: {} });
  await bad('both-destinations', {
    source: { repoURL: repo.url, path: 'app' },
    destination: { server: IN_CLUSTER, name: 'in-cluster', namespace: 'bad' },
  });
  await bad('empty-repo', {
    source: { repoURL: '', path: 'app' },
    destination: { server: IN_CLUSTER, namespace: 'bad' },
  });
  await bad('escaping-path', {
    source: { repoURL: repo.url, path: '../../etc' },
    destination: { server: IN_CLUSTER, namespace: 'bad' },
  });
  await bad('empty-sa', {
    project: 'empty-sa',
    source: { repoURL: repo.url, path: 'app' },
    destination: { server: IN_CLUSTER, namespace: 'bad' },
  });
  const seen: Record<string, string> = {};
  for (const name of ['no-source', 'no-destination', 'both-destinations', 'empty-repo', 'escaping-path', 'empty-sa']) {
    const app = await waitForApp(
      cp,
      name,
      'a condition',
      (a) => ((a.status?.['conditions'] ?? []) as unknown[]).length > 0,
      30_000,
    );
    const conds = (app.status?.['conditions'] ?? []) as Array<{ type: string; message: string }>;
    const problem = conds.find((c) => /Error$/.test(c.type));
    assert.ok(problem, `${name}: an error condition, got ${JSON.stringify(conds)}`);
    assert.ok(clear(problem.message), `${name}: ${problem.message}`);
    seen[name] = `${problem.type}: ${problem.message}`;
  }
  assert.match(seen['escaping-path'] ?? '', /\.\.\/\.\.\/etc/);
  assert.match(seen['both-destinations'] ?? '', /^InvalidSpecError: spec\.destination: .*both name and server/);
  assert.match(seen['no-destination'] ?? '', /^InvalidSpecError: spec\.destination: .*neither server nor name/);
  assert.match(seen['no-source'] ?? '', /spec\.source is missing/);
  assert.match(seen['empty-repo'] ?? '', /spec\.source\.repoURL is empty/);
  // As Argo CD's controller: the matched entry's empty ServiceAccount is its derive error.
  assert.equal(
    seen['empty-sa'],
    "ComparisonError: failed to derive service account to impersonate: default service account contains invalid chars ''",
  );
  assert.deepEqual(
    (await cp.readAudit())
      .filter(
        (r) =>
          r.namespace === 'bad' &&
          r.user === cp.controllerUserName &&
          !r.dryRun &&
          ['create', 'patch', 'update', 'delete'].includes(r.verb),
      )
      .map((r) => r.requestURI),
    [],
    JSON.stringify(seen, null, 1),
  );
  await stillWorking('good-after-wrong');
});

test('manifests that are not Kubernetes: a ComparisonError naming the file and document, nothing written', async () => {
  const cases: Record<string, RegExp> = {
    notk8s: /notk8s\/data\.json: document 1 is not a Kubernetes object: apiVersion is missing/,
    scalar: /scalar\/x\.yaml: document 2 is not a Kubernetes object: it is a string/,
    broken: /broken\/x\.yaml:\d+: /,
  };
  for (const name of Object.keys(cases)) {
    await applyRaw(
      cp.admin,
      application(name, repo.url, {
        project: 'tenant',
        path: name,
        destination: { server: IN_CLUSTER, namespace: 'bad' },
      }),
    );
  }
  for (const [name, re] of Object.entries(cases)) {
    const app = await waitForApp(
      cp,
      name,
      'ComparisonError',
      (a) => condition(a, 'ComparisonError') !== undefined,
      30_000,
    );
    assert.match(condition(app, 'ComparisonError') ?? '', re);
    assert.equal(app['operation'], undefined, 'no automated sync of a source that does not render');
  }
  assert.equal(
    await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'ok', namespace: 'bad' }),
    undefined,
    'no partial write of the valid document',
  );
  await stillWorking('good-after-manifests');
});

/** A repository Secret or credential template as an admin writes it (`data`, base64). */
function repoSecret(name: string, type: 'repository' | 'repo-creds', data: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'argocd', labels: { 'argocd.argoproj.io/secret-type': type } },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  } as unknown as KubeObject;
}

test('malformed repository and repo-creds Secrets: the Applications reading them get a condition naming Secret and field; the rest sync', async () => {
  const PASSWORD = 'bad-input-Pa55word-never-shown';
  const [viaRepo, viaCreds] = [await TestRepo.create(), await TestRepo.create()];
  extraRepos.push(viaRepo, viaCreds);
  for (const r of [viaRepo, viaCreds]) await r.commit(guestbookFiles());
  await applyRaw(
    cp.admin,
    repoSecret('bad-repo', 'repository', { url: viaRepo.url, insecure: 'maybe', password: PASSWORD }),
  );
  await applyRaw(
    cp.admin,
    repoSecret('bad-creds', 'repo-creds', {
      url: viaCreds.url,
      forceHttpBasicAuth: 'sometimes',
      username: 'u',
      password: PASSWORD,
    }),
  );
  // A Secret of no URL at all concerns no Application.
  await applyRaw(cp.admin, repoSecret('no-url', 'repository', { password: PASSWORD }));
  const cases: Record<string, [string, RegExp]> = {
    'reads-bad-repo': [
      viaRepo.url,
      /^failed to render desired manifests: unreadable repository Secret argocd\/bad-repo: data\.insecure: strconv\.ParseBool: parsing "maybe": invalid syntax$/,
    ],
    'reads-bad-creds': [
      viaCreds.url,
      /^failed to render desired manifests: unreadable repository Secret argocd\/bad-creds: data\.forceHttpBasicAuth: strconv\.ParseBool: parsing "sometimes": invalid syntax$/,
    ],
    // A repository URL whose host is a name every JavaScript object has.
    'prototype-host': ['https://constructor/x.git', /^failed to render desired manifests: /],
  };
  for (const [name, [url]] of Object.entries(cases))
    await applyRaw(
      cp.admin,
      application(name, url, { project: 'tenant', destination: { server: IN_CLUSTER, namespace: 'good' } }),
    );
  for (const [name, [, re]] of Object.entries(cases)) {
    const app = await waitForApp(
      cp,
      name,
      'ComparisonError',
      (a) => condition(a, 'ComparisonError') !== undefined,
      30_000,
    );
    const message = condition(app, 'ComparisonError') ?? '';
    assert.match(message, re, name);
    assert.ok(clear(message) && !/is not a function|TypeError/.test(message), `${name}: ${message}`);
    assert.ok(!JSON.stringify(app).includes(PASSWORD), `${name}: a password in the Application`);
    assert.equal(app['operation'], undefined, `${name}: no automated sync of a repository refused`);
  }
  assert.ok(!ctl.output().includes(PASSWORD), 'no password in the log');
  await stillWorking('good-after-secrets');
  // Fixed, the Secret takes effect without a restart and its Application syncs.
  await applyRaw(cp.admin, repoSecret('bad-repo', 'repository', { url: viaRepo.url, insecure: 'false' }));
  await waitForApp(
    cp,
    'reads-bad-repo',
    'synced once the Secret is fixed',
    (a) => operationPhase(a) === 'Succeeded',
    30_000,
  );
});

test('an AppProject with garbage in sourceRepos and destinations: a condition, not a crash', async () => {
  await applyRaw(
    cp.admin,
    project('garbage', {
      sourceRepos: ['[', '{a,', '', '**/x', '!*', '\\'],
      destinations: [
        { server: '[', namespace: '{' },
        { server: '', namespace: '' },
        { name: '!*', namespace: '!' },
        { server: 'https://kubernetes.default.svc', namespace: '[z-a]' },
      ],
      destinationServiceAccounts: [{ server: '*', namespace: '*', defaultServiceAccount: 'deployer' }],
    }),
  );
  await applyRaw(
    cp.admin,
    application('in-garbage', repo.url, { project: 'garbage', destination: { server: IN_CLUSTER, namespace: 'bad' } }),
  );
  const app = await waitForApp(
    cp,
    'in-garbage',
    'InvalidSpecError',
    (a) => condition(a, 'InvalidSpecError') !== undefined,
    30_000,
  );
  const message = condition(app, 'InvalidSpecError') ?? '';
  assert.match(message, /in project 'garbage'/);
  assert.ok(clear(message), message);
  assert.equal(app['operation'], undefined);
  await stillWorking('good-after-garbage');
});

test('a status another writer left in a shape impersync rejects: the Application is reconciled and synced anyway, its status replaced', async () => {
  await applyRaw(
    cp.admin,
    application('stray-status', repo.url, {
      project: 'tenant',
      destination: { server: IN_CLUSTER, namespace: 'good' },
    }),
  );
  await waitForApp(cp, 'stray-status', 'synced', (a) => operationPhase(a) === 'Succeeded', 30_000);
  const appPath = '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/stray-status';
  const patch = (path: string, body: unknown) =>
    requestOk(cp.admin, { method: 'PATCH', path, body, contentType: 'application/merge-patch+json' });
  const stray = async () => {
    const patched = (await patch(appPath, {
      status: {
        sync: { status: '' },
        health: { status: 'Great' },
        conditions: 'none',
        operationState: { phase: 'Dancing' },
      },
    })) as { status: { sync: { status: string } } };
    assert.equal(patched.status.sync.status, '', 'the API server keeps the stray status');
  };
  const replaced = (a: { status?: Record<string, unknown> }) =>
    (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced' &&
    Array.isArray(a.status?.['conditions']) &&
    (a.status?.['health'] as { status?: string } | undefined)?.status === 'Healthy';
  // A refresh (what a change of the Application, its project or settings starts) reads it.
  await stray();
  await patch(appPath, { metadata: { annotations: { 'argocd.argoproj.io/refresh': 'normal' } } });
  let app = await waitForApp(
    cp,
    'stray-status',
    'refreshed, its status replaced',
    (a) =>
      !(a.metadata as { annotations?: Record<string, string> }).annotations?.['argocd.argoproj.io/refresh'] &&
      replaced(a),
    30_000,
  );
  // A sync asked for while the stray status is there.
  await stray();
  await patch(appPath, { operation: { sync: { revision: 'HEAD' }, initiatedBy: { username: 'alice' } } });
  app = await waitForApp(
    cp,
    'stray-status',
    'synced again, its status replaced',
    (a) => a['operation'] === undefined && operationPhase(a) === 'Succeeded' && replaced(a),
    30_000,
  );
  assert.equal(condition(app, 'InvalidSpecError'), undefined, JSON.stringify(app.status?.['conditions']));
  // Not refused even for a moment: a refusal is an InvalidSpecError event.
  const events = (await requestOk(cp.admin, {
    method: 'GET',
    path: '/api/v1/namespaces/argocd/events?fieldSelector=involvedObject.name%3Dstray-status',
  })) as { items: Array<{ reason: string; message: string }> };
  assert.deepEqual(
    events.items.filter((e) => /Error$/.test(e.reason)).map((e) => `${e.reason}: ${e.message}`),
    [],
  );
  assert.equal(ctl.child.exitCode, null);
});

async function rssKiB(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

test(
  'a repository folder with 10,000 manifests: rendered, compared as the ServiceAccount, memory bounded, others still served',
  { timeout: 120_000 },
  async () => {
    const pid = ctl.child.pid as number;
    const before = await rssKiB(pid);
    const started = Date.now();
    // Compared only: applying 10,000 objects is a benchmark's job (bench/), not a test's.
    await applyRaw(
      cp.admin,
      application('many', repo.url, {
        project: 'tenant',
        path: 'many',
        destination: { server: IN_CLUSTER, namespace: 'many' },
        automated: false,
      }),
    );
    // The server-side diff starts once all 10,000 objects are rendered and parsed. (It then takes
    // minutes at the rate this machine's API server takes dry-runs: a benchmark's matter.)
    await cp
      .waitForAudit(
        (r) =>
          r.namespace === 'many' && r.dryRun === true && r.impersonatedUser === 'system:serviceaccount:many:deployer',
        { timeoutMs: 90_000 },
      )
      .catch((err: Error) => {
        throw new Error(
          `${err.message}\n${ctl
            .output()
            .split('\n')
            .filter((l) => /"level":(40|50|60)/.test(l))
            .slice(-10)
            .join('\n')}`,
        );
      });
    const rendered = Math.round((Date.now() - started) / 1000);
    // While the comparison of 10,000 objects runs, other Applications are still reconciled.
    await stillWorking('good-during-many');
    const after = await rssKiB(pid);
    process.stdout.write(
      `# 10,000 manifests rendered and being compared after ${rendered} s; controller RSS ${Math.round(before.rss / 1024)} MiB before, peak ${Math.round(after.peak / 1024)} MiB\n`,
    );
    // Bounded: 10,000 small objects are a few MiB of JSON; the process must not balloon with them.
    assert.ok(after.peak < 768 * 1024, `peak RSS ${after.peak} KiB is over 768 MiB`);
    assert.equal(ctl.child.exitCode, null, 'the controller is alive');
  },
);
