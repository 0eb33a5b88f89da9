// Fuzzing the pure impersonation core with arbitrary strings (test/cli/never-throws.test.ts covers
// whole documents through the CLI cores; this goes function by function and checks the shape of
// every answer, not only that nothing throws): the resolver, project validation, settings from
// argocd-cm data maps, durations, and the documents' schemas.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DocumentError, parseAppProject, parseApplication, parseConfigMap } from '../../src/api/index.ts';
import {
  GLOBAL_PROJECTS_KEY,
  IMPERSONATION_ENABLED_KEY,
  IMPERSONATION_ENFORCED_KEY,
  RECONCILIATION_TIMEOUT_KEY,
  parseDurationSeconds,
  parseGlobalProjects,
  readImpersonationSettings,
  resolveServiceAccount,
  validateDestinationServiceAccounts,
} from '../../src/impersonation/index.ts';
import { retryDelayMs } from '../../src/controller/operation-policy.ts';

const runs = { numRuns: 400 };
/** Strings that look like globs, URLs, namespaces and ServiceAccounts, and anything else. */
const globish = fc.oneof(
  fc.string({
    unit: fc.constantFrom('*', '?', '[', ']', '{', '}', ',', '!', '\\', '-', 'a', 'z', '/', ':', '.', ' ', '\uFFFD'),
    maxLength: 12,
  }),
  fc.constantFrom('*', 'https://kubernetes.default.svc', 'guestbook', 'team-*', '[a-', '{a,b', '[]', '[z-a]', ''),
  fc.string({ unit: 'binary', maxLength: 16 }),
);
const entry = fc.record({
  server: globish,
  namespace: fc.option(globish, { nil: undefined }),
  defaultServiceAccount: globish,
  fromProject: fc.constantFrom('p', 'global'),
});
/** Not empty, and no JavaScript leaking through (zod's "received undefined" names a missing field). */
const unclear = /(?<!received )(undefined|NaN)|\[object /;
const clearMessage = (m: string) => m.trim() !== '' && !unclear.test(m);
// A message may quote the tenant's value, and a value may itself spell "undefined"; only such values
// are masked, so that masking a blank or one-letter value cannot mangle the message around it.
const withoutValues = (m: string, values: readonly string[]) =>
  values.reduce((acc, v) => (/undefined|NaN|\[object /.test(v) ? acc.replaceAll(v, '<value>') : acc), m);

test('fuzz: the resolver answers found, none or error, and found is always a well-formed ServiceAccount user', () => {
  fc.assert(
    fc.property(fc.array(entry, { maxLength: 6 }), globish, globish, globish, (entries, server, ns, appNs) => {
      const r = resolveServiceAccount(entries, {
        resolvedServer: server,
        destinationNamespace: ns,
        applicationNamespace: appNs,
      });
      assert.ok(r.trace.length <= entries.length);
      if (r.outcome === 'found') {
        assert.ok(r.serviceAccount.startsWith('system:serviceaccount:'), r.serviceAccount);
        assert.equal(r.entry, entries[r.index]);
        assert.ok(
          !/[!*[\]{}\\/]/.test(r.entry.defaultServiceAccount),
          'a ServiceAccount with disallowed characters is never used',
        );
        assert.equal(r.trace.length, r.index + 1, 'the walk stops at the first match');
      } else if (r.outcome === 'error') {
        assert.ok(clearMessage(r.error), r.error);
        assert.match(
          r.error,
          /^(invalid glob pattern for destination (server|namespace)|default service account contains invalid chars)/,
        );
        assert.equal(r.trace[r.trace.length - 1]?.error, r.error);
      } else {
        assert.equal(r.trace.length, entries.length, 'none: every entry visited');
      }
    }),
    runs,
  );
});

test('fuzz: project validation never throws; each failure names its entry, its field and the value', () => {
  const dsa = fc.record({
    server: globish,
    namespace: fc.option(globish, { nil: undefined }),
    defaultServiceAccount: globish,
  });
  fc.assert(
    fc.property(fc.array(dsa, { maxLength: 6 }), (entries) => {
      const v = validateDestinationServiceAccounts(entries);
      assert.equal(v.valid, v.failures.length === 0);
      for (const f of v.failures) {
        assert.ok(f.index >= 0 && f.index < entries.length);
        assert.ok(['server', 'namespace', 'defaultServiceAccount'].includes(f.field));
        assert.ok(clearMessage(f.message), f.message);
        const e = entries[f.index];
        const value =
          f.field === 'namespace' ? (e?.namespace ?? '') : f.field === 'server' ? e?.server : e?.defaultServiceAccount;
        assert.ok(
          f.message.includes(`'${value}'`) || f.message.includes('already added'),
          `${f.message} names ${String(value)}`,
        );
      }
    }),
    runs,
  );
});

const settingValue = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom(
    'true',
    'false',
    'TRUE',
    ' true',
    '',
    '3m',
    '-1s',
    '1h2x',
    '0',
    '1e3',
    'NaN',
    '9'.repeat(400),
    '- projectName: p\n  labelSelector:\n    matchLabels: {a: b}',
    '[',
    '{a: 1}',
    'projectName: x',
    '- {}',
    '- projectName: p\n  labelSelector: {matchExpressions: [{key: a, operator: Nope}]}',
    '&a [*a, *a]',
    '!!binary aGk=',
  ),
);

test('fuzz: settings from any argocd-cm data never throw; each problem names the ConfigMap key, defaults stay', () => {
  const keys = fc.constantFrom(
    IMPERSONATION_ENABLED_KEY,
    IMPERSONATION_ENFORCED_KEY,
    GLOBAL_PROJECTS_KEY,
    RECONCILIATION_TIMEOUT_KEY,
    'other',
    '__proto__',
    'constructor',
  );
  fc.assert(
    fc.property(fc.dictionary(keys, settingValue, { maxKeys: 6 }), (data) => {
      const s = readImpersonationSettings({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'argocd-cm', namespace: 'argocd' },
        data,
      } as Parameters<typeof readImpersonationSettings>[0]);
      assert.equal(typeof s.enabled, 'boolean');
      assert.equal(typeof s.enforced, 'boolean');
      assert.equal(s.enabled, data[IMPERSONATION_ENABLED_KEY] === 'true', 'spec §4: on only when exactly "true"');
      assert.ok(
        Number.isFinite(s.reconciliationTimeoutSeconds) && s.reconciliationTimeoutSeconds >= 0,
        String(s.reconciliationTimeoutSeconds),
      );
      for (const e of s.errors) {
        assert.ok(clearMessage(withoutValues(e, Object.values(data))), e);
        assert.match(e, /^ConfigMap argocd\/argocd-cm data\.(globalProjects|timeout\.reconciliation): /);
      }
      for (const g of s.globalProjects) assert.ok(typeof g.projectName === 'string' && g.projectName !== '');
    }),
    // Found by CI: masking the blank value " " turned "received undefined" into "received<value>undefined".
    { ...runs, examples: [[{ [GLOBAL_PROJECTS_KEY]: '- {}', [IMPERSONATION_ENABLED_KEY]: ' ' }]] },
  );
});

test('fuzz: globalProjects and durations parse or say why, never throw', () => {
  fc.assert(
    fc.property(settingValue, (text) => {
      const g = parseGlobalProjects(text);
      if (!g.ok) assert.ok(clearMessage(withoutValues(g.error, [text])), g.error);
      const d = parseDurationSeconds(text);
      if (d.ok) assert.ok(Number.isFinite(d.seconds) && d.seconds >= 0, `${text} → ${d.seconds}`);
      else assert.ok(d.error.includes(`'${text}'`) && clearMessage(withoutValues(d.error, [text])), d.error);
      const ms = retryDelayMs({ backoff: { duration: text, maxDuration: text } }, 1);
      assert.ok(Number.isFinite(ms) && ms >= 0, `${text} → ${ms}`);
    }),
    { numRuns: 1000 },
  );
});

test('fuzz: Application, AppProject and ConfigMap schemas accept or throw a DocumentError naming the object and field', () => {
  const anyValue = fc.oneof(
    fc.string(),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.jsonValue({ maxDepth: 3 }),
  );
  const doc = fc.record(
    {
      apiVersion: fc.oneof(fc.constant('argoproj.io/v1alpha1'), anyValue),
      kind: fc.oneof(fc.constantFrom('Application', 'AppProject', 'ConfigMap'), anyValue),
      metadata: fc.oneof(
        fc.record(
          { name: fc.oneof(fc.constant('x'), anyValue), namespace: fc.oneof(fc.constant('argocd'), anyValue) },
          { requiredKeys: [] },
        ),
        anyValue,
      ),
      spec: fc.oneof(
        fc.record(
          {
            project: anyValue,
            source: fc.oneof(
              fc.record({ repoURL: anyValue, path: anyValue, targetRevision: anyValue }, { requiredKeys: [] }),
              anyValue,
            ),
            destination: anyValue,
            syncPolicy: fc.oneof(
              fc.record({ automated: anyValue, syncOptions: anyValue, retry: anyValue }, { requiredKeys: [] }),
              anyValue,
            ),
            destinationServiceAccounts: fc.oneof(
              fc.array(
                fc.record(
                  { server: anyValue, namespace: anyValue, defaultServiceAccount: anyValue },
                  { requiredKeys: [] },
                ),
                { maxLength: 3 },
              ),
              anyValue,
            ),
            sourceRepos: anyValue,
            destinations: anyValue,
          },
          { requiredKeys: [] },
        ),
        anyValue,
      ),
      data: fc.oneof(fc.dictionary(fc.string(), fc.string()), anyValue),
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(fc.oneof(doc, fc.anything()), (raw) => {
      for (const [kind, parse] of [
        ['Application', parseApplication],
        ['AppProject', parseAppProject],
        ['ConfigMap', parseConfigMap],
      ] as const) {
        try {
          parse(raw);
        } catch (err) {
          assert.ok(err instanceof DocumentError, `${kind}: ${String(err)}`);
          assert.ok(err.message.startsWith(`${kind} `), err.message);
          assert.ok(clearMessage(err.reason), err.message);
        }
      }
    }),
    runs,
  );
});
