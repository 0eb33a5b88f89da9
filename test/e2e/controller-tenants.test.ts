// Issue 12 against a real `impersync run --leader-elect` process: while one tenant's hostile
// Applications (a legal ConfigMap of 88,000 keys, 490 KiB of aliases that expand to 480 MB, a
// synced 12,000-key ConfigMap whose every value changes, a commit of a few KiB that checks out to
// 2.5 GiB) are refreshed again and again (timeout.reconciliation 3s), another tenant's Application
// still syncs a new commit, /healthz answers as the install's liveness probe asks, the Lease is
// renewed and never lost, and the controller's peak RSS stays under the install's memory limit.
// Before the fixes of issue 12 each of these held the event loop for minutes, or grew the process
// past its limit, at every refresh.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parse } from 'yaml';
import { applyRaw, getRaw, startControlPlane } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { TestRepo } from '../support/git.ts';
import { spawnController, until } from '../support/faults.ts';
import type { ControllerProcess } from '../support/faults.ts';
import { aliasBomb, checkoutBombRepo, manyKeysConfigMap, wideConfigMap } from '../support/attacks.ts';
import {
  application,
  condition,
  deployer,
  grantControllerRights,
  guestbookFiles,
  IN_CLUSTER,
  NS,
  operationPhase,
  project,
  setSettings,
  waitForApp,
  grantControllerLease,
} from './controller-fixture.ts';

let cp: TestControlPlane;
let repo: TestRepo;
let bomb: TestRepo;
let cacheDir: string;
let ctl: ControllerProcess;

interface Container {
  name: string;
  livenessProbe: { periodSeconds: number; timeoutSeconds: number; failureThreshold: number };
  resources: { limits: { memory: string } };
}

/** A container of the install (its liveness probe and memory limit are what must hold). */
async function installed(file: string, container: string): Promise<Container> {
  const url = new URL(`../../deploy/install/base/${file}`, import.meta.url);
  const d = parse(await readFile(url, 'utf8')) as { spec: { template: { spec: { containers: Container[] } } } };
  const c = d.spec.template.spec.containers.find((x) => x.name === container);
  if (!c) throw new Error(`no ${container} container in deploy/install/base/${file}`);
  return c;
}

const MEMORY_UNITS: Record<string, number> = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };
function bytesOf(quantity: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)$/.exec(quantity);
  if (!m) throw new Error(`unexpected memory quantity ${quantity}`);
  return Number(m[1]) * (MEMORY_UNITS[m[2] as string] as number);
}

/** Peak resident set (VmHWM) of a process, in bytes. */
function peakRss(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** The processes whose parent is `pid` (the child renderer of `impersync run`). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

async function leaseRenewTime(): Promise<{ holder: string; renewTime: string }> {
  const lease = await getRaw(cp.admin, {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    namespace: NS,
    name: 'impersync-controller',
  });
  const spec = (lease?.['spec'] ?? {}) as { holderIdentity?: string; renewTime?: string };
  return { holder: spec.holderIdentity ?? '', renewTime: spec.renewTime ?? '' };
}

const hostilePaths = { keys: 'many-keys', alias: 'alias', wide: 'wide' };

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await grantControllerLease(cp);
  await setSettings(cp, {
    'application.sync.impersonation.enabled': 'true',
    'timeout.reconciliation': '3s',
    'timeout.reconciliation.jitter': '0s',
  });
  for (const tenant of ['noisy', 'quiet']) {
    await deployer(cp, tenant, 'deployer');
    await applyRaw(
      cp.admin,
      project(tenant, {
        destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: tenant, defaultServiceAccount: 'deployer' }],
      }),
    );
  }
  repo = await TestRepo.create();
  await repo.commit({
    ...guestbookFiles(),
    [`${hostilePaths.keys}/cm.yaml`]: manyKeysConfigMap(),
    [`${hostilePaths.alias}/cm.yaml`]: aliasBomb(),
    [`${hostilePaths.wide}/cm.yaml`]: wideConfigMap('wide', 'first'),
  });
  bomb = await checkoutBombRepo();
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-tenants-'));
});

after(async () => {
  await ctl?.kill();
  await repo?.remove();
  await bomb?.remove();
  if (cacheDir) await rm(cacheDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  await cp?.stop();
});

test(
  "a tenant's hostile Applications, refreshed again and again, stall no one: another tenant syncs, /healthz answers, the Lease is renewed, RSS stays under the limit",
  { timeout: 400_000 },
  async (t) => {
    const install = await installed('deployment.yaml', 'controller');
    const rendererLimit = bytesOf((await installed('renderer-deployment.yaml', 'renderer')).resources.limits.memory);
    ctl = spawnController({
      kubeconfig: await cp.kubeconfigFileFor('controller'),
      cacheDir,
      args: ['--leader-elect'],
    });
    const proc = ctl;
    const detail = () => proc.output().slice(-4000);
    let port = 0;
    await until(
      'the health port in the log',
      () => {
        const m = /"port":(\d+),"msg":"serving \/healthz/.exec(proc.output());
        port = m ? Number(m[1]) : 0;
        return port > 0;
      },
      60_000,
      detail,
    );

    // The kubelet's liveness rule from the install: a probe every periodSeconds fails when /healthz
    // does not answer 200 within timeoutSeconds; failureThreshold failures in a row restart the
    // container. However its probes fall, the kubelet cannot restart a controller that never goes
    // (failureThreshold - 1) * periodSeconds + timeoutSeconds without answering, and can restart one
    // that does. So the test probes often (every 500 ms) and judges the longest time between two
    // answers against that bound, not a run of its own failures: a few seconds' stall of this test
    // process over a couple of probes is not an outage the kubelet would see.
    const probe = install.livenessProbe;
    const allowedSilenceMs = ((probe.failureThreshold - 1) * probe.periodSeconds + probe.timeoutSeconds) * 1000;
    const health = { probes: 0, failures: 0, lastAnswer: Date.now(), longestSilenceMs: 0 };
    const probing = new AbortController();
    // Stopped however the test ends: a prober left running would keep this file's process alive.
    t.after(() => probing.abort());
    const prober = (async () => {
      while (!probing.signal.aborted) {
        let ok = false;
        try {
          const res = await fetch(`http://127.0.0.1:${port}/healthz`, {
            signal: AbortSignal.timeout(probe.timeoutSeconds * 1000),
          });
          ok = res.status === 200;
          await res.arrayBuffer();
        } catch {
          ok = false;
        }
        health.probes++;
        if (!ok) health.failures++;
        const silence = Date.now() - health.lastAnswer;
        health.longestSilenceMs = Math.max(health.longestSilenceMs, silence);
        if (ok) health.lastAnswer = Date.now();
        await delay(500, undefined, { signal: probing.signal }).catch(() => {});
      }
    })();

    await until('the Lease to be held', async () => (await leaseRenewTime()).holder !== '', 60_000, detail);
    const firstLease = await leaseRenewTime();

    const noisy = (name: string, repoURL: string, p: string) =>
      applyRaw(
        cp.admin,
        application(name, repoURL, {
          project: 'noisy',
          path: p,
          destination: { server: IN_CLUSTER, namespace: 'noisy' },
        }),
      );
    await noisy('many-keys', repo.url, hostilePaths.keys);
    await noisy('alias-bomb', repo.url, hostilePaths.alias);
    await noisy('wide', repo.url, hostilePaths.wide);
    await noisy('checkout-bomb', bomb.url, 'bomb');

    // Each hostile kind reached and answered: refused with a condition on its own Application, or
    // rendered in bounded work (the 88,000 keys; the wide ConfigMap, synced once).
    await waitForApp(cp, 'alias-bomb', 'a ComparisonError naming the limit', (a) =>
      /aliases counted at every use/.test(condition(a, 'ComparisonError') ?? ''),
    );
    await waitForApp(cp, 'checkout-bomb', 'a ComparisonError naming the checkout limit', (a) =>
      /over the renderer's checkout limit/.test(condition(a, 'ComparisonError') ?? ''),
    );
    // Its 88,000 keys are rendered, parsed and dry-run: minutes on a loaded 2-core machine.
    await waitForApp(cp, 'many-keys', 'compared', (a) => a.status?.['reconciledAt'] !== undefined, 180_000);
    await waitForApp(
      cp,
      'wide',
      'synced once',
      (a) => operationPhase(a) === 'Succeeded' && (a.status?.['sync'] as { status?: string })?.status === 'Synced',
      120_000,
    );

    // Every value of the wide ConfigMap changes, and the quiet tenant's Application comes, in the
    // same commit: the hostile ones are refreshed (and every 3 s after) while it syncs.
    const revision = await repo.commit({
      [`${hostilePaths.wide}/cm.yaml`]: wideConfigMap('wide', 'second'),
      'app/quiet.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: quiet\ndata:\n  a: "1"\n',
    });
    await applyRaw(
      cp.admin,
      application('quiet', repo.url, { project: 'quiet', destination: { server: IN_CLUSTER, namespace: 'quiet' } }),
    );
    const quiet = await waitForApp(
      cp,
      'quiet',
      'the quiet tenant synced the new commit',
      (a) =>
        operationPhase(a) === 'Succeeded' &&
        (a.status?.['sync'] as { status?: string; revision?: string })?.revision === revision &&
        (a.status?.['sync'] as { status?: string })?.status === 'Synced',
      120_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${detail()}`);
    });
    assert.equal(condition(quiet, 'ComparisonError'), undefined);
    assert.ok(await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'quiet', namespace: 'quiet' }));
    // The wide change was compared too (no text diff on the way): OutOfSync, or synced again.
    await waitForApp(
      cp,
      'wide',
      'the changed values seen',
      (a) => (a.status?.['sync'] as { revision?: string })?.revision === revision,
      120_000,
    );
    // Two more refresh intervals of the hostile ones, the prober still running.
    const reconciled = (await waitForApp(cp, 'many-keys', 'read', () => true)).status?.['reconciledAt'];
    await waitForApp(cp, 'many-keys', 'refreshed again', (a) => a.status?.['reconciledAt'] !== reconciled, 60_000);

    // Each tenant's wait in each queue is a metric of its own (the AppProject is the tenant).
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    for (const [queue, tenant] of [
      ['refresh', 'noisy'],
      ['refresh', 'quiet'],
      ['operation', 'quiet'],
    ]) {
      const m = new RegExp(
        `^impersync_tenant_queue_wait_seconds_count\\{queue="${queue}",tenant="${tenant}"\\} (\\d+)$`,
        'm',
      ).exec(metrics);
      assert.ok(m && Number(m[1]) > 0, `no ${queue} wait counted for tenant ${tenant}`);
    }
    assert.match(metrics, /^# TYPE impersync_tenant_queue_depth gauge$/m);

    probing.abort();
    await prober;
    assert.equal(proc.child.exitCode, null, `the controller exited:\n${detail()}`);
    assert.ok(health.probes > 0);
    assert.ok(
      health.longestSilenceMs < allowedSilenceMs,
      `/healthz went ${health.longestSilenceMs} ms without answering (${health.failures} of ${health.probes} probes failed); the kubelet may restart it after ${allowedSilenceMs} ms`,
    );
    const lastLease = await leaseRenewTime();
    assert.equal(lastLease.holder, firstLease.holder, 'the same holder all along');
    assert.ok(lastLease.renewTime > firstLease.renewTime, `renewed: ${firstLease.renewTime} → ${lastLease.renewTime}`);
    assert.ok(!proc.output().includes('no longer leading'), detail());

    const limit = bytesOf(install.resources.limits.memory);
    const pid = proc.child.pid as number;
    const rss = peakRss(pid);
    t.diagnostic(
      `/healthz: ${health.failures} of ${health.probes} probes failed, at most ${health.longestSilenceMs} ms without an answer; controller peak RSS ${Math.round(rss / 2 ** 20)} MiB; Lease renewed ${firstLease.renewTime} → ${lastLease.renewTime}`,
    );
    assert.ok(rss > 0 && rss < limit, `the controller's peak RSS ${rss} bytes, the install's limit ${limit}`);
    // The child renderer stands for the install's renderer container, under that one's limit.
    for (const child of childrenOf(pid)) {
      const r = peakRss(child);
      t.diagnostic(`child renderer peak RSS ${Math.round(r / 2 ** 20)} MiB`);
      assert.ok(r < rendererLimit, `the renderer's peak RSS ${r} bytes, its limit in the install ${rendererLimit}`);
    }
  },
);
