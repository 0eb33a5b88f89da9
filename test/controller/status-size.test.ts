// An Application's status kept within the size the API server and etcd accept
// (src/controller/status-size.ts): the results of resources that synced fine are left out first,
// failures kept, the count said in the message; the inventory (status.resources) is never trimmed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fitStatus, isTooLarge, STATUS_BUDGET_BYTES } from '../../src/controller/status-size.ts';

const result = (i: number, status = 'Synced') => ({
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  namespace: 'big',
  name: `cm-${i}`,
  status,
  message: 'configmap/cm configured',
});
const inventory = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    version: 'v1',
    kind: 'ConfigMap',
    namespace: 'big',
    name: `cm-${i}`,
    status: 'Synced',
  }));
function status(n: number, failed: number[] = []) {
  return {
    resources: inventory(n),
    operationState: {
      phase: 'Succeeded',
      message: 'successfully synced (all tasks run)',
      syncResult: {
        revision: 'abc',
        resources: Array.from({ length: n }, (_, i) => result(i, failed.includes(i) ? 'SyncFailed' : 'Synced')),
      },
    },
  };
}
type Op = { message: string; syncResult: { resources: Array<{ name: string }>; resourcesOmitted?: number } };

test('a status within the budget is written as it is', () => {
  const s = status(100);
  assert.equal(fitStatus(s), s);
});

test('10,000 resources: the fine results are left out, the failures kept, the count in the message; the inventory is whole', () => {
  const s = status(10_000, [7, 9_999]);
  assert.ok(JSON.stringify(s).length > STATUS_BUDGET_BYTES);
  const fitted = fitStatus(s);
  const op = fitted.operationState as unknown as Op;
  assert.deepEqual(
    op.syncResult.resources.map((r) => r.name),
    ['cm-7', 'cm-9999'],
  );
  assert.equal(op.syncResult.resourcesOmitted, 9_998);
  assert.equal(
    op.message,
    "successfully synced (all tasks run) (9998 resource result(s) not listed: the Application's status would exceed the API server's size limit)",
  );
  assert.equal(fitted.resources.length, 10_000);
  // Fitting again (the next write of the same state) neither double counts nor repeats the note.
  const again = fitStatus({ ...fitted, resources: inventory(10_000) }, 1);
  const op2 = again.operationState as unknown as Op;
  assert.equal(op2.syncResult.resourcesOmitted, 10_000);
  assert.equal(op2.message.match(/not listed/g)?.length, 1);
});

test('an operation with no message of its own gets the note once, however often it is fitted', () => {
  const s = status(10_000, [7]);
  delete (s.operationState as { message?: string }).message;
  const first = fitStatus(s).operationState as unknown as Op;
  assert.deepEqual(
    first.syncResult.resources.map((r) => r.name),
    ['cm-7'],
  );
  assert.match(first.message, /^9999 resource result\(s\) not listed: [^(]*$/);
  // A later fit of that state (status.resources grew meanwhile) replaces the note, not appends one.
  const again = fitStatus({ ...s, operationState: first } as typeof s, 1).operationState as unknown as Op;
  assert.match(again.message, /^10000 resource result\(s\) not listed: [^(]*$/);
});

test('budget 0 (the server still refused): no result is listed at all', () => {
  const op = fitStatus(status(10, [1]), 0).operationState as unknown as Op;
  assert.deepEqual(op.syncResult.resources, []);
  assert.equal(op.syncResult.resourcesOmitted, 10);
});

test('the size refusals of the API server and etcd are recognised', () => {
  assert.equal(isTooLarge(413, 'Request entity too large: limit is 3145728'), true);
  assert.equal(
    isTooLarge(
      500,
      'rpc error: code = ResourceExhausted desc = trying to send message larger than max (3076353 vs. 2097152)',
    ),
    true,
  );
  assert.equal(isTooLarge(500, 'etcdserver: request is too large'), true);
  assert.equal(isTooLarge(409, 'the object has been modified'), false);
});
