// Memory budget waits, visible on the Application, against a real control plane and the real child
// renderer: with a renderer memory limit that admits one render at a time, an Application whose
// render is held at its Git server keeps the budget, another Application's render waits behind it
// and, after the (shortened) threshold, gets a MemoryBudgetWarning condition naming the renderer's
// budget, the wait and what holds it; once the first render is let go, the second runs, syncs, and
// the condition is gone.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { applyRaw } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { startGitHttpServer, TestRepo } from '../support/git.ts';
import type { GitHttpServer } from '../support/git.ts';
import { until } from '../support/faults.ts';
import {
  application,
  condition,
  guestbookFiles,
  startDeployersPlane,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;
let root: string;
let gitServer: GitHttpServer;
let open!: () => void;

// Two render threads of 64 MiB heap (104 MiB each with their young generation and isolate), no
// answer or metadata cache, tools of 512 MiB: a render holds 512 MiB + 4 × 16 MiB (the Application's default
// maxRenderedSize) = 576 MiB, and 85% of 1100 MiB less the threads leaves 727 MiB: one at a time.
const RENDERER_FLAGS = [
  '--memory-limit=1100Mi',
  '--max-renders=2',
  '--render-memory=64Mi',
  '--answer-cache=0',
  '--metadata-cache=0',
  '--tool-memory=512Mi',
];

before(async () => {
  cp = await startDeployersPlane({
    settings: { 'application.sync.impersonation.enabled': 'true', 'timeout.reconciliation': '0s' },
    project: 'default',
    namespaces: ['held', 'behind'],
  });
  root = await mkdtemp(path.join(os.tmpdir(), 'impersync-budget-'));
  for (const name of ['held', 'behind']) await (await TestRepo.create(path.join(root, name))).commit(guestbookFiles());
  gitServer = await startGitHttpServer(root, {
    gate: { prefix: '/held/', open: new Promise<void>((resolve) => (open = resolve)) },
  });
  fx = await startFixture(cp, guestbookFiles(), { rendererFlags: RENDERER_FLAGS, budgetWaitConditionMs: 1000 });
});

after(async () => {
  open?.();
  await fx?.stop();
  await gitServer?.close();
  await cp?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

test("a render waiting behind another's memory gets MemoryBudgetWarning naming the renderer's budget and its holder, and loses it once it ran", async () => {
  await applyRaw(
    cp.admin,
    application('held', gitServer.url('held'), {
      destination: { server: 'https://kubernetes.default.svc', namespace: 'held' },
    }),
  );
  // Its render holds the renderer's budget while its Git server holds the fetch.
  await until(
    'the held render reached its Git server',
    () => gitServer.requestLog().some((l) => l.includes('/held/')),
    60_000,
  );
  await applyRaw(
    cp.admin,
    application('behind', gitServer.url('behind'), {
      destination: { server: 'https://kubernetes.default.svc', namespace: 'behind' },
    }),
  );
  const waiting = await waitForApp(
    cp,
    'behind',
    'MemoryBudgetWarning',
    (a) => condition(a, 'MemoryBudgetWarning') !== undefined,
  );
  const message = condition(waiting, 'MemoryBudgetWarning') ?? '';
  assert.match(
    message,
    /^this Application's refresh has waited \d+ s for the renderer's memory budget of 727\.0 MiB: it needs 576\.0 MiB, and 576\.0 MiB of it is held by Application argocd\/held \(576\.0 MiB\)$/,
  );
  assert.equal(gitServer.requestLog().filter((l) => l.includes('/behind/')).length, 0, 'its render did not start');

  open();
  const synced = await waitForApp(
    cp,
    'behind',
    'Synced without MemoryBudgetWarning',
    (a) =>
      (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced' &&
      condition(a, 'MemoryBudgetWarning') === undefined,
  );
  assert.equal(condition(synced, 'MemoryBudgetWarning'), undefined);
  await waitForApp(
    cp,
    'held',
    'Synced',
    (a) => (a.status?.['sync'] as { status?: string } | undefined)?.status === 'Synced',
  );
});
