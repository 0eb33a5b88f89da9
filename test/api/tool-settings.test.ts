// argocd-cm's tool keys read as Argo CD v3.6.1 reads them (util/settings/settings.go
// GetKustomizeSettings and GetEnabledSourceTypes).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readToolSettings } from '../../src/api/tool-settings.ts';

test('no tool key: no settings, so requests are as before', () => {
  assert.equal(readToolSettings(undefined), undefined);
  assert.equal(readToolSettings({ url: 'https://argo' }), undefined);
});

test('a switch turns its type off unless it is exactly "true"; empty is not set', () => {
  assert.deepEqual(readToolSettings({ 'kustomize.enable': 'false', 'helm.enable': 'True', 'jsonnet.enable': '' }), {
    disabled: ['Kustomize', 'Helm'],
  });
  assert.equal(readToolSettings({ 'kustomize.enable': 'true', 'helm.enable': 'true' }), undefined);
  assert.deepEqual(readToolSettings({ 'jsonnet.enable': 'no' }), { disabled: ['Directory'] });
});

test('kustomize.path.<v> and kustomize.version.<v> name versions; buildOptions.<v> attach to them', () => {
  assert.deepEqual(
    readToolSettings({
      'kustomize.buildOptions': '--enable-helm',
      'kustomize.path.v5.8.1': '/opt/kustomize-5.8.1',
      'kustomize.version.v4.5.7': '/opt/kustomize-4.5.7',
      'kustomize.buildOptions.v5.8.1': '--enable-alpha-plugins',
      'kustomize.buildOptions.v9': '--ignored-without-a-path',
    }),
    {
      kustomize: {
        buildOptions: '--enable-helm',
        versions: [
          { name: 'v5.8.1', path: '/opt/kustomize-5.8.1', buildOptions: '--enable-alpha-plugins' },
          { name: 'v4.5.7', path: '/opt/kustomize-4.5.7' },
        ],
      },
    },
  );
});

test('one version named by both keys is Argo CD\'s "found duplicate kustomize version"', () => {
  assert.deepEqual(
    readToolSettings({ 'kustomize.path.v1': '/a', 'kustomize.version.v1': '/b' })?.error,
    'failed to get Kustomize settings: failed to add kustomize version from "kustomize.version.v1": found duplicate kustomize version: v1',
  );
});
