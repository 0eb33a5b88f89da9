// spec §4 (settings), §7 (globalProjects value) and timeout.reconciliation.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readImpersonationSettings, parseGlobalProjects } from '../../src/impersonation/settings.ts';
import { matchesLabelSelector, checkLabelSelector } from '../../src/impersonation/label-selector.ts';
import { parseDurationSeconds } from '../../src/impersonation/duration.ts';
import type { ConfigMap } from '../../src/api/index.ts';

const cm = (data: Record<string, string> | undefined): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'argocd-cm', namespace: 'argocd' },
  ...(data ? { data } : {}),
});

describe('spec §4: settings', () => {
  test('application.sync.impersonation.enabled: "on when the value is exactly "true"", default off', () => {
    assert.equal(readImpersonationSettings(cm({ 'application.sync.impersonation.enabled': 'true' })).enabled, true);
    for (const v of ['True', 'TRUE', 'yes', '1', ' true', 'true ', '']) {
      assert.equal(
        readImpersonationSettings(cm({ 'application.sync.impersonation.enabled': v })).enabled,
        false,
        JSON.stringify(v),
      );
    }
    assert.equal(readImpersonationSettings(cm({})).enabled, false);
    assert.equal(readImpersonationSettings(cm(undefined)).enabled, false);
  });

  test('application.sync.impersonation.enforced: "on when the key is present and its value is anything but exactly "false"; absent → on"', () => {
    assert.equal(readImpersonationSettings(cm({ 'application.sync.impersonation.enforced': 'false' })).enforced, false);
    for (const v of ['true', 'False', 'FALSE', 'no', '0', '', ' false']) {
      assert.equal(
        readImpersonationSettings(cm({ 'application.sync.impersonation.enforced': v })).enforced,
        true,
        JSON.stringify(v),
      );
    }
    assert.equal(readImpersonationSettings(cm({})).enforced, true);
  });

  test('"When the ConfigMap cannot be read, each flag takes its default and the read reports error checking <key> property in configmap: <reason>"', () => {
    const s = readImpersonationSettings(new Error('configmap "argocd-cm" is forbidden'));
    assert.equal(s.enabled, false);
    assert.equal(s.enforced, true);
    assert.equal(s.source, 'error');
    assert.deepEqual(s.errors, [
      'error checking application.sync.impersonation.enabled property in configmap: configmap "argocd-cm" is forbidden',
      'error checking application.sync.impersonation.enforced property in configmap: configmap "argocd-cm" is forbidden',
    ]);
  });

  test('no ConfigMap at all: defaults, marked absent, no error', () => {
    const s = readImpersonationSettings(undefined);
    assert.deepEqual([s.enabled, s.enforced, s.source, s.errors], [false, true, 'absent', []]);
  });

  test('beyond Argo CD: impersync.impersonation.allowSystemNamespaces is on only when exactly "true"; default off', () => {
    const key = 'impersync.impersonation.allowSystemNamespaces';
    assert.equal(readImpersonationSettings(cm({ [key]: 'true' })).allowSystemNamespaces, true);
    for (const v of ['True', 'TRUE', 'yes', '1', ' true', 'true ', '', 'false'])
      assert.equal(readImpersonationSettings(cm({ [key]: v })).allowSystemNamespaces, false, JSON.stringify(v));
    assert.equal(readImpersonationSettings(cm({})).allowSystemNamespaces, false);
    assert.equal(readImpersonationSettings(undefined).allowSystemNamespaces, false);
    assert.equal(readImpersonationSettings(new Error('forbidden')).allowSystemNamespaces, false, 'unreadable: refused');
  });

  test('beyond Argo CD: impersync.impersonation.requireExtras is on only when exactly "true"; default off (extras dropped when refused)', () => {
    const key = 'impersync.impersonation.requireExtras';
    assert.equal(readImpersonationSettings(cm({ [key]: 'true' })).requireExtras, true);
    for (const v of ['True', 'yes', '1', ' true', '', 'false'])
      assert.equal(readImpersonationSettings(cm({ [key]: v })).requireExtras, false, JSON.stringify(v));
    assert.equal(readImpersonationSettings(cm({})).requireExtras, false);
    assert.equal(readImpersonationSettings(undefined).requireExtras, false);
    assert.equal(readImpersonationSettings(new Error('forbidden')).requireExtras, false);
  });
});

describe('spec §7: the globalProjects value', () => {
  test('is a YAML list of {projectName, labelSelector}', () => {
    const text = `
- projectName: global-sa
  labelSelector:
    matchExpressions:
      - key: opt
        operator: In
        values: ["yes"]
- projectName: other
  labelSelector:
    matchLabels:
      team: a
`;
    const r = parseGlobalProjects(text);
    assert.ok(r.ok);
    assert.equal(r.value.length, 2);
    assert.equal(r.value[0]?.projectName, 'global-sa');
    assert.deepEqual(r.value[0]?.labelSelector.matchExpressions?.[0]?.values, ['yes']);
    const s = readImpersonationSettings(cm({ globalProjects: text }));
    assert.equal(s.globalProjects.length, 2);
    assert.deepEqual(s.errors, []);
  });

  test('an unreadable value is reported and no global projects are used', () => {
    const s = readImpersonationSettings(cm({ globalProjects: 'projectName: [' }));
    assert.deepEqual(s.globalProjects, []);
    assert.equal(s.errors.length, 1);
    assert.match(s.errors[0] as string, /^ConfigMap argocd\/argocd-cm data\.globalProjects: not valid YAML/);
    // YAML 1.1: an unquoted yes is a boolean, which Kubernetes refuses where a string belongs.
    const yes = readImpersonationSettings(
      cm({
        globalProjects:
          '- projectName: g\n  labelSelector:\n    matchExpressions: [{key: opt, operator: In, values: [yes]}]',
      }),
    );
    assert.match(yes.errors[0] as string, /\[0\]\.labelSelector\.matchExpressions\[0\]\.values\[0\]/);
    const wrong = readImpersonationSettings(cm({ globalProjects: '- labelSelector: {}' }));
    assert.match(wrong.errors[0] as string, /data\.globalProjects: \[0\]\.projectName: /);
  });
});

describe('label selectors (globalProjects)', () => {
  const labels = { team: 'a', env: 'prod' };
  test('matchLabels must all be equal', () => {
    assert.equal(matchesLabelSelector({ matchLabels: { team: 'a' } }, labels), true);
    assert.equal(matchesLabelSelector({ matchLabels: { team: 'a', env: 'dev' } }, labels), false);
    assert.equal(matchesLabelSelector({ matchLabels: { other: '' } }, labels), false);
  });
  test('In, NotIn, Exists, DoesNotExist', () => {
    assert.equal(
      matchesLabelSelector({ matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'stage'] }] }, labels),
      true,
    );
    assert.equal(
      matchesLabelSelector({ matchExpressions: [{ key: 'env', operator: 'In', values: ['dev'] }] }, labels),
      false,
    );
    assert.equal(
      matchesLabelSelector({ matchExpressions: [{ key: 'missing', operator: 'In', values: ['x'] }] }, labels),
      false,
    );
    assert.equal(
      matchesLabelSelector({ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] }, labels),
      true,
    );
    assert.equal(
      matchesLabelSelector({ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, labels),
      false,
    );
    assert.equal(
      matchesLabelSelector({ matchExpressions: [{ key: 'missing', operator: 'NotIn', values: ['x'] }] }, labels),
      true,
      'NotIn holds when the label is absent',
    );
    assert.equal(matchesLabelSelector({ matchExpressions: [{ key: 'team', operator: 'Exists' }] }, labels), true);
    assert.equal(matchesLabelSelector({ matchExpressions: [{ key: 'missing', operator: 'Exists' }] }, labels), false);
    assert.equal(
      matchesLabelSelector({ matchExpressions: [{ key: 'missing', operator: 'DoesNotExist' }] }, labels),
      true,
    );
    assert.equal(
      matchesLabelSelector({ matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] }, labels),
      false,
    );
  });
  test('an empty selector selects everything, as LabelSelectorAsSelector does', () => {
    assert.equal(matchesLabelSelector({}, {}), true);
    assert.equal(matchesLabelSelector({}, labels), true);
  });
  test('invalid selectors are named', () => {
    assert.deepEqual(checkLabelSelector({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }), {
      ok: false,
      error: "matchExpressions[0].values: for 'In', 'NotIn' operators, values set can't be empty",
    });
    assert.deepEqual(checkLabelSelector({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }), {
      ok: false,
      error: 'matchExpressions[0].values: values set must be empty for exists and does not exist',
    });
    assert.deepEqual(checkLabelSelector({ matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] }), {
      ok: false,
      error: 'matchExpressions[0].operator: "Gt" is not a valid label selector operator',
    });
    assert.deepEqual(checkLabelSelector({ matchLabels: { a: 'b' } }), { ok: true });
  });
});

describe('timeout.reconciliation', () => {
  test('defaults to 120s', () => {
    assert.equal(readImpersonationSettings(cm({})).reconciliationTimeoutSeconds, 120);
    assert.equal(readImpersonationSettings(undefined).reconciliationTimeoutSeconds, 120);
  });
  test('reads Go durations and plain seconds', () => {
    assert.equal(readImpersonationSettings(cm({ 'timeout.reconciliation': '180s' })).reconciliationTimeoutSeconds, 180);
    assert.equal(readImpersonationSettings(cm({ 'timeout.reconciliation': '3m' })).reconciliationTimeoutSeconds, 180);
    assert.equal(
      readImpersonationSettings(cm({ 'timeout.reconciliation': '1h30m' })).reconciliationTimeoutSeconds,
      5400,
    );
    assert.equal(readImpersonationSettings(cm({ 'timeout.reconciliation': '0' })).reconciliationTimeoutSeconds, 0);
    assert.equal(readImpersonationSettings(cm({ 'timeout.reconciliation': '90' })).reconciliationTimeoutSeconds, 90);
    assert.deepEqual(parseDurationSeconds('1.5m'), { ok: true, seconds: 90 });
    assert.deepEqual(parseDurationSeconds('500ms'), { ok: true, seconds: 0.5 });
  });
  test('a bad value keeps the default and says so', () => {
    const s = readImpersonationSettings(cm({ 'timeout.reconciliation': 'soon' }));
    assert.equal(s.reconciliationTimeoutSeconds, 120);
    assert.match(s.errors[0] as string, /data\.timeout\.reconciliation: invalid duration 'soon'.*using 120s/);
    assert.equal(parseDurationSeconds('-5s').ok, false);
    assert.equal(parseDurationSeconds('5d').ok, false);
    assert.equal(parseDurationSeconds('5s3').ok, false);
  });
});

describe('timeout.reconciliation.jitter and timeout.hard.reconciliation', () => {
  test("default to Argo CD's controller defaults: a 60 s jitter, no hard refresh", () => {
    const s = readImpersonationSettings(cm({}));
    assert.equal(s.reconciliationJitterSeconds, 60);
    assert.equal(s.hardReconciliationTimeoutSeconds, 0);
    assert.equal(readImpersonationSettings(undefined).reconciliationJitterSeconds, 60);
  });
  test('read as durations', () => {
    const s = readImpersonationSettings(
      cm({ 'timeout.reconciliation.jitter': '0s', 'timeout.hard.reconciliation': '1h' }),
    );
    assert.equal(s.reconciliationJitterSeconds, 0);
    assert.equal(s.hardReconciliationTimeoutSeconds, 3600);
  });
  test('a bad value keeps the default and says so', () => {
    const s = readImpersonationSettings(
      cm({ 'timeout.reconciliation.jitter': 'often', 'timeout.hard.reconciliation': '-1s' }),
    );
    assert.equal(s.reconciliationJitterSeconds, 60);
    assert.equal(s.hardReconciliationTimeoutSeconds, 0);
    assert.match(s.errors.join('\n'), /data\.timeout\.reconciliation\.jitter: invalid duration 'often'.*using 60s/);
    assert.match(s.errors.join('\n'), /data\.timeout\.hard\.reconciliation: negative duration '-1s'; using 0s/);
  });
});
