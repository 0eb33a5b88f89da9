// ignoreDifferences and RespectIgnoreDifferences, as Argo CD applies them
// (util/argo/normalizers/diff_normalizer.go, util/argo/managedfields/managed_fields.go,
// controller/sync.go normalizeTargetResources), with the real jq.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import type { DiffRules, IgnoreRule } from '../../src/sync/ignore.ts';
import { normalizeIgnored, respectIgnored, rulesFor } from '../../src/sync/ignore.ts';
import { JqRunner } from '../../src/sync/jq/runner.ts';

const jq = new JqRunner();
after(() => jq.close());

const rule = (over: Partial<IgnoreRule>): IgnoreRule => ({
  group: 'apps',
  kind: 'Deployment',
  jsonPointers: [],
  jqPathExpressions: [],
  managedFieldsManagers: [],
  ...over,
});
const rules = (...r: IgnoreRule[]): DiffRules => ({ rules: r, ignoreAggregatedRoles: false, jq });

function deployment(replicas: number, image: string, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'app', ...extra },
    spec: {
      replicas,
      template: {
        spec: {
          containers: [
            { name: 'web', image },
            { name: 'side', image: 'side:1' },
          ],
        },
      },
    },
  };
}

test('scoping: group and kind are globs, name and namespace exact when given', () => {
  const d = deployment(1, 'a');
  const rows: Array<[Partial<IgnoreRule>, boolean]> = [
    [{}, true],
    [{ group: '*', kind: '*' }, true],
    [{ group: 'ap*' }, true],
    [{ group: '' }, false],
    [{ kind: 'StatefulSet' }, false],
    [{ name: 'web' }, true],
    [{ name: 'other' }, false],
    [{ namespace: 'app' }, true],
    [{ namespace: 'other' }, false],
  ];
  for (const [over, want] of rows) assert.equal(rulesFor([rule(over)], d).length === 1, want, JSON.stringify(over));
});

test('jsonPointers and jqPathExpressions leave the named fields out of both sides', async () => {
  const live = deployment(5, 'web:2');
  const predicted = deployment(3, 'web:1');
  const byPointer = await normalizeIgnored(rules(rule({ jsonPointers: ['/spec/replicas'] })), live, predicted);
  assert.equal((byPointer.live?.['spec'] as { replicas?: number }).replicas, undefined);
  assert.equal((byPointer.predicted?.['spec'] as { replicas?: number }).replicas, undefined);
  assert.equal((live['spec'] as { replicas: number }).replicas, 5, 'the inputs are not changed');
  assert.equal((predicted['spec'] as { replicas: number }).replicas, 3);
  const byJq = await normalizeIgnored(
    rules(rule({ jqPathExpressions: ['.spec.template.spec.containers[] | select(.name == "web") | .image'] })),
    live,
    predicted,
  );
  const containers = (o: KubeObject | null) =>
    (o?.['spec'] as { template: { spec: { containers: Array<Record<string, string>> } } }).template.spec.containers;
  assert.deepEqual(containers(byJq.live), [{ name: 'web' }, { name: 'side', image: 'side:1' }]);
  assert.deepEqual(containers(byJq.predicted), [{ name: 'web' }, { name: 'side', image: 'side:1' }]);
  // A pointer to nothing is no error (Argo CD does not even log it); a broken expression is skipped.
  const missing = await normalizeIgnored(
    rules(rule({ jsonPointers: ['/spec/nothing'], jqPathExpressions: ['.spec['] })),
    live,
    predicted,
  );
  assert.deepEqual(missing.live, live);
  assert.match(missing.errors[0] ?? '', /^JQ patch returned error: jq: error: syntax error/);
});

test("a jq expression that never ends is stopped at Argo CD's 1 s, with its message", async () => {
  const r = await normalizeIgnored(rules(rule({ jqPathExpressions: ['def f: f; f'] })), deployment(1, 'a'), null);
  assert.deepEqual(r.errors, ['JQ patch execution timed out (1s)']);
});

test('managedFieldsManagers: fields the named manager owns in the live object are left out', async () => {
  const live = deployment(5, 'web:1', {
    managedFields: [
      {
        manager: 'kube-controller-manager',
        operation: 'Update',
        subresource: 'scale',
        fieldsV1: { 'f:spec': { 'f:replicas': {} } },
      },
      { manager: 'impersync', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:template': {} } } },
    ],
  });
  const predicted = deployment(3, 'web:1');
  const r = await normalizeIgnored(
    rules(rule({ managedFieldsManagers: ['kube-controller-manager'] })),
    live,
    predicted,
  );
  assert.equal((r.live?.['spec'] as { replicas?: number }).replicas, undefined);
  assert.equal((r.predicted?.['spec'] as { replicas?: number }).replicas, undefined);
  const other = await normalizeIgnored(rules(rule({ managedFieldsManagers: ['someone-else'] })), live, predicted);
  assert.equal((other.predicted?.['spec'] as { replicas?: number }).replicas, 3);
});

test("ignoreAggregatedRoles leaves an aggregated ClusterRole's rules out", async () => {
  const role = (rulesList: unknown[]): KubeObject => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'agg' },
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: { a: 'b' } }] },
    rules: rulesList,
  });
  const live = role([{ verbs: ['get'] }]);
  const r = await normalizeIgnored({ rules: [], ignoreAggregatedRoles: true }, live, role([]));
  assert.deepEqual(r.live, r.predicted);
  assert.deepEqual(live['rules'], [{ verbs: ['get'] }], 'the input keeps its rules');
});

test('RespectIgnoreDifferences: the applied object carries the live values of ignored fields', async () => {
  const live = deployment(5, 'web:2');
  const target = deployment(3, 'web:1');
  const byPointer = await respectIgnored(rules(rule({ jsonPointers: ['/spec/replicas'] })), target, live);
  assert.equal((byPointer['spec'] as { replicas: number }).replicas, 5);
  const byJq = await respectIgnored(
    rules(rule({ jqPathExpressions: ['.spec.template.spec.containers[] | select(.name == "web") | .image'] })),
    target,
    live,
  );
  assert.deepEqual((byJq['spec'] as { template: { spec: { containers: unknown[] } } }).template.spec.containers[0], {
    name: 'web',
    image: 'web:2',
  });
  // Without a live object there is nothing to keep: Git's object is applied as it is.
  assert.deepEqual(await respectIgnored(rules(rule({ jsonPointers: ['/spec/replicas'] })), target, null), target);
});
