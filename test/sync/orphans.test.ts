// AppProject orphanedResources counted as Argo CD counts them (controller/appcontroller.go
// getResourceTree, isKnownOrphanedResourceExclusion), through a fake client that answers discovery
// and lists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { DestinationClient, RawRequest } from '../../src/kube/types.ts';
import { DEFAULT_TRACKING } from '../../src/sync/index.ts';
import { findOrphans, isKnownOrphanExclusion, orphanedMessage } from '../../src/sync/orphans.ts';

const item = (name: string, extra: Record<string, unknown> = {}) => ({ metadata: { name, uid: name, ...extra } });

function client(
  lists: Record<string, unknown[] | number>,
  review?: { allowed: boolean },
): { client: DestinationClient; paths: string[]; reviews: unknown[] } {
  const paths: string[] = [];
  const reviews: unknown[] = [];
  const answers: Record<string, unknown> = {
    '/apis': { groups: [{ preferredVersion: { groupVersion: 'apps/v1' } }] },
    '/api/v1': {
      resources: [
        { name: 'configmaps', kind: 'ConfigMap', namespaced: true, verbs: ['list', 'watch'] },
        { name: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true, verbs: ['list', 'watch'] },
        { name: 'events', kind: 'Event', namespaced: true, verbs: ['list', 'watch'] },
        { name: 'secrets', kind: 'Secret', namespaced: true, verbs: ['list', 'watch'] },
        { name: 'pods/log', kind: 'Pod', namespaced: true, verbs: ['get'] },
        { name: 'namespaces', kind: 'Namespace', namespaced: false, verbs: ['list', 'watch'] },
      ],
    },
    '/apis/apps/v1': {
      resources: [
        { name: 'deployments', kind: 'Deployment', namespaced: true, verbs: ['list', 'watch'] },
        { name: 'replicasets', kind: 'ReplicaSet', namespaced: true, verbs: ['list', 'watch'] },
      ],
    },
  };
  const fake = {
    request: async (req: RawRequest) => {
      paths.push(req.path);
      if (req.path === '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews') {
        reviews.push(req.body);
        return { ok: true, value: { status: review }, warnings: [] };
      }
      const list = Object.entries(lists).find(([suffix]) => req.path.endsWith(`/namespaces/team/${suffix}`))?.[1];
      if (typeof list === 'number')
        return { ok: false, error: { code: list, reason: 'Forbidden', message: 'forbidden' } };
      if (list) return { ok: true, value: { items: list }, warnings: [] };
      if (answers[req.path]) return { ok: true, value: answers[req.path], warnings: [] };
      return { ok: true, value: { items: [] }, warnings: [] };
    },
  } as unknown as DestinationClient;
  return { client: fake, paths, reviews };
}

const base = {
  namespace: 'team',
  managed: new Set(['/ConfigMap/team/mine']),
  settings: { warn: true },
  permitted: () => true,
  appExists: (n: string) => n === 'other',
  tracking: DEFAULT_TRACKING,
  filter: { rules: { exclusions: [], inclusions: [] }, cluster: 'https://kubernetes.default.svc' },
};

test("Argo CD's known defaults and the project's ignore list are not orphans", () => {
  assert.equal(isKnownOrphanExclusion('', 'ServiceAccount', 'team', 'default', {}), true);
  assert.equal(isKnownOrphanExclusion('', 'ConfigMap', 'team', 'kube-root-ca.crt', {}), true);
  assert.equal(isKnownOrphanExclusion('', 'Service', 'default', 'kubernetes', {}), true);
  assert.equal(isKnownOrphanExclusion('', 'Service', 'team', 'kubernetes', {}), false);
  const ignore = {
    ignore: [
      { group: 'apps', kind: 'Deploy*' },
      { kind: 'ConfigMap', name: 'tmp-*' },
    ],
  };
  assert.equal(isKnownOrphanExclusion('apps', 'Deployment', 'team', 'web', ignore), true);
  assert.equal(isKnownOrphanExclusion('', 'ConfigMap', 'team', 'tmp-1', ignore), true);
  assert.equal(isKnownOrphanExclusion('', 'ConfigMap', 'team', 'keep', ignore), false);
});

test('top-level objects not the Application’s nor an existing one’s, each with its descendants', async () => {
  const { client: c, paths } = client({
    configmaps: [
      item('mine'),
      item('stray'),
      item('kube-root-ca.crt'),
      item('claimed', { annotations: { 'argocd.argoproj.io/tracking-id': 'other:/ConfigMap:team/claimed' } }),
      item('ghosted', { annotations: { 'argocd.argoproj.io/tracking-id': 'gone:/ConfigMap:team/ghosted' } }),
    ],
    serviceaccounts: [item('default')],
    deployments: [item('web')],
    replicasets: [item('web-1', { ownerReferences: [{ uid: 'web' }] })],
    events: [item('noise')],
    secrets: 403,
  });
  const report = await findOrphans(c, { ...base, respectRBAC: 'normal' });
  assert.deepEqual(report.orphans, ['ConfigMap/ghosted', 'ConfigMap/stray', 'Deployment/web', 'ReplicaSet/web-1']);
  assert.deepEqual(report.skipped, ['/api/v1/namespaces/team/secrets']);
  assert.ok(!paths.some((p) => p.endsWith('/events')), 'Events are excluded (core exclusions): not listed');
  assert.ok(!paths.some((p) => p.includes('pods/log') || p.endsWith('/namespaces')), 'subresources and cluster kinds');
  assert.equal(orphanedMessage(report.orphans.length), 'Application has 4 orphaned resources');
});

test('what the project does not permit is not counted', async () => {
  const { client: c } = client({ deployments: [item('web')], configmaps: [item('stray')] });
  const report = await findOrphans(c, { ...base, permitted: (group) => group !== 'apps' });
  assert.deepEqual(report.orphans, ['ConfigMap/stray']);
});

test('resource.respectRBAC: unset, a kind the identity may not list fails as Argo CD’s cache; strict asks a review', async () => {
  const lists = { configmaps: [item('stray')], secrets: 403 };
  const unset = await findOrphans(client(lists).client, base);
  assert.equal(
    unset.error,
    'failed to sync cluster https://kubernetes.default.svc: failed to load initial state of resource Secret: forbidden',
  );
  assert.deepEqual(unset.orphans, []);
  const normal = await findOrphans(client(lists).client, { ...base, respectRBAC: 'normal' });
  assert.equal(normal.error, undefined);
  assert.deepEqual(normal.orphans, ['ConfigMap/stray']);
  // strict: the review denies it, the kind is left out; it allows it, the kind is kept and fails.
  const denied = client(lists, { allowed: false });
  const strict = await findOrphans(denied.client, { ...base, respectRBAC: 'strict' });
  assert.deepEqual([strict.error, strict.orphans], [undefined, ['ConfigMap/stray']]);
  assert.deepEqual(denied.reviews, [
    {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { namespace: 'team', verb: 'list', resource: 'secrets' } },
    },
  ]);
  const allowed = await findOrphans(client(lists, { allowed: true }).client, { ...base, respectRBAC: 'strict' });
  assert.match(allowed.error ?? '', /failed to load initial state of resource Secret: forbidden$/);
  // Not a refusal: not respectRBAC's to decide, left out as before.
  const broken = await findOrphans(client({ configmaps: [item('stray')], secrets: 500 }).client, base);
  assert.deepEqual([broken.error, broken.orphans], [undefined, ['ConfigMap/stray']]);
});
