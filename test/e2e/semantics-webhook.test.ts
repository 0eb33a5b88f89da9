// A real mutating admission webhook on the real control plane: an HTTPS server this test runs on
// 127.0.0.1, registered by a MutatingWebhookConfiguration (clientConfig.url and caBundle), that on
// every request (dry-runs included) writes an annotation carrying a counter. As Argo CD v3.6.1
// (gitops-engine's removeWebhookMutation): with ServerSideDiff=true the counter, which the
// manifest does not set, comes from live and the Application stays Synced however many times the
// webhook answers; with ServerSideDiff=true,IncludeMutationWebhook=true the dry-run's new counter
// is a difference; and where the manifest sets the annotation the webhook rewrites, the field is
// the manifest's (its manager owns it), with the value the dry-run gave, so it differs each time.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { applyRaw, getRaw, requestOk } from '../support/index.ts';
import type { KubeObject, TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import { testCA } from '../support/tls.ts';
import type { KubeObject as ApiObject } from '../../src/api/index.ts';
import { elementKey } from '../../src/sync/smd/path.ts';
import type { Value } from '../../src/sync/smd/path.ts';
import { schemaFromOpenApiV3 } from '../../src/sync/smd/schema.ts';
import { fieldSetFromFieldsV1 } from '../../src/sync/smd/set.ts';
import type { FieldSet } from '../../src/sync/smd/set.ts';
import { merge, removedFields, toFieldSet } from '../../src/sync/smd/typed.ts';
import { removeWebhookMutation } from '../../src/sync/webhook-mutation.ts';
import { goReference } from '../sync/smd/go-reference.ts';
import { application, operationPhase, startDeployersPlane, startFixture, waitForApp } from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

const COUNTER = 'webhook.example.com/counter';
const NAMESPACES = ['wh-default', 'wh-include', 'wh-owned'] as const;

let cp: TestControlPlane;
let fx: Fixture;
let server: https.Server;
/** Requests the webhook answered, by namespace, dry-runs among them. */
const answered = new Map<string, { all: number; dryRun: number }>();
let counter = 0;

interface Review {
  request: { uid: string; namespace?: string; dryRun?: boolean; object: { metadata?: { annotations?: object } } };
}

function startWebhook(): Promise<number> {
  const ca = testCA();
  server = https.createServer({ cert: ca.cert, key: ca.key }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const review = JSON.parse(body) as Review;
      const ns = review.request.namespace ?? '';
      const seen = answered.get(ns) ?? { all: 0, dryRun: 0 };
      seen.all++;
      if (review.request.dryRun) seen.dryRun++;
      answered.set(ns, seen);
      counter++;
      const value = String(counter);
      const patch = review.request.object.metadata?.annotations
        ? [{ op: 'add', path: `/metadata/annotations/${COUNTER.replace('/', '~1')}`, value }]
        : [{ op: 'add', path: '/metadata/annotations', value: { [COUNTER]: value } }];
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: {
            uid: review.request.uid,
            allowed: true,
            patchType: 'JSONPatch',
            patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
          },
        }),
      );
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function app(name: string, compareOptions: string): KubeObject {
  const base = application(name, fx.repo.url, {
    project: 'wh',
    path: name,
    destination: { server: 'https://kubernetes.default.svc', namespace: name },
  });
  // Automated without self-heal: the first sync applies Git, later differences are only reported.
  return {
    ...base,
    metadata: {
      ...base.metadata,
      annotations: { 'argocd.argoproj.io/compare-options': compareOptions },
    },
    spec: { ...(base['spec'] as Record<string, unknown>), syncPolicy: { automated: {} } },
  };
}

const synced = (a: { status?: Record<string, unknown> }) =>
  (a.status?.['sync'] as { status?: string } | undefined)?.status;

const configMap = (annotations = '') =>
  'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mutated\n  labels:\n    webhook-e2e: "on"\n' +
  annotations +
  'data:\n  a: git\n';

before(async () => {
  cp = await startDeployersPlane({
    settings: { 'application.sync.impersonation.enabled': 'true' },
    project: 'wh',
    namespaces: NAMESPACES,
  });
  const port = await startWebhook();
  await applyRaw(cp.admin, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'counter.webhook.example.com' },
    webhooks: [
      {
        name: 'counter.webhook.example.com',
        clientConfig: {
          url: `https://127.0.0.1:${port}/mutate`,
          caBundle: Buffer.from(testCA().caCert).toString('base64'),
        },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }],
        objectSelector: { matchLabels: { 'webhook-e2e': 'on' } },
        // A webhook without side effects is called for dry-runs too (others make a dry-run fail).
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        failurePolicy: 'Fail',
        timeoutSeconds: 10,
      },
    ],
  });
  fx = await startFixture(cp, {
    'wh-default/cm.yaml': configMap(),
    'wh-include/cm.yaml': configMap(),
    'wh-owned/cm.yaml': configMap(`  annotations:\n    ${COUNTER}: "git"\n`),
  });
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
  await new Promise((r) => server?.close(r));
});

/** A hard refresh (every dry-run sent again), done when the controller has removed the annotation. */
async function hardRefresh(name: string): Promise<void> {
  await requestOk(cp.admin, {
    method: 'PATCH',
    path: `/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/${name}`,
    body: { metadata: { annotations: { 'argocd.argoproj.io/refresh': 'hard' } } },
    contentType: 'application/merge-patch+json',
  });
  await waitForApp(cp, name, 'hard refresh done', (a) => {
    const ann = (a['metadata'] as { annotations?: Record<string, string> }).annotations ?? {};
    return ann['argocd.argoproj.io/refresh'] === undefined;
  });
}

async function liveCounter(namespace: string): Promise<string | undefined> {
  const cm = (await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'mutated', namespace })) as
    { metadata: { annotations?: Record<string, string> } } | undefined;
  return cm?.metadata.annotations?.[COUNTER];
}

test('ServerSideDiff=true: a field only the webhook sets comes from live; Synced, and still Synced after refreshes the webhook answers anew', async () => {
  await applyRaw(cp.admin, app('wh-default', 'ServerSideDiff=true'));
  await waitForApp(cp, 'wh-default', 'synced', (a) => operationPhase(a) === 'Succeeded' && synced(a) === 'Synced');
  const live = await liveCounter('wh-default');
  assert.ok(live, 'the webhook mutated the applied object');
  for (let i = 0; i < 3; i++) {
    const dryRuns = answered.get('wh-default')?.dryRun ?? 0;
    await hardRefresh('wh-default');
    assert.ok((answered.get('wh-default')?.dryRun ?? 0) > dryRuns, 'the refresh sent a dry-run the webhook mutated');
    const a = await waitForApp(cp, 'wh-default', 'compared', () => true);
    assert.equal(synced(a), 'Synced', JSON.stringify(a.status?.['conditions'] ?? []));
  }
  // Nothing was applied meanwhile: the live counter is the one the sync left.
  assert.equal(await liveCounter('wh-default'), live);
});

test('ServerSideDiff=true,IncludeMutationWebhook=true: the dry-run’s new counter is a difference; OutOfSync', async () => {
  await applyRaw(cp.admin, app('wh-include', 'ServerSideDiff=true,IncludeMutationWebhook=true'));
  await waitForApp(cp, 'wh-include', 'synced once', (a) => operationPhase(a) === 'Succeeded');
  await hardRefresh('wh-include');
  const a = await waitForApp(cp, 'wh-include', 'OutOfSync', (x) => synced(x) === 'OutOfSync');
  assert.equal(synced(a), 'OutOfSync');
});

test('ServerSideDiff=true and the manifest sets the field the webhook rewrites: the manifest’s field, with the dry-run’s value; OutOfSync', async () => {
  await applyRaw(cp.admin, app('wh-owned', 'ServerSideDiff=true'));
  await waitForApp(cp, 'wh-owned', 'synced once', (a) => operationPhase(a) === 'Succeeded');
  const live = await liveCounter('wh-owned');
  assert.ok(live !== undefined && live !== 'git', `the webhook rewrote the manifest's value: ${live}`);
  await hardRefresh('wh-owned');
  const a = await waitForApp(cp, 'wh-owned', 'OutOfSync', (x) => synced(x) === 'OutOfSync');
  assert.equal(synced(a), 'OutOfSync');
  await until('refreshed again', async () => {
    await hardRefresh('wh-owned');
    return synced(await waitForApp(cp, 'wh-owned', 'compared', () => true)) === 'OutOfSync';
  });
});

const GADGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.example.com' },
  spec: {
    group: 'example.com',
    names: { kind: 'Gadget', plural: 'gadgets', singular: 'gadget', listKind: 'GadgetList' },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: {
                  ports: {
                    type: 'array',
                    nullable: true,
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['name'],
                    items: {
                      type: 'object',
                      required: ['name'],
                      properties: { name: { type: 'string' }, port: { type: 'integer' } },
                    },
                  },
                  free: {
                    type: 'object',
                    'x-kubernetes-preserve-unknown-fields': true,
                    properties: { tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } } },
                  },
                  labels: {
                    type: 'object',
                    'x-kubernetes-map-type': 'atomic',
                    additionalProperties: { type: 'string' },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
};

// Argo CD builds its parser from the destination's OpenAPI v2 document; impersync reads v3 per
// group-version and first puts each definition as v2 publishes it (a nullable field without its
// type, a preserve-unknown-fields object without its properties). On the real API server's two
// documents for one CRD, every operation gives the same as the Go library on the v2 document.
test('a CRD with a nullable list map and a preserve-unknown-fields object: the v3 schema gives what Argo CD’s v2 parser gives', async () => {
  await applyRaw(cp.admin, GADGET_CRD);
  const name = 'com.example.v1.Gadget';
  let v2: { definitions?: Record<string, unknown> } = {};
  let v3: { components?: { schemas?: Record<string, unknown> } } = {};
  await until(
    'Gadget published in OpenAPI v2 and v3',
    async () => {
      v2 = (await requestOk(cp.admin, { method: 'GET', path: '/openapi/v2' })) as typeof v2;
      v3 = (await requestOk(cp.admin, { method: 'GET', path: '/openapi/v3/apis/example.com/v1' }).catch(
        () => ({}),
      )) as typeof v3;
      return v2.definitions?.[name] !== undefined && v3.components?.schemas?.[name] !== undefined;
    },
    60_000,
  );
  const owned = {
    'f:spec': {
      'f:ports': { 'k:{"name":"a"}': { '.': {}, 'f:name': {}, 'f:port': {} } },
      'f:free': { 'f:tags': { 'v:"x"': {} }, 'f:size': {} },
      'f:labels': {},
    },
  };
  const gadget = (spec: Record<string, unknown>) => ({
    apiVersion: 'example.com/v1',
    kind: 'Gadget',
    metadata: {
      name: 'g',
      namespace: 'wh-default',
      managedFields: [
        {
          manager: 'impersync',
          operation: 'Apply',
          apiVersion: 'example.com/v1',
          fieldsType: 'FieldsV1',
          fieldsV1: owned,
        },
      ],
    },
    spec,
  });
  const live = gadget({
    ports: [{ name: 'a', port: 1 }],
    free: { tags: ['x'], size: 1, extra: 'live' },
    labels: { a: '1' },
  });
  const predicted = gadget({
    ports: [
      { name: 'a', port: 2 },
      { name: 'webhook', port: 3 },
    ],
    free: { tags: ['x', 'webhook'], size: 2, extra: 'webhook', more: { deep: 1 } },
    labels: { a: '1', webhook: '1' },
  });
  const schema = schemaFromOpenApiV3(v3);
  assert.equal(schema.gvks.get('example.com/v1, Kind=Gadget'), name);
  const go = goReference({ document: {}, documentV2: v2, typeName: name, predicted, live, manager: 'impersync' });
  const tr = { named: name };
  const keys = (s: FieldSet) => [...s.paths()].map((p) => p.map(elementKey).join(' ')).sort();
  assert.deepEqual(keys(toFieldSet(schema, tr, predicted as Value)), keys(fieldSetFromFieldsV1(go.fieldSet)));
  assert.deepEqual(
    keys(removedFields(schema, tr, live as Value, predicted as Value)),
    keys(fieldSetFromFieldsV1(go.removed)),
  );
  assert.deepEqual(merge(schema, tr, live as Value, predicted as Value), go.merged);
  const out = removeWebhookMutation(
    predicted as unknown as ApiObject,
    live as unknown as ApiObject,
    { schema, type: tr },
    'impersync',
  );
  assert.deepEqual(out, go.result);
  // As v2 has it: the nullable list map is atomic (the webhook's port kept with the owned list), the
  // set under preserve-unknown-fields atomic too, the atomic map whole.
  assert.deepEqual((out as unknown as { spec: unknown }).spec, {
    ports: [
      { name: 'a', port: 2 },
      { name: 'webhook', port: 3 },
    ],
    free: { tags: ['x', 'webhook'], size: 2, extra: 'live' },
    labels: { a: '1', webhook: '1' },
  });
});
