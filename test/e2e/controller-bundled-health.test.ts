// Argo CD's bundled health checks through the running controller, with no health keys in argocd-cm
// at all: the default library (scripts/health-scripts, the pinned Argo CD release) judges a
// cert-manager Certificate, so a sync wave waits for it to be Ready and a Certificate that is not
// Ready degrades its Application; status.health.lastTransitionTime moves when the code changes.
// The wave also holds a Deployment whose pod runs on a simulated (kwok) node, as an application's
// workload would beside its certificate.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { applyRaw, getRaw, request, startControlPlane } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { healthScriptsDir } from '../support/health-scripts.ts';
import {
  IN_CLUSTER,
  application,
  deployer,
  getApp,
  grantControllerRights,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

/** The least of cert-manager's CRD that holds a Certificate and its status. */
const CERTIFICATE_CRD: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'certificates.cert-manager.io' },
  spec: {
    group: 'cert-manager.io',
    scope: 'Namespaced',
    names: { plural: 'certificates', singular: 'certificate', kind: 'Certificate', listKind: 'CertificateList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

const files: Record<string, string> = {
  'certs/web.yaml': [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata: {name: web}',
    'spec:',
    '  replicas: 1',
    '  selector: {matchLabels: {app: web}}',
    '  template:',
    '    metadata: {labels: {app: web}}',
    '    spec: {automountServiceAccountToken: false, containers: [{name: web, image: nginx}]}',
  ].join('\n'),
  'certs/certificate.yaml': [
    'apiVersion: cert-manager.io/v1',
    'kind: Certificate',
    'metadata: {name: web}',
    'spec: {secretName: web-tls, dnsNames: [web.example.com], issuerRef: {name: letsencrypt}}',
  ].join('\n'),
  'certs/after.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after-certificate\n  annotations: {argocd.argoproj.io/sync-wave: "1"}\ndata: {a: "1"}\n',
};

type App = Awaited<ReturnType<typeof waitForApp>>;
type Health = { status?: string; message?: string; lastTransitionTime?: string };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const health = (a: App) => a.status?.['health'] as Health | undefined;
const resourceHealth = (a: App, kind: string) =>
  (a.status?.['resources'] as Array<{ kind: string; health?: Health }> | undefined)?.find((r) => r.kind === kind)
    ?.health;

async function setReady(status: 'True' | 'False', message: string): Promise<void> {
  const res = await request(cp.admin, {
    method: 'PATCH',
    path: '/apis/cert-manager.io/v1/namespaces/tenant/certificates/web',
    body: { status: { conditions: [{ type: 'Ready', status, reason: 'Test', message }] } },
    contentType: 'application/merge-patch+json',
  });
  assert.equal(res.status, 200, res.text);
}

before(async () => {
  // The controller finds the default library here, as the image's variable names it; a missing
  // download fails the test saying how to get it.
  process.env['IMPERSYNC_HEALTH_SCRIPTS_DIR'] = healthScriptsDir();
  cp = await startControlPlane({ nodes: 1 });
  await grantControllerRights(cp);
  await deployer(cp, 'tenant', 'deployer');
  await applyRaw(cp.admin, CERTIFICATE_CRD);
  // No resource.customizations key at all: only Argo CD's bundled check can give a Certificate health.
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  await applyRaw(
    cp.admin,
    project('tenant', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'tenant', defaultServiceAccount: 'deployer' }],
    }),
  );
  fx = await startFixture(cp, files, { waitTimeoutMs: 60_000 });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

test("a wave waits for a cert-manager Certificate that Argo CD's bundled check finds not yet Ready", async () => {
  const dest = { server: IN_CLUSTER, namespace: 'tenant' };
  await applyRaw(cp.admin, application('certs', fx.repo.url, { project: 'tenant', path: 'certs', destination: dest }));
  const ref = (apiVersion: string, kind: string, name: string) => ({ apiVersion, kind, name, namespace: 'tenant' });
  const end = Date.now() + 30_000;
  while (!(await getRaw(cp.admin, ref('cert-manager.io/v1', 'Certificate', 'web'))) && Date.now() < end)
    await sleep(200);
  // Once the Deployment's pod runs on the kwok node, what the wave still waits for is the
  // Certificate, in Argo CD's words: the bundled check finds it not yet healthy.
  const message = (a: App) => (a.status?.['operationState'] as { message?: string } | undefined)?.message;
  const waiting = await waitForApp(
    cp,
    'certs',
    'waiting for the Certificate only',
    (a) => message(a) === 'waiting for healthy state of cert-manager.io/Certificate/web',
  );
  assert.equal(operationPhase(waiting), 'Running');
  await sleep(1000);
  assert.equal(message(await getApp(cp, 'certs')), 'waiting for healthy state of cert-manager.io/Certificate/web');
  assert.equal(await getRaw(cp.admin, ref('v1', 'ConfigMap', 'after-certificate')), undefined, 'wave 1 waits');

  await setReady('True', 'the certificate was issued');
  const synced = await waitForApp(
    cp,
    'certs',
    'Succeeded and Healthy',
    (a) => operationPhase(a) === 'Succeeded' && health(a)?.status === 'Healthy',
  );
  assert.ok(await getRaw(cp.admin, ref('v1', 'ConfigMap', 'after-certificate')), 'wave 1 applied once Ready');
  assert.equal(resourceHealth(synced, 'Deployment')?.status, 'Healthy', 'its pod runs on the kwok node');
  // Argo CD writes a resource's health as status and message only.
  assert.deepEqual(resourceHealth(synced, 'Certificate'), {
    status: 'Healthy',
    message: 'the certificate was issued',
  });
  assert.match(health(synced)?.lastTransitionTime ?? '', /^\d{4}-\d\d-\d\dT/);
});

test('a Certificate that is not Ready degrades its Application through the bundled check, with no argocd-cm key', async () => {
  const before = health(await getApp(cp, 'certs'));
  assert.equal(before?.status, 'Healthy');
  await sleep(1100); // lastTransitionTime has a resolution of one second
  await setReady('False', 'the issuer refused the request');
  const degraded = await waitForApp(
    cp,
    'certs',
    'Degraded by the Certificate',
    (a) => health(a)?.status === 'Degraded',
  );
  const { lastTransitionTime, ...rest } = health(degraded) ?? {};
  assert.deepEqual(rest, { status: 'Degraded', message: 'Caused by cert-manager.io/Certificate:tenant/web' });
  assert.ok(
    Date.parse(lastTransitionTime ?? '') > Date.parse(before?.lastTransitionTime ?? ''),
    `lastTransitionTime moves with the status code: ${before?.lastTransitionTime} -> ${lastTransitionTime}`,
  );
  assert.deepEqual(resourceHealth(degraded, 'Certificate'), {
    status: 'Degraded',
    message: 'the issuer refused the request',
  });
  // The same code again (another message): the time stays.
  await setReady('False', 'the issuer is not ready');
  const again = await waitForApp(
    cp,
    'certs',
    'the new message',
    (a) => resourceHealth(a, 'Certificate')?.message === 'the issuer is not ready',
  );
  assert.equal(health(again)?.lastTransitionTime, lastTransitionTime);
});
