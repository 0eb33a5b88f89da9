// What the live-object watches may hold (src/kube/store-budget.ts, live-cache.ts, watch.ts), over a
// scripted transport: a watch past its own bound ends and its collection is read from the server;
// past the bound of all watches together, the largest ends first. The real server's side is in
// test/e2e/live-object-bytes.test.ts.
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LiveObjectCache } from '../../src/kube/live-cache.ts';
import { HELD_PER_STRUCTURE, HeldEstimate, StoreBudget, heldBy } from '../../src/kube/store-budget.ts';
import { CONFIGMAPS } from './configmaps.ts';
import { StoreTooLargeError, Watch } from '../../src/kube/watch.ts';
import type { WatchTransport } from '../../src/kube/watch.ts';

const CM = CONFIGMAPS;
const coll = (ns: string) => `/api/v1/namespaces/${ns}/configmaps`;
const cm = (ns: string, name: string, rv: string, size: number) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: ns, resourceVersion: rv },
  data: { v: 'x'.repeat(size) },
});

/** A transport whose list of each namespace answers `items[ns]` and whose watches stream what `push` sends. */
function scripted(items: Record<string, unknown[]>) {
  const queues = new Map<string, string[]>();
  /** Characters of list pages the transport handed over, per namespace. */
  const delivered = new Map<string, number>();
  const wakes = new Map<string, () => void>();
  const nsOf = (p: string) => /namespaces\/([^/]+)\//.exec(p)?.[1] ?? '';
  const transport: WatchTransport = {
    get: async (p) => {
      const body = { metadata: { resourceVersion: '10' }, items: items[nsOf(p)] ?? [] };
      const text = JSON.stringify(body);
      delivered.set(nsOf(p), (delivered.get(nsOf(p)) ?? 0) + text.length);
      return { status: 200, body, text };
    },
    stream: async (p, signal) => {
      const ns = nsOf(p);
      if (!p.includes('watch=1')) {
        // A list page read as it arrives, in chunks of 1,000 characters.
        const text = JSON.stringify({ metadata: { resourceVersion: '10' }, items: items[ns] ?? [] });
        return {
          status: 200,
          discard: () => undefined,
          chunks: (async function* () {
            for (let i = 0; i < text.length && !signal.aborted; i += 1000) {
              const chunk = text.slice(i, i + 1000);
              delivered.set(ns, (delivered.get(ns) ?? 0) + chunk.length);
              yield chunk;
            }
          })(),
        };
      }
      const queue = queues.get(ns) ?? [];
      queues.set(ns, queue);
      return {
        status: 200,
        discard: () => undefined,
        chunks: (async function* () {
          while (!signal.aborted) {
            const line = queue.shift();
            if (line !== undefined) yield line;
            else
              await new Promise<void>((r) => {
                wakes.set(ns, r);
                signal.addEventListener('abort', () => r(), { once: true });
              });
          }
        })(),
      };
    },
  };
  const push = (ns: string, type: string, object: unknown) => {
    const queue = queues.get(ns) ?? [];
    queues.set(ns, queue);
    queue.push(`${JSON.stringify({ type, object })}\n`);
    wakes.get(ns)?.();
  };
  return { transport, push, delivered };
}

async function settle(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(cond(), what);
}

test('the budget: a watch past its own bound is refused; past the total, the largest other watch ends first', () => {
  const budget = new StoreBudget({ totalBytes: 1000, perWatchBytes: 600 });
  const ended: string[] = [];
  const a = {};
  const b = {};
  const c = {};
  assert.equal(
    budget.hold(a, 601, () => ended.push('a')),
    false,
    'past its own bound',
  );
  assert.equal(budget.used, 0);
  assert.equal(
    budget.hold(a, 500, () => ended.push('a')),
    true,
  );
  assert.equal(
    budget.hold(b, 300, () => ended.push('b')),
    true,
  );
  // c needs 400: a (the largest, 500) ends; b stays.
  assert.equal(
    budget.hold(c, 400, () => ended.push('c')),
    true,
  );
  assert.deepEqual(ended, ['a']);
  assert.equal(budget.used, 700);
  // c growing to 600 would pass 1000 with b's 300 beside it... 900: fits.
  assert.equal(
    budget.hold(c, 600, () => ended.push('c')),
    true,
  );
  // b growing to 500 would make 1100: c (600) is the largest, and ends.
  assert.equal(
    budget.hold(b, 500, () => ended.push('b')),
    true,
  );
  assert.deepEqual(ended, ['a', 'c']);
  // The largest itself is refused rather than ending smaller ones.
  const d = {};
  assert.equal(
    budget.hold(d, 400, () => ended.push('d')),
    true,
  );
  assert.equal(
    budget.hold(d, 550, () => ended.push('d')),
    false,
  );
  assert.deepEqual(ended, ['a', 'c']);
  assert.equal(budget.used, 500);
  budget.hold(b, 0, () => {});
  assert.equal(budget.used, 0);
  assert.equal(budget.watches, 0);
});

test("a collection whose list is past a watch's bound is not kept: its reads go to the server, and the error says why", async () => {
  const { transport, delivered } = scripted({
    crowded: Array.from({ length: 20 }, (_, i) => cm('crowded', `c${i}`, '5', 1000)),
    quiet: [cm('quiet', 'q', '5', 10)],
  });
  const budget = new StoreBudget({ totalBytes: 40_000, perWatchBytes: 10_000 });
  const errors: Error[] = [];
  const cache = new LiveObjectCache(transport, { storeBudget: budget, onError: (_c, e) => errors.push(e) });
  try {
    cache.lookup(CM, coll('crowded'), 'c0');
    cache.lookup(CM, coll('quiet'), 'q');
    await settle('the quiet namespace is kept', () => cache.lookup(CM, coll('quiet'), 'q').hit);
    await settle('the crowded watch ended', () => errors.length > 0);
    assert.ok(errors[0] instanceof StoreTooLargeError, String(errors[0]));
    assert.match(errors[0].message, /namespaces\/crowded\/configmaps: its objects would hold/);
    assert.deepEqual(cache.lookup(CM, coll('crowded'), 'c0'), { hit: false }, 'read from the server');
    assert.equal(cache.watchCount, 1);
    // The page was not read whole: its 21 kB stopped at the 10 kB bound.
    const read = delivered.get('crowded') ?? 0;
    assert.ok(read > 0 && read <= 11_000, `${read} characters of the page read`);
    assert.ok(budget.used > 0 && budget.used < 1000, `${budget.used} bytes held: the quiet namespace's only`);
  } finally {
    await cache.close();
  }
  assert.equal(budget.used, 0, 'closed watches hold nothing');
});

test('a kept collection that grows past the bound by watch events ends; one that shrinks gives its bytes back', async () => {
  const { transport, push } = scripted({ growing: [cm('growing', 'g0', '5', 100)] });
  const budget = new StoreBudget({ totalBytes: 40_000, perWatchBytes: 10_000 });
  const errors: Error[] = [];
  const cache = new LiveObjectCache(transport, { storeBudget: budget, onError: (_c, e) => errors.push(e) });
  try {
    cache.lookup(CM, coll('growing'), 'g0');
    await settle('kept', () => cache.lookup(CM, coll('growing'), 'g0').hit);
    push('growing', 'ADDED', cm('growing', 'g1', '6', 3000));
    await settle('g1 seen', () => {
      const l = cache.lookup(CM, coll('growing'), 'g1');
      return l.hit && l.object !== null;
    });
    const withG1 = budget.used;
    push('growing', 'DELETED', cm('growing', 'g1', '7', 3000));
    await settle('g1 gone', () => budget.used < withG1 - 2900);
    for (let i = 2; i < 8; i++) push('growing', 'ADDED', cm('growing', `g${i}`, String(6 + i), 2000));
    await settle('the watch ended past its bound', () => errors.some((e) => e instanceof StoreTooLargeError));
    assert.deepEqual(cache.lookup(CM, coll('growing'), 'g0'), { hit: false });
    assert.equal(budget.used, 0);
  } finally {
    await cache.close();
  }
});

test("identities share the budget: one tenant's large namespace ends before another's small one is refused", async () => {
  const bigItems = Array.from({ length: 8 }, (_, i) => cm('big', `b${i}`, '5', 1000));
  const smallItems = Array.from({ length: 4 }, (_, i) => cm('small', `s${i}`, '5', 1000));
  const big = scripted({ big: bigItems });
  const small = scripted({ small: smallItems });
  // Each fits alone, not both together.
  const held = (items: unknown[]) => heldBy(JSON.stringify({ metadata: { resourceVersion: '10' }, items }));
  const budget = new StoreBudget({
    totalBytes: held(bigItems) + held(smallItems) - 1,
    perWatchBytes: held(bigItems) + 1,
  });
  const errors: string[] = [];
  const a = new LiveObjectCache(big.transport, {
    storeBudget: budget,
    onError: (c, e) => errors.push(`${c}: ${e.message}`),
  });
  const b = new LiveObjectCache(small.transport, {
    storeBudget: budget,
    onError: (c, e) => errors.push(`${c}: ${e.message}`),
  });
  try {
    a.lookup(CM, coll('big'), 'b0');
    await settle('big kept', () => a.lookup(CM, coll('big'), 'b0').hit);
    b.lookup(CM, coll('small'), 's0');
    await settle('small kept', () => b.lookup(CM, coll('small'), 's0').hit);
    assert.deepEqual(a.lookup(CM, coll('big'), 'b0'), { hit: false }, 'the big one gave way');
    assert.equal(errors.length, 1);
    assert.match(errors[0] ?? '', /namespaces\/big\/configmaps: .*ended to keep the live-object watches within/);
    assert.ok(budget.used <= budget.totalBytes);
  } finally {
    await a.close();
    await b.close();
  }
});

test('a watch ended mid-relist takes no bytes back as it stops, and so ends no third watch', async () => {
  // Each request a channel the test feeds: list pages and watch lines, null ends the body.
  type Channel = { path: string; q: Array<string | null>; wake?: () => void; push(s: string | null): void };
  const requests: Channel[] = [];
  const transport: WatchTransport = {
    get: async () => {
      throw new Error('lists are streamed');
    },
    stream: async (path, signal) => {
      const c: Channel = {
        path,
        q: [],
        push(s) {
          this.q.push(s);
          this.wake?.();
        },
      };
      requests.push(c);
      return {
        status: 200,
        discard: () => undefined,
        chunks: (async function* () {
          for (;;) {
            if (signal.aborted) throw new Error('aborted');
            const s = c.q.shift();
            if (s === null) return;
            if (s !== undefined) {
              yield s;
              continue;
            }
            await new Promise<void>((r) => {
              c.wake = r;
              signal.addEventListener('abort', () => r(), { once: true });
            });
          }
        })(),
      };
    },
  };
  const tick = () => new Promise((r) => setTimeout(r, 20));
  const last = (ns: string, watch: boolean) =>
    [...requests].reverse().find((r) => r.path.includes(`/namespaces/${ns}/`) && r.path.includes('watch=1') === watch)!;
  const page = (n: number) => {
    const s = JSON.stringify({
      metadata: { resourceVersion: '5' },
      items: [{ metadata: { name: 'a', namespace: 'x', resourceVersion: '5' } }],
    });
    return s + ' '.repeat(n);
  };
  // A page's estimate, padded with n spaces (which hold only themselves).
  const h = (n: number) => heldBy(page(n));
  const total = h(450) + h(300) + 250;
  const budget = new StoreBudget({ totalBytes: total, perWatchBytes: total });
  const ended: string[] = [];
  const watches: Watch[] = [];
  const start = (ns: string) => {
    const owner = {};
    const w: Watch = new Watch(transport, {
      path: `/api/v1/namespaces/${ns}/configmaps`,
      kind: 'ConfigMap',
      apiVersion: 'v1',
      backoffInitialMs: 10,
      bytes: {
        admit: (b: number): boolean =>
          budget.hold(owner, b, () => {
            ended.push(ns);
            void w.stop();
          }),
      },
    });
    watches.push(w);
    w.start();
  };
  try {
    start('c');
    await tick();
    last('c', false).push(page(450));
    last('c', false).push(null);
    await tick();
    start('a');
    await tick();
    last('a', false).push(page(300));
    last('a', false).push(null);
    await tick();
    assert.equal(budget.used, h(450) + h(300));
    // a's watch is told 410 and relists: its old store and part of the new page are held.
    last('a', true).push('{"type":"ERROR","object":{"code":410,"message":"gone"}}\n');
    await tick();
    last('a', false).push(' '.repeat(200));
    await tick();
    assert.equal(budget.used, h(450) + h(300) + 200);
    // b's 300 pass the total: a (its store and 200 more) is the largest and ends; c must stay.
    start('b');
    await tick();
    last('b', false).push(' '.repeat(300));
    await tick();
    await tick();
    assert.deepEqual(ended, ['a']);
    assert.equal(budget.used, h(450) + 300, "c's store and b's 300");
  } finally {
    await Promise.all(watches.map((w) => w.stop()));
  }
  assert.equal(budget.used, 0);
});

test('what a JSON text will hold is estimated from its length and its structures outside strings, across chunks', () => {
  assert.equal(heldBy('"a,b:{c}[d]"'), 12, 'inside a string, only the text');
  assert.equal(heldBy('{"a":[1,2]}'), 11 + 4 * HELD_PER_STRUCTURE);
  assert.equal(heldBy('"\\\\",{'), 6 + 2 * HELD_PER_STRUCTURE, 'after an escaped backslash, the quote closes');
  assert.equal(heldBy('"\\",{"'), 6, 'an escaped quote does not close');
  // Fed in chunks cut anywhere, the same estimate.
  const text = JSON.stringify({ items: [{ a: 'x,"y"', b: [1, { c: '\\' }] }] });
  const whole = heldBy(text);
  for (let cut = 0; cut <= text.length; cut++) {
    const e = new HeldEstimate();
    e.add(text.slice(0, cut));
    assert.equal(e.add(text.slice(cut)), whole, `cut at ${cut}`);
  }
});

test('the estimate is at least what V8 holds for shapes a tenant may choose, and not far above for common ones', () => {
  // Measured in a process of its own (node --expose-gc), so the heap counts only these objects.
  const { status, stdout, stderr } = spawnSync(
    process.execPath,
    ['--expose-gc', '--input-type=module', '-e', HEAP_PROBE],
    { encoding: 'utf8', cwd: new URL('../../', import.meta.url).pathname },
  );
  assert.equal(status, 0, stderr);
  const ratios = JSON.parse(stdout) as Record<string, number>;
  for (const [shape, ratio] of Object.entries(ratios))
    assert.ok(ratio >= 1 && ratio <= 6, `${shape}: the estimate is ${ratio.toFixed(2)} times the heap`);
});

/**
 * Parses many texts of each shape and prints, per shape, the estimate over the heap they took. A
 * watch event's line is its object wrapped as `{"type":"ADDED","object":...}`.
 */
const HEAP_PROBE = `
const { heldBy } = await import('./src/kube/store-budget.ts');
const line = (object) => JSON.stringify({ type: 'ADDED', object });
const meta = (i) => ({ name: 'o' + i, namespace: 'team', resourceVersion: String(i), labels: { app: 'web' } });
const shapes = {
  deployment: [2000, (i) => line({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { ...meta(i),
    managedFields: [{ manager: 'impersync', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:replicas': {}, 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { '.': {}, 'f:image': {} } } } } } } }] },
    spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1.27', ports: [{ containerPort: 80, protocol: 'TCP' }] }] } } },
    status: { replicas: 1, conditions: [{ type: 'Available', status: 'False', message: 'Deployment does not have minimum availability.' }] } })],
  configMap: [4000, (i) => line({ apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(i), data: { greeting: 'hello', 'app.yaml': 'a: 1\\nb: 2\\n' } })],
  emptyValues: [4, (i) => line({ metadata: meta(i), data: Object.fromEntries(Array.from({ length: 100000 }, (_, k) => [k.toString(36), ''])) })],
  longString: [4, (i) => line({ metadata: meta(i), data: { v: 'x'.repeat(1000000) } })],
  wideString: [4, (i) => line({ metadata: meta(i), data: { v: '\\u4e2d'.repeat(1000000) } })],
  emptyObjects: [4, (i) => line({ metadata: meta(i), spec: { x: Array.from({ length: 300000 }, () => ({})) } })],
  emptyLists: [4, (i) => line({ metadata: meta(i), spec: { x: Array.from({ length: 300000 }, () => []) } })],
  integers: [4, (i) => line({ metadata: meta(i), spec: { x: Array.from({ length: 300000 }, (_, k) => k) } })],
  doubles: [4, (i) => line({ metadata: meta(i), spec: { x: Array.from({ length: 100000 }, (_, k) => k + 0.5) } })],
};
const out = {};
for (const [shape, [n, make]] of Object.entries(shapes)) {
  const lines = Array.from({ length: n }, (_, i) => make(i));
  const estimate = lines.reduce((sum, l) => sum + heldBy(l), 0);
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  const kept = lines.map((l) => JSON.parse(l));
  globalThis.gc();
  out[shape] = estimate / (process.memoryUsage().heapUsed - before);
  kept.length = 0;
}
console.log(JSON.stringify(out));
`;
