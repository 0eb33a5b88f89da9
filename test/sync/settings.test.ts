// argocd-cm's comparison and sync keys, read as util/settings/settings.go reads them, and the
// resource filter as util/settings/resources_filter.go applies it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { excludedMessage, isExcludedResource } from '../../src/sync/filter.ts';
import { readSyncSettings } from '../../src/sync/settings.ts';

test('defaults: annotation tracking, app.kubernetes.io/instance, status ignored, install exclusions', () => {
  const s = readSyncSettings(undefined);
  assert.deepEqual(s.tracking, { method: 'annotation', labelKey: 'app.kubernetes.io/instance', installationID: '' });
  assert.equal(s.ignoreResourceStatusField, 'all');
  assert.equal(s.ignoreDifferencesOnResourceUpdates, true);
  assert.equal(s.ignoreAggregatedRoles, false);
  assert.equal(isExcludedResource(s.filter, '', 'Endpoints', 'https://x'), true);
  assert.deepEqual(s.errors, []);
});

test('tracking keys', () => {
  const s = readSyncSettings({
    'application.resourceTrackingMethod': 'annotation+label',
    'application.instanceLabelKey': 'example.com/app',
    installationID: 'blue',
  });
  assert.deepEqual(s.tracking, { method: 'annotation+label', labelKey: 'example.com/app', installationID: 'blue' });
  assert.equal(readSyncSettings({ 'application.resourceTrackingMethod': 'label' }).tracking.method, 'label');
  const odd = readSyncSettings({ 'application.resourceTrackingMethod': 'magic' });
  assert.equal(odd.tracking.method, 'annotation');
  assert.equal(odd.errors.length, 1);
});

test('ignoreDifferences from the resource.customizations map and the split keys; .all is */*', () => {
  const s = readSyncSettings({
    'resource.customizations': 'apps/Deployment:\n  ignoreDifferences: |\n    jsonPointers:\n    - /spec/replicas\n',
    'resource.customizations.ignoreDifferences.all': 'managedFieldsManagers:\n- kube-controller-manager\n',
    'resource.customizations.ignoreDifferences.admissionregistration.k8s.io_MutatingWebhookConfiguration':
      "jqPathExpressions:\n- '.webhooks[]?.clientConfig.caBundle'\n",
    'resource.customizations.ignoreDifferences.ConfigMap': 'jsonPointers:\n- /data/x\n',
    'resource.customizations.ignoreResourceUpdates.all': 'jsonPointers:\n- /status\n',
  });
  const byKey = Object.fromEntries(s.ignoreDifferences.map((r) => [`${r.group}/${r.kind}`, r]));
  assert.deepEqual(byKey['apps/Deployment']?.jsonPointers, ['/spec/replicas']);
  assert.deepEqual(byKey['*/*']?.managedFieldsManagers, ['kube-controller-manager']);
  assert.deepEqual(byKey['admissionregistration.k8s.io/MutatingWebhookConfiguration']?.jqPathExpressions, [
    '.webhooks[]?.clientConfig.caBundle',
  ]);
  assert.deepEqual(byKey['/ConfigMap']?.jsonPointers, ['/data/x']);
  assert.deepEqual(s.ignoreResourceUpdates[0]?.jsonPointers, ['/status']);
});

test('resource.compareoptions, with YAML 1.1 off read as false', () => {
  const s = readSyncSettings({
    'resource.compareoptions':
      'ignoreAggregatedRoles: true\nignoreResourceStatusField: off\nignoreDifferencesOnResourceUpdates: false\n',
  });
  assert.equal(s.ignoreAggregatedRoles, true);
  assert.equal(s.ignoreResourceStatusField, 'none');
  assert.equal(s.ignoreDifferencesOnResourceUpdates, false);
  assert.equal(
    readSyncSettings({ 'resource.compareoptions': 'ignoreResourceStatusField: crd' }).ignoreResourceStatusField,
    'crd',
  );
  const odd = readSyncSettings({ 'resource.compareoptions': 'ignoreResourceStatusField: some' });
  assert.deepEqual(odd.errors, [
    'argocd-cm resource.compareoptions: Unrecognized value for ignoreResourceStatusField - some, ignore status for all resources',
  ]);
});

test("the resource filter: Argo CD's table of inclusions and exclusions", () => {
  const rows: Array<[Record<string, string>, string, string, string, boolean]> = [
    [{}, 'events.k8s.io', 'Event', 'https://a', true], // core, always
    [{}, 'coordination.k8s.io', 'Lease', 'https://a', true],
    [{}, 'apps', 'Deployment', 'https://a', false],
    [{ 'resource.exclusions': '[]' }, '', 'Endpoints', 'https://a', false], // argocd-cm replaces the install list
    [{ 'resource.exclusions': "- apiGroups: ['*']\n  kinds: [ConfigMap]\n" }, '', 'ConfigMap', 'https://a', true],
    [
      { 'resource.exclusions': "- kinds: [ConfigMap]\n  clusters: ['https://b']\n" },
      '',
      'ConfigMap',
      'https://a',
      false,
    ],
    [{ 'resource.inclusions': "- apiGroups: [apps]\n  kinds: ['*']\n" }, 'apps', 'Deployment', 'https://a', false],
    [{ 'resource.inclusions': "- apiGroups: [apps]\n  kinds: ['*']\n" }, '', 'ConfigMap', 'https://a', true],
    [
      { 'resource.inclusions': "- apiGroups: [apps]\n  clusters: ['https://b']\n" },
      '',
      'ConfigMap',
      'https://a',
      false,
    ],
  ];
  for (const [cm, group, kind, cluster, want] of rows)
    assert.equal(
      isExcludedResource(readSyncSettings(cm).filter, group, kind, cluster),
      want,
      `${JSON.stringify(cm)} ${group}/${kind}`,
    );
  // controller/state.go's ExcludedResourceWarning message.
  assert.equal(excludedMessage('', 'ConfigMap', 'c'), 'Resource /ConfigMap c is excluded in the settings');
});
