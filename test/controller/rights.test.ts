// Every missing right at once (src/controller/rights.ts, rights-needs.ts, refusals.ts): which
// rights the rendered objects need, how the answers of the SelfSubjectAccessReviews become the one
// message, and how often the API server is asked. The client is a scripted DestinationClient
// answering reviews from a list of granted rights; the real API server's answers are
// test/e2e/rights.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import { RightsCheck, missingRightsMessage, subjectOf } from '../../src/controller/rights.ts';
import { comparisonNeeds, liveFrom, syncNeeds, syncNeedsAfter } from '../../src/controller/rights-needs.ts';
import { watchRefusals, withoutRefusals } from '../../src/controller/refusals.ts';
import type { DestinationClient, KubeResult, RawRequest, ResourceInfo } from '../../src/kube/types.ts';
import type { ResourceComparison } from '../../src/sync/index.ts';

const KINDS: Record<string, ResourceInfo> = {
  'apps/Deployment': info('apps', 'v1', 'Deployment', 'deployments', true),
  '/Service': info('', 'v1', 'Service', 'services', true),
  '/ConfigMap': info('', 'v1', 'ConfigMap', 'configmaps', true),
  '/Namespace': info('', 'v1', 'Namespace', 'namespaces', false),
  'batch/Job': info('batch', 'v1', 'Job', 'jobs', true),
};

function info(group: string, version: string, kind: string, resource: string, namespaced: boolean): ResourceInfo {
  return {
    apiVersion: group ? `${group}/${version}` : version,
    group,
    version,
    kind,
    resource,
    namespaced,
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
  };
}

const ok = <T>(value: T): KubeResult<T> => ({ ok: true, value, warnings: [] });

/** Answers reviews from `granted` ("verb resource namespace" entries); counts them. */
function reviewer(granted: string[], identity = 'system:serviceaccount:guestbook-dev:deployer') {
  const asked: string[] = [];
  const resolveKind = (group: string, kind: string): KubeResult<ResourceInfo> => {
    const found = KINDS[`${group}/${kind}`];
    return found ? ok(found) : { ok: false, error: { code: 404, reason: 'NotFound', message: `no ${kind}` } };
  };
  const unused = (): never => {
    throw new Error('not used');
  };
  const client: DestinationClient = {
    server: 'https://kubernetes.default.svc',
    identity: { impersonate: identity },
    resolve: async (apiVersion, kind) =>
      resolveKind(apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : '', kind),
    resolveGroupKind: async (group, kind) => resolveKind(group, kind),
    request: async <T>(req: RawRequest): Promise<KubeResult<T>> => {
      assert.equal(req.path, '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews');
      const a = (req.body as { spec: { resourceAttributes: Record<string, string> } }).spec.resourceAttributes;
      const key =
        `${a['verb']} ${a['group'] ? `${a['resource']}.${a['group']}` : a['resource']} ${a['namespace'] ?? ''}`.trim();
      asked.push(key);
      return ok({ status: { allowed: granted.includes(key) } } as T);
    },
    apply: unused,
    create: unused,
    get: unused,
    list: unused,
    delete: unused,
    uncached: unused,
    openApiV3: unused,
  };
  return { client, asked };
}

const deployment: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'guestbook-dev' },
};
const service: KubeObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' } };
const exists = () => true;

test("the issue's example: get and patch of Deployments and Services, named in one message", async () => {
  const { client } = reviewer(['create deployments.apps guestbook-dev']);
  const result = await new RightsCheck().check(client, comparisonNeeds([deployment, service], exists), {
    defaultNamespace: 'guestbook-dev',
  });
  assert.ok(result.ok);
  assert.equal(
    missingRightsMessage(result.report),
    'ServiceAccount guestbook-dev:deployer may not: get, patch deployments.apps in guestbook-dev; get, patch services in guestbook-dev',
  );
  assert.equal(result.report.needed, 4);
});

test('an object not known to exist needs create too (the apply creates it); one known to exist does not', () => {
  const live = liveFrom(
    [
      {
        group: 'apps',
        kind: 'Deployment',
        namespace: 'guestbook-dev',
        name: 'web',
        live: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' } },
      },
      { group: '', kind: 'Service', namespace: 'guestbook-dev', name: 'web', live: null },
    ] as ResourceComparison[],
    'guestbook-dev',
  );
  assert.deepEqual(
    comparisonNeeds([deployment, service], live).map((n) => [n.kind, n.verbs]),
    [
      ['Deployment', ['get', 'patch']],
      ['Service', ['get', 'create', 'patch']],
    ],
  );
  // A read that was refused leaves it unknown: create is asked about too...
  assert.deepEqual(comparisonNeeds([service], () => undefined)[0]?.verbs, ['get', 'create', 'patch']);
  // ...unless the last comparison recorded it (Synced, or a health not Missing); recorded Missing is absent.
  const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } };
  const recorded = liveFrom([], 'guestbook-dev', [
    { kind: 'Service', name: 'web', namespace: 'guestbook-dev', status: 'OutOfSync', health: { status: 'Healthy' } },
    { group: 'apps', kind: 'Deployment', name: 'web', namespace: 'guestbook-dev', health: { status: 'Missing' } },
    { kind: 'ConfigMap', name: 'c', namespace: 'guestbook-dev', status: 'Synced' },
  ]);
  assert.deepEqual(
    comparisonNeeds([service, deployment, cm], recorded).map((n) => n.verbs),
    [
      ['get', 'patch'],
      ['get', 'create', 'patch'],
      ['get', 'patch'],
    ],
  );
});

test('nothing missing: no message; several namespaces and cluster scope each get their clause, in order', async () => {
  const all = ['get services guestbook-dev', 'patch services guestbook-dev'];
  const none = await new RightsCheck().check(reviewer(all).client, comparisonNeeds([service], exists), {
    defaultNamespace: 'guestbook-dev',
  });
  assert.ok(none.ok);
  assert.equal(missingRightsMessage(none.report), undefined);
  const other: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'another' } };
  const ns: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'guestbook-dev' } };
  const some = await new RightsCheck().check(reviewer(all).client, comparisonNeeds([other, service, ns], exists), {
    defaultNamespace: 'guestbook-dev',
  });
  assert.ok(some.ok);
  assert.equal(
    missingRightsMessage(some.report),
    'ServiceAccount guestbook-dev:deployer may not: get, patch namespaces at cluster scope; get, patch configmaps in another',
  );
});

test('a sync also needs its hooks (created and deleted), its prunes and the namespace it creates; Skip is never sent', () => {
  const hook: KubeObject = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'migrate', annotations: { 'argocd.argoproj.io/hook': 'PreSync' } },
  };
  const skipped: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'skip', annotations: { 'argocd.argoproj.io/hook': 'Skip' } },
  };
  const needs = syncNeeds([service, hook, skipped], {
    live: exists,
    prune: [{ group: 'apps', kind: 'Deployment', name: 'old', namespace: 'guestbook-dev' }],
    createNamespace: 'guestbook-dev',
  });
  assert.deepEqual(
    needs.map((n) => [n.kind, n.verbs]),
    [
      ['Service', ['get', 'patch']],
      ['Job', ['get', 'create', 'patch', 'delete']],
      ['Deployment', ['delete']],
      ['Namespace', ['get', 'create', 'patch']],
    ],
  );
  assert.deepEqual(comparisonNeeds([hook, skipped], exists), [], 'hooks are not compared');
  const after = syncNeedsAfter([service], [], { destination: 'guestbook-dev', prune: false, syncOptions: [] });
  assert.deepEqual(
    after.map((n) => n.verbs),
    [['get', 'create', 'patch']],
  );
});

test('answers are remembered for a minute per identity; a hard refresh asks again', async () => {
  let now = 0;
  const check = new RightsCheck({ now: () => now });
  const r = reviewer([]);
  const needs = comparisonNeeds([service], exists);
  await check.check(r.client, needs, { defaultNamespace: 'a' });
  assert.equal(r.asked.length, 2);
  await check.check(r.client, needs, { defaultNamespace: 'a' });
  assert.equal(r.asked.length, 2, 'remembered');
  await check.check(r.client, needs, { defaultNamespace: 'a', fresh: true });
  assert.equal(r.asked.length, 4, 'asked again');
  const other = reviewer([], 'system:serviceaccount:b:deployer');
  await check.check(other.client, needs, { defaultNamespace: 'a' });
  assert.equal(other.asked.length, 2, "another identity's answers are its own");
  now += 60_000;
  await check.check(r.client, needs, { defaultNamespace: 'a' });
  assert.equal(r.asked.length, 6, 'a minute later');
});

test('no refusal, no review; a refusal the identity holds every right for (admission, say) gives no message', async () => {
  const r = reviewer(['get services a', 'patch services a']);
  const check = new RightsCheck();
  assert.equal(
    await check.afterRefusals(r.client, [], () => assert.fail('the needs are worked out only after a refusal'), {
      defaultNamespace: 'a',
    }),
    undefined,
  );
  assert.equal(r.asked.length, 0);
  assert.equal(
    await check.afterRefusals(r.client, ['denied by a policy'], () => comparisonNeeds([service], exists), {
      defaultNamespace: 'a',
    }),
    undefined,
  );
  assert.equal(r.asked.length, 2);
});

test('a review that fails is an error, not a list of rights', async () => {
  const { client } = reviewer([]);
  const failing: DestinationClient = {
    ...client,
    request: async () => ({ ok: false, error: { code: 403, reason: 'Forbidden', message: 'cannot impersonate' } }),
  };
  const errors: string[] = [];
  const message = await new RightsCheck().afterRefusals(failing, ['x'], () => comparisonNeeds([service], exists), {
    onError: (e) => errors.push(e),
  });
  assert.equal(message, undefined);
  assert.match(
    errors[0] ?? '',
    /cannot ask which rights ServiceAccount guestbook-dev:deployer holds: cannot impersonate/,
  );
});

test('kinds the server does not serve are listed, not asked about', async () => {
  const widget: KubeObject = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'a' } };
  const r = reviewer([]);
  const result = await new RightsCheck().check(r.client, comparisonNeeds([widget], exists));
  assert.ok(result.ok);
  assert.deepEqual(result.report.unknownKinds, ['Widget.example.com']);
  assert.equal(r.asked.length, 0);
});

test('the subject: a ServiceAccount as namespace:name, the controller as its own credential', () => {
  assert.equal(subjectOf({ impersonate: 'system:serviceaccount:team:deployer' }), 'ServiceAccount team:deployer');
  assert.equal(subjectOf({ controller: true }), "the controller's own credential");
});

test('refusals: the 403s a client met, once each; the messages they became are left out', async () => {
  const forbidden = {
    ok: false as const,
    error: { code: 403, reason: 'Forbidden', message: 'services "web" is forbidden' },
  };
  const notFound = { ok: false as const, error: { code: 404, reason: 'NotFound', message: 'gone' } };
  const answers = [forbidden, notFound, forbidden];
  const { client } = reviewer([]);
  const watched = watchRefusals({ ...client, get: async () => answers.shift() ?? notFound });
  for (let i = 0; i < 3; i++) await watched.client.get({ apiVersion: 'v1', kind: 'Service', name: 'web' });
  assert.deepEqual(watched.refusals, ['services "web" is forbidden']);
  assert.deepEqual(
    withoutRefusals(['Failed to compare ...: Service web: services "web" is forbidden', 'other'], watched.refusals),
    ['other'],
  );
});
