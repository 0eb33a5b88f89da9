// The zod schemas of src/api: Argo CD's YAML is accepted unchanged (unknown fields kept), and a bad
// document is reported with its kind, name and field path.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import {
  DocumentError,
  IN_CLUSTER,
  applicationKey,
  isClusterSecret,
  parseAppProject,
  parseApplication,
  parseClusterSecret,
  parseConfigMap,
  projectName,
  readStatus,
} from '../../src/api/index.ts';

const catchError = (fn: () => unknown): DocumentError => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof DocumentError, String(err));
    return err;
  }
  assert.fail('expected a DocumentError');
};

describe('Application', () => {
  const yaml = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: argocd
  finalizers: [resources-finalizer.argocd.argoproj.io]
spec:
  project: my-project
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps.git
    targetRevision: HEAD
    path: guestbook
    plugin: {name: something-impersync-ignores}
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
  revisionHistoryLimit: 3
  ignoreDifferences: [{group: apps, kind: Deployment, jsonPointers: [/spec/replicas]}]
status:
  sync: {status: Synced}
`;
  test("accepts Argo CD's YAML unchanged and keeps fields impersync does not use", () => {
    const app = parseApplication(parse(yaml, { version: '1.1' }));
    assert.equal(app.spec.destination?.namespace, 'guestbook');
    assert.equal((app.spec as Record<string, unknown>).revisionHistoryLimit, 3);
    assert.deepEqual((app.spec.source as Record<string, unknown>).plugin, { name: 'something-impersync-ignores' });
    assert.equal(applicationKey(app), 'argocd/guestbook');
    assert.equal(projectName(app), 'my-project');
  });

  test('an empty project is "default", as in Argo CD', () => {
    const app = parseApplication({ metadata: { name: 'a' }, spec: { project: '' } });
    assert.equal(projectName(app), 'default');
    assert.equal(projectName(parseApplication({ metadata: { name: 'a' }, spec: {} })), 'default');
  });

  test('a bad document names kind, object and field path', () => {
    const e = catchError(() =>
      parseApplication({
        kind: 'Application',
        metadata: { name: 'guestbook', namespace: 'argocd' },
        spec: { destination: { namespace: 5 } },
      }),
    );
    assert.equal(e.kind, 'Application');
    assert.equal(e.objectName, 'argocd/guestbook');
    assert.equal(e.path, 'spec.destination.namespace');
    assert.equal(e.message, 'Application argocd/guestbook: spec.destination.namespace: expected string, got number');
    const noName = catchError(() => parseApplication({ metadata: {}, spec: {} }));
    assert.equal(noName.path, 'metadata.name');
    assert.match(noName.message, /required field is missing/);
    const noSpec = catchError(() => parseApplication({ metadata: { name: 'x' } }));
    assert.equal(noSpec.path, 'spec');
  });
});

describe('Application status', () => {
  // The shape Argo CD's application controller writes (fields impersync does not write included).
  const argoStatus = `
sync:
  status: Synced
  revision: 5c5ef0a
  comparedTo:
    source: {repoURL: https://github.com/argoproj/argocd-example-apps.git, path: guestbook, targetRevision: HEAD}
    destination: {server: https://kubernetes.default.svc, namespace: guestbook}
health: {status: Healthy}
resources:
  - {version: v1, kind: Service, namespace: guestbook, name: guestbook-ui, status: Synced, health: {status: Healthy}}
  - {group: apps, version: v1, kind: Deployment, namespace: guestbook, name: guestbook-ui, status: Synced}
summary: {images: [gcr.io/heptio-images/ks-guestbook-demo:0.2]}
reconciledAt: "2024-05-01T10:00:00Z"
sourceType: Directory
controllerNamespace: argocd
operationState:
  operation:
    sync: {revision: 5c5ef0a, syncStrategy: {hook: {}}}
    initiatedBy: {username: admin}
    retry: {}
  phase: Succeeded
  message: successfully synced (all tasks run)
  startedAt: "2024-05-01T09:59:50Z"
  finishedAt: "2024-05-01T09:59:55Z"
  syncResult:
    revision: 5c5ef0a
    source: {repoURL: https://github.com/argoproj/argocd-example-apps.git, path: guestbook}
    resources:
      - {group: "", version: v1, kind: Service, namespace: guestbook, name: guestbook-ui, status: Synced,
         message: service/guestbook-ui created, hookPhase: Running, syncPhase: Sync}
history:
  - {id: 0, revision: 5c5ef0a, deployedAt: "2024-05-01T09:59:55Z", deployStartedAt: "2024-05-01T09:59:50Z",
     source: {repoURL: https://github.com/argoproj/argocd-example-apps.git, path: guestbook}, initiatedBy: {username: admin}}
`;
  const app = (status: unknown) => ({ metadata: { name: 'guestbook', namespace: 'argocd' }, spec: {}, status });

  test('a status as Argo CD writes it is read with its types; fields impersync does not write are kept', () => {
    const status = parseApplication(app(parse(argoStatus, { version: '1.1' }))).status;
    assert.equal(status?.sync?.status, 'Synced');
    assert.equal(status?.resources?.[1]?.group, 'apps');
    assert.equal(status?.operationState?.phase, 'Succeeded');
    assert.equal(status?.operationState?.syncResult?.resources?.[0]?.hookPhase, 'Running');
    assert.equal(status?.history?.[0]?.id, 0);
    assert.equal((status as Record<string, unknown>).controllerNamespace, 'argocd');
    assert.deepEqual(readStatus(app(parse(argoStatus, { version: '1.1' }))), status);
  });

  test('a status that does not fit names its field; readStatus gives none', () => {
    const bad = app({ operationState: { phase: 'Paused', startedAt: 'x', operation: {} } });
    const e = catchError(() => parseApplication(bad));
    assert.equal(e.path, 'status.operationState.phase');
    assert.equal(readStatus(bad), undefined);
    assert.equal(readStatus({ metadata: { name: 'x' } }), undefined);
  });
});

describe('AppProject', () => {
  test("accepts the design document's project and keeps unknown fields", () => {
    const p = parseAppProject(
      parse(
        `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: my-project, namespace: argocd, finalizers: [resources-finalizer.argocd.argoproj.io]}
spec:
  description: Example Project
  sourceRepos: ['*']
  destinations: [{namespace: '*', server: https://kubernetes.default.svc}]
  destinationServiceAccounts:
    - {server: https://kubernetes.default.svc, namespace: guestbook, defaultServiceAccount: guestbook-deployer}
    - {server: '*', defaultServiceAccount: default}
  signatureKeys: [{keyID: ABC}]
  orphanedResources: {warn: true}
`,
        { version: '1.1' },
      ),
    );
    assert.equal(p.spec.destinationServiceAccounts?.length, 2);
    assert.equal(p.spec.destinationServiceAccounts?.[1]?.namespace, undefined, 'namespace is optional');
    assert.deepEqual((p.spec as Record<string, unknown>).orphanedResources, { warn: true });
  });

  test('a project without spec gets an empty one', () => {
    assert.deepEqual(parseAppProject({ metadata: { name: 'p' } }).spec, {});
  });

  test('server and defaultServiceAccount are required, and errors name the entry', () => {
    const e = catchError(() =>
      parseAppProject({
        metadata: { name: 'p', namespace: 'argocd' },
        spec: { destinationServiceAccounts: [{ server: '*', defaultServiceAccount: 'a' }, { server: '*' }] },
      }),
    );
    assert.equal(
      e.message,
      'AppProject argocd/p: spec.destinationServiceAccounts[1].defaultServiceAccount: required field is missing (expected string)',
    );
  });
});

describe('argocd-cm', () => {
  test('data must be strings: an unquoted true is named', () => {
    assert.equal(
      parseConfigMap({ metadata: { name: 'argocd-cm' }, data: { 'application.sync.impersonation.enabled': 'true' } })
        .data?.['application.sync.impersonation.enabled'],
      'true',
    );
    const e = catchError(() =>
      parseConfigMap(
        parse('metadata: {name: argocd-cm}\ndata:\n  application.sync.impersonation.enabled: true\n', {
          version: '1.1',
        }),
      ),
    );
    assert.equal(e.path, 'data.application.sync.impersonation.enabled');
    assert.match(e.message, /expected string, got boolean/);
  });
});

describe('cluster Secrets', () => {
  const secret = (extra: Record<string, unknown>) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'remote', namespace: 'argocd', labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
    ...extra,
  });
  const b64 = (s: string) => Buffer.from(s).toString('base64');

  test('are recognised by their label', () => {
    assert.equal(isClusterSecret(secret({})), true);
    assert.equal(isClusterSecret({ kind: 'Secret', metadata: { name: 'x' } }), false);
    assert.equal(isClusterSecret(null), false);
    assert.equal(
      isClusterSecret({ kind: 'ConfigMap', metadata: { labels: { 'argocd.argoproj.io/secret-type': 'cluster' } } }),
      false,
    );
  });

  test('data is base64, stringData wins, config is JSON', () => {
    const c = parseClusterSecret(
      secret({
        data: { name: b64('remote-cluster'), server: b64('https://old') },
        stringData: {
          server: 'https://remote:6443',
          config: '{"bearerToken":"t","tlsClientConfig":{"insecure":true}}',
        },
      }),
    );
    assert.deepEqual(c, {
      name: 'remote-cluster',
      server: 'https://remote:6443',
      config: { bearerToken: 't', tlsClientConfig: { insecure: true } },
      secret: 'argocd/remote',
      keys: ['name', 'server', 'config'],
    });
  });

  test('errors name the field', () => {
    assert.equal(
      catchError(() => parseClusterSecret(secret({ stringData: { name: 'x' } }))).message,
      'Secret argocd/remote: data.server: a cluster Secret needs the server URL',
    );
    assert.match(
      catchError(() => parseClusterSecret(secret({ stringData: { server: 'https://x', config: '{' } }))).message,
      /^Secret argocd\/remote: stringData\.config: not valid JSON/,
    );
    assert.match(
      catchError(() =>
        parseClusterSecret(
          secret({ stringData: { server: 'https://x', config: '{"tlsClientConfig":{"insecure":"yes"}}' } }),
        ),
      ).message,
      /stringData\.config\.tlsClientConfig\.insecure/,
    );
  });

  test('a config that is not JSON is refused without quoting it: it holds the credentials', () => {
    for (const config of [
      '{"bearerToken": s3cr3t-token}',
      '{"bearerToken": "s3cr3t-token"',
      '{"password": "s3cr3t-token\u0001"}',
    ]) {
      const message = catchError(() =>
        parseClusterSecret(secret({ stringData: { server: 'https://x', config } })),
      ).message;
      assert.match(message, /^Secret argocd\/remote: stringData\.config: not valid JSON( \(at position \d+.*\))?$/);
      assert.ok(!message.includes('s3cr3t'), message);
    }
  });

  test('the in-cluster destination is built in', () => {
    assert.deepEqual([IN_CLUSTER.name, IN_CLUSTER.server], ['in-cluster', 'https://kubernetes.default.svc']);
  });
});
