// The controller's watches of its control cluster and the event recorder, over its control-cluster
// connection (kube/control.ts), against a real kube-apiserver.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startControlPlane, createNamespace, requestOk } from '../support/index.ts';
import type { TestControlPlane } from '../support/index.ts';
import { until } from '../support/faults.ts';
import { connectControlCluster } from '../../src/kube/control.ts';
import type { ControlClient } from '../../src/kube/control.ts';
import { Watch } from '../../src/kube/watch.ts';
import type { WatchEvent } from '../../src/kube/watch.ts';
import { EventRecorder } from '../../src/controller/events.ts';

let cp: TestControlPlane;
let control: ControlClient;

before(async () => {
  cp = await startControlPlane();
  control = await connectControlCluster(cp.admin);
  await createNamespace(cp.admin, 'argocd');
});

after(async () => {
  await control?.close();
  await cp?.stop();
});

function configMap(name: string, data: Record<string, string>) {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'argocd' }, data };
}

test('a field-selected watch sees only argocd-cm: add, modify, delete, and a resync', async () => {
  await requestOk(cp.admin, {
    method: 'POST',
    path: '/api/v1/namespaces/argocd/configmaps',
    body: configMap('other', { a: '1' }),
  });
  await requestOk(cp.admin, {
    method: 'POST',
    path: '/api/v1/namespaces/argocd/configmaps',
    body: configMap('argocd-cm', { a: '1' }),
  });
  const w = new Watch(control.watchTransport(), {
    path: '/api/v1/namespaces/argocd/configmaps',
    kind: 'ConfigMap',
    apiVersion: 'v1',
    fieldSelector: 'metadata.name=argocd-cm',
    resyncMs: 300,
  });
  const events: WatchEvent[] = [];
  w.on((e) => events.push(e));
  w.start();
  try {
    await w.synced;
    assert.deepEqual([...w.store.keys()], ['argocd/argocd-cm']);
    await requestOk(cp.admin, {
      method: 'PATCH',
      path: '/api/v1/namespaces/argocd/configmaps/argocd-cm',
      body: { data: { a: '2' } },
      contentType: 'application/merge-patch+json',
    });
    await requestOk(cp.admin, {
      method: 'PATCH',
      path: '/api/v1/namespaces/argocd/configmaps/other',
      body: { data: { a: '2' } },
      contentType: 'application/merge-patch+json',
    });
    await until('MODIFIED', () => events.some((e) => e.type === 'MODIFIED'));
    const mod = events.find((e) => e.type === 'MODIFIED');
    assert.equal((mod?.object['data'] as Record<string, string>)['a'], '2');
    assert.equal((mod?.old?.['data'] as Record<string, string>)['a'], '1');
    await until('RESYNC', () => events.some((e) => e.type === 'RESYNC'));
    await requestOk(cp.admin, { method: 'DELETE', path: '/api/v1/namespaces/argocd/configmaps/argocd-cm' });
    await until('DELETED', () => events.some((e) => e.type === 'DELETED'));
    assert.equal(w.store.size, 0);
    assert.ok(
      events.every((e) => e.object.metadata.name === 'argocd-cm'),
      'no event for the other ConfigMap',
    );
  } finally {
    await w.stop();
  }
});

test('a label-selected watch on cluster Secrets survives silence (liveness restart) without losing events', async () => {
  const secret = (name: string, labels: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'argocd', labels },
    stringData: { name, server: `https://${name}.example` },
  });
  await requestOk(cp.admin, {
    method: 'POST',
    path: '/api/v1/namespaces/argocd/secrets',
    body: secret('c1', { 'argocd.argoproj.io/secret-type': 'cluster' }),
  });
  await requestOk(cp.admin, { method: 'POST', path: '/api/v1/namespaces/argocd/secrets', body: secret('plain', {}) });
  const errors: string[] = [];
  const w = new Watch(control.watchTransport(), {
    path: '/api/v1/namespaces/argocd/secrets',
    kind: 'Secret',
    apiVersion: 'v1',
    labelSelector: 'argocd.argoproj.io/secret-type=cluster',
    livenessMs: 1000,
    backoffInitialMs: 10,
    backoffMaxMs: 50,
    onError: (e) => errors.push(e.message),
  });
  w.start();
  try {
    await w.synced;
    assert.deepEqual([...w.store.keys()], ['argocd/c1']);
    // Silence: no event for longer than the liveness limit restarts the watch.
    await until('a liveness restart', () => w.restarts >= 1, 10_000);
    assert.match(errors[0] ?? '', /no event for 1000 ms/);
    await requestOk(cp.admin, {
      method: 'POST',
      path: '/api/v1/namespaces/argocd/secrets',
      body: secret('c2', { 'argocd.argoproj.io/secret-type': 'cluster' }),
    });
    await until('c2 in the cache', () => w.store.has('argocd/c2'));
    assert.deepEqual([...w.store.keys()].sort(), ['argocd/c1', 'argocd/c2']);
    assert.ok(
      errors.every((e) => /no event for/.test(e)),
      errors.join('\n'),
    );
  } finally {
    await w.stop();
  }
});

test('a repeated event is aggregated into one Event with a count', async () => {
  const rec = new EventRecorder(control);
  const errors: Error[] = [];
  rec.onError = (e) => errors.push(e);
  const obj = {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    name: 'guestbook',
    namespace: 'argocd',
    uid: 'u-1',
  };
  await rec.record(obj, 'Warning', 'OperationCompleted', 'no matching service account');
  await rec.record(obj, 'Warning', 'OperationCompleted', 'no matching service account');
  await rec.record(obj, 'Normal', 'OperationStarted', 'started');
  assert.deepEqual(errors, []);
  const list = (await requestOk(cp.admin, {
    method: 'GET',
    path: '/api/v1/namespaces/argocd/events?fieldSelector=involvedObject.name%3Dguestbook',
  })) as { items: Array<{ reason: string; count: number; type: string }> };
  const byReason = Object.fromEntries(list.items.map((e) => [e.reason, e]));
  assert.equal(list.items.length, 2);
  assert.equal(byReason['OperationCompleted']?.count, 2);
  assert.equal(byReason['OperationCompleted']?.type, 'Warning');
  assert.equal(byReason['OperationStarted']?.count, 1);
});
