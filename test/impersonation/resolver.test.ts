// spec §3: resolving the ServiceAccount.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  resolveServiceAccount,
  type ServiceAccountEntry,
  type ResolveTarget,
} from '../../src/impersonation/resolver.ts';

const IN = 'https://kubernetes.default.svc';
const entry = (
  server: string,
  namespace: string | undefined,
  defaultServiceAccount: string,
  fromProject = 'my-project',
): ServiceAccountEntry => ({ server, namespace, defaultServiceAccount, fromProject });
const target = (destinationNamespace: string, resolvedServer = IN, applicationNamespace = 'argocd'): ResolveTarget => ({
  resolvedServer,
  destinationNamespace,
  applicationNamespace,
});

describe('spec §3: resolving the ServiceAccount', () => {
  test('"Walk the entries in order" and "The first entry whose two patterns both match decides. No ranking by specificity."', () => {
    const entries = [
      entry(IN, 'guestbook-prod', 'guestbook-prod-deployer'),
      entry(IN, 'guestbook-*', 'guestbook-generic-deployer'),
      entry(IN, '*', 'generic-deployer'),
    ];
    const cases: [string, string][] = [
      ['myns', 'system:serviceaccount:myns:generic-deployer'],
      ['guestbook-dev', 'system:serviceaccount:guestbook-dev:guestbook-generic-deployer'],
      ['guestbook-stage', 'system:serviceaccount:guestbook-stage:guestbook-generic-deployer'],
      ['guestbook-prod', 'system:serviceaccount:guestbook-prod:guestbook-prod-deployer'],
    ];
    for (const [ns, sa] of cases) {
      const r = resolveServiceAccount(entries, target(ns));
      assert.equal(r.outcome, 'found');
      assert.equal(r.outcome === 'found' && r.serviceAccount, sa, ns);
    }
    // A catch-all first wins over a more specific entry after it.
    const r = resolveServiceAccount(
      [entry('*', '*', 'first'), entry(IN, 'guestbook', 'specific')],
      target('guestbook'),
    );
    assert.ok(r.outcome === 'found');
    assert.equal(r.serviceAccount, 'system:serviceaccount:guestbook:first');
    assert.equal(r.index, 0);
  });

  test('"server" is matched against the resolved server and "namespace" against the raw destination namespace', () => {
    const entries = [
      entry('https://remote.example:6443', 'guestbook', 'remote-sa'),
      entry(IN, 'guestbook', 'local-sa'),
    ];
    const remote = resolveServiceAccount(entries, target('guestbook', 'https://remote.example:6443'));
    assert.ok(remote.outcome === 'found');
    assert.equal(remote.serviceAccount, 'system:serviceaccount:guestbook:remote-sa');
    const local = resolveServiceAccount(entries, target('guestbook'));
    assert.ok(local.outcome === 'found');
    assert.equal(local.serviceAccount, 'system:serviceaccount:guestbook:local-sa');
  });

  test('"Both are evaluated for every entry visited": the trace records both results', () => {
    const r = resolveServiceAccount(
      [
        entry('https://other', 'guestbook', 'a'),
        entry(IN, 'other', 'b'),
        entry(IN, 'guestbook', 'c'),
        entry(IN, '*', 'd'),
      ],
      target('guestbook'),
    );
    assert.ok(r.outcome === 'found');
    assert.deepEqual(
      r.trace.map((t) => [t.index, t.serverMatched, t.namespaceMatched]),
      [
        [0, false, true],
        [1, true, false],
        [2, true, true],
      ],
    );
  });

  test('"an invalid pattern in an entry visited before the first match aborts with an error (invalid glob pattern for destination server: <reason>)"', () => {
    const r = resolveServiceAccount([entry('[', '*', 'a'), entry(IN, '*', 'b')], target('guestbook'));
    assert.equal(r.outcome, 'error');
    assert.equal(
      r.outcome === 'error' && r.error,
      'invalid glob pattern for destination server: unexpected end of input',
    );
  });

  test('"... or invalid glob pattern for destination namespace: <reason>", even when the server did not match', () => {
    const r = resolveServiceAccount(
      [entry('https://elsewhere', '[z-a]', 'a'), entry(IN, '*', 'b')],
      target('guestbook'),
    );
    assert.ok(r.outcome === 'error');
    assert.equal(
      r.error,
      "invalid glob pattern for destination namespace: hi character 'a' should be greater than lo 'z'",
    );
    assert.equal(r.index, 0);
  });

  test('"entries after the first match are never looked at": an invalid pattern after it is harmless', () => {
    const r = resolveServiceAccount([entry(IN, 'guestbook', 'ok'), entry('[', '[]', '!!')], target('guestbook'));
    assert.ok(r.outcome === 'found');
    assert.equal(r.serviceAccount, 'system:serviceaccount:guestbook:ok');
    assert.equal(r.trace.length, 1);
  });

  test('"Its defaultServiceAccount is invalid when, after trimming ASCII spaces, it is empty" → `default service account contains invalid chars \'<raw value>\'`', () => {
    for (const raw of ['', ' ', '   ']) {
      const r = resolveServiceAccount([entry(IN, '*', raw)], target('guestbook'));
      assert.ok(r.outcome === 'error', JSON.stringify(raw));
      assert.equal(r.error, `default service account contains invalid chars '${raw}'`);
    }
  });

  test('"... or when it contains any of `! * [ ] { } \\ /`"', () => {
    for (const ch of ['!', '*', '[', ']', '{', '}', '\\', '/']) {
      const raw = `sa${ch}x`;
      const r = resolveServiceAccount([entry(IN, '*', raw)], target('guestbook'));
      assert.ok(r.outcome === 'error', raw);
      assert.equal(r.error, `default service account contains invalid chars '${raw}'`);
    }
    // Only spaces are trimmed: a tab is not a space, so "\t" is not blank (and not disallowed).
    const tab = resolveServiceAccount([entry(IN, '*', '\t')], target('guestbook'));
    assert.equal(tab.outcome, 'found');
  });

  test('"Only the matched entry is checked"', () => {
    const r = resolveServiceAccount([entry(IN, 'other', 'bad/*'), entry(IN, 'guestbook', 'good')], target('guestbook'));
    assert.ok(r.outcome === 'found');
    assert.equal(r.serviceAccount, 'system:serviceaccount:guestbook:good');
  });

  test('"If it contains `:`, the result is `system:serviceaccount:` + the value, verbatim"', () => {
    const r = resolveServiceAccount([entry(IN, '*', 'mynamespace:guestbook-deployer')], target('guestbook'));
    assert.ok(r.outcome === 'found');
    assert.equal(r.serviceAccount, 'system:serviceaccount:mynamespace:guestbook-deployer');
    const odd = resolveServiceAccount([entry(IN, '*', ' a:b:c ')], target('guestbook'));
    assert.ok(odd.outcome === 'found');
    assert.equal(odd.serviceAccount, 'system:serviceaccount: a:b:c ');
  });

  test('"Otherwise system:serviceaccount:<ns>:<value>, where <ns> is spec.destination.namespace"', () => {
    const r = resolveServiceAccount([entry(IN, 'guestbook', 'guestbook-deployer')], target('guestbook'));
    assert.ok(r.outcome === 'found');
    assert.equal(r.serviceAccount, 'system:serviceaccount:guestbook:guestbook-deployer');
  });

  test('"or the Application\'s own metadata.namespace when the destination namespace is empty (this fallback is used only to build the name, never for matching)"', () => {
    const noMatch = resolveServiceAccount([entry(IN, 'argocd', 'sa')], target('', IN, 'argocd'));
    assert.equal(noMatch.outcome, 'none', 'the namespace glob is matched against "", not against argocd');
    const r = resolveServiceAccount([entry(IN, '', 'guestbook-deployer')], target('', IN, 'argocd'));
    assert.ok(r.outcome === 'found');
    assert.equal(r.serviceAccount, 'system:serviceaccount:argocd:guestbook-deployer');
    const absent = resolveServiceAccount([entry(IN, undefined, 'guestbook-deployer')], target('', IN, 'argocd'));
    assert.ok(absent.outcome === 'found', 'an absent namespace is ""');
    const star = resolveServiceAccount([entry(IN, '*', 'guestbook:guestbook-deployer')], target('', IN, 'argocd'));
    assert.ok(star.outcome === 'found');
    assert.equal(star.serviceAccount, 'system:serviceaccount:guestbook:guestbook-deployer');
  });

  test('"Spaces are kept as written"', () => {
    const r = resolveServiceAccount([entry(IN, '*', ' sa ')], target('guestbook'));
    assert.ok(r.outcome === 'found');
    assert.equal(r.serviceAccount, 'system:serviceaccount:guestbook: sa ');
  });

  test('"No entry matches → no ServiceAccount (not an error by itself)"', () => {
    assert.equal(resolveServiceAccount([entry(IN, 'guestbook', 'sa')], target('other')).outcome, 'none');
    assert.equal(resolveServiceAccount([], target('other')).outcome, 'none');
  });

  test('entries keep the project they came from', () => {
    const r = resolveServiceAccount([entry(IN, 'x', 'a', 'own'), entry(IN, '*', 'b', 'global')], target('guestbook'));
    assert.ok(r.outcome === 'found');
    assert.equal(r.entry.fromProject, 'global');
  });
});
