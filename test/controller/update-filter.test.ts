// Which live-object changes refresh an Application (controller/update-filter.ts), as argocd-cm's
// `resource.customizations.ignoreResourceUpdates.<group_kind>` and
// `resource.ignoreResourceUpdatesEnabled` decide in Argo CD (GetIgnoreResourceUpdatesOverrides).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import { WATCH_READ_COST, worthRefresh } from '../../src/controller/update-filter.ts';
import { normalizeIgnored } from '../../src/sync/index.ts';
import { MAX_READ_COST } from '../../src/sync/managed-fields.ts';
import { JqRunner } from '../../src/sync/jq/runner.ts';
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

/**
 * A Deployment whose container has `n` env entries, all owned by the manager `hpa` (FieldsV1 as the
 * server writes it), with `value` in each.
 */
function ownedEnv(n: number, value: string): KubeObject {
  const steps: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) steps[`k:{"name":"v${i}"}`] = { '.': {}, 'f:name': {}, 'f:value': {} };
  const fieldsV1 = {
    'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { 'f:env': steps } } } } },
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'd',
      namespace: 'tenant',
      resourceVersion: value,
      managedFields: [{ manager: 'hpa', operation: 'Update', apiVersion: 'apps/v1', fieldsType: 'FieldsV1', fieldsV1 }],
    },
    spec: {
      template: {
        spec: { containers: [{ name: 'c', env: Array.from({ length: n }, (_, i) => ({ name: `v${i}`, value })) }] },
      },
    },
  } as KubeObject;
}

test("a watch event reads the object's managedFields only as far as WATCH_READ_COST: past it, the change is a refresh", async () => {
  // argocd-cm's ignoreDifferences apply to updates by default: what `hpa` owns changing is no refresh.
  const settings = readSyncSettings({
    'resource.customizations.ignoreDifferences.apps_Deployment': 'managedFieldsManagers:\n- hpa\n',
  });
  assert.equal(await worthRefresh(settings, ownedEnv(10, 'a'), ownedEnv(10, 'b'), undefined), false);
  // 15,000 entries cost about 2 units each, past the watch's bound (though within a comparison's):
  // the event does not spend them on the event loop, outside the tenant's turn; its refresh will.
  const n = 15_000;
  assert.ok(n * 2 > WATCH_READ_COST && n * 2 < MAX_READ_COST);
  assert.equal(await worthRefresh(settings, ownedEnv(n, 'a'), ownedEnv(n, 'b'), undefined), true);
  // A comparison reads them all, and ignores the change.
  const rules = { rules: settings.ignoreDifferences, ignoreAggregatedRoles: false };
  const compared = await normalizeIgnored(rules, ownedEnv(n, 'a'), ownedEnv(n, 'b'));
  assert.deepEqual(compared.live?.['spec'], compared.predicted?.['spec']);
});

test('the filter copies nothing of an object that no argocd-cm rule names: it compares the pair as it is', async () => {
  // A function is not cloneable: a copy of the object (structuredClone) would throw DataCloneError.
  const uncopyable = (rv: string, image: string): KubeObject => {
    const o = deployment(1, image);
    return { ...o, metadata: { ...o.metadata, resourceVersion: rv }, spec: { ...(o['spec'] as object), hook: noop } };
  };
  const settings = readSyncSettings({});
  assert.equal(await worthRefresh(settings, uncopyable('1', 'a'), uncopyable('2', 'a'), undefined), false);
  assert.equal(await worthRefresh(settings, uncopyable('1', 'a'), uncopyable('2', 'b'), undefined), true);
  // The objects are the live cache's: neither is changed.
  const old = uncopyable('1', 'a');
  await worthRefresh(settings, old, uncopyable('2', 'a'), undefined);
  assert.equal(old.metadata.resourceVersion, '1');
});

function noop(): void {}

test('resourceVersion, generation and managedFields are gone before any rule reads the pair, as a rule of their own (a jq expression that tests them)', async () => {
  // With generation gone, the select holds, and a change of replicas is ignored.
  const settings = readSyncSettings({
    'resource.customizations.ignoreResourceUpdates.apps_Deployment':
      'jqPathExpressions:\n- select(.metadata.generation == null) | .spec.replicas\n',
  });
  const withGeneration = (replicas: number) => {
    const o = deployment(replicas, 'a');
    return { ...o, metadata: { ...o.metadata, generation: replicas } } as KubeObject;
  };
  const jq = new JqRunner();
  try {
    assert.equal(await worthRefresh(settings, withGeneration(1), withGeneration(3), jq), false);
    assert.equal(
      await worthRefresh(
        settings,
        withGeneration(1),
        { ...withGeneration(3), spec: { replicas: 3 } } as KubeObject,
        jq,
      ),
      true,
      'the template changed too',
    );
  } finally {
    await jq.close();
  }
});

test("the time jq's worker takes for argocd-cm's expressions counts in the weighing's time, its wait for a turn does not", async () => {
  const settings = readSyncSettings({
    'resource.customizations.ignoreResourceUpdates.apps_Deployment': 'jqPathExpressions:\n- .spec.replicas\n',
  });
  // A jq whose worker takes 40 ms per call, answered after a wait of 200 ms for its turn.
  const jq = {
    delete: async (o: KubeObject) => {
      await new Promise((r) => setTimeout(r, 200));
      const copy = structuredClone(o) as KubeObject & { spec: { replicas?: number } };
      delete copy.spec.replicas;
      return { ok: true, value: copy, ms: 40 };
    },
  } as unknown as JqRunner;
  const spent = { ms: 0 };
  assert.equal(await worthRefresh(settings, deployment(1, 'a'), deployment(3, 'a'), jq, spent), false);
  assert.ok(spent.ms >= 80 && spent.ms < 150, `${spent.ms} ms: two calls of 40 ms, not their 200 ms waits`);
  // The real runner says how long its worker took.
  const real = new JqRunner();
  try {
    const r = await real.delete(deployment(1, 'a'), '.spec.replicas');
    assert.ok(r.ok && typeof r.ms === 'number' && r.ms > 0, JSON.stringify(r));
  } finally {
    await real.close();
  }
});
