// The write that started an automated sync, handed from the refresh to the operation worker
// (src/controller/handoff.ts): taken in place of a GET only while the watch shows that same
// version and it is young, once, and never for a shard that went elsewhere.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HANDOFF_MAX_AGE_MS, OperationHandoff } from '../../src/controller/handoff.ts';
import type { RawApplication } from '../../src/controller/applications.ts';

const app = (rv: string | undefined): RawApplication =>
  ({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'a', namespace: 'argocd', ...(rv !== undefined ? { resourceVersion: rv } : {}) },
    operation: { sync: {} },
  }) as unknown as RawApplication;

test('taken while the watch shows the version written, once, as a copy of what was handed', () => {
  const h = new OperationHandoff();
  const stored = app('10');
  h.give('argocd/a', stored);
  (stored.metadata as { name: string }).name = 'changed after';
  const taken = h.take('argocd/a', { metadata: { resourceVersion: '10' } });
  assert.equal(taken?.metadata.name, 'a', 'a copy: the refresh may go on using its own');
  assert.equal(h.take('argocd/a', { metadata: { resourceVersion: '10' } }), undefined, 'once');
});

test('not taken when the watch shows another version, or nothing, or it is too old: the worker reads', () => {
  let now = 1_000;
  const h = new OperationHandoff({ now: () => now });
  h.give('argocd/a', app('10'));
  assert.equal(h.take('argocd/a', { metadata: { resourceVersion: '11' } }), undefined, 'written since');
  assert.equal(h.size, 0, 'and dropped');
  h.give('argocd/a', app('10'));
  assert.equal(h.take('argocd/a', { metadata: { resourceVersion: '9' } }), undefined, 'the watch is behind');
  h.give('argocd/a', app('10'));
  assert.equal(h.take('argocd/a', undefined), undefined, 'not in the watch');
  h.give('argocd/a', app(undefined));
  assert.equal(h.take('argocd/a', { metadata: {} }), undefined, 'no version to compare');
  h.give('argocd/a', app('10'));
  now += HANDOFF_MAX_AGE_MS + 1;
  assert.equal(h.take('argocd/a', { metadata: { resourceVersion: '10' } }), undefined, 'too old');
});

test("a shard gone elsewhere forgets its keys' handoffs; those never taken do not pile up", () => {
  let now = 0;
  const h = new OperationHandoff({ now: () => now });
  h.give('team-a/x', app('1'));
  h.give('team-b/y', app('1'));
  h.forget((k) => k.startsWith('team-a/'));
  assert.equal(h.take('team-a/x', { metadata: { resourceVersion: '1' } }), undefined);
  assert.ok(h.take('team-b/y', { metadata: { resourceVersion: '1' } }));
  for (let i = 0; i < 200; i++) h.give(`ns/app-${i}`, app('1'));
  now += HANDOFF_MAX_AGE_MS + 1;
  h.give('ns/late', app('2'));
  assert.ok(h.size <= 64, `${h.size} kept after the old ones expired`);
});
