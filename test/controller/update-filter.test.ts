// Which live-object changes refresh an Application (controller/update-filter.ts), as argocd-cm's
// `resource.customizations.ignoreResourceUpdates.<group_kind>` and
// `resource.ignoreResourceUpdatesEnabled` decide in Argo CD (GetIgnoreResourceUpdatesOverrides).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import { worthRefresh } from '../../src/controller/update-filter.ts';
import { readSyncSettings } from '../../src/sync/settings.ts';

const deployment = (replicas: number, image: string, status: Record<string, unknown> = {}): KubeObject =>
  ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'team', resourceVersion: String(replicas * 10 + image.length) },
    spec: { replicas, template: { spec: { containers: [{ name: 'web', image }] } } },
    status,
  }) as KubeObject;

const IGNORE_REPLICAS = {
  'resource.customizations.ignoreResourceUpdates.apps_Deployment': 'jsonPointers:\n- /spec/replicas\n',
};

test('resource.customizations.ignoreResourceUpdates.<group_kind>: a change only in ignored fields is no refresh', async () => {
  const settings = readSyncSettings(IGNORE_REPLICAS);
  assert.equal(await worthRefresh(settings, deployment(1, 'a'), deployment(3, 'a'), undefined), false);
  assert.equal(await worthRefresh(settings, deployment(1, 'a'), deployment(3, 'b'), undefined), true, 'image too');
  assert.equal(
    await worthRefresh(settings, deployment(1, 'a'), deployment(3, 'a', { readyReplicas: 1 }), undefined),
    true,
    'a status change always refreshes',
  );
  // Without the rule, the same change refreshes.
  assert.equal(await worthRefresh(readSyncSettings({}), deployment(1, 'a'), deployment(3, 'a'), undefined), true);
});

test('resource.ignoreResourceUpdatesEnabled "false" turns the filter off: every change refreshes', async () => {
  const settings = readSyncSettings({ ...IGNORE_REPLICAS, 'resource.ignoreResourceUpdatesEnabled': 'false' });
  assert.equal(settings.ignoreResourceUpdatesEnabled, false);
  assert.equal(await worthRefresh(settings, deployment(1, 'a'), deployment(3, 'a'), undefined), true);
  const on = readSyncSettings({ ...IGNORE_REPLICAS, 'resource.ignoreResourceUpdatesEnabled': 'true' });
  assert.equal(await worthRefresh(on, deployment(1, 'a'), deployment(3, 'a'), undefined), false);
});
