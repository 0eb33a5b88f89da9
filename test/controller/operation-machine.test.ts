// The operation as a state machine (src/controller/operation-machine.ts), as tables: the
// crash-safety rules of nextStep() (what a controller does with the Application it reads, whatever
// happened before it started), how a step ends (afterAttempt), the final status, and the steps of
// a sync (nextSyncStep: which group next, what it waits for, when it fails). The same rules against
// a real API server, restarts included: test/e2e/controller-sync.test.ts,
// test/e2e/faults-controller.test.ts, test/e2e/operation-steps.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Operation, OperationState } from '../../src/api/index.ts';
import {
  RENDERER_RETRY_MS,
  TERMINATED,
  afterAttempt,
  comparedBefore,
  finishedStatus,
  nextStep,
  nextSyncStep,
  stillThisOperation,
} from '../../src/controller/operation-machine.ts';
import type {
  Attempt,
  OperationView,
  Step,
  SyncStep,
  SyncTaskView,
  SyncView,
} from '../../src/controller/operation-machine.ts';

const NOW = '2026-03-01T12:00:00.000Z';
const op: Operation = { sync: { revision: 'HEAD' }, initiatedBy: { username: 'alice' } };
const other: Operation = { sync: { revision: 'v2' }, initiatedBy: { username: 'bob' } };
const state = (over: Partial<OperationState> = {}): OperationState => ({
  operation: op,
  phase: 'Running',
  message: 'Operation started',
  startedAt: '2026-03-01T11:00:00.000Z',
  retryCount: 0,
  generation: 4,
  ...over,
});
const done = (phase: 'Succeeded' | 'Failed' | 'Error', over: Partial<OperationState> = {}) =>
  state({ phase, finishedAt: '2026-03-01T11:05:00.000Z', ...over });
const started = (operation: Operation, generation?: number): Step => ({
  kind: 'start',
  state: {
    operation,
    phase: 'Running',
    message: 'Operation started',
    startedAt: NOW,
    retryCount: 0,
    ...(generation !== undefined ? { generation } : {}),
  },
});

const steps: Array<{ name: string; view: OperationView; expect: Step }> = [
  {
    name: 'no operation and nothing Running: nothing to do',
    view: { operation: undefined, state: done('Succeeded'), generation: 5 },
    expect: { kind: 'none' },
  },
  {
    name: 'a new operation starts Running, recording the generation',
    view: { operation: op, state: undefined, generation: 4 },
    expect: started(op, 4),
  },
  {
    name: 'Running with the same operation (a restart, or the next retry) resumes it as it is',
    view: { operation: op, state: state({ retryCount: 2 }), generation: 4 },
    expect: { kind: 'resume', state: state({ retryCount: 2 }) },
  },
  {
    name: 'Running, but a different operation was set meanwhile: the new one starts',
    view: { operation: other, state: state(), generation: 6 },
    expect: started(other, 6),
  },
  {
    name: 'finished before a crash that lost only the clearing (same generation): cleared, never run again',
    view: { operation: op, state: done('Succeeded'), generation: 4 },
    expect: { kind: 'clear' },
  },
  {
    name: 'a failed one of the same generation is cleared too, not retried',
    view: { operation: op, state: done('Failed'), generation: 4 },
    expect: { kind: 'clear' },
  },
  {
    name: 'a completed state of an older generation: an identical new operation (self-heal) starts afresh',
    view: { operation: op, state: done('Succeeded'), generation: 6 },
    expect: started(op, 6),
  },
  {
    name: 'a completed state without a generation (an older controller wrote it) is not taken as this operation',
    view: { operation: op, state: done('Succeeded', { generation: undefined }), generation: 6 },
    expect: started(op, 6),
  },
  {
    name: 'Running at a later step, with its results and progress so far: resumed as it is',
    view: {
      operation: op,
      state: state({ syncResult: { revision: 'abc', resources: [] }, progress: { waitingSince: NOW } }),
      generation: 4,
    },
    expect: {
      kind: 'resume',
      state: state({ syncResult: { revision: 'abc', resources: [] }, progress: { waitingSince: NOW } }),
    },
  },
  {
    name: 'a failed attempt owes a retry (Running, finishedAt set) whose backoff is not over: wait the rest of it',
    view: {
      operation: { ...op, retry: { limit: 3, backoff: { duration: '10s' } } },
      state: state({
        operation: { ...op, retry: { limit: 3, backoff: { duration: '10s' } } },
        retryCount: 1,
        finishedAt: '2026-03-01T11:59:56.000Z',
      }),
      generation: 4,
    },
    expect: { kind: 'wait', delayMs: 6000 },
  },
  {
    name: 'a retry whose backoff is over (after a restart too) starts its attempt afresh: no results, no progress',
    view: {
      operation: op,
      state: state({
        retryCount: 1,
        finishedAt: '2026-03-01T11:00:00.000Z',
        syncResult: { revision: 'abc', resources: [] },
        progress: { failure: 'x' },
      }),
      generation: 4,
    },
    expect: { kind: 'resume', state: state({ retryCount: 1 }) },
  },
  {
    name: 'Terminating: finished Failed without running',
    view: { operation: op, state: state({ phase: 'Terminating' }), generation: 4 },
    expect: { kind: 'finish', state: state({ phase: 'Terminating' }), end: TERMINATED },
  },
  {
    name: 'Running but its operation removed: finished Failed (terminated) without running',
    view: { operation: undefined, state: state(), generation: 5 },
    expect: { kind: 'finish', state: state(), end: TERMINATED },
  },
  {
    name: 'Terminating and its operation removed: finished the same way',
    view: { operation: undefined, state: state({ phase: 'Terminating' }), generation: 5 },
    expect: { kind: 'finish', state: state({ phase: 'Terminating' }), end: TERMINATED },
  },
];

for (const row of steps) {
  test(`next step: ${row.name}`, () => {
    assert.deepEqual(nextStep(row.view, NOW), row.expect);
  });
}

test("next step: a Running sync past controller.sync.timeout.seconds is Terminating with Argo CD's message, then Failed", () => {
  // Started an hour before NOW: a 30 min timeout is over, a 2 h one is not, 0 is none.
  const view: OperationView = { operation: op, state: state(), generation: 4 };
  assert.deepEqual(nextStep(view, NOW, 30 * 60_000), {
    kind: 'timeout',
    state: state({ phase: 'Terminating', message: 'operation is terminating due to timeout' }),
    end: { phase: 'Failed', message: 'Operation terminated, triggered by controller sync timeout' },
  });
  assert.deepEqual(nextStep(view, NOW, 2 * 3_600_000), { kind: 'resume', state: state() });
  assert.deepEqual(nextStep(view, NOW, 0), { kind: 'resume', state: state() });
  // A retry waiting for its backoff times out too, and says how often it was retried (Argo CD).
  const waiting = state({ retryCount: 2, finishedAt: '2026-03-01T11:59:59.000Z' });
  const retried = nextStep({ operation: op, state: waiting, generation: 4 }, NOW, 60_000);
  assert.equal(
    retried.kind === 'timeout' && retried.end.message,
    'Operation terminated, triggered by controller sync timeout (retried 2 times).',
  );
  // Terminating already (a user's terminate-op): finished as before, the timeout says nothing.
  const terminating = state({ phase: 'Terminating' });
  assert.deepEqual(nextStep({ operation: op, state: terminating, generation: 4 }, NOW, 60_000), {
    kind: 'finish',
    state: terminating,
    end: TERMINATED,
  });
});

const nowMs = Date.parse(NOW);
const retrying = state({ operation: { ...op, retry: { limit: 2, backoff: { duration: '5s', factor: 2 } } } });
const syncResult = { revision: 'abc123', resources: [] };

test('after an attempt: success finishes Succeeded with the revision and its sync result', () => {
  const attempt: Attempt = { kind: 'succeeded', revision: 'abc123', message: 'successfully synced', syncResult };
  assert.deepEqual(afterAttempt(state(), attempt, nowMs), {
    kind: 'finish',
    state: { ...state(), syncResult },
    end: { phase: 'Succeeded', message: 'successfully synced' },
    conditions: [],
    revision: 'abc123',
    reread: false,
  });
});

test('after an attempt: a retryable failure with retries left stays Running, counted, after the backoff', () => {
  const failed: Attempt = {
    kind: 'failed',
    phase: 'Failed',
    message: 'one or more objects failed',
    retryable: true,
    syncResult,
  };
  const first = afterAttempt(retrying, failed, nowMs);
  assert.deepEqual(first, {
    kind: 'retry',
    delayMs: 5000,
    state: {
      ...retrying,
      syncResult,
      retryCount: 1,
      message: 'one or more objects failed. Retrying attempt #1 at 2026-03-01T12:00:05.000Z.',
      // This attempt is over; nextStep starts the next one once the backoff is.
      finishedAt: NOW,
    },
  });
  const second = afterAttempt({ ...retrying, retryCount: 1 }, failed, nowMs);
  assert.equal(second.kind === 'retry' && second.delayMs, 10_000);
  const exhausted = afterAttempt({ ...retrying, retryCount: 2 }, failed, nowMs);
  assert.deepEqual(exhausted.kind === 'finish' && [exhausted.end, exhausted.state.retryCount], [
    { phase: 'Failed', message: 'one or more objects failed' },
    2,
  ]);
});

test('after a step that waits: still Running, its results, message and progress written when they changed', () => {
  const progress = { waitingSince: NOW, pruneWaves: [] };
  const running: Attempt = {
    kind: 'running',
    message: 'waiting for healthy state of apps/Deployment/web',
    syncResult,
    progress,
    delayMs: 5000,
  };
  const next = afterAttempt(state(), running, nowMs);
  const expected = state({ message: 'waiting for healthy state of apps/Deployment/web', syncResult, progress });
  assert.deepEqual(next, { kind: 'continue', state: expected, write: true, delayMs: 5000 });
  // The next step finds it the same: nothing to write.
  assert.deepEqual(afterAttempt(expected, running, nowMs), {
    kind: 'continue',
    state: expected,
    write: false,
    delayMs: 5000,
  });
});

test('after an attempt: no retry strategy, or a failure no retry can mend (a project limit), finishes at once', () => {
  const render: Attempt = { kind: 'failed', phase: 'Error', message: 'failed to render', retryable: true };
  assert.equal(afterAttempt(state(), render, nowMs).kind, 'finish');
  const limit: Attempt = { kind: 'failed', phase: 'Failed', message: 'resource not permitted', retryable: false };
  assert.deepEqual(afterAttempt(retrying, limit, nowMs), {
    kind: 'finish',
    state: retrying,
    end: { phase: 'Failed', message: 'resource not permitted' },
    conditions: [],
    reread: false,
  });
});

test("after an attempt: spec §5's deny ends the operation in Error with the decision's message and its conditions", () => {
  const message = 'no matching service account found for destination server s and namespace n';
  const info = { type: 'ImpersonationInfo', message: `refused: ${message}` };
  const denied: Attempt = { kind: 'failed', phase: 'Error', message, retryable: false, conditions: [info] };
  assert.deepEqual(afterAttempt(retrying, denied, nowMs), {
    kind: 'finish',
    state: retrying,
    end: { phase: 'Error', message },
    conditions: [info],
    reread: false,
  });
});

test('after an attempt: terminated finishes Failed from a fresh read; a stopping controller leaves it Running', () => {
  assert.deepEqual(afterAttempt(state(), { kind: 'terminated' }, nowMs), {
    kind: 'finish',
    state: state(),
    end: TERMINATED,
    conditions: [],
    reread: true,
  });
  assert.deepEqual(afterAttempt(state(), { kind: 'abandoned' }, nowMs), { kind: 'leave' });
});

test('after an attempt: an unreachable renderer keeps it Running, uncounted, saying so (written once), in 5 s', () => {
  const unreachable: Attempt = { kind: 'renderer-unavailable', message: 'the renderer has no token yet' };
  const message = 'waiting for the renderer: the renderer has no token yet';
  assert.deepEqual(afterAttempt(retrying, unreachable, nowMs), {
    kind: 'wait',
    state: { ...retrying, message },
    write: true,
    delayMs: RENDERER_RETRY_MS,
  });
  assert.equal(RENDERER_RETRY_MS, 5000);
  // The next attempt finds the same message: nothing to write, the state is the same.
  const again = afterAttempt({ ...retrying, message }, unreachable, nowMs);
  assert.deepEqual(again, { kind: 'wait', state: { ...retrying, message }, write: false, delayMs: 5000 });
  // Without a retry strategy too: it is not a failure of the Application.
  assert.equal(afterAttempt(state(), unreachable, nowMs).kind, 'wait');
});

test('the final status: success records history (deployStartedAt = startedAt, the identity that applied it) and drops SyncError; a dry run records none', () => {
  const before = {
    conditions: [
      { type: 'SyncError', message: 'earlier', lastTransitionTime: '2026-01-01T00:00:00Z' },
      { type: 'ImpersonationInfo', message: 'as sa', lastTransitionTime: '2026-01-01T00:00:00Z' },
    ],
    history: [{ id: 3, revision: 'old', deployedAt: '2026-01-01T00:00:00Z' }],
  };
  const source = { repoURL: 'https://git.example/a.git', path: 'app' };
  const identity = 'system:serviceaccount:guestbook:deployer';
  const s = finishedStatus(
    before,
    { ...state(), syncResult: { ...syncResult, source, identity } },
    { phase: 'Succeeded', message: 'ok' },
    { revision: 'abc123', now: NOW },
  );
  assert.deepEqual(s.operationState, {
    ...state(),
    syncResult: { ...syncResult, source, identity },
    phase: 'Succeeded',
    message: 'ok',
    finishedAt: NOW,
  });
  assert.deepEqual(s.conditions, [
    { type: 'ImpersonationInfo', message: 'as sa', lastTransitionTime: '2026-01-01T00:00:00Z' },
  ]);
  assert.deepEqual(s.history?.[1], {
    id: 4,
    revision: 'abc123',
    source,
    deployedAt: NOW,
    deployStartedAt: state().startedAt,
    initiatedBy: { username: 'alice' },
    identity,
  });
  const dry = state({ operation: { sync: { dryRun: true } } });
  assert.equal(
    finishedStatus(before, dry, { phase: 'Succeeded', message: 'ok' }, { revision: 'abc123', now: NOW }).history
      ?.length,
    1,
  );
});

test('the final status: a failure is a SyncError first, then its own conditions replacing those of their types', () => {
  const before = {
    conditions: [{ type: 'ImpersonationInfo', message: 'as sa', lastTransitionTime: '2026-01-01T00:00:00Z' }],
  };
  const s = finishedStatus(
    before,
    state(),
    { phase: 'Error', message: 'denied' },
    {
      conditions: [{ type: 'ImpersonationInfo', message: 'refused: denied' }],
      now: NOW,
    },
  );
  assert.deepEqual(s.conditions, [
    { type: 'SyncError', message: 'denied', lastTransitionTime: NOW },
    { type: 'ImpersonationInfo', message: 'refused: denied', lastTransitionTime: NOW },
  ]);
  assert.equal(s.history, undefined);
});

test('the final status: a comparison from the second the sync ended in is shown a second earlier, so the CLI waits for the next one', () => {
  // NOW is 12:00:00.000; Argo CD's API carries both times at the second.
  const end = (reconciledAt: string | undefined, over: Partial<OperationState> = {}) =>
    finishedStatus(
      reconciledAt === undefined ? {} : { reconciledAt },
      state(over),
      { phase: 'Succeeded', message: 'ok' },
      { now: '2026-03-01T12:00:00.800Z' },
    ).reconciledAt;
  assert.equal(end('2026-03-01T12:00:00.200Z'), '2026-03-01T11:59:59.000Z', 'earlier in the same second');
  assert.equal(end('2026-03-01T12:00:00Z'), '2026-03-01T11:59:59.000Z', 'at the second itself');
  assert.equal(end('2026-03-01T11:59:59.900Z'), '2026-03-01T11:59:59.900Z', 'the second before: as it was');
  assert.equal(end(undefined), undefined, 'never compared: still none');
  assert.equal(
    end('2026-03-01T12:00:00.200Z', { operation: { ...op, sync: { dryRun: true } } }),
    '2026-03-01T12:00:00.200Z',
    'a dry run: left as it was, the CLI waits for no comparison after one',
  );
  assert.equal(comparedBefore('not a time', NOW), 'not a time');
});

test('a conflicting final write is written again only while the newer object holds this operation unfinished', () => {
  assert.equal(stillThisOperation(state(), state()), true);
  assert.equal(stillThisOperation(state({ retryCount: 1 }), state()), true, 'a retry count changed meanwhile');
  assert.equal(stillThisOperation(done('Succeeded'), state()), false, 'another controller finished it');
  assert.equal(stillThisOperation(state({ startedAt: NOW }), state()), false, 'a newer operation');
  assert.equal(stillThisOperation(undefined, state()), false);
});

test('the final status carries no step progress', () => {
  const s = finishedStatus(
    {},
    state({ progress: { waitingSince: NOW } }),
    { phase: 'Succeeded', message: 'ok' },
    {
      now: NOW,
    },
  );
  assert.equal(s.operationState?.progress, undefined);
});

// The steps of a sync. Groups are (phase, wave) runs in order; a task is pending (not started in
// this attempt), running, succeeded or failed.
const t = (group: number, state: SyncTaskView['state'], hook = false): SyncTaskView => ({ group, hook, state });
const view = (over: Partial<SyncView>): SyncView => ({
  tasks: [],
  syncFail: [],
  groups: 1,
  applyFailed: false,
  progress: {},
  dryRun: false,
  ...over,
});
const WAIT = 300_000;
const since = (msAgo: number) => new Date(nowMs - msAgo).toISOString();

const syncSteps: Array<{ name: string; view: SyncView; expect: SyncStep }> = [
  {
    name: 'nothing started: the first group is applied',
    view: view({ tasks: [t(0, 'pending'), t(1, 'pending')], groups: 2 }),
    expect: { kind: 'apply', group: 0 },
  },
  {
    name: 'a group applied and running, a later one waiting: wait for it (the worker is freed)',
    view: view({ tasks: [t(0, 'running'), t(1, 'pending')], groups: 2, progress: { waitingSince: since(1000) } }),
    expect: { kind: 'wait', running: [0], of: 'tasks' },
  },
  {
    name: 'the group became healthy: the next group is applied',
    view: view({ tasks: [t(0, 'succeeded'), t(1, 'pending')], groups: 2 }),
    expect: { kind: 'apply', group: 1 },
  },
  {
    name: 'a group partly applied (a hook still being deleted, or a restart mid-group): its pending tasks next',
    view: view({ tasks: [t(0, 'succeeded'), t(0, 'pending', true), t(1, 'pending')], groups: 2 }),
    expect: { kind: 'apply', group: 0 },
  },
  {
    name: 'the last group, without hooks, is not waited for: applied means done',
    view: view({ tasks: [t(0, 'succeeded'), t(1, 'running')], groups: 2 }),
    expect: { kind: 'succeed' },
  },
  {
    name: 'the last group with a hook is waited for, resources and hook alike',
    view: view({ tasks: [t(0, 'succeeded'), t(1, 'running'), t(1, 'succeeded', true)], groups: 2 }),
    expect: { kind: 'wait', running: [1], of: 'tasks' },
  },
  {
    name: 'a dry run waits for nothing',
    view: view({ tasks: [t(0, 'running'), t(1, 'pending')], groups: 2, dryRun: true }),
    expect: { kind: 'apply', group: 1 },
  },
  {
    name: 'waited past the wave timeout: the sync fails naming what it waited for',
    view: view({ tasks: [t(0, 'running'), t(1, 'pending')], groups: 2, progress: { waitingSince: since(WAIT) } }),
    expect: { kind: 'fail', what: 'one or more synchronization tasks completed unsuccessfully', timedOut: [0] },
  },
  {
    name: 'an apply of this step failed: the sync fails',
    view: view({ tasks: [t(0, 'failed'), t(1, 'pending')], groups: 2, applyFailed: true }),
    expect: { kind: 'fail', what: 'one or more objects failed to apply' },
  },
  {
    name: 'a task became Degraded: the sync fails once nothing else runs',
    view: view({ tasks: [t(0, 'failed'), t(0, 'running'), t(1, 'pending')], groups: 2 }),
    expect: { kind: 'wait', running: [1], of: 'tasks' },
  },
  {
    name: '... and then fails',
    view: view({ tasks: [t(0, 'failed'), t(0, 'succeeded'), t(1, 'pending')], groups: 2 }),
    expect: { kind: 'fail', what: 'one or more synchronization tasks completed unsuccessfully' },
  },
  {
    name: 'everything done: succeed',
    view: view({ tasks: [t(0, 'succeeded'), t(1, 'succeeded', true)], groups: 2 }),
    expect: { kind: 'succeed' },
  },
  {
    name: 'failing, its SyncFail hooks not started yet (a restart after the failure was written): apply them',
    view: view({ tasks: [t(0, 'failed')], syncFail: [t(0, 'pending', true)], progress: { failure: 'boom' } }),
    expect: { kind: 'applySyncFail' },
  },
  {
    name: 'failing, its SyncFail hooks running: wait for them',
    view: view({
      tasks: [t(0, 'failed')],
      syncFail: [t(0, 'running', true)],
      progress: { failure: 'boom', waitingSince: since(1000) },
    }),
    expect: { kind: 'wait', running: [0], of: 'syncFail' },
  },
  {
    name: 'failing, its SyncFail hooks past the timeout: end Failed, naming them',
    view: view({
      tasks: [t(0, 'failed')],
      syncFail: [t(0, 'running', true)],
      progress: { failure: 'boom', waitingSince: since(WAIT + 1) },
    }),
    expect: { kind: 'failed', timedOut: [0] },
  },
  {
    name: 'Prune=confirm: the next group holds a prune not approved: held, nothing of the group applied',
    view: view({
      tasks: [t(0, 'succeeded'), t(1, 'pending'), { ...t(1, 'pending'), unconfirmed: true }],
      groups: 2,
      progress: { waitingSince: since(WAIT + 1) },
    }),
    expect: { kind: 'hold', unconfirmed: [2] },
  },
  {
    name: 'Prune=confirm: a held group does not hold an earlier group still running',
    view: view({
      tasks: [t(0, 'running'), { ...t(1, 'pending'), unconfirmed: true }],
      groups: 2,
      progress: { waitingSince: since(1000) },
    }),
    expect: { kind: 'wait', running: [0], of: 'tasks' },
  },
  {
    name: 'failing, its SyncFail hooks done: end Failed',
    view: view({ tasks: [t(0, 'failed')], syncFail: [t(0, 'succeeded', true)], progress: { failure: 'boom' } }),
    expect: { kind: 'failed' },
  },
];

for (const row of syncSteps) {
  test(`sync step: ${row.name}`, () => {
    assert.deepEqual(nextSyncStep(row.view, nowMs, WAIT), row.expect);
  });
}
