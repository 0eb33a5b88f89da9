// When mutating webhooks' changes are left out of the prediction: Argo CD v3.6.1's
// shouldUseServerSideDiff (controller/state.go) and its IncludeMutationWebhook=true check, which
// reads the Application's compare-options annotation only. What is left out, and how, is
// test/sync/smd/typed.test.ts and, with a real webhook, test/e2e/semantics-webhook.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Application } from '../../src/api/index.ts';
import { resolveControllerParams } from '../../src/controller/cmd-params.ts';
import { ignoresMutationWebhook } from '../../src/controller/semantics.ts';

function app(compareOptions?: string, syncOptions?: string[]): Application {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: {
      name: 'a',
      namespace: 'argocd',
      ...(compareOptions !== undefined
        ? { annotations: { 'argocd.argoproj.io/compare-options': compareOptions } }
        : {}),
    },
    spec: {
      project: 'default',
      destination: { server: 'https://kubernetes.default.svc', namespace: 'x' },
      ...(syncOptions ? { syncPolicy: { syncOptions } } : {}),
    },
  } as unknown as Application;
}

test('ServerSideDiff=true, ServerSideApply=true or controller.diff.server.side: webhook changes left out, unless IncludeMutationWebhook=true', () => {
  assert.equal(ignoresMutationWebhook(app('ServerSideDiff=true'), false), true);
  assert.equal(ignoresMutationWebhook(app(' IgnoreExtraneous, ServerSideDiff=true '), false), true);
  assert.equal(ignoresMutationWebhook(app(undefined, ['ServerSideApply=true']), false), true);
  assert.equal(ignoresMutationWebhook(app(), true), true);
  assert.equal(ignoresMutationWebhook(app('ServerSideDiff=true,IncludeMutationWebhook=true'), false), false);
  assert.equal(ignoresMutationWebhook(app('IncludeMutationWebhook=true'), true), false);
  // Without server-side diff in Argo CD's sense, the dry-run's answer is compared as it is.
  assert.equal(ignoresMutationWebhook(app(), false), false);
  assert.equal(ignoresMutationWebhook(app('IgnoreExtraneous'), false), false);
});

test('controller.diff.server.side is read from argocd-cmd-params-cm or its variable, true in any case', () => {
  const params = (data: Record<string, string>, env: Record<string, string> = {}) =>
    resolveControllerParams({ data, env });
  assert.equal(params({ 'controller.diff.server.side': 'true' }).serverSideDiff, true);
  assert.equal(params({ 'controller.diff.server.side': 'TRUE' }).serverSideDiff, true);
  assert.equal(params({}, { ARGOCD_APPLICATION_CONTROLLER_SERVER_SIDE_DIFF: 'true' }).serverSideDiff, true);
  assert.equal(params({ 'controller.diff.server.side': 'false' }).serverSideDiff, false);
  assert.equal(params({}).serverSideDiff, false);
});
