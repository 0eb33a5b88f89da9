// spec §6: resolving spec.destination to a cluster server.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { resolveDestination } from '../../src/impersonation/destination.ts';
import type { Cluster } from '../../src/api/index.ts';

const remote: Cluster = {
  name: 'remote-cluster',
  server: 'https://remote.example:6443',
  config: {},
  secret: 'argocd/remote-cluster',
};
const dest = (destination: Record<string, string>) => ({ spec: { destination } });

describe('spec §6: destinations and clusters', () => {
  test('"https://kubernetes.default.svc (name in-cluster) is the cluster the controller runs in": no Secret needed', () => {
    const byServer = resolveDestination(dest({ server: 'https://kubernetes.default.svc' }), []);
    assert.ok(byServer.ok);
    assert.equal(byServer.cluster.name, 'in-cluster');
    const byName = resolveDestination(dest({ name: 'in-cluster' }), []);
    assert.ok(byName.ok);
    assert.equal(byName.cluster.server, 'https://kubernetes.default.svc');
  });

  test('"spec.destination.name resolves to the server of the cluster with that name"', () => {
    const r = resolveDestination(dest({ name: 'remote-cluster', namespace: 'guestbook' }), [remote]);
    assert.ok(r.ok);
    assert.equal(r.cluster.server, 'https://remote.example:6443');
  });

  test('a server given directly must be a known cluster', () => {
    assert.ok(resolveDestination(dest({ server: 'https://remote.example:6443' }), [remote]).ok);
    assert.deepEqual(resolveDestination(dest({ server: 'https://nowhere:6443' }), [remote]), {
      ok: false,
      field: 'spec.destination.server',
      error: "destination cluster server 'https://nowhere:6443' not found: no cluster Secret has that server",
    });
  });

  test('errors name the field', () => {
    assert.deepEqual(resolveDestination(dest({ name: 'x' }), [remote]), {
      ok: false,
      field: 'spec.destination.name',
      error: "destination cluster name 'x' not found: no cluster Secret has that name",
    });
    const twice = resolveDestination(dest({ name: 'dup' }), [
      { ...remote, name: 'dup' },
      { ...remote, name: 'dup', server: 'https://b' },
    ]);
    assert.ok(!twice.ok);
    assert.match(twice.error, /destination cluster name 'dup' is ambiguous: 2 clusters have it/);
    const both = resolveDestination(dest({ name: 'remote-cluster', server: 'https://remote.example:6443' }), [remote]);
    assert.ok(!both.ok);
    assert.equal(both.field, 'spec.destination');
    assert.equal(
      both.error,
      "application destination can't have both name and server defined: remote-cluster https://remote.example:6443",
    );
    assert.deepEqual(resolveDestination({ spec: {} }, []), {
      ok: false,
      field: 'spec.destination',
      error: 'application destination has neither server nor name',
    });
  });

  test('a cluster Secret for the in-cluster server replaces the built-in one', () => {
    const local: Cluster = {
      name: 'local',
      server: 'https://kubernetes.default.svc',
      config: {},
      secret: 'argocd/local',
    };
    const r = resolveDestination(dest({ name: 'local' }), [local]);
    assert.ok(r.ok);
    assert.equal(resolveDestination(dest({ name: 'in-cluster' }), [local]).ok, false);
  });

  describe('argocd-cm cluster.inClusterEnabled: "false" (Argo CD util/db/cluster.go)', () => {
    const off = { inClusterEnabled: false };
    const local: Cluster = {
      name: 'local',
      server: 'https://kubernetes.default.svc',
      config: {},
      secret: 'argocd/local',
    };

    test('by server: GetCluster\'s "is disabled", as GetDestinationCluster wraps it, with or without a trailing slash', () => {
      for (const server of ['https://kubernetes.default.svc', 'https://kubernetes.default.svc/'])
        assert.deepEqual(resolveDestination(dest({ server }), [], off), {
          ok: false,
          field: 'spec.destination.server',
          error: `error getting cluster by server "${server}": rpc error: code = NotFound desc = cluster "https://kubernetes.default.svc" is disabled`,
        });
    });

    test('a cluster Secret for the in-cluster server is disabled too', () => {
      assert.equal(resolveDestination(dest({ server: local.server }), [local], off).ok, false);
      assert.deepEqual(resolveDestination(dest({ name: 'local' }), [local], off), {
        ok: false,
        field: 'spec.destination.name',
        error: 'there are no clusters with this name: local',
      });
    });

    test('by name: GetClusterServersByName drops it: "there are no clusters with this name: in-cluster"', () => {
      assert.deepEqual(resolveDestination(dest({ name: 'in-cluster' }), [], off), {
        ok: false,
        field: 'spec.destination.name',
        error: 'there are no clusters with this name: in-cluster',
      });
    });

    test('other clusters are unaffected, and any other value leaves it on', () => {
      assert.ok(resolveDestination(dest({ name: 'remote-cluster' }), [remote], off).ok);
      assert.ok(resolveDestination(dest({ server: remote.server }), [remote, local], off).ok);
      assert.ok(resolveDestination(dest({ name: 'in-cluster' }), [], { inClusterEnabled: true }).ok);
    });
  });
});
