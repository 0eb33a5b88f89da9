// The three tracking methods and the deletion options, as util/argo/resource_tracking.go and
// controller/appcontroller.go (shouldBeDeleted) and controller/state.go (isObjRequiresDeletionConfirmation) read them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import {
  deletedWithApplication,
  pruneDisabled,
  pruneNeedsConfirmation,
  requiresDeletionConfirmation,
} from '../../src/sync/options.ts';
import { selfReferenced, trackedApp, truncateLabel, withTrackingId } from '../../src/sync/tracking.ts';
import type { TrackingConfig } from '../../src/sync/tracking.ts';

const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n' } };
const cfg = (method: TrackingConfig['method'], installationID = ''): TrackingConfig => ({
  method,
  labelKey: 'app.kubernetes.io/instance',
  installationID,
});

test('each method writes and reads its own marks', () => {
  const label = withTrackingId(cm, 'guestbook', 'n', cfg('label'));
  assert.deepEqual(label.metadata.labels, { 'app.kubernetes.io/instance': 'guestbook' });
  assert.equal(label.metadata.annotations, undefined);
  assert.equal(trackedApp(label, cfg('label')), 'guestbook');
  assert.equal(trackedApp(label, cfg('annotation')), null);

  const both = withTrackingId(cm, 'guestbook', 'n', cfg('annotation+label'));
  assert.equal(both.metadata.annotations?.['argocd.argoproj.io/tracking-id'], 'guestbook:/ConfigMap:n/c');
  assert.equal(both.metadata.labels?.['app.kubernetes.io/instance'], 'guestbook');
  // annotation+label reads the annotation.
  assert.equal(
    trackedApp({ ...both, metadata: { ...both.metadata, labels: {} } }, cfg('annotation+label')),
    'guestbook',
  );

  const id = withTrackingId(cm, 'guestbook', 'n', cfg('annotation', 'blue'));
  assert.equal(id.metadata.annotations?.['argocd.argoproj.io/installation-id'], 'blue');
  assert.equal(trackedApp(id, cfg('annotation', 'blue')), 'guestbook');
  assert.equal(trackedApp(id, cfg('annotation', 'green')), null, "another installation's object");
});

test('annotation+label truncates the label to 63 characters ending in a letter or digit', () => {
  assert.equal(truncateLabel(`${'a'.repeat(62)}-b`), 'a'.repeat(62));
  assert.equal(truncateLabel('short'), 'short');
});

test('a copied tracking id naming another object is not self-referenced (isSelfReferencedObj)', () => {
  const copied = withTrackingId({ ...cm, metadata: { name: 'other', namespace: 'n' } }, 'guestbook', 'n');
  const onThis = { ...cm, metadata: { ...cm.metadata, annotations: copied.metadata.annotations } };
  assert.equal(selfReferenced(onThis, cfg('annotation')), false);
  assert.equal(selfReferenced(withTrackingId(cm, 'guestbook', 'n'), cfg('annotation')), true);
  assert.equal(selfReferenced(onThis, cfg('label')), true);
});

const annotated = (v: string, extra: Record<string, string> = {}): KubeObject => ({
  ...cm,
  metadata: { ...cm.metadata, annotations: { 'argocd.argoproj.io/sync-options': v, ...extra } },
});

test("Prune= and Delete=: the object's own value wins over the Application's", () => {
  assert.equal(pruneDisabled(annotated('Prune=false')), true);
  assert.equal(pruneDisabled(cm, 'false'), true);
  assert.equal(pruneDisabled(annotated('Prune=true'), 'false'), false);
  assert.equal(pruneNeedsConfirmation(annotated('Prune=confirm')), true);
  assert.equal(requiresDeletionConfirmation(annotated('Delete=confirm'), []), true);
  assert.equal(requiresDeletionConfirmation(cm, ['Prune=confirm']), true);
  assert.equal(requiresDeletionConfirmation(cm, []), false);
  assert.equal(deletedWithApplication(annotated('Delete=false'), undefined), false);
  assert.equal(deletedWithApplication(cm, 'false'), false);
  assert.equal(deletedWithApplication(annotated('Delete=true'), 'false'), true);
  assert.equal(
    deletedWithApplication(
      { ...cm, metadata: { ...cm.metadata, annotations: { 'helm.sh/resource-policy': 'keep' } } },
      undefined,
    ),
    false,
  );
  assert.equal(
    deletedWithApplication(
      { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'x' } },
      undefined,
    ),
    false,
  );
  assert.equal(deletedWithApplication(cm, undefined), true);
});
