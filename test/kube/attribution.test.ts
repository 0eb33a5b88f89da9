// The Impersonate-Extra attribution (src/kube/attribution.ts, the attributed views of
// src/kube/client.ts) over a local HTTP server that answers as kube-apiserver's impersonation
// filter does: which headers go out, how keys and values are encoded, and what happens when the
// server refuses the extras (sent again without them, said once; or, when required, the refusal
// stands). The real server's audit log is checked in test/e2e/attribution.test.ts.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, test } from 'node:test';
import type { Cluster } from '../../src/api/index.ts';
import { EXTRA_APPLICATION, EXTRA_KEYS, EXTRA_PROJECT, EXTRA_REVISION } from '../../src/api/index.ts';
import {
  escapeExtraKey,
  escapeExtraValue,
  ExtrasGrant,
  EXTRAS_RETRY_MS,
  extraHeaders,
  isExtrasRefusal,
} from '../../src/kube/attribution.ts';
import { DryRunMemo } from '../../src/kube/dry-run-memo.ts';
import { DestinationClientFactory } from '../../src/kube/factory.ts';
import type { KubeError } from '../../src/kube/types.ts';

const SA = 'system:serviceaccount:team:deployer';
const FOR = { application: 'argocd/guestbook', project: 'tenants', revision: '0123abcd' };

const refusal = (key: string): string =>
  JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    reason: 'Forbidden',
    code: 403,
    message: `userextras.authentication.k8s.io "argocd/guestbook" is forbidden: User "impersync-controller" cannot impersonate resource "userextras/${key}" in API group "authentication.k8s.io" at the cluster scope`,
    details: { name: 'argocd/guestbook', group: 'authentication.k8s.io', kind: 'userextras' },
  });

let server: Server;
let url: string;
let seen: IncomingHttpHeaders[] = [];
/** Whether the server lets the credential impersonate user extras. */
let extrasAllowed = true;

before(async () => {
  server = createServer((req, res) => {
    seen.push(req.headers);
    const extras = Object.keys(req.headers).filter((h) => h.startsWith('impersonate-extra-'));
    res.setHeader('content-type', 'application/json');
    if (extras.length > 0 && !extrasAllowed) {
      res.statusCode = 403;
      res.end(refusal(EXTRA_APPLICATION));
      return;
    }
    res.end(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'x', namespace: 'team' } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  seen = [];
  extrasAllowed = true;
});

function cluster(): Cluster {
  return { name: 'local', server: url, config: {} } as unknown as Cluster;
}

function factory(onRefused?: (server: string, e: KubeError) => void): DestinationClientFactory {
  return new DestinationClientFactory({ server: url }, onRefused ? { onExtrasRefused: onRefused } : {});
}

const GET = { method: 'GET' as const, path: '/api/v1/namespaces/team/configmaps/x' };

test('a client made for an Application sends Impersonate-User and one Impersonate-Extra per key, the key percent-encoded', async () => {
  const f = factory();
  try {
    const res = await f.forIdentity(cluster(), { impersonate: SA }, FOR).request(GET);
    assert.ok(res.ok);
    const h = seen[0] ?? {};
    assert.equal(h['impersonate-user'], SA);
    assert.equal(h['impersonate-extra-impersync.io%2fapplication'], 'argocd/guestbook');
    assert.equal(h['impersonate-extra-impersync.io%2fproject'], 'tenants');
    assert.equal(h['impersonate-extra-impersync.io%2frevision'], '0123abcd');
    assert.equal(Object.keys(h).filter((k) => k.startsWith('impersonate-')).length, 4, 'no groups, no uid');
  } finally {
    await f.close();
  }
});

test('without an Application, and as the controller itself, no extras are sent (extras need an impersonated user)', async () => {
  const f = factory();
  try {
    await f.forIdentity(cluster(), { impersonate: SA }).request(GET);
    await f.forIdentity(cluster(), { controller: true }, FOR).request(GET);
    assert.equal(seen.length, 2);
    for (const h of seen)
      assert.deepEqual(
        Object.keys(h).filter((k) => k.startsWith('impersonate-extra-')),
        [],
      );
    assert.equal(seen[1]?.['impersonate-user'], undefined);
  } finally {
    await f.close();
  }
});

test('an unknown revision leaves out only the revision', () => {
  const h = extraHeaders({ application: 'a/b', project: 'p' });
  assert.deepEqual(Object.keys(h), [
    'impersonate-extra-impersync.io%2Fapplication',
    'impersonate-extra-impersync.io%2Fproject',
  ]);
});

test('the views of one identity share its client: uncached() of a view still names the Application', async () => {
  const f = factory();
  try {
    const view = f.forIdentity(cluster(), { impersonate: SA }, FOR);
    await view.uncached().request(GET);
    await view.uncached().uncached().get({ apiVersion: 'v1', kind: 'Namespace', name: 'team' });
    assert.ok(seen.length >= 2);
    for (const h of seen) assert.equal(h['impersonate-extra-impersync.io%2fapplication'], 'argocd/guestbook');
  } finally {
    await f.close();
  }
});

test('refused extras: the request is sent again without them, later requests go without them, and it is said once', async () => {
  extrasAllowed = false;
  const told: string[] = [];
  const f = factory((server, e) => told.push(`${server}: ${e.message}`));
  try {
    const a = f.forIdentity(cluster(), { impersonate: SA }, FOR);
    const first = await a.request(GET);
    assert.ok(first.ok, 'answered by the resend');
    assert.equal(seen.length, 2);
    assert.ok(seen[0]?.['impersonate-extra-impersync.io%2fapplication']);
    assert.equal(seen[1]?.['impersonate-extra-impersync.io%2fapplication'], undefined);
    assert.equal(seen[1]?.['impersonate-user'], SA, 'still as the ServiceAccount');
    const other = f.forIdentity(
      cluster(),
      { impersonate: 'system:serviceaccount:b:deployer' },
      { ...FOR, application: 'argocd/b' },
    );
    assert.ok((await other.request(GET)).ok);
    assert.ok((await a.request(GET)).ok);
    assert.equal(seen.length, 4, 'one request each: extras are no longer offered on this credential');
    assert.equal(told.length, 1);
    assert.match(told[0] ?? '', /cannot impersonate resource "userextras\/impersync.io\/application"/);
  } finally {
    await f.close();
  }
});

test('required extras: the refusal stands, is not sent again without them, and says how to grant them', async () => {
  extrasAllowed = false;
  const f = factory();
  try {
    const res = await f.forIdentity(cluster(), { impersonate: SA }, { ...FOR, requireExtras: true }).request(GET);
    assert.ok(!res.ok);
    assert.equal(res.error.code, 403);
    assert.match(res.error.message, /cannot impersonate resource "userextras\/impersync.io\/application"/);
    assert.match(res.error.message, /impersync\.impersonation\.requireExtras: "true"/);
    assert.equal(seen.length, 1);
    // Still required on the next request, though the credential is known to be refused.
    const again = await f.forIdentity(cluster(), { impersonate: SA }, { ...FOR, requireExtras: true }).request(GET);
    assert.ok(!again.ok);
    assert.equal(seen.length, 2);
  } finally {
    await f.close();
  }
});

test("a 403 that is not the extras' refusal is the answer: nothing is sent again", async () => {
  const forbidden: KubeError = { code: 403, reason: 'Forbidden', message: 'configmaps "x" is forbidden' };
  assert.equal(isExtrasRefusal(forbidden), false);
  assert.equal(
    isExtrasRefusal({ ...forbidden, status: { details: { kind: 'serviceaccounts', group: '' } } }),
    false,
    'the refusal to impersonate the ServiceAccount itself is not about extras',
  );
  assert.equal(
    isExtrasRefusal({ ...forbidden, status: JSON.parse(refusal(EXTRA_PROJECT)) as Record<string, unknown> }),
    true,
  );
});

test('keys: token characters as they are, everything else (the slash, a percent sign, non-ASCII) as %XX of its UTF-8', () => {
  assert.equal(escapeExtraKey('impersync.io/application'), 'impersync.io%2Fapplication');
  assert.equal(escapeExtraKey('a%b c'), 'a%25b%20c');
  assert.equal(escapeExtraKey('ü'), '%C3%BC');
  for (const key of EXTRA_KEYS) assert.equal(decodeURIComponent(escapeExtraKey(key)), key);
  assert.ok(
    EXTRA_KEYS.every((k) => k === k.toLowerCase()),
    'the server lower-cases keys: ours are lower case',
  );
  assert.deepEqual(EXTRA_KEYS, [EXTRA_APPLICATION, EXTRA_PROJECT, EXTRA_REVISION]);
});

test('values: visible ASCII and spaces as they are (the server records them verbatim), anything else percent-encoded', () => {
  assert.equal(escapeExtraValue('argocd/guest book:1'), 'argocd/guest book:1');
  assert.equal(escapeExtraValue('feature/ünïcode'), 'feature/%C3%BCn%C3%AFcode');
  assert.equal(escapeExtraValue('a\r\nb'), 'a%0D%0Ab');
});

test('the grant offers the extras again after the retry period, and tells of the refusal only once', () => {
  let now = 1_000;
  let told = 0;
  const g = new ExtrasGrant({ onRefused: () => told++, now: () => now });
  assert.equal(g.offer(), true);
  const e: KubeError = { code: 403, reason: 'Forbidden', message: 'no' };
  g.refused(e);
  assert.equal(g.offer(), false);
  now += EXTRAS_RETRY_MS;
  assert.equal(g.offer(), true);
  g.refused(e);
  assert.equal(told, 1);
});

test('a remembered dry-run answer is kept per Application: the same body made for another one is asked again', () => {
  const q = { fieldManager: 'impersync', force: 'true' };
  assert.equal(DryRunMemo.requestKey(q, '{}', 'argocd/a'), DryRunMemo.requestKey(q, '{}', 'argocd/a'));
  assert.notEqual(DryRunMemo.requestKey(q, '{}', 'argocd/a'), DryRunMemo.requestKey(q, '{}', 'argocd/b'));
});
