// The write that started an automated sync, handed from the refresh to the operation worker
// (src/controller/handoff.ts): taken in place of a GET only while no run began or ended and no
// shard went elsewhere since the refresh's ticket, the watch shows that same version and it is
// young; once.
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
const at = (rv: string) => ({ metadata: { resourceVersion: rv } });

test('taken while the watch shows the version written, once, as a copy of what was handed', () => {
  const h = new OperationHandoff();
  const stored = app('10');
  h.give('argocd/a', stored, h.ticket());
  (stored.metadata as { name: string }).name = 'changed after';
  const taken = h.take('argocd/a', at('10'));
  assert.equal(taken?.metadata.name, 'a', 'a copy: the refresh may go on using its own');
  assert.equal(h.take('argocd/a', at('10')), undefined, 'once');
});

test('not taken when the watch shows another version, or nothing, or it is too old: the worker reads', () => {
  let now = 1_000;
  const h = new OperationHandoff({ now: () => now });
  const handed = (rv: string | undefined) => h.give('argocd/a', app(rv), h.ticket());
  handed('10');
  assert.equal(h.take('argocd/a', at('11')), undefined, 'written since');
  handed('10');
  assert.equal(h.take('argocd/a', at('9')), undefined, 'the watch is behind');
  handed('10');
  assert.equal(h.take('argocd/a', undefined), undefined, 'not in the watch');
  handed(undefined);
  assert.equal(h.take('argocd/a', { metadata: {} }), undefined, 'no version to compare');
  handed('10');
  now += HANDOFF_MAX_AGE_MS + 1;
  assert.equal(h.take('argocd/a', at('10')), undefined, 'too old');
});

test('a run that began between the ticket and the give spends the ticket: a finished operation is never taken up again', () => {
  const h = new OperationHandoff();
  // The refresh takes its ticket and writes R; the watch brings R first, and a run reads R itself.
  const ticket = h.ticket();
  assert.equal(h.take('argocd/a', at('10')), undefined, 'nothing handed yet: that run reads');
  // The write's answer arrives after; that run finishes the operation (R2, not yet in the watch).
  h.give('argocd/a', app('10'), ticket);
  assert.equal(h.take('argocd/a', at('10')), undefined, 'the next run, with the watch still at R, reads');
  // A later write's ticket is good again.
  h.give('argocd/a', app('12'), h.ticket());
  assert.ok(h.take('argocd/a', at('12')));
});

test('a run under way when the ticket was taken spends what was handed over by ending', () => {
  const h = new OperationHandoff();
  // A run begins (the watch still shows the last operation Running) and its GET is slow.
  assert.equal(h.take('argocd/a', at('8')), undefined);
  // The refresh writes R, setting an automated sync; the slow GET answers R; the handoff is given.
  h.give('argocd/a', app('10'), h.ticket());
  // That run syncs R's operation and finishes it (R2, not yet in the watch), and ends.
  h.ended('argocd/a');
  assert.equal(h.take('argocd/a', at('10')), undefined, 'the next run, with the watch still at R, reads');
  // A give under a ticket from before the end is refused too.
  const before = h.ticket();
  h.take('argocd/a', at('10'));
  h.ended('argocd/a');
  h.give('argocd/a', app('10'), before);
  assert.equal(h.take('argocd/a', at('10')), undefined);
});

test('a shard gone elsewhere spends every ticket before it and forgets its keys; old entries do not pile up', () => {
  let now = 0;
  const h = new OperationHandoff({ now: () => now });
  h.give('team-a/x', app('1'), h.ticket());
  const inFlight = h.ticket();
  h.forget((k) => k.startsWith('team-a/'));
  h.give('team-b/y', app('1'), inFlight);
  assert.equal(h.take('team-a/x', at('1')), undefined, 'forgotten');
  assert.equal(h.take('team-b/y', at('1')), undefined, 'given under a ticket from before the shard moved');
  for (let i = 0; i < 500; i++) {
    h.take(`ns/app-${i}`, undefined);
    h.give(`ns/app-${i}`, app('1'), h.ticket());
  }
  now += HANDOFF_MAX_AGE_MS + 1;
  h.give('ns/late', app('2'), h.ticket());
  assert.ok(h.size <= 2, `${h.size} entries kept after the old ones expired`);
  assert.ok(h.take('ns/late', at('2')));
});
