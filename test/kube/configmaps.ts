// ConfigMaps as discovery describes them, for the live-object cache's tests.
import type { ResourceInfo } from '../../src/kube/types.ts';

export const CONFIGMAPS: ResourceInfo = {
  apiVersion: 'v1',
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  resource: 'configmaps',
  namespaced: true,
  verbs: ['get', 'list', 'watch', 'patch'],
};
