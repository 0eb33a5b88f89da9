import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  appsAffectedByCluster,
  appsAffectedByGPGKeys,
  appsAffectedByProject,
  appsAffectedBySettings,
} from '../../src/controller/requeue.ts';
import type { AppIndexEntry } from '../../src/controller/requeue.ts';

const apps: AppIndexEntry[] = [
  { key: 'argocd/a', project: 'team-a', destination: { server: 'https://kubernetes.default.svc' } },
  { key: 'argocd/b', project: 'team-b', destination: { name: 'prod' } },
  { key: 'argocd/c', project: 'team-c', destination: { server: 'https://prod.example:6443' } },
  { key: 'argocd/d', project: 'default', destination: { name: 'staging' } },
];

test('a project change requeues its apps and those of projects inheriting from it', () => {
  assert.deepEqual(
    appsAffectedByProject(apps, 'team-a', () => []),
    ['argocd/a'],
  );
  const inherits = (p: string) => (p === 'team-b' || p === 'team-c' ? ['platform'] : []);
  assert.deepEqual(appsAffectedByProject(apps, 'platform', inherits), ['argocd/b', 'argocd/c']);
  assert.deepEqual(appsAffectedByProject(apps, 'nobody', inherits), []);
});

test('a cluster Secret change requeues apps targeting it by server or name, before and after', () => {
  const prod = { name: 'prod', server: 'https://prod.example:6443', config: {}, secret: 'argocd/prod' };
  assert.deepEqual(appsAffectedByCluster(apps, undefined, prod), ['argocd/b', 'argocd/c']);
  const renamed = { ...prod, name: 'staging' };
  assert.deepEqual(appsAffectedByCluster(apps, prod, renamed), ['argocd/b', 'argocd/c', 'argocd/d']);
  assert.deepEqual(appsAffectedByCluster(apps, renamed, undefined), ['argocd/c', 'argocd/d']);
});

test('an argocd-cm change requeues every app', () => {
  assert.equal(appsAffectedBySettings(apps).length, 4);
});

test('argocd-gpg-keys-cm: the Applications of projects that verify signatures, their own or a global one', () => {
  const apps: AppIndexEntry[] = [
    { key: 'argocd/a', project: 'signed', destination: {} },
    { key: 'argocd/b', project: 'plain', destination: {} },
    { key: 'argocd/c', project: 'inherits', destination: {} },
  ];
  const verifies = (p: string) => p === 'signed' || p === 'global-signed';
  const inherits = (p: string) => (p === 'inherits' ? ['global-signed'] : []);
  assert.deepEqual(appsAffectedByGPGKeys(apps, verifies, inherits), ['argocd/a', 'argocd/c']);
  assert.deepEqual(
    appsAffectedByGPGKeys(apps, () => false, inherits),
    [],
  );
});
