// The dry-run answers remembered by a factory's clients (src/kube/dry-run-memo.ts): one store for
// all of them, bounded by its bytes whatever the size of the objects tenants render, no client
// holding more than a quarter of it, each client seeing only its own answers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DryRunMemo, DryRunMemoStore } from '../../src/kube/dry-run-memo.ts';
import type { KubeObject } from '../../src/api/index.ts';

const MiB = 1024 * 1024;

/** A ConfigMap whose data is `bytes` characters (of `fill`). */
function configMap(name: string, bytes: number, fill = 'x'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'tenant', resourceVersion: '7' },
    data: { blob: fill.repeat(bytes) },
  } as KubeObject;
}

test("many large answers across many clients stay within the store's bytes, the newest kept", () => {
  const store = new DryRunMemoStore(8 * MiB);
  // 40 identities, each remembering 5 answers of 256 KiB: 50 MiB of answers offered.
  const clients = Array.from({ length: 40 }, (_, i) => new DryRunMemo(store, `https://kube\nas:sa-${i}`));
  clients.forEach((memo, i) => {
    for (let j = 0; j < 5; j++)
      memo.remember(`/api/v1/namespaces/tenant/configmaps/cm-${j}`, {
        liveRv: '7',
        request: `r-${i}-${j}`,
        value: configMap(`cm-${j}`, 256 * 1024),
        warnings: [],
      });
  });
  assert.ok(store.bytes <= 8 * MiB, `${store.bytes} bytes kept, of ${8 * MiB}`);
  assert.ok(store.size > 0 && store.size < 200, `${store.size} answers kept`);
  const last = clients[39]!;
  const newest = last.lookup('/api/v1/namespaces/tenant/configmaps/cm-4', 'r-39-4', '7');
  assert.equal(newest?.value.metadata.name, 'cm-4', 'the newest answer is kept');
  assert.equal(
    clients[0]!.lookup('/api/v1/namespaces/tenant/configmaps/cm-0', 'r-0-0', '7'),
    undefined,
    'the oldest went first',
  );
});

test('an answer over an eighth of the store is not kept, and pushes nothing out', () => {
  const store = new DryRunMemoStore(8 * MiB);
  const memo = new DryRunMemo(store, 'a');
  memo.remember('/small', { liveRv: '1', request: 'q', value: configMap('small', 10), warnings: [] });
  const before = store.bytes;
  memo.remember('/huge', { liveRv: '1', request: 'q', value: configMap('huge', 1100 * 1024), warnings: [] });
  assert.equal(memo.lookup('/huge', 'q', '1'), undefined);
  assert.equal(store.bytes, before);
  assert.ok(memo.lookup('/small', 'q', '1'));
});

test('a client sees only its own answers, each lookup its own copy; another live version or request is a miss', () => {
  const store = new DryRunMemoStore();
  const a = new DryRunMemo(store, 'https://kube\nas:a');
  const b = new DryRunMemo(store, 'https://kube\nas:b');
  a.remember('/cm', { liveRv: '3', request: 'q', value: configMap('cm', 10), warnings: ['w'] });
  assert.equal(b.lookup('/cm', 'q', '3'), undefined, "b does not see a's answer");
  const one = a.lookup('/cm', 'q', '3');
  assert.deepEqual(one?.warnings, ['w']);
  (one!.value.metadata as { name: string }).name = 'changed';
  assert.equal(a.lookup('/cm', 'q', '3')?.value.metadata.name, 'cm', 'a copy per lookup');
  assert.equal(a.lookup('/cm', 'q', '4'), undefined);
  assert.equal(a.lookup('/cm', 'other', '3'), undefined);
  a.remember('/cm', { liveRv: '4', request: 'q', value: configMap('cm', 10), warnings: [] });
  assert.equal(store.size, 1, 'a new answer for the path replaces the old');
});

test("one identity's flood of answers pushes out its own, not another's", () => {
  const store = new DryRunMemoStore(8 * MiB);
  const quiet = new DryRunMemo(store, 'quiet');
  const noisy = new DryRunMemo(store, 'noisy');
  for (let j = 0; j < 5; j++)
    quiet.remember(`/cm-${j}`, { liveRv: '1', request: 'q', value: configMap(`cm-${j}`, 1000), warnings: [] });
  // 40 answers of 400 KiB (about 800 KiB each as counted): four times the store's quarter.
  for (let j = 0; j < 40; j++)
    noisy.remember(`/big-${j}`, { liveRv: '1', request: 'q', value: configMap(`big-${j}`, 400 * 1024), warnings: [] });
  assert.ok(store.ownerBytes('noisy') <= 2 * MiB, `the noisy identity holds ${store.ownerBytes('noisy')} bytes`);
  for (let j = 0; j < 5; j++) assert.ok(quiet.lookup(`/cm-${j}`, 'q', '1'), `the quiet identity's cm-${j} is kept`);
  assert.ok(noisy.lookup('/big-39', 'q', '1'), "the noisy identity's newest is kept");
});

test('an answer looked up is used recently: the others go before it', () => {
  const store = new DryRunMemoStore(8 * MiB);
  const clients = Array.from({ length: 8 }, (_, i) => new DryRunMemo(store, `c-${i}`));
  const remember = (memo: DryRunMemo, path: string) =>
    memo.remember(path, { liveRv: '1', request: 'q', value: configMap('x', 200 * 1024), warnings: [] });
  // About 40 answers of 200 KiB fit: 8 first, then 35 more push out 3.
  clients.forEach((m) => remember(m, '/first'));
  assert.ok(clients[0]!.lookup('/first', 'q', '1'));
  for (let round = 0; round < 5; round++) clients.slice(1).forEach((m) => remember(m, `/later-${round}`));
  assert.ok(store.bytes <= 8 * MiB);
  assert.ok(clients[0]!.lookup('/first', 'q', '1'), 'the answer looked up is still there');
  assert.equal(clients[1]!.lookup('/first', 'q', '1'), undefined, 'one not looked up went');
});

test('an answer beyond Latin-1 is counted at two bytes a character, as V8 holds it', () => {
  const store = new DryRunMemoStore(8 * MiB);
  const memo = new DryRunMemo(store, 'a');
  // 600 Ki characters: a byte each in Latin-1 (kept), two each in CJK (over an eighth: not kept).
  memo.remember('/latin', { liveRv: '1', request: 'q', value: configMap('latin', 600 * 1024, 'é'), warnings: [] });
  memo.remember('/wide', { liveRv: '1', request: 'q', value: configMap('wide', 600 * 1024, '漢'), warnings: [] });
  assert.ok(memo.lookup('/latin', 'q', '1'));
  assert.equal(memo.lookup('/wide', 'q', '1'), undefined);
  assert.ok(store.bytes >= 600 * 1024 && store.bytes < 700 * 1024, `${store.bytes} bytes counted`);
});
