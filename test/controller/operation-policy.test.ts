import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendHistory, autoSyncDecision, mayRetry, retryDelayMs } from '../../src/controller/operation-policy.ts';
import type { Comparison } from '../../src/controller/operation-policy.ts';
import type { Application, OperationState } from '../../src/api/index.ts';

function app(
  automated: NonNullable<NonNullable<Application['spec']['syncPolicy']>['automated']> | undefined,
  extra: Partial<Application> = {},
): Application {
  return {
    metadata: { name: 'a', namespace: 'argocd' },
    spec: {
      project: 'default',
      destination: { server: 'https://kubernetes.default.svc', namespace: 'x' },
      ...(automated ? { syncPolicy: { automated } } : {}),
    },
    ...extra,
  };
}
const outOfSync: Comparison = {
  syncStatus: 'OutOfSync',
  revision: 'r1',
  desiredCount: 2,
  outOfSync: [{ requiresPruning: false }],
};

test('no automated policy, synced, or an operation pending: no auto-sync', () => {
  assert.equal(autoSyncDecision(app(undefined), outOfSync, undefined).sync, false);
  assert.equal(autoSyncDecision(app({}), { ...outOfSync, syncStatus: 'Synced' }, undefined).sync, false);
  assert.equal(autoSyncDecision(app({}, { operation: { sync: {} } }), outOfSync, undefined).sync, false);
  assert.equal(autoSyncDecision(app({ enabled: false }), outOfSync, undefined).sync, false);
});

test('out of sync with automated: an automated operation to the compared revision', () => {
  const d = autoSyncDecision(app({ prune: true }), outOfSync, undefined);
  assert.deepEqual(d, {
    sync: true,
    operation: { sync: { revision: 'r1', prune: true }, initiatedBy: { automated: true } },
  });
});

test('an empty desired set is not auto-synced unless allowEmpty', () => {
  const empty = { ...outOfSync, desiredCount: 0, outOfSync: [{ requiresPruning: true }] };
  assert.match(
    (autoSyncDecision(app({ prune: true }), empty, undefined) as { reason: string }).reason,
    /wipe out all resources/,
  );
  assert.equal(autoSyncDecision(app({ prune: true, allowEmpty: true }), empty, undefined).sync, true);
});

test('only pruning needed with prune off: skipped', () => {
  const pruneOnly = { ...outOfSync, outOfSync: [{ requiresPruning: true }] };
  assert.equal(autoSyncDecision(app({}), pruneOnly, undefined).sync, false);
  assert.equal(autoSyncDecision(app({ prune: true }), pruneOnly, undefined).sync, true);
});

test('one auto-sync per revision unless self-heal; a failed attempt is not repeated', () => {
  const done = (phase: OperationState['phase'], autoHealAttemptsCount?: number): OperationState => ({
    operation: {
      sync: { revision: 'r1', ...(autoHealAttemptsCount !== undefined ? { autoHealAttemptsCount } : {}) },
      initiatedBy: { automated: true },
    },
    phase,
    startedAt: 't',
    finishedAt: '2026-01-01T00:00:00Z',
    syncResult: { revision: 'r1' },
  });
  assert.match((autoSyncDecision(app({}), outOfSync, done('Succeeded')) as { reason: string }).reason, /already to r1/);
  // The first heal of a revision waits not at all, and is counted in the operation (Argo CD's autoHealAttemptsCount).
  const first = autoSyncDecision(app({ selfHeal: true }), outOfSync, done('Succeeded'));
  assert.equal(first.sync && first.operation.sync?.autoHealAttemptsCount, 1);
  // The second waits the backoff's first step (2 s by default) after the last sync finished.
  const soon = autoSyncDecision(
    app({ selfHeal: true }),
    outOfSync,
    done('Succeeded', 1),
    Date.parse('2026-01-01T00:00:01Z'),
  );
  assert.deepEqual(soon, {
    sync: false,
    reason: 'Skipping auto-sync: already attempted sync to [r1] with timeout 0s (retrying in 1s)',
    retryAfterMs: 1000,
  });
  const later = autoSyncDecision(
    app({ selfHeal: true }),
    outOfSync,
    done('Succeeded', 1),
    Date.parse('2026-01-01T00:00:02Z'),
  );
  assert.equal(later.sync && later.operation.sync?.autoHealAttemptsCount, 2);
  // A new revision is a new sync, its count afresh.
  const next = autoSyncDecision(app({ selfHeal: true }), { ...outOfSync, revision: 'r2' }, done('Succeeded', 5));
  assert.equal(next.sync && next.operation.sync?.autoHealAttemptsCount, undefined);
  assert.match(
    (autoSyncDecision(app({ selfHeal: true }), outOfSync, done('Failed')) as { reason: string }).reason,
    /failed previous sync attempt to r1/,
  );
  assert.equal(autoSyncDecision(app({}), { ...outOfSync, revision: 'r2' }, done('Failed')).sync, true);
});

test('without the backoff (its timeout 0) self-heal waits controller.self.heal.timeout.seconds', () => {
  const healed: OperationState = {
    operation: { sync: { revision: 'r1', autoHealAttemptsCount: 7 }, initiatedBy: { automated: true } },
    phase: 'Succeeded',
    startedAt: 't',
    finishedAt: '2026-01-01T00:00:00Z',
    syncResult: { revision: 'r1' },
  };
  const policy = { timeoutMs: 5000 };
  const at = (s: number) =>
    autoSyncDecision(app({ selfHeal: true }), outOfSync, healed, Date.parse('2026-01-01T00:00:00Z') + s * 1000, policy);
  assert.deepEqual(at(3), {
    sync: false,
    reason: 'Skipping auto-sync: already attempted sync to [r1] with timeout 5s (retrying in 2s)',
    retryAfterMs: 2000,
  });
  assert.equal(at(5).sync, true);
});

test('durations and retry backoff follow Argo CD defaults', () => {
  // Backoff durations are Go durations or bare seconds, read by the one parser (impersonation/duration.ts).
  const after = (duration: string) => retryDelayMs({ backoff: { duration, factor: 1 } }, 0);
  assert.deepEqual(['5s', '1m30s', '250ms', '10', 'soon', '-5s'].map(after), [5000, 90_000, 250, 10_000, 5000, 5000]);
  assert.deepEqual(
    [0, 1, 2, 10].map((n) => retryDelayMs(undefined, n)),
    [5000, 10_000, 20_000, 180_000],
  );
  assert.equal(retryDelayMs({ backoff: { duration: '1s', factor: 3, maxDuration: '5s' } }, 1), 3000);
  assert.equal(mayRetry(undefined, 0), false);
  assert.equal(mayRetry({ limit: 2 }, 1), true);
  assert.equal(mayRetry({ limit: 2 }, 2), false);
  assert.equal(mayRetry({ limit: -1 }, 99), true);
});

test('history keeps the last 10 with increasing ids', () => {
  let h = appendHistory(undefined, { revision: 'r0', deployedAt: 't' });
  for (let i = 1; i < 15; i++) h = appendHistory(h, { revision: `r${i}`, deployedAt: 't' });
  assert.equal(h.length, 10);
  assert.equal(h[0]?.revision, 'r5');
  assert.equal(h[9]?.id, 14);
});
