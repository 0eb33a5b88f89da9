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

let revision = '';
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.url === '/v1/resolve') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ revision }));
    } else {
      // A render's answer: its header line, then no object.
      res.setHeader('content-type', ANSWER_CONTENT_TYPE);
      res.end(JSON.stringify({ revision, sourceType: 'Directory', objects: 0 }) + '\n');
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
