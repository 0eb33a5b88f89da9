// The plugin client's handling of a call that ends while the app folder is still being streamed (a
// plugin that stops reading, then the render's deadline): the call fails as a deadline, the stream
// lets go of the rest of the archive (its chunks are not held by a write waiting for a drain that
// never comes), and no listener stays on the render's abort signal. A real gRPC server on a Unix
// socket that accepts GenerateManifest and never reads stands for the stalled cmp-server (the
// plugin tests with Argo CD's own argocd-cmp-server are test/source/cmp.test.ts).
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { PluginClient } from '../../src/source/cmp/client.ts';

let dir: string;
let server: grpc.Server;
let socket: string;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cmp-client-'));
  socket = path.join(dir, 'stall.sock');
  server = new grpc.Server();
  const raw = (b: Buffer) => b;
  server.register(
    '/plugin.ConfigManagementPluginService/GenerateManifest',
    (call: grpc.ServerReadableStream<Buffer, Buffer>) => {
      call.pause(); // never reads, never answers
    },
    raw,
    raw,
    'clientStream',
  );
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
});

after(async () => {
  server?.forceShutdown();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('a call past its deadline mid-stream: rejected, the stream let go, no listener left on the signal', async () => {
  const client = new PluginClient(socket, 1024 * 1024);
  const render = new AbortController();
  let pulled = 0;
  let released = false;
  function* chunks(): Generator<Uint8Array> {
    try {
      for (let i = 0; i < 200; i++) {
        pulled++;
        yield Buffer.alloc(1024 * 1024, i);
      }
    } finally {
      released = true;
    }
  }
  try {
    await assert.rejects(
      client.generateManifest(
        { metadata: { appName: 'a', appRelPath: '.', checksum: '0', size: 200 << 20, env: [] }, chunks: chunks() },
        { deadline: new Date(Date.now() + 1_000), signal: render.signal },
      ),
      (err: { code?: number }) => err.code === grpc.status.DEADLINE_EXCEEDED,
    );
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(pulled < 200, `the writes waited for the stalled server (${pulled} chunks pulled)`);
    assert.equal(released, true, 'the chunks were let go once the call was over');
    assert.equal(getEventListeners(render.signal, 'abort').length, 0, 'no abort listener left behind');
  } finally {
    client.close();
  }
});
