// A renderer process's server on loopback, and the client the controller would use with it, for
// the tests that render hostile or oversized sources through the real protocol.
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { createLogger } from '../../src/observability/logger.ts';
import { RendererClient } from '../../src/renderer/client.ts';
import { startRenderer, type RendererProcessOptions, type RunningRenderer } from '../../src/renderer/run.ts';
import { SourceError, type RenderInput } from '../../src/source/index.ts';

/**
 * Starts a renderer with `opts` (no answer cache unless given one, a fresh cache folder under
 * `work`), runs `fn` with a client to it and a maker of render inputs for a path of the repository
 * at `repoURL`, and stops both.
 */
export async function withTestRenderer(
  setup: { work: string; repoURL: string; token: string },
  opts: Partial<RendererProcessOptions>,
  fn: (client: RendererClient, renderer: RunningRenderer, input: (p: string) => RenderInput) => Promise<void>,
): Promise<void> {
  const renderer = await startRenderer({
    listen: '127.0.0.1:0',
    cacheDir: await mkdtemp(path.join(setup.work, 'cache-')),
    token: { value: setup.token },
    logger: createLogger({ level: 'silent' }),
    cacheBytes: 0,
    ...opts,
  });
  const client = new RendererClient({ url: `http://${renderer.server.address}`, token: () => setup.token });
  try {
    await fn(client, renderer, (p) => ({ source: { repoURL: setup.repoURL, path: p }, appName: p }));
  } finally {
    await client.close();
    await renderer.stop();
  }
}

export { failsWith } from './source-error.ts';

/** The SourceError `p` is refused with; the test fails when it is not refused, or not with one. */
export async function refused(p: Promise<unknown>): Promise<SourceError> {
  const err = await p.then(
    () => assert.fail('should have been refused'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof SourceError, String(err));
  return err;
}
