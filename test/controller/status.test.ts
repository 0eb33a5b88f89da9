import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  comparisonOwed,
  mergeConditions,
  periodicRefreshKind,
  shouldWriteStatus,
  statusChanged,
  withHealthTransition,
} from '../../src/controller/status.ts';
import type { ApplicationStatus } from '../../src/api/index.ts';

const base: ApplicationStatus = {
  sync: { status: 'Synced', revision: 'abc' },
  health: { status: 'Healthy' },
  reconciledAt: '2026-01-01T00:00:00Z',
  conditions: [{ type: 'ImpersonationInfo', message: 'as sa', lastTransitionTime: '2026-01-01T00:00:00Z' }],
};

test('a condition keeps its lastTransitionTime while its message is unchanged', () => {
  const next = mergeConditions(
    base.conditions,
    [
      { type: 'ImpersonationInfo', message: 'as sa' },
      { type: 'SyncError', message: 'x' },
    ],
    '2026-02-02T00:00:00Z',
  );
  assert.deepEqual(next, [
    { type: 'ImpersonationInfo', message: 'as sa', lastTransitionTime: '2026-01-01T00:00:00Z' },
    { type: 'SyncError', message: 'x', lastTransitionTime: '2026-02-02T00:00:00Z' },
  ]);
  const changed = mergeConditions(
    base.conditions,
    [{ type: 'ImpersonationInfo', message: 'as other' }],
    '2026-02-02T00:00:00Z',
  );
  assert.equal(changed[0]?.lastTransitionTime, '2026-02-02T00:00:00Z');
});

test('only reconciledAt changed: no write until the refresh interval elapsed', () => {
  const next = { ...base, reconciledAt: '2026-01-01T00:01:00Z' };
  assert.equal(statusChanged(base, next), false);
  const t0 = Date.parse('2026-01-01T00:01:00Z');
  assert.equal(shouldWriteStatus(base, next, t0, 120_000), false);
  assert.equal(shouldWriteStatus(base, next, t0 + 60_000, 120_000), true);
});

test('any other change is written at once; undefined fields equal absent ones', () => {
  const t0 = Date.parse('2026-01-01T00:00:01Z');
  assert.equal(shouldWriteStatus(base, { ...base, sync: { status: 'OutOfSync', revision: 'abc' } }, t0, 120_000), true);
  assert.equal(shouldWriteStatus(base, { ...base, sourceType: undefined }, t0, 120_000), false);
  assert.equal(shouldWriteStatus(undefined, base, t0, 120_000), true);
});

test("status.health.lastTransitionTime is set when the health status code changes, kept while it does not (Argo CD's persistAppStatus)", () => {
  const t0 = '2026-01-01T00:00:00Z';
  const t1 = '2026-02-02T00:00:00Z';
  const first = withHealthTransition(undefined, { health: { status: 'Progressing' } }, t0);
  assert.deepEqual(first.health, { status: 'Progressing', lastTransitionTime: t0 });
  // Same code, another message: the time stays, and so does a status that writes nothing new.
  const same = withHealthTransition(first, { health: { status: 'Progressing', message: 'waiting' } }, t1);
  assert.deepEqual(same.health, { status: 'Progressing', message: 'waiting', lastTransitionTime: t0 });
  const again = withHealthTransition(same, { health: { status: 'Progressing', message: 'waiting' } }, t1);
  assert.equal(statusChanged(same, again), false, 'an unchanged health is not a status change');
  const changed = withHealthTransition(same, { health: { status: 'Healthy', lastTransitionTime: t0 } }, t1);
  assert.deepEqual(changed.health, { status: 'Healthy', lastTransitionTime: t1 });
  // A stored health without a time keeps none until its code changes, as in Argo CD.
  assert.deepEqual(
    withHealthTransition({ health: { status: 'Healthy' } }, { health: { status: 'Healthy' } }, t1).health,
    {
      status: 'Healthy',
    },
  );
});

test("periodicRefreshKind: Argo CD's comparisonExpiry for timeout.hard.reconciliation", () => {
  const at = Date.parse('2026-01-01T00:00:00Z');
  const prev = { reconciledAt: '2026-01-01T00:00:00Z' } as ApplicationStatus;
  assert.equal(periodicRefreshKind(prev, at + 3_600_000, 0), undefined, 'unset: never hard');
  assert.equal(periodicRefreshKind(prev, at + 59_000, 60_000), undefined, 'younger than the timeout');
  assert.equal(periodicRefreshKind(prev, at + 60_000, 60_000), 'hard', 'as old as the timeout');
  assert.equal(periodicRefreshKind(undefined, at, 60_000), 'hard', 'never compared: hard when set');
  assert.equal(periodicRefreshKind(undefined, at, 0), undefined);
});

test('the first comparison after an operation ended is owed a write; later ones follow the rule', () => {
  const NOW_MS = Date.parse('2026-01-01T00:01:00Z');
  const finished = (finishedAt: string | undefined, reconciledAt?: string, phase = 'Succeeded'): ApplicationStatus => ({
    ...(reconciledAt !== undefined ? { reconciledAt } : {}),
    operationState: {
      operation: { sync: {} },
      phase: phase as 'Succeeded',
      startedAt: '2026-01-01T00:00:00Z',
      ...(finishedAt !== undefined ? { finishedAt } : {}),
    },
  });
  const owed = (s: ApplicationStatus | undefined) => comparisonOwed(s, NOW_MS);
  assert.equal(owed(finished('2026-01-01T00:00:05Z', '2026-01-01T00:00:04Z')), true);
  assert.equal(owed(finished('2026-01-01T00:00:05Z', '2026-01-01T00:00:04Z', 'Failed')), true);
  assert.equal(owed(finished('2026-01-01T00:00:05Z')), true, 'never compared');
  assert.equal(owed(finished('2026-01-01T00:00:05Z', '2026-01-01T00:00:05Z')), false, 'compared since');
  assert.equal(owed(finished('2026-01-01T00:00:05Z', '2026-01-01T00:00:06Z')), false);
  assert.equal(owed(finished(undefined, '2026-01-01T00:00:04Z')), false, 'still running');
  assert.equal(
    owed(finished('2026-01-01T00:00:05Z', '2026-01-01T00:00:04Z', 'Running')),
    false,
    "a retry's marker: the operation goes on",
  );
  assert.equal(owed(finished('2026-01-01T00:05:00Z', '2026-01-01T00:00:04Z')), false, 'finished ahead of this clock');
  assert.equal(owed(base), false, 'no operation');
  assert.equal(owed(undefined), false);
});
