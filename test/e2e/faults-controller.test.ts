// The controller process SIGKILLed in the middle of an operation (a real `impersync run
// --kubeconfig` child process) and started again: the operation completes exactly once, history
// has one entry, and no wave is applied twice. And SIGTERMed in the middle of one: it leaves the
// operation Running and starts no work at all on its way out.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { applyRaw, getRaw, requestOk, startControlPlane } from '../support/index.ts';
import type { AuditRecord, TestControlPlane } from '../support/index.ts';
import { TestRepo } from '../support/git.ts';
import { spawnController, until } from '../support/faults.ts';
import type { ControllerProcess } from '../support/faults.ts';
import {
  application,
  deployer,
  grantControllerRights,
  heldWaveFiles,
  IN_CLUSTER,
  operationPhase,
  project,
  setSettings,
  waitForApp,
} from './controller-fixture.ts';

let cp: TestControlPlane;
let repo: TestRepo;
let cacheDir: string;
let ctl: ControllerProcess | undefined;

before(async () => {
  cp = await startControlPlane();
  await grantControllerRights(cp);
  await setSettings(cp, { 'application.sync.impersonation.enabled': 'true' });
  await deployer(cp, 'killed', 'deployer');
  await applyRaw(
    cp.admin,
    project('faults', {
      destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'killed', defaultServiceAccount: 'deployer' }],
    }),
  );
  repo = await TestRepo.create();
  await repo.commit(heldWaveFiles());
  cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-faults-'));
});

after(async () => {
  await ctl?.kill();
  await repo?.remove();
  if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
  await cp?.stop();
});

test(
  'controller SIGKILLed mid-operation and restarted: the operation completes exactly once, one history entry',
  { timeout: 150_000 },
  async () => {
    const kubeconfig = await cp.kubeconfigFileFor('controller');
    ctl = spawnController({ kubeconfig, cacheDir });
    const first = ctl;
    await applyRaw(
      cp.admin,
      application('killed', repo.url, {
        project: 'faults',
        path: 'held',
        destination: { server: IN_CLUSTER, namespace: 'killed' },
      }),
    );
    const running = await waitForApp(
      cp,
      'killed',
      'Running, waiting for wave 0',
      (a) => operationPhase(a) === 'Running',
      60_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\ncontroller output:\n${first.output().slice(-3000)}`);
    });
    const startedAt = (running.status?.['operationState'] as { startedAt: string }).startedAt;
    await until(
      'wave 0 applied',
      async () =>
        (await getRaw(cp.admin, { apiVersion: 'v1', kind: 'Service', name: 'lb', namespace: 'killed' })) !== undefined,
    );

    await ctl.kill('SIGKILL');
    assert.equal((await first.exited).signal, 'SIGKILL');
    // While no controller runs: the wave becomes healthy (what a cloud controller would write).
    await requestOk(cp.admin, {
      method: 'PATCH',
      path: '/api/v1/namespaces/killed/services/lb/status',
      body: { status: { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } } },
      contentType: 'application/merge-patch+json',
    });
    const stillRunning = await waitForApp(cp, 'killed', 'still Running (nobody finished it)', () => true);
    assert.equal(operationPhase(stillRunning), 'Running');

    ctl = spawnController({ kubeconfig, cacheDir });
    const second = ctl;
    const done = await waitForApp(
      cp,
      'killed',
      'Succeeded and operation cleared',
      (a) => operationPhase(a) === 'Succeeded' && a['operation'] === undefined,
      60_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\ncontroller output:\n${second.output().slice(-3000)}`);
    });
    const state = done.status?.['operationState'] as {
      startedAt: string;
      syncResult: { resources: Array<{ kind: string; name: string; status: string }> };
    };
    assert.equal(state.startedAt, startedAt, 'the interrupted operation was resumed, not started anew');
    assert.deepEqual(state.syncResult.resources.map((r) => `${r.kind}/${r.name}:${r.status}`).sort(), [
      'ConfigMap/later:Synced',
      'Service/lb:Synced',
    ]);
    assert.ok(await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'later', namespace: 'killed' }));

    // Exactly once: one history entry now and after a few more reconciles, and wave 1 written once.
    await new Promise((r) => setTimeout(r, 3000));
    const after = await waitForApp(cp, 'killed', 'settled', () => true);
    assert.equal(((after.status?.['history'] ?? []) as unknown[]).length, 1, JSON.stringify(after.status?.['history']));
    const laterWrites = (await cp.readAudit()).filter(
      (r) =>
        r.namespace === 'killed' &&
        r.resource === 'configmaps' &&
        r.name === 'later' &&
        ['create', 'patch', 'update'].includes(r.verb) &&
        !r.dryRun,
    );
    assert.equal(laterWrites.length, 1, laterWrites.map((r) => `${r.verb} ${r.requestURI}`).join('\n'));
    for (const w of laterWrites) assert.equal(w.impersonatedUser, 'system:serviceaccount:killed:deployer');
  },
);

test(
  'controller SIGTERMed mid-operation: the operation is left Running and nothing new starts before the process exits',
  { timeout: 150_000 },
  async () => {
    await ctl?.kill();
    await deployer(cp, 'termed', 'deployer');
    await applyRaw(
      cp.admin,
      project('faults-term', {
        destinationServiceAccounts: [{ server: IN_CLUSTER, namespace: 'termed', defaultServiceAccount: 'deployer' }],
      }),
    );
    const kubeconfig = await cp.kubeconfigFileFor('controller');
    ctl = spawnController({ kubeconfig, cacheDir });
    const proc = ctl;
    await applyRaw(
      cp.admin,
      application('termed', repo.url, {
        project: 'faults-term',
        path: 'held',
        destination: { server: IN_CLUSTER, namespace: 'termed' },
      }),
    );
    const running = await waitForApp(
      cp,
      'termed',
      'Running, waiting for wave 0',
      (a) => operationPhase(a) === 'Running',
      60_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\ncontroller output:\n${proc.output().slice(-3000)}`);
    });
    const startedAt = (running.status?.['operationState'] as { startedAt: string }).startedAt;
    const isLbWrite = (r: AuditRecord) =>
      r.namespace === 'termed' &&
      r.resource === 'services' &&
      r.name === 'lb' &&
      ['create', 'patch', 'update'].includes(r.verb) &&
      !r.dryRun;
    await cp.waitForAudit(isLbWrite);

    proc.child.kill('SIGTERM');
    await until(
      'the controller to exit after SIGTERM',
      () => proc.child.exitCode !== null || proc.child.signalCode !== null,
      60_000,
      () => proc.output().slice(-4000),
    );
    const exit = await proc.exited;
    const output = proc.output();
    assert.deepEqual(exit, { code: 0, signal: null }, output.slice(-3000));
    const lines = output.split('\n').flatMap((l) => {
      try {
        return [JSON.parse(l) as { msg?: string; time?: number }];
      } catch {
        return [];
      }
    });
    const stopping = lines.find((l) => l.msg === 'stopping');
    assert.ok(stopping?.time, 'the controller logged that it was stopping');
    // The operation advances step by step: SIGTERM finds its step in flight (aborted, and logged as
    // left Running), or finds it between steps with no worker held, waiting for wave 0 or in Argo
    // CD's pause after it ("one or more tasks are running", its state says so); either way it is
    // left Running for the next controller (checked below).
    const waiting = await waitForApp(cp, 'termed', 'read back', () => true);
    assert.ok(
      lines.some((l) => l.msg?.includes('operation left Running')) ||
        /^(waiting for |one or more tasks are running$)/.test(
          (waiting.status?.['operationState'] as { message?: string }).message ?? '',
        ),
      output.slice(-3000),
    );
    const afterStop = lines.filter((l) => (l.time ?? 0) >= (stopping.time ?? 0));
    assert.deepEqual(
      afterStop.filter((l) => l.msg === 'sync started'),
      [],
      'no sync started once stopping',
    );

    // Everything the server answered before this marker request is in the log.
    await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'marker-after-exit', namespace: 'termed' });
    await cp.waitForAudit((r) => r.name === 'marker-after-exit');
    const audit = await cp.readAudit();
    const lbWrites = audit.filter(isLbWrite);
    assert.equal(
      lbWrites.length,
      1,
      `wave 0 applied once, not again on the way out:\n${lbWrites.map((r) => `${r.time} ${r.verb} ${r.requestURI}`).join('\n')}`,
    );
    const destinationWritesAfterStop = audit.filter(
      (r) =>
        r.namespace === 'termed' &&
        r.user === 'impersync-controller' &&
        !['get', 'list', 'watch'].includes(r.verb) &&
        !r.dryRun &&
        Date.parse(r.time ?? '') >= (stopping.time ?? 0),
    );
    assert.deepEqual(
      destinationWritesAfterStop.map((r) => `${r.verb} ${r.requestURI}`),
      [],
    );
    const left = await waitForApp(cp, 'termed', 'read back', () => true);
    assert.equal(operationPhase(left), 'Running');
    assert.equal(
      (left.status?.['operationState'] as { startedAt: string }).startedAt,
      startedAt,
      'the same operation, for the next controller to resume',
    );
    assert.equal(
      await getRaw(cp.admin, { apiVersion: 'v1', kind: 'ConfigMap', name: 'later', namespace: 'termed' }),
      undefined,
      'wave 1 not applied',
    );
  },
);
