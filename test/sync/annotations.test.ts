import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../src/api/index.ts';
import {
  annotationCSV,
  hookDeletePolicies,
  isHook,
  isSkipped,
  syncPhasesOf,
  waveOf,
} from '../../src/sync/annotations.ts';
import { expandPhases, operationPhaseOf } from '../../src/sync/hooks.ts';
import { builtinHealth } from '../../src/sync/health/index.ts';
import { clientSideApplyRefusal, parseSyncOptions } from '../../src/sync/options.ts';

const withAnnotations = (annotations: Record<string, string>, name = 'x'): KubeObject => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name, annotations },
});

test('comma-separated annotations are trimmed and de-duplicated', () => {
  assert.deepEqual(annotationCSV(withAnnotations({ a: ' PreSync, ,PostSync,PreSync ' }), 'a'), ['PreSync', 'PostSync']);
});

test('sync wave: an integer annotation, else Helm hook weight, else 0', () => {
  assert.equal(waveOf(withAnnotations({ 'argocd.argoproj.io/sync-wave': '-3' })), -3);
  assert.equal(waveOf(withAnnotations({ 'argocd.argoproj.io/sync-wave': 'x', 'helm.sh/hook-weight': '4' })), 4);
  assert.equal(waveOf(withAnnotations({ 'argocd.argoproj.io/sync-wave': ' 2' })), 0, 'strconv.Atoi takes no spaces');
  assert.equal(waveOf(withAnnotations({})), 0);
});

test('hooks: Argo CD annotation, Skip alone is not a hook, Helm hooks mapped', () => {
  assert.ok(isHook(withAnnotations({ 'argocd.argoproj.io/hook': 'PreSync' })));
  assert.ok(!isHook(withAnnotations({ 'argocd.argoproj.io/hook': 'Skip' })));
  assert.ok(isSkipped(withAnnotations({ 'argocd.argoproj.io/hook': 'Skip' })));
  assert.ok(!isHook(withAnnotations({ 'helm.sh/hook': 'crd-install' })));
  assert.deepEqual(syncPhasesOf(withAnnotations({ 'helm.sh/hook': 'pre-install,post-upgrade' })), [
    'PreSync',
    'PostSync',
  ]);
  assert.deepEqual(
    syncPhasesOf(withAnnotations({ 'argocd.argoproj.io/hook': 'Sync', 'helm.sh/hook': 'pre-install' })),
    ['Sync'],
  );
  assert.deepEqual(syncPhasesOf(withAnnotations({})), ['Sync']);
});

test('delete policies default to BeforeHookCreation; Helm names are mapped', () => {
  assert.deepEqual(hookDeletePolicies(withAnnotations({ 'argocd.argoproj.io/hook': 'PreSync' })), [
    'BeforeHookCreation',
  ]);
  assert.deepEqual(
    hookDeletePolicies(withAnnotations({ 'argocd.argoproj.io/hook-delete-policy': 'HookSucceeded,Bogus' })),
    ['HookSucceeded'],
  );
  assert.deepEqual(hookDeletePolicies(withAnnotations({ 'helm.sh/hook-delete-policy': 'hook-failed' })), [
    'HookFailed',
  ]);
});

test('generateName hooks get a name per phase from revision, phase and start time', () => {
  const hook: KubeObject = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: '', generateName: 'migrate-', annotations: { 'argocd.argoproj.io/hook': 'PreSync,PostSync' } },
  };
  const out = expandPhases(hook, '0123456789abcdef', new Date(1_700_000_000_000));
  assert.deepEqual(
    out.map((e) => [e.phase, e.obj.metadata.name]),
    [
      ['PreSync', 'migrate-0123456-presync-1700000000'],
      ['PostSync', 'migrate-0123456-postsync-1700000000'],
    ],
  );
  assert.equal(out[0]?.obj.metadata['generateName'], undefined);
  const named = withAnnotations({ 'argocd.argoproj.io/hook': 'PostSync' }, 'fixed');
  assert.equal(expandPhases(named, 'abc', new Date())[0]?.obj, named);
});

test('a hook is done when healthy, failed when degraded; kinds without health are done at once', () => {
  const job = (conditions: unknown[]): KubeObject => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'j' },
    status: { conditions },
  });
  const phase = (o: KubeObject, hook: boolean) => operationPhaseOf(builtinHealth(o), o, hook);
  assert.equal(phase(job([]), true).phase, 'Running');
  assert.equal(phase(job([{ type: 'Complete', status: 'True' }]), true).phase, 'Succeeded');
  assert.deepEqual(phase(job([{ type: 'Failed', status: 'True', message: 'BackoffLimitExceeded' }]), true), {
    phase: 'Failed',
    message: 'BackoffLimitExceeded',
  });
  assert.deepEqual(phase({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }, true), {
    phase: 'Succeeded',
    message: 'c created',
  });
});

test('a failed check puts a hook in Error and keeps a resource waiting; a health with no status completes only a hook', () => {
  const cr: KubeObject = { apiVersion: 'x.io/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'ns' } };
  const failed = { status: 'Unknown' as const, message: '<string>:1: boom', error: '<string>:1: boom' };
  assert.deepEqual(operationPhaseOf(failed, cr, true), {
    phase: 'Error',
    message: 'failed to get resource health: failed to get resource health for ns/w: <string>:1: boom',
  });
  assert.equal(operationPhaseOf(failed, cr, false).phase, 'Running');
  assert.deepEqual(operationPhaseOf({ status: '' }, cr, true), { phase: 'Succeeded', message: 'w created' });
  assert.equal(operationPhaseOf({ status: '' }, cr, false).phase, 'Running');
});

test('sync options naming the default (ApplyOutOfSyncOnly=false, ClientSideApplyMigration=true, PrunePropagationPolicy=foreground, Replace=false, ServerSideApply=true) change nothing and are not ignored', () => {
  const none = parseSyncOptions([]);
  for (const option of [
    'ApplyOutOfSyncOnly=false',
    'ClientSideApplyMigration=true',
    'PrunePropagationPolicy=foreground',
    'Replace=false',
    'ServerSideApply=true',
  ])
    assert.deepEqual(parseSyncOptions([option]), none, option);
  assert.equal(none.applyOutOfSyncOnly, false);
  assert.equal(none.replace, false);
  assert.equal(none.prunePropagationPolicy, 'Foreground');
  assert.equal(none.clientSideApplyMigration, true);
});

test('sync options: the ones Argo CD defines (gitops-engine pkg/sync/common/types.go), unknown ones reported as ignored', () => {
  const o = parseSyncOptions([
    'CreateNamespace=true',
    'PruneLast=true',
    'ApplyOutOfSyncOnly=true',
    'Validate=false',
    'PrunePropagationPolicy=background',
    'ServerSideApply=true',
    'Replace=true',
    'Force=true',
    'FailOnSharedResource=true',
    'RespectIgnoreDifferences=true',
    'Prune=confirm',
    'Delete=false',
    'ClientSideApplyMigration=false',
    'ServerSideApply=false',
    'NoSuchOption=true',
  ]);
  assert.deepEqual(o, {
    createNamespace: true,
    pruneLast: true,
    applyOutOfSyncOnly: true,
    validate: false,
    prunePropagationPolicy: 'Background',
    replace: true,
    force: true,
    failOnSharedResource: true,
    respectIgnoreDifferences: true,
    prune: 'confirm',
    delete: 'false',
    clientSideApplyMigration: false,
    ignored: ['NoSuchOption=true'],
  });
  assert.deepEqual(parseSyncOptions(undefined), {
    createNamespace: false,
    pruneLast: false,
    applyOutOfSyncOnly: false,
    validate: true,
    prunePropagationPolicy: 'Foreground',
    replace: false,
    force: false,
    failOnSharedResource: false,
    respectIgnoreDifferences: false,
    prune: undefined,
    delete: undefined,
    clientSideApplyMigration: true,
    ignored: [],
  });
});

test('ServerSideApply=false, as the sync option or on an object, refuses the sync naming it', () => {
  const cm = (annotations: Record<string, string> = {}): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'c', annotations },
  });
  assert.equal(clientSideApplyRefusal(['ServerSideApply=true'], [cm()]), undefined);
  assert.match(
    clientSideApplyRefusal([' ServerSideApply=false'], [cm()]) ?? '',
    /^ServerSideApply=false \(the sync's options\)/,
  );
  assert.match(
    clientSideApplyRefusal([], [cm({ 'argocd.argoproj.io/sync-options': 'Validate=false,ServerSideApply=false' })]) ??
      '',
    /^ServerSideApply=false \(ConfigMap\/c\) is not supported: .*nothing was applied$/,
  );
});
