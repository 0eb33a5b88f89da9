// The renderer's HTTP dispatchers, one per set of repository TLS and proxy settings: bounded in
// number, the least recently used closed when a new one needs its place, a request under way on it
// answered all the same.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { RepositoryAccess } from '../../src/api/repository.ts';
import { DISPATCHER_LIMIT, dispatcherFor, httpGet } from '../../src/source/http.ts';

const URL_ = 'http://127.0.0.1:1/';
// Distinct settings: a CA bundle of its own each (never used: the server is plain HTTP).
const settings = (i: number): RepositoryAccess => ({ caCerts: `ca ${i}` }) as RepositoryAccess;

test('past the bound, the least recently used dispatcher is closed; one in use is kept, and the same settings get the same one', async () => {
  const first = dispatcherFor(settings(0), URL_);
  const kept = dispatcherFor(settings(1), URL_);
  assert.equal(dispatcherFor(settings(0), URL_), first, 'the same settings, the same dispatcher');
  for (let i = 2; i < DISPATCHER_LIMIT + 1; i++) {
    dispatcherFor(settings(i), URL_);
    dispatcherFor(settings(1), URL_); // kept in use
  }
  assert.equal(dispatcherFor(settings(1), URL_), kept, 'used all along: still there');
  // Settings 0 was the least recently used when settings DISPATCHER_LIMIT came.
  await new Promise((r) => setImmediate(r));
  assert.equal((first as unknown as { closed: boolean }).closed, true, 'the evicted one is closed');
  assert.equal((kept as unknown as { closed: boolean }).closed, false);
  assert.notEqual(dispatcherFor(settings(0), URL_), first, 'asked again: a new one');
});

test('a request under way on a dispatcher that is closed for its place is answered', async () => {
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => (release = r));
  const server = createServer((_req, res) => {
    void held.then(() => res.end('answered'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/index.yaml`;
    const access = settings(-1);
    const answer = httpGet(url, access, { maxBytes: 1024, timeoutMs: 10_000, what: 'the index' });
    // The request is on its way before its dispatcher goes.
    await new Promise((r) => setTimeout(r, 100));
    const used = dispatcherFor(access, url);
    for (let i = 1000; i < 1000 + DISPATCHER_LIMIT; i++) dispatcherFor(settings(i), url);
    assert.notEqual(dispatcherFor(access, url), used, 'pushed out');
    release();
    const res = await answer;
    assert.equal(res.status, 200);
    assert.equal(res.body.toString(), 'answered');
    assert.equal((used as unknown as { closed: boolean }).closed, true);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});
