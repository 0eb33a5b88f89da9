// Argo CD's own cases for deriving the ServiceAccount to impersonate (v3.6.1, controller/sync_test.go:
// TestDeriveServiceAccountMatchingNamespaces and TestDeriveServiceAccountMatchingServers), written
// out here as inputs and Argo CD's answers, each run through `impersync explain` on files and
// through the controller's admission gate (the one function the controller asks). Argo CD returns
// "" without an error when nothing matches, and its controller then refuses the sync because
// enforcement is on by default: that is impersync's `deny`.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { run } from '../../src/cli/explain.ts';
import { admit } from '../../src/controller/admission.ts';
import { explain, inventoryState } from '../../src/cli/explain-core.ts';
import { loadInput } from '../../src/cli/load.ts';
import { runCommand, writeFiles } from './helpers.ts';
import { captureIO } from '../support/cli.ts';

const LOCAL = 'https://kubernetes.svc.local';
type Entry = { server: string; namespace?: string; defaultServiceAccount: string };
type Expect = { sa: string } | { none: true } | { error: string };
interface Case {
  name: string;
  entries: Entry[];
  destination: { server?: string; name?: string; namespace: string };
  expect: Expect;
}

const e = (server: string, namespace: string | undefined, defaultServiceAccount: string): Entry =>
  namespace === undefined ? { server, defaultServiceAccount } : { server, namespace, defaultServiceAccount };

/** Two cases both of Argo CD's tables hold, word for word. */
const GLOB_FIRST: Case = {
  name: 'first match to be used when glob pattern is used',
  entries: [e(LOCAL, 'test*', 'test-sa'), e(LOCAL, 'testns', 'test-sa-2'), e(LOCAL, 'default', 'default-sa')],
  destination: { server: LOCAL, namespace: 'testns' },
  expect: { sa: 'system:serviceaccount:testns:test-sa' },
};
const BY_NAME: Case = {
  name: 'app destination name instead of server URL',
  entries: [e(LOCAL, '*', 'test-sa')],
  destination: { name: 'test-cluster', namespace: 'testns' },
  expect: { sa: 'system:serviceaccount:testns:test-sa' },
};

/** TestDeriveServiceAccountMatchingNamespaces: the cluster is https://kubernetes.svc.local ("test-cluster"). */
const namespaces: Case[] = [
  {
    name: 'empty destination service accounts',
    entries: [],
    destination: { server: LOCAL, namespace: 'testns' },
    expect: { none: true },
  },
  {
    name: 'exact match of destination namespace',
    entries: [e(LOCAL, 'testns', 'test-sa')],
    destination: { server: LOCAL, namespace: 'testns' },
    expect: { sa: 'system:serviceaccount:testns:test-sa' },
  },
  {
    name: 'exact one match with multiple destination service accounts',
    entries: [
      e(LOCAL, 'guestbook', 'guestbook-sa'),
      e(LOCAL, 'guestbook-test', 'guestbook-test-sa'),
      e(LOCAL, 'default', 'default-sa'),
      e(LOCAL, 'testns', 'test-sa'),
    ],
    destination: { server: LOCAL, namespace: 'testns' },
    expect: { sa: 'system:serviceaccount:testns:test-sa' },
  },
  {
    name: 'first match to be used when multiple matches are available',
    entries: [
      e(LOCAL, 'testns', 'test-sa'),
      e(LOCAL, 'testns', 'test-sa-2'),
      e(LOCAL, 'testns', 'test-sa-3'),
      e(LOCAL, 'guestbook', 'guestbook-sa'),
    ],
    destination: { server: LOCAL, namespace: 'testns' },
    expect: { sa: 'system:serviceaccount:testns:test-sa' },
  },
  GLOB_FIRST,
  {
    name: 'no match among a valid list',
    entries: [e(LOCAL, 'test1', 'test-sa'), e(LOCAL, 'test2', 'test-sa-2'), e(LOCAL, 'default', 'default-sa')],
    destination: { server: LOCAL, namespace: 'testns' },
    expect: { none: true },
  },
  {
    name: 'app destination namespace is empty',
    entries: [e(LOCAL, undefined, 'test-sa'), e(LOCAL, '*', 'test-sa-2')],
    destination: { server: LOCAL, namespace: '' },
    expect: { sa: 'system:serviceaccount:argocd-ns:test-sa' },
  },
  {
    name: 'match done via catch all glob pattern',
    entries: [e(LOCAL, 'testns1', 'test-sa-2'), e(LOCAL, 'default', 'default-sa'), e(LOCAL, '*', 'test-sa')],
    destination: { server: LOCAL, namespace: 'testns' },
    expect: { sa: 'system:serviceaccount:testns:test-sa' },
  },
  {
    name: 'match done via invalid glob pattern',
    entries: [e(LOCAL, 'e[[a*', 'test-sa')],
    destination: { server: LOCAL, namespace: 'testns' },
    expect: { error: 'invalid glob pattern for destination namespace' },
  },
  {
    name: 'sa specified with a namespace',
    entries: [e(LOCAL, 'testns', 'myns:test-sa'), e(LOCAL, 'default', 'default-sa'), e(LOCAL, '*', 'test-sa')],
    destination: { server: LOCAL, namespace: 'testns' },
    expect: { sa: 'system:serviceaccount:myns:test-sa' },
  },
  BY_NAME,
];

/** TestDeriveServiceAccountMatchingServers: the server matched is the destination's. */
const servers: Case[] = [
  {
    name: 'exact one match with multiple destination service accounts',
    entries: [
      e(LOCAL, 'guestbook', 'guestbook-sa'),
      e('https://abc.svc.local', 'guestbook', 'guestbook-test-sa'),
      e('https://cde.svc.local', 'guestbook', 'default-sa'),
      e(LOCAL, 'testns', 'test-sa'),
    ],
    destination: { server: LOCAL, namespace: 'testns' },
    expect: { sa: 'system:serviceaccount:testns:test-sa' },
  },
  {
    name: 'first match to be used when multiple matches are available',
    entries: [
      e(LOCAL, 'testns', 'test-sa'),
      e(LOCAL, 'testns', 'test-sa-2'),
      e(LOCAL, 'default', 'default-sa'),
      e(LOCAL, 'guestbook', 'guestbook-sa'),
    ],
    destination: { server: LOCAL, namespace: 'testns' },
    expect: { sa: 'system:serviceaccount:testns:test-sa' },
  },
  GLOB_FIRST,
  {
    name: 'no match among a valid list',
    entries: [
      e(LOCAL, 'testns', 'test-sa'),
      e('https://abc.svc.local', 'testns', 'test-sa-2'),
      e('https://cde.svc.local', 'default', 'default-sa'),
    ],
    destination: { server: 'https://xyz.svc.local', namespace: 'testns' },
    expect: { none: true },
  },
  {
    name: 'match done via catch all glob pattern',
    entries: [e(LOCAL, 'testns1', 'test-sa-2'), e(LOCAL, 'default', 'default-sa'), e('*', '*', 'test-sa')],
    destination: { server: 'https://localhost:6443', namespace: 'testns' },
    expect: { sa: 'system:serviceaccount:testns:test-sa' },
  },
  {
    name: 'match done via invalid glob pattern',
    entries: [e('e[[a*', 'test-ns', 'test-sa')],
    destination: { server: LOCAL, namespace: 'testns' },
    expect: { error: 'invalid glob pattern for destination server' },
  },
  {
    name: 'sa specified with a namespace',
    entries: [
      e('https://abc.svc.local', 'testns', 'myns:test-sa'),
      e(LOCAL, 'default', 'default-sa'),
      e('*', '*', 'test-sa'),
    ],
    destination: { server: 'https://abc.svc.local', namespace: 'testns' },
    expect: { sa: 'system:serviceaccount:myns:test-sa' },
  },
  BY_NAME,
];

const NS = 'argocd-ns';
const cluster = (name: string, server: string) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: NS, labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
  stringData: { name, server, config: '{"bearerToken":"t"}' },
});

/** The case's objects, as a file `impersync explain -n argocd-ns` reads (JSON is YAML). */
function documents(c: Case): string {
  const docs = [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'argocd-cm', namespace: NS },
      data: { 'application.sync.impersonation.enabled': 'true' },
    },
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AppProject',
      metadata: { name: 'testProj', namespace: NS },
      spec: {
        sourceRepos: ['*'],
        destinations: [{ server: '*', namespace: '*' }],
        destinationServiceAccounts: c.entries,
      },
    },
    {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'testApp', namespace: NS },
      spec: {
        project: 'testProj',
        source: { repoURL: 'https://example.com/repo.git', path: '.' },
        destination: c.destination,
      },
    },
    cluster('test-cluster', LOCAL),
    cluster('xyz', 'https://xyz.svc.local'),
    cluster('abc', 'https://abc.svc.local'),
    cluster('localhost', 'https://localhost:6443'),
  ];
  return docs.map((d) => JSON.stringify(d)).join('\n---\n');
}

const deriveError = (part: string) => new RegExp(`^failed to derive service account to impersonate: ${part}`);

for (const [table, cases] of [
  ['TestDeriveServiceAccountMatchingNamespaces', namespaces],
  ['TestDeriveServiceAccountMatchingServers', servers],
] as const) {
  describe(`Argo CD's ${table}`, () => {
    for (const c of cases) {
      test(`${c.name}: impersync explain and the controller give Argo CD's answer`, async () => {
        const file = Object.values(writeFiles({ 'case.yaml': documents(c) }))[0] as string;
        const r = await runCommand(run, ['-f', file, '-n', NS, '-o', 'json']);
        assert.equal(r.code, 0, r.stderr + r.stdout);
        const out = JSON.parse(r.stdout) as { decision: string; serviceAccount: string | null; message: string };
        const io = captureIO();
        const loaded = await loadInput({ files: [file], namespace: NS }, io.io);
        assert.ok(loaded.ok);
        const app = loaded.value.inventory.applications[0]?.value;
        const gate = admit(inventoryState(loaded.value.inventory, NS), app);
        assert.ok(explain(loaded.value.inventory, { namespace: NS, source: 'case.yaml' }).ok);
        if ('sa' in c.expect) {
          assert.deepEqual([out.decision, out.serviceAccount], ['impersonate', c.expect.sa]);
          assert.ok(gate.admitted && 'impersonate' in gate.actsAs, JSON.stringify(gate));
          assert.equal(gate.actsAs.impersonate, c.expect.sa);
        } else if ('none' in c.expect) {
          const server = c.destination.server ?? LOCAL;
          const message = `no matching service account found for destination server ${server} and namespace ${c.destination.namespace}`;
          assert.deepEqual([out.decision, out.serviceAccount, out.message], ['deny', null, message]);
          assert.ok(!gate.admitted && gate.by === 'identity');
          assert.equal(gate.condition.message, message);
        } else {
          assert.equal(out.decision, 'error');
          assert.match(out.message, deriveError(c.expect.error));
          assert.ok(!gate.admitted && gate.by === 'identity');
          assert.match(gate.condition.message, deriveError(c.expect.error));
        }
      });
    }
  });
}
