// The point of the strict RBAC, end to end: the install of deploy/install (strict Role, impersonate
// ClusterRole bound in each tenant namespace as deploy/install/tenants documents, the sample
// argocd-cm with impersonation enabled and enforced) is applied, and the
// controller runs with the token of the installed ServiceAccount, nothing more. It still syncs the
// design document's examples, each as its ServiceAccount, and refuses the one whose destination
// matches no entry; the audit log shows no write to a tenant namespace without impersonation.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  applyRaw,
  createNamespace,
  createServiceAccount,
  grantRole,
  readYamlFile,
  startControlPlane,
} from '../support/index.ts';
import type { KubeObject, TestControlPlane, AuditRecord } from '../support/index.ts';
import { TestRepo } from '../support/git.ts';
import { startController } from '../../src/controller/controller.ts';
import type { RunningController } from '../../src/controller/controller.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { applyAll, kustomizeBuild, repoRoot, tenantImpersonationBinding } from '../deploy/render.ts';
import { condition, getApp, operationPhase, waitForApp } from './controller-fixture.ts';

const controllerUser = 'system:serviceaccount:argocd:impersync-controller';
const tenantWriteVerbs = ['create', 'update', 'patch', 'delete', 'deletecollection'];
let cp: TestControlPlane;
let repo: TestRepo;
let cacheDir: string;
let controller: RunningController | undefined;
const logs: string[] = [];

/** The guestbook the examples point at, healthy without a kubelet (a Service, a Deployment with 0 replicas). */
const guestbook = {
  'guestbook/service.yaml':
    'apiVersion: v1\nkind: Service\nmetadata:\n  name: guestbook-ui\nspec:\n  ports:\n  - port: 80\n    targetPort: 80\n  selector:\n    app: guestbook-ui\n',
  'guestbook/deployment.yaml':
    'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: guestbook-ui\nspec:\n  replicas: 0\n  selector:\n    matchLabels:\n      app: guestbook-ui\n  template:\n    metadata:\n      labels:\n        app: guestbook-ui\n    spec:\n      containers:\n      - name: guestbook-ui\n        image: gcr.io/heptio-images/ks-guestbook-demo:0.2\n',
};

const deployRules = [
  {
    apiGroups: [''],
    resources: ['services', 'pods'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
  {
    apiGroups: ['apps'],
    resources: ['deployments'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
];

/**
 * An example file's objects, its Applications pointed at the local repository and asked to sync
 * (initiatedBy names the file: the controller takes an operation equal to the last finished one for
 * one it already ran).
 */
async function example(file: string): Promise<{ apps: KubeObject[]; rest: KubeObject[] }> {
  const objects = await readYamlFile(path.join(repoRoot, 'examples', file));
  const apps = objects
    .filter((o) => o.kind === 'Application')
    .map((o) => {
      const spec = o['spec'] as { source: { repoURL: string } };
      return {
        ...o,
        spec: { ...spec, source: { ...spec.source, repoURL: repo.url } },
        operation: { sync: { revision: 'HEAD' }, initiatedBy: { username: `deploy-test ${file}` } },
      };
    });
  return { apps, rest: objects.filter((o) => o.kind !== 'Application') };
}

async function historyLength(name: string): Promise<number> {
  try {
    return ((await getApp(cp, name)).status?.['history'] as unknown[] | undefined)?.length ?? 0;
  } catch {
    return 0; // not created yet
  }
}

const identityOf = (app: { status?: Record<string, unknown> }) =>
  (app.status?.['operationState'] as { syncResult?: { identity?: string } } | undefined)?.syncResult?.identity;

/** Applies an example and waits for each Application's new operation to end; returns the audit records it caused. */
async function run(
  file: string,
  setup: () => Promise<void> = async () => {},
): Promise<{ apps: KubeObject[]; audit: AuditRecord[] }> {
  const { apps, rest } = await example(file);
  await setup();
  await applyAll(cp.admin, rest, 'deploy-test');
  const before = (await cp.readAudit()).length;
  const histories = new Map<string, number>();
  for (const app of apps) histories.set(app.metadata.name, await historyLength(app.metadata.name));
  for (const app of apps) await applyRaw(cp.admin, app, { fieldManager: 'deploy-test' });
  for (const app of apps) {
    const name = app.metadata.name;
    await waitForApp(
      cp,
      name,
      'its operation to end',
      (a) => {
        const phase = operationPhase(a);
        const history = (a.status?.['history'] as unknown[] | undefined)?.length ?? 0;
        return (
          a['operation'] === undefined &&
          (phase === 'Error' || phase === 'Failed' || (phase === 'Succeeded' && history > (histories.get(name) ?? 0)))
        );
      },
      90_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\ncontroller log tail:\n${logs.slice(-20).join('')}`);
    });
  }
  return { apps, audit: (await cp.readAudit()).slice(before) };
}

function assertSyncedAs(audit: AuditRecord[], namespace: string, serviceAccount: string): void {
  // Real writes (a comparison's dry-run just after the project changed may still use the previous entry).
  const writes = audit.filter(
    (r) => r.namespace === namespace && tenantWriteVerbs.includes(r.verb) && r.user === controllerUser && !r.dryRun,
  );
  assert.ok(
    writes.some((w) => w.resource === 'services' && w.code !== undefined && w.code < 300),
    `a Service written in ${namespace}`,
  );
  for (const w of writes)
    assert.equal(
      w.impersonatedUser,
      serviceAccount,
      `${w.verb} ${w.requestURI} ran as ${w.impersonatedUser ?? 'the controller itself'}`,
    );
}

before(async () => {
  cp = await startControlPlane();
  await applyAll(cp.admin, kustomizeBuild('deploy/install'));
  // The tenants of the examples, listed as an admin lists them (the install binds none by itself).
  for (const ns of ['guestbook', 'mynamespace', 'myns', 'guestbook-dev', 'guestbook-prod']) {
    await createNamespace(cp.admin, ns);
    await applyAll(cp.admin, [tenantImpersonationBinding(ns)]);
  }
  repo = await TestRepo.create();
  await repo.commit(guestbook, 'guestbook');
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-strict-'));
  const kc: KubeConfig = await cp.kubeconfigFor({ serviceAccount: 'impersync-controller', namespace: 'argocd' });
  const sink = new Writable({
    write(c, _e, cb) {
      logs.push(String(c));
      cb();
    },
  });
  controller = await startController({
    kc,
    namespace: 'argocd',
    logger: createLogger({ level: 'info' }, sink),
    childRenderer: { cacheDir },
    waitTimeoutMs: 20_000,
  });
});

after(async () => {
  await controller?.stop();
  await repo?.remove();
  if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
  await cp?.stop();
});

test('example 1: every namespace of the local cluster, as generic-deployer', async () => {
  const { audit } = await run('01-all-namespaces.yaml');
  const app = await getApp(cp, 'guestbook');
  assert.equal(operationPhase(app), 'Succeeded', JSON.stringify(app.status?.['operationState']));
  assert.equal(identityOf(app), 'system:serviceaccount:guestbook:generic-deployer');
  assertSyncedAs(audit, 'guestbook', 'system:serviceaccount:guestbook:generic-deployer');
  // The comparison runs as the ServiceAccount too, and the status says so.
  await waitForApp(
    cp,
    'guestbook',
    'Synced, with the identity condition',
    (a) =>
      (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced' &&
      /system:serviceaccount:guestbook:generic-deployer/.test(condition(a, 'ImpersonationInfo') ?? ''),
  );
});

test('example 2: a ServiceAccount per namespace, as guestbook-deployer', async () => {
  const { audit } = await run('02-specific-namespace.yaml');
  const app = await getApp(cp, 'guestbook');
  assert.equal(operationPhase(app), 'Succeeded');
  assert.equal(identityOf(app), 'system:serviceaccount:guestbook:guestbook-deployer');
  assertSyncedAs(audit, 'guestbook', 'system:serviceaccount:guestbook:guestbook-deployer');
});

test('a ServiceAccount in another namespace (namespace:name), as mynamespace:guestbook-deployer', async () => {
  const { audit } = await run('05-service-account-in-another-namespace.yaml', async () => {
    await createNamespace(cp.admin, 'mynamespace');
    await createServiceAccount(cp.admin, 'mynamespace', 'guestbook-deployer');
    await grantRole(cp.admin, {
      name: 'mynamespace-deployer',
      namespace: 'guestbook',
      to: { serviceAccount: 'guestbook-deployer', namespace: 'mynamespace' },
      rules: deployRules,
    });
  });
  const app = await getApp(cp, 'guestbook');
  assert.equal(operationPhase(app), 'Succeeded');
  assert.equal(identityOf(app), 'system:serviceaccount:mynamespace:guestbook-deployer');
  assertSyncedAs(audit, 'guestbook', 'system:serviceaccount:mynamespace:guestbook-deployer');
});

test('several matching entries: the first in list order decides, per Application', async () => {
  const cases = [
    ['myns', 'generic-deployer'],
    ['guestbook-dev', 'guestbook-generic-deployer'],
    ['guestbook-prod', 'guestbook-prod-deployer'],
  ] as const;
  const { audit } = await run('06-several-matching-entries.yaml', async () => {
    for (const [ns, sa] of cases) {
      await createNamespace(cp.admin, ns);
      // Every ServiceAccount the project names exists, so only the order of the list can decide.
      for (const other of ['generic-deployer', 'guestbook-generic-deployer', 'guestbook-prod-deployer'])
        await createServiceAccount(cp.admin, ns, other);
      await grantRole(cp.admin, {
        name: `${sa}-deploy`,
        namespace: ns,
        to: { serviceAccount: sa, namespace: ns },
        rules: deployRules,
      });
    }
  });
  for (const [ns, sa] of cases) {
    const app = await getApp(cp, ns === 'myns' ? 'guestbook-myns' : ns);
    assert.equal(operationPhase(app), 'Succeeded', ns);
    assert.equal(identityOf(app), `system:serviceaccount:${ns}:${sa}`);
    assertSyncedAs(audit, ns, `system:serviceaccount:${ns}:${sa}`);
  }
});

test('no destination namespace: refused, with no write at all', async () => {
  const { audit } = await run('07-no-destination-namespace.yaml');
  const app = await getApp(cp, 'guestbook');
  assert.equal(operationPhase(app), 'Error');
  // The project's own destinations (spec §9) refuse it even before the identity (spec §5) would.
  assert.match((app.status?.['operationState'] as { message: string }).message, /namespace '?'? /);
  // (Dry-runs of comparisons still in flight for the previous examples' destination may appear.)
  const writes = audit.filter(
    (r) => r.user === controllerUser && tenantWriteVerbs.includes(r.verb) && r.namespace !== 'argocd' && !r.dryRun,
  );
  assert.deepEqual(
    writes.map((w) => `${w.verb} ${w.requestURI}`),
    [],
  );
});

test('across all examples, the controller never wrote to a tenant namespace as itself', async () => {
  const own = (await cp.readAudit()).filter(
    (r) =>
      r.user === controllerUser &&
      tenantWriteVerbs.includes(r.verb) &&
      r.namespace !== 'argocd' &&
      r.impersonatedUser === undefined,
  );
  assert.deepEqual(
    own.map((w) => `${w.verb} ${w.requestURI} ${w.code}`),
    [],
  );
  // And it never needed to: no request it made as itself was forbidden.
  const forbidden = (await cp.readAudit()).filter(
    (r) => r.user === controllerUser && r.impersonatedUser === undefined && r.code === 403,
  );
  assert.deepEqual(
    forbidden.map((w) => `${w.verb} ${w.requestURI}`),
    [],
  );
});
