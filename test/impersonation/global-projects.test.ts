// spec §7: global projects.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { effectiveDestinationServiceAccounts } from '../../src/impersonation/global-projects.ts';
import type { AppProject } from '../../src/api/index.ts';
import type { GlobalProjectSetting } from '../../src/impersonation/settings.ts';

const project = (
  name: string,
  sas: string[],
  labels: Record<string, string> = {},
  namespace = 'argocd',
): AppProject => ({
  metadata: { name, namespace, labels },
  spec: { destinationServiceAccounts: sas.map((sa) => ({ server: '*', namespace: '*', defaultServiceAccount: sa })) },
});
const global = (projectName: string, matchLabels: Record<string, string>): GlobalProjectSetting => ({
  projectName,
  labelSelector: { matchLabels },
});

describe('spec §7: global projects', () => {
  const tenant = project('tenant', ['own-1', 'own-2'], { tier: 'tenant', env: 'prod' });
  const g1 = project('g1', ['g1-sa']);
  const g2 = project('g2', ['g2-sa']);

  test('"A project whose labels match a selector inherits that global project\'s destinationServiceAccounts, appended after its own"', () => {
    const r = effectiveDestinationServiceAccounts(tenant, [tenant, g1, g2], {
      globalProjects: [global('g1', { tier: 'tenant' })],
    });
    assert.deepEqual(
      r.entries.map((e) => [e.defaultServiceAccount, e.fromProject]),
      [
        ['own-1', 'tenant'],
        ['own-2', 'tenant'],
        ['g1-sa', 'g1'],
      ],
    );
    assert.deepEqual(r.globalProjects, ['g1']);
  });

  test('several global projects are appended in globalProjects order', () => {
    const r = effectiveDestinationServiceAccounts(tenant, [g1, g2, tenant], {
      globalProjects: [global('g2', { env: 'prod' }), global('g1', { tier: 'tenant' })],
    });
    assert.deepEqual(
      r.entries.map((e) => e.defaultServiceAccount),
      ['own-1', 'own-2', 'g2-sa', 'g1-sa'],
    );
  });

  test('a selector that does not match inherits nothing', () => {
    const r = effectiveDestinationServiceAccounts(tenant, [tenant, g1], {
      globalProjects: [global('g1', { tier: 'platform' })],
    });
    assert.deepEqual(
      r.entries.map((e) => e.defaultServiceAccount),
      ['own-1', 'own-2'],
    );
    assert.deepEqual(r.warnings, []);
  });

  test('a project is never its own global project', () => {
    const self = project('g1', ['g1-sa'], { tier: 'tenant' });
    const r = effectiveDestinationServiceAccounts(self, [self], { globalProjects: [global('g1', { tier: 'tenant' })] });
    assert.deepEqual(
      r.entries.map((e) => e.defaultServiceAccount),
      ['g1-sa'],
    );
  });

  test('a missing global project stops the walk, with a warning (as Argo CD)', () => {
    const r = effectiveDestinationServiceAccounts(tenant, [tenant, g2], {
      globalProjects: [global('gone', { tier: 'tenant' }), global('g2', { tier: 'tenant' })],
    });
    assert.deepEqual(
      r.entries.map((e) => e.defaultServiceAccount),
      ['own-1', 'own-2'],
    );
    assert.match(r.warnings[0] as string, /global project 'gone' selects AppProject 'tenant' but was not found/);
  });

  test('an invalid selector stops the walk, with a warning (as Argo CD)', () => {
    const bad: GlobalProjectSetting = {
      projectName: 'g1',
      labelSelector: { matchExpressions: [{ key: 'tier', operator: 'Like', values: ['x'] }] },
    };
    const r = effectiveDestinationServiceAccounts(tenant, [tenant, g1, g2], {
      globalProjects: [bad, global('g2', { tier: 'tenant' })],
    });
    assert.deepEqual(
      r.entries.map((e) => e.defaultServiceAccount),
      ['own-1', 'own-2'],
    );
    assert.match(r.warnings[0] as string, /invalid labelSelector/);
  });

  test("global projects are looked up in the project's own namespace", () => {
    const elsewhere = project('g1', ['elsewhere'], {}, 'other');
    const r = effectiveDestinationServiceAccounts(tenant, [tenant, elsewhere], {
      globalProjects: [global('g1', { tier: 'tenant' })],
    });
    assert.equal(r.entries.length, 2);
  });
});
