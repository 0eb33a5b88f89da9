// The controller's client to several renderer replicas: each repository's requests go to its first
// replica; a replica that gives no answer (stopped, connection reset) is passed over for the next in
// the ranking, and an answer, an error too, is final, so that a render failing on its content is
// never run on a second replica. The replicas are loopback HTTP servers answering the protocol,
// to stop one or make it reset on cue; the end-to-end test (test/e2e/renderer-routing.test.ts)
// runs real renderers.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import type { AppProject, Application } from '../../src/api/index.ts';
import { renderApplication } from '../../src/controller/render.ts';
import { ANSWER_CONTENT_TYPE } from '../../src/renderer/protocol.ts';
import { RoutedRenderer, type RendererRequestOutcome } from '../../src/renderer/routed.ts';
import { rankReplicas, routingKey } from '../../src/renderer/routing.ts';
import { SourceError } from '../../src/source/errors.ts';

const SHA = '0123456789abcdef0123456789abcdef01234567';

type Mode = 'ok' | 'source-error' | 'reset' | 'silent';
interface Replica {
  url: string;
  server: Server;
  mode: Mode;
  /** The repoURL of every request it got. */
  seen: string[];
  stop(): Promise<void>;
}

const replicas: Replica[] = [];
after(async () => {
  for (const r of replicas) await r.stop();
});

async function replica(mode: Mode = 'ok', host = '127.0.0.1', port = 0): Promise<Replica> {
  const r: Replica = { url: '', server: createServer(), mode, seen: [], stop: async () => {} };
  r.server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/v1/budget') {
        res.setHeader('content-type', 'application/json');
        const waiting = [{ job: `Application argocd/waits-on-${r.url}`, bytes: 1024, waitedMs: 40_000 }];
        return res.end(JSON.stringify({ capacity: 4096, used: 4096, waiting, holders: [] }));
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { input: { source: { repoURL: string } } };
      r.seen.push(body.input.source.repoURL);
      if (r.mode === 'reset') return req.socket.destroy();
      if (r.mode === 'silent') return;
      if (r.mode === 'source-error') {
        res.statusCode = 422;
        res.setHeader('content-type', 'application/json');
        return res.end(JSON.stringify({ error: { reason: 'ToolFailed', message: 'helm template: boom' } }));
      }
      if (req.url === '/v1/resolve') {
        res.setHeader('content-type', 'application/json');
        return res.end(JSON.stringify({ revision: SHA }));
      }
      res.setHeader('content-type', ANSWER_CONTENT_TYPE);
      res.end(JSON.stringify({ revision: SHA, sourceType: 'Directory', objects: 0 }) + '\n');
    });
  });
  await new Promise<void>((resolve) => r.server.listen(port, host, resolve));
  const address = r.server.address() as AddressInfo;
  r.url = `http://${host}:${address.port}`;
  r.stop = () =>
    new Promise<void>((resolve) => {
      r.server.closeAllConnections();
      r.server.close(() => resolve());
    });
  replicas.push(r);
  return r;
}

const repos = Array.from({ length: 60 }, (_, i) => `https://git.example.com/repo-${i}.git`);
const input = (repoURL: string) => ({ source: { repoURL, path: '.' }, revision: 'HEAD', appName: 'app' });

function routed(urls: string[], extra: Partial<ConstructorParameters<typeof RoutedRenderer>[0]> = {}) {
  const requests: string[] = [];
  const client = new RoutedRenderer({
    targets: urls.map((url) => ({ kind: 'url' as const, url })),
    token: () => 'token',
    onRequest: (replica, request, outcome: RendererRequestOutcome) => requests.push(`${replica} ${request} ${outcome}`),
    ...extra,
  });
  return { client, requests };
}

test("each repository's renders and resolves go to its first replica only", async () => {
  const [a, b, c] = [await replica(), await replica(), await replica()];
  const urls = [a.url, b.url, c.url];
  const { client, requests } = routed(urls);
  try {
    for (const repo of repos) {
      await client.render(input(repo));
      assert.equal(await client.resolveRevision(input(repo)), SHA);
    }
    for (const r of [a, b, c]) {
      assert.ok(r.seen.length > 10, `${r.url} got a share: ${r.seen.length}`);
      for (const repo of r.seen) assert.equal(rankReplicas(urls, routingKey(repo))[0], r.url);
    }
    assert.equal(a.seen.length + b.seen.length + c.seen.length, 2 * repos.length, 'one replica per request');
    assert.ok(requests.every((line) => line.endsWith(' ok')));
  } finally {
    await client.close();
  }
});

test('a stopped replica: its repositories go to their next replica, the others stay', async () => {
  const [a, b, c] = [await replica(), await replica(), await replica()];
  const urls = [a.url, b.url, c.url];
  const { client, requests } = routed(urls);
  try {
    for (const repo of repos) await client.render(input(repo));
    await b.stop();
    for (const r of [a, b, c]) r.seen = [];
    requests.length = 0;
    for (const repo of repos) await client.render(input(repo));
    const ofB = repos.filter((repo) => rankReplicas(urls, routingKey(repo))[0] === b.url);
    assert.ok(ofB.length > 5, `b had ${ofB.length} repositories`);
    for (const repo of repos) {
      const ranked = rankReplicas(urls, routingKey(repo));
      const on = ranked[0] === b.url ? ranked[1] : ranked[0];
      assert.ok((on === a.url ? a : c).seen.includes(repo), `${repo} rendered on ${on}`);
    }
    // The first request after the stop found b unreachable; after it b is tried last, not first.
    const unreachable = requests.filter((l) => l === `${b.url} render unreachable`);
    assert.ok(unreachable.length >= 1, requests.join('\n'));
    assert.ok(unreachable.length < ofB.length, `b was not tried first for all ${ofB.length}: ${unreachable.length}`);
  } finally {
    await client.close();
  }
});

test('an answer with an error is final: a render failing on its content is not run on another replica', async () => {
  const [a, b] = [await replica('source-error'), await replica('source-error')];
  const { client, requests } = routed([a.url, b.url]);
  try {
    for (const repo of repos.slice(0, 10)) {
      await assert.rejects(client.render(input(repo)), (err: unknown) => {
        assert.ok(err instanceof SourceError);
        assert.equal(err.reason, 'ToolFailed');
        assert.match(err.message, /helm template: boom/);
        return true;
      });
    }
    assert.equal(a.seen.length + b.seen.length, 10, 'each render ran on one replica only');
    assert.equal(requests.filter((l) => l.endsWith(' error')).length, 10);
  } finally {
    await client.close();
  }
});

test('a replica that took the request and gives no answer is not passed over: the timeout is the answer', async () => {
  const [a, b] = [await replica('silent'), await replica('silent')];
  const { client } = routed([a.url, b.url], { timeoutMs: 300 });
  try {
    await assert.rejects(client.render(input(repos[0] as string)), (err: unknown) => {
      assert.ok(err instanceof SourceError);
      assert.equal(err.reason, 'RendererUnavailable');
      return true;
    });
    assert.equal(a.seen.length + b.seen.length, 1, 'asked once');
  } finally {
    await client.close();
  }
});

test('connections reset before any answer: passed over, but a request is tried on two replicas at most', async () => {
  const all = [await replica('reset'), await replica('reset'), await replica('reset')];
  const { client, requests } = routed(all.map((r) => r.url));
  try {
    await assert.rejects(client.render(input(repos[0] as string)), (err: unknown) => {
      assert.ok(err instanceof SourceError);
      assert.equal(err.reason, 'RendererUnavailable');
      assert.match(
        err.message,
        /no answer from 2 of 3 renderer replicas; the last: the renderer at http:\/\/127\.0\.0\.1:\d+ cannot be reached/,
      );
      return true;
    });
    assert.equal(
      all.reduce((n, r) => n + r.seen.length, 0),
      2,
    );
    assert.equal(requests.filter((l) => l.endsWith(' unreachable')).length, 2);
    // One replica resetting, the next answering: the request is answered.
    const ranked = rankReplicas(
      all.map((r) => r.url),
      routingKey(repos[1] as string),
    );
    for (const r of all) r.mode = r.url === ranked[0] ? 'reset' : 'ok';
    const fresh = routed(all.map((r) => r.url));
    try {
      assert.equal((await fresh.client.render(input(repos[1] as string))).revision, SHA);
      assert.deepEqual(fresh.requests, [`${ranked[0]} render unreachable`, `${ranked[1]} render ok`]);
    } finally {
      await fresh.client.close();
    }
  } finally {
    await client.close();
  }
});

test('all replicas stopped: an error saying none answered; one back: answered again', async () => {
  const a = await replica();
  const port = Number(new URL(a.url).port);
  await a.stop();
  const { client } = routed([a.url], { downForMs: 0 });
  try {
    await assert.rejects(
      client.render(input(repos[0] as string)),
      /no answer from the one renderer replica; the last: the renderer at http:\/\/127\.0\.0\.1:\d+ cannot be reached: connect ECONNREFUSED/,
    );
    await replica('ok', '127.0.0.1', port);
    assert.equal((await client.render(input(repos[0] as string))).revision, SHA);
  } finally {
    await client.close();
  }
});

test("a headless Service's addresses: repositories follow the replicas DNS names, a replica gone moves only its own", async () => {
  // Two replicas on one port, as Pods behind a headless Service are (127.0.0.2 is loopback too).
  const a = await replica('ok', '127.0.0.1');
  const port = Number(new URL(a.url).port);
  const b = await replica('ok', '127.0.0.2', port);
  let answer = ['127.0.0.1', '127.0.0.2'];
  let now = 0;
  const { client } = routed([], {
    targets: [{ kind: 'dns', host: 'renderer-headless', port, given: `dns+http://renderer-headless:${port}` }],
    resolve: async () => answer,
    now: () => now,
  });
  try {
    for (const repo of repos) await client.render(input(repo));
    assert.ok(a.seen.length > 10 && b.seen.length > 10, `${a.seen.length} and ${b.seen.length}`);
    const onA = new Set(a.seen);
    // b's Pod deleted: DNS no longer names it; after the interval every repository is on a.
    answer = ['127.0.0.1'];
    now = 60_000;
    await client.render(input(repos[0] as string));
    await new Promise((r) => setImmediate(r));
    for (const r of [a, b]) r.seen = [];
    for (const repo of repos) await client.render(input(repo));
    assert.equal(b.seen.length, 0);
    assert.equal(a.seen.length, repos.length);
    assert.deepEqual(await client.ranking(repos[0] as string), [a.url]);
    // It comes back: its repositories return to it, a's stay on a.
    answer = ['127.0.0.2', '127.0.0.1'];
    now = 120_000;
    await client.ranking(repos[0] as string);
    await new Promise((r) => setImmediate(r));
    for (const r of [a, b]) r.seen = [];
    for (const repo of repos) await client.render(input(repo));
    assert.deepEqual(new Set(a.seen), onA);
  } finally {
    await client.close();
  }
});

test('a multi-source Application: each source is routed by its own repository, a Helm and an OCI one too; a ref source is resolved on its own', async () => {
  const [a, b, c] = [await replica(), await replica(), await replica()];
  const urls = [a.url, b.url, c.url];
  const { client } = routed(urls);
  const sources = [
    { repoURL: 'https://git.example.com/app.git', path: 'base' },
    { repoURL: 'https://charts.example.com', chart: 'web', targetRevision: '1.2.3' },
    { repoURL: 'oci://registry.example.com/charts/api', targetRevision: '0.1.0', path: '.' },
    { repoURL: 'https://git.example.com/values.git', targetRevision: 'main', ref: 'values' },
  ];
  try {
    await renderApplication(
      client,
      {
        metadata: { name: 'multi', namespace: 'argocd' },
        spec: { project: 'p', sources, destination: { namespace: 'team' } },
      } as unknown as Application,
      {
        project: { metadata: { name: 'p' }, spec: { sourceRepos: ['*'] } } as unknown as AppProject,
        controllerNamespace: 'argocd',
        repositories: { configs: [], errors: [], knownHosts: '', tlsCerts: {} },
      },
    );
    for (const { repoURL } of sources) {
      const on = rankReplicas(urls, routingKey(repoURL))[0];
      for (const r of [a, b, c])
        assert.equal(r.seen.includes(repoURL), r.url === on, `${repoURL} on ${on} only, not ${r.url}`);
    }
  } finally {
    await client.close();
  }
});

test("each replica's memory budget is asked of it, and one that does not answer is left out", async () => {
  const [a, b, c] = [await replica(), await replica(), await replica()];
  const { client } = routed([a.url, b.url, c.url]);
  try {
    await c.stop();
    const budgets = await client.budgets();
    assert.deepEqual(budgets.map((x) => x.replica).sort(), [a.url, b.url].sort());
    for (const { replica: url, answer } of budgets) {
      assert.equal(answer.capacity, 4096);
      assert.deepEqual(
        answer.waiting.map((w) => w.job),
        [`Application argocd/waits-on-${url}`],
        "each answer is its own replica's",
      );
    }
  } finally {
    await client.close();
  }
});
