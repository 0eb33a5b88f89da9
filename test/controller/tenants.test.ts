// Whose share an Application's work takes (src/controller/tenants.ts): its AppProject, when that
// project exists and admits the Application's namespace; otherwise its own namespace.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AppProject } from '../../src/api/index.ts';
import { tenantOf } from '../../src/controller/tenants.ts';

const projects = new Map<string, AppProject>([
  ['team-a', { metadata: { name: 'team-a', namespace: 'argocd' }, spec: { sourceNamespaces: ['team-a-*'] } }],
  ['team-b', { metadata: { name: 'team-b', namespace: 'argocd' }, spec: {} }],
] as Array<[string, AppProject]>);
const app = (namespace: string, project?: string) => ({
  metadata: { name: 'x', namespace },
  spec: project === undefined ? {} : { project },
});
const of = (a: ReturnType<typeof app>) => tenantOf(a, (n) => projects.get(n), 'argocd');

test('the AppProject is the tenant, for Applications in the control namespace or in one it admits', () => {
  assert.equal(of(app('argocd', 'team-a')), 'team-a');
  assert.equal(of(app('team-a-prod', 'team-a')), 'team-a');
  assert.equal(of(app('argocd', 'team-b')), 'team-b');
});

test('naming a project that does not exist, or that does not admit the namespace, counts for the namespace', () => {
  assert.equal(of(app('team-a-prod', 'made-up')), 'namespace:team-a-prod');
  assert.equal(of(app('team-a-prod', 'team-b')), 'namespace:team-a-prod', "team-b's turns are not taken");
  assert.equal(of(app('argocd')), 'namespace:argocd', 'no default project here');
});
