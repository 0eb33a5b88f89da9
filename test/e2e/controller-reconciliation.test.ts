// argocd-cm `timeout.reconciliation.jitter` and `timeout.hard.reconciliation` on the real control
// plane: which periodic refreshes happen, and which of them render again rather than reuse the
// renderer's answer, read from the renderer's "render answered" debug lines for the Application.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRaw, startControlPlane } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import {
  application,
  deployer,
  grantControllerRights,
  guestbookFiles,
  IN_CLUSTER,
  operationPhase,
  project,
  setSettings,
  startFixture,
  waitForApp,
} from './controller-fixture.ts';
import type { Fixture } from './controller-fixture.ts';

let cp: TestControlPlane;
let fx: Fixture;

const BASE = { 'application.sync.impersonation.enabled': 'true', 'timeout.reconciliation': '1s' };

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, { ...BASE, 'timeout.reconciliation.jitter': '0s' });
  fx = await startFixture(cp, guestbookFiles(), { rendererLogs: true, rendererFlags: ['--log-level=debug'] });
  await deployer(cp, 'timing', 'deployer');
  await applyRaw(
    cp.admin,
    project('timing', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'timing', defaultServiceAccount: 'deployer' }],
    }),
  );
  await applyRaw(
    cp.admin,
    application('timing', fx.repo.url, { project: 'timing', destination: { server: IN_CLUSTER, namespace: 'timing' } }),
  );
  await waitForApp(cp, 'timing', 'first sync', (a) => operationPhase(a) === 'Succeeded');
});

after(async () => {
  await fx?.stop();
  await cp?.stop();
});

interface Answered {
  at: number;
  cached: boolean;
}

/** The renderer's answers for the Application, from line `from` of the log on. */
function answered(from: number): Answered[] {
  const out: Answered[] = [];
  for (const line of fx.logs.slice(from)) {
    if (!line.includes('"render answered"')) continue;
    const entry = JSON.parse(line) as { application?: string; cached?: boolean; time?: number };
    if (entry.application !== 'timing') continue;
    out.push({ at: entry.time ?? 0, cached: entry.cached === true });
  }
  return out;
}

/** Takes `settings`, lets what was scheduled before drain for `settleMs`, then watches for `ms`. */
async function watchWith(settings: Record<string, string>, settleMs: number, ms: number): Promise<Answered[]> {
  await setSettings(cp, { ...BASE, ...settings });
  await new Promise((r) => setTimeout(r, settleMs));
  const from = fx.logs.length;
  await new Promise((r) => setTimeout(r, ms));
  return answered(from);
}

test('timeout.hard.reconciliation: a periodic refresh of a comparison older than it renders again; without it, every periodic refresh reuses the answer', async () => {
  const normal = await watchWith({ 'timeout.reconciliation.jitter': '0s' }, 3_000, 6_000);
  assert.ok(normal.length >= 3, `periodic refreshes every second: ${JSON.stringify(normal)}`);
  assert.deepEqual(
    normal.filter((a) => !a.cached),
    [],
    'without timeout.hard.reconciliation the same commit is answered from the cache',
  );
  // As Argo CD's controller: the refreshes come every hard timeout when it is the shorter, and each
  // finds the comparison expired.
  const hard = await watchWith(
    { 'timeout.reconciliation': '1h', 'timeout.reconciliation.jitter': '0s', 'timeout.hard.reconciliation': '1s' },
    3_000,
    6_000,
  );
  assert.ok(hard.length >= 3, `a refresh every hard timeout: ${JSON.stringify(hard)}`);
  assert.deepEqual(
    hard.filter((a) => a.cached),
    [],
    'each periodic hard refresh renders again',
  );
  assert.ok(
    fx.logs.some((l) => l.includes('comparison expired, requesting hard refresh')),
    "the controller logs Argo CD's reason for the hard refresh",
  );
  // Argo CD's too: a soft refresh more often than the hard timeout keeps the comparison young, so
  // none of them is hard.
  const longer = await watchWith(
    { 'timeout.reconciliation.jitter': '0s', 'timeout.hard.reconciliation': '3s' },
    3_000,
    6_000,
  );
  assert.ok(longer.length >= 3, `periodic refreshes every second: ${JSON.stringify(longer)}`);
  assert.deepEqual(
    longer.filter((a) => !a.cached),
    [],
    'the soft refreshes keep the comparison younger than the hard timeout',
  );
});

test('timeout.reconciliation.jitter: each periodic refresh waits a random part of it longer', async () => {
  const none = await watchWith({ 'timeout.reconciliation.jitter': '0s' }, 3_000, 6_000);
  assert.ok(none.length >= 3, `no jitter: a refresh about every second: ${JSON.stringify(none)}`);
  // Up to ten minutes more: at most the refresh already scheduled falls in the window, and the one it
  // schedules lands within it with a chance of about 1 in 100.
  const spread = await watchWith({ 'timeout.reconciliation.jitter': '10m' }, 3_000, 6_000);
  assert.ok(spread.length <= 1, `with a 10m jitter the refreshes spread out: ${JSON.stringify(spread)}`);
});
