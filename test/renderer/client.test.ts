// The controller's client to the renderer reads answers as untrusted: a renderer taken over (it
// runs tenant tools) must not hand the controller a value that breaks the Application's requests.
// The renderer here is a loopback HTTP server answering what a hostile one would: a fault a real
// renderer does not produce.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { RendererClient } from '../../src/renderer/client.ts';
import { ANSWER_CONTENT_TYPE } from '../../src/renderer/protocol.ts';
import { SourceError } from '../../src/source/errors.ts';
import { ByteBudget, HELD_PER_ANSWER_BYTE, withBudgetJob } from '../../src/renderer/budget.ts';

let revision = '';
/** Objects of the next render answer (each a ConfigMap of `size` bytes of data), and a lie about its length. */
let answerObjects: { count: number; size: number; declareLess?: boolean } = { count: 0, size: 0 };
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.url === '/v1/resolve') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ revision }));
    } else {
      // A render's answer: its header line, then its objects (none unless a test asks).
      const { count, size, declareLess } = answerObjects;
      const lines = [JSON.stringify({ revision, sourceType: 'Directory', objects: count })];
      for (let i = 0; i < count; i++)
        lines.push(
          JSON.stringify({
            object: {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { name: `cm-${i}` },
              data: { v: 'x'.repeat(size) },
            },
            location: { file: 'cm.yaml', document: i },
          }),
        );
      const body = Buffer.from(lines.join('\n') + '\n');
      res.setHeader('content-type', ANSWER_CONTENT_TYPE);
      res.setHeader('content-length', declareLess ? Math.floor(body.length / 2) : body.length);
      res.end(body);
    }
  });
});
let client: RendererClient;

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  client = new RendererClient({ url: `http://127.0.0.1:${port}`, token: () => 'token' });
});
after(async () => {
  await client.close();
  server.close();
});

const input = {
  source: { repoURL: 'https://git.example.com/repo.git', path: '.' },
  revision: 'HEAD',
  appName: 'app',
  namespace: 'dev',
};

test("an answer's revision is bounded: it goes on into every request's Impersonate-Extra header", async () => {
  revision = '0123456789abcdef0123456789abcdef01234567';
  assert.equal((await client.render(input)).revision, revision);
  assert.equal(await client.resolveRevision(input), revision);

  revision = 'a'.repeat(1025);
  const malformed = (err: unknown) =>
    err instanceof SourceError && /the renderer's answer is malformed \(revision\)/.test(err.message);
  await assert.rejects(client.render(input), malformed);
  await assert.rejects(client.resolveRevision(input), malformed);
});

test('inside a job of the memory budget, an answer is held by its declared length before it is read; too big for the budget is an error naming the Application', async () => {
  revision = '0123456789abcdef0123456789abcdef01234567';
  try {
    answerObjects = { count: 4, size: 100_000 };
    const budget = new ByteBudget(64 * 1024 ** 2);
    let heldWhileRunning = 0;
    const result = await withBudgetJob(budget, 'Application argocd/app', async () => {
      const r = await client.render(input);
      heldWhileRunning = budget.used;
      return r;
    });
    assert.equal(result.objects.length, 4);
    assert.ok(
      heldWhileRunning >= 400_000 * HELD_PER_ANSWER_BYTE && heldWhileRunning < 64 * 1024 ** 2,
      `held ${heldWhileRunning}`,
    );
    assert.equal(budget.used, 0, 'given back when the job ended');
    // The same answer against a budget smaller than what it stands for: refused before it is read.
    const small = new ByteBudget(1024 ** 2);
    await assert.rejects(
      withBudgetJob(small, 'Application argocd/app', () => client.render(input)),
      /Application argocd\/app needs [\d.]+ MiB of memory, more than the whole memory budget of 1\.0 MiB/,
    );
    assert.equal(small.used, 0);
    // An answer longer than it declared is cut off as malformed, not read past what was admitted.
    answerObjects = { count: 4, size: 100_000, declareLess: true };
    await assert.rejects(
      withBudgetJob(budget, 'Application argocd/app', () => client.render(input)),
      /malformed/,
    );
  } finally {
    answerObjects = { count: 0, size: 0 };
  }
});
