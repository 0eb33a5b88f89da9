import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  appInstanceName,
  formatTrackingId,
  parseTrackingId,
  trackedApp,
  trackingIdFor,
  withTrackingId,
} from '../../src/sync/tracking.ts';

test("tracking id is Argo CD's <app>:<group>/<kind>:<namespace>/<name>", () => {
  assert.equal(
    trackingIdFor(
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' } },
      'guestbook',
      'dest',
    ),
    'guestbook:apps/Deployment:shop/web',
  );
  assert.equal(
    trackingIdFor({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }, 'guestbook', 'dest'),
    'guestbook:/ConfigMap:dest/c',
  );
  assert.equal(
    trackingIdFor(
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'r' } },
      'a',
      'dest',
    ),
    'a:rbac.authorization.k8s.io/ClusterRole:dest/r',
    'a cluster-scoped object carries the destination namespace, as Argo CD writes it',
  );
});

test('withTrackingId adds the annotation to a copy', () => {
  const o = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n', annotations: { x: 'y' } } };
  const t = withTrackingId(o, 'app', 'n');
  assert.deepEqual(t.metadata.annotations, { x: 'y', 'argocd.argoproj.io/tracking-id': 'app:/ConfigMap:n/c' });
  assert.deepEqual(o.metadata.annotations, { x: 'y' });
  assert.equal(trackedApp(t), 'app');
  assert.equal(trackedApp(o), null);
});

test('parse and format are inverse; malformed ids are null', () => {
  fc.assert(
    fc.property(
      fc.record({
        app: fc.stringMatching(/^[a-z0-9_-]*$/),
        group: fc.stringMatching(/^[a-z.]*$/),
        kind: fc.stringMatching(/^[A-Za-z]+$/),
        namespace: fc.stringMatching(/^[a-z0-9-]*$/),
        name: fc.stringMatching(/^[a-z0-9.-]*$/),
      }),
      (t) => assert.deepEqual(parseTrackingId(formatTrackingId(t)), { ...t }),
    ),
  );
  assert.equal(parseTrackingId('app:/ConfigMap'), null);
  assert.equal(parseTrackingId('app:ConfigMap:ns/name'), null);
  assert.equal(parseTrackingId('no-colons'), null);
});

test('app instance name: the name in the controller namespace, <ns>_<name> elsewhere', () => {
  assert.equal(appInstanceName({ metadata: { name: 'a', namespace: 'argocd' } }, 'argocd'), 'a');
  assert.equal(appInstanceName({ metadata: { name: 'a', namespace: 'team' } }, 'argocd'), 'team_a');
});
