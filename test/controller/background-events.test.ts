import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BackgroundEvents } from '../../src/controller/events.ts';
import type { EventType, InvolvedObject, TimedEventSink } from '../../src/controller/events.ts';
import type { EventReason } from '../../src/api/index.ts';

const tick = () => new Promise((r) => setImmediate(r));
const app = (name: string): InvolvedObject => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Application',
  name,
  namespace: 'argocd',
});

/** A sink whose writes finish only when the test says so. */
function heldSink() {
  const writes: Array<{ app: string; message: string; at: Date; done: () => void }> = [];
  const sink: TimedEventSink = {
    record: (object: InvolvedObject, _type: EventType, _reason: EventReason, message: string, at: Date) =>
      new Promise<void>((resolve) => writes.push({ app: object.name, message, at, done: resolve })),
  };
  const started = () => writes.map((w) => `${w.app} ${w.message}`);
  return { sink, writes, started };
}

test('record() returns before the Event is written; each Application gets its events in order, one at a time', async () => {
  const { sink, writes, started } = heldSink();
  const events = new BackgroundEvents(sink, { inFlight: 4 });
  let returned = false;
  await events.record(app('a'), 'Normal', 'OperationStarted', 'a1').then(() => (returned = true));
  assert.equal(returned, true, 'not waiting for the write');
  await events.record(app('a'), 'Normal', 'OperationCompleted', 'a2');
  await events.record(app('b'), 'Normal', 'OperationStarted', 'b1');
  await tick();
  assert.deepEqual(started(), ['a a1', 'b b1'], "a's second waits for its first; b does not wait for a");
  assert.equal(events.pending, 3);
  writes[0]?.done();
  await tick();
  assert.deepEqual(started(), ['a a1', 'b b1', 'a a2']);
  assert.ok((writes[2]?.at.getTime() ?? 0) >= (writes[0]?.at.getTime() ?? Infinity), 'timestamps taken at record()');
  writes[1]?.done();
  writes[2]?.done();
  assert.equal(await events.flush(1000), true);
  assert.equal(events.pending, 0);
});

test('at most inFlight Events are written at once, across Applications', async () => {
  const { sink, writes } = heldSink();
  const events = new BackgroundEvents(sink, { inFlight: 2 });
  for (const n of ['a', 'b', 'c', 'd']) await events.record(app(n), 'Normal', 'OperationStarted', n);
  await tick();
  assert.equal(writes.length, 2);
  writes[0]?.done();
  await tick();
  assert.equal(writes.length, 3, 'the next starts when one ends');
  while (events.pending > 0) {
    for (const w of writes) w.done();
    await tick();
  }
  assert.equal(writes.length, 4);
  assert.deepEqual(
    writes.map((w) => w.app),
    ['a', 'b', 'c', 'd'],
  );
});

test('a full queue drops what comes next and says so; what was queued is still written', async () => {
  const { sink, writes, started } = heldSink();
  const dropped: string[] = [];
  const events = new BackgroundEvents(sink, {
    inFlight: 1,
    maxQueued: 2,
    onDrop: ({ object, reason }) => dropped.push(`${object.name} ${reason}`),
  });
  for (const m of ['1', '2', '3', '4']) await events.record(app('a'), 'Normal', 'OperationStarted', m);
  await tick();
  // One being written, two queued: the fourth has no room.
  assert.deepEqual(dropped, ['a OperationStarted']);
  assert.equal(events.pending, 3);
  const flushed = events.flush(1000);
  for (let i = 0; i < 3; i++) {
    writes[i]?.done();
    await tick();
  }
  assert.equal(await flushed, true);
  assert.deepEqual(started(), ['a 1', 'a 2', 'a 3']);
});

test('flush() gives up at its deadline while a write hangs, and a failing write does not stop the queue', async () => {
  const seen: string[] = [];
  let hang = true;
  const sink: TimedEventSink = {
    record: (_o, _t, _r, message) => {
      seen.push(message);
      if (message === 'bad') return Promise.reject(new Error('refused'));
      return hang ? new Promise<void>(() => undefined) : Promise.resolve();
    },
  };
  const events = new BackgroundEvents(sink, { inFlight: 1 });
  await events.record(app('a'), 'Warning', 'OperationCompleted', 'bad');
  await events.record(app('a'), 'Normal', 'OperationStarted', 'hangs');
  const t0 = Date.now();
  assert.equal(await events.flush(50), false);
  assert.ok(Date.now() - t0 >= 45);
  assert.deepEqual(seen, ['bad', 'hangs'], 'the write after a failed one went out');
  hang = false;
  const quick = new BackgroundEvents(sink, { inFlight: 1 });
  await quick.record(app('b'), 'Normal', 'OperationStarted', 'ok');
  assert.equal(await quick.flush(1000), true);
});
