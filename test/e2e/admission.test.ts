// The ValidatingAdmissionPolicy of deploy/admission on a real kube-apiserver: bad AppProjects are
// rejected with Argo CD's message (spec §8), good ones are stored, and on generated lists the
// policy agrees with impersync's own validation (src/impersonation/validation.ts), which follows
// Argo CD exactly, except where docs/admission.md says CEL cannot.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  startControlPlane,
  createNamespace,
  applyRaw,
  getRaw,
  readYamlFile,
  ApiError,
  requestOk,
} from '../support/index.ts';
import type { TestControlPlane, KubeObject } from '../support/index.ts';
import { validateDestinationServiceAccounts } from '../../src/impersonation/validation.ts';
import type { DestinationServiceAccount } from '../../src/api/index.ts';

const policyFile = new URL('../../deploy/admission/policy.yaml', import.meta.url).pathname;
const policyName = 'impersync-appproject-destination-service-accounts';
let cp: TestControlPlane;

function project(name: string, entries: DestinationServiceAccount[] | undefined): KubeObject {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    metadata: { name, namespace: 'argocd' },
    spec: { sourceRepos: ['*'], ...(entries ? { destinationServiceAccounts: entries } : {}) },
  };
}

/** The admission verdict: undefined when stored (dry run unless `persist`), else the API server's message. */
async function admit(
  entries: DestinationServiceAccount[] | undefined,
  opts: { name?: string; persist?: boolean } = {},
): Promise<string | undefined> {
  try {
    await applyRaw(cp.admin, project(opts.name ?? 'p', entries), {
      dryRun: !opts.persist,
      fieldManager: 'admission-test',
    });
    return undefined;
  } catch (err) {
    if (err instanceof ApiError && err.status === 422) return err.message;
    throw err;
  }
}

const denied = (message: string, name = 'p') =>
  `appprojects.argoproj.io "${name}" is forbidden: ValidatingAdmissionPolicy '${policyName}' with binding '${policyName}' denied request: ${message}`;

before(async () => {
  cp = await startControlPlane();
  await createNamespace(cp.admin, 'argocd');
  for (const obj of await readYamlFile(policyFile)) await applyRaw(cp.admin, obj, { fieldManager: 'admission-test' });
  // The admission plugin picks the policy up from an informer: wait until it rejects a bad project.
  const end = Date.now() + 30_000;
  while ((await admit([{ server: '!x', defaultServiceAccount: 'sa' }])) === undefined) {
    if (Date.now() > end) throw new Error(`the admission policy ${policyName} did not take effect within 30 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
});

after(async () => {
  await cp?.stop();
});

test('the policy type-checks against the AppProject CRD without warnings', async () => {
  const path = `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${policyName}`;
  let status: {
    observedGeneration?: number;
    typeChecking?: { expressionWarnings?: { fieldRef: string; warning: string }[] };
  } = {};
  const end = Date.now() + 30_000;
  while (status.typeChecking === undefined && Date.now() < end) {
    status = ((await requestOk(cp.admin, { path })) as { status?: typeof status }).status ?? {};
    if (status.typeChecking === undefined) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(status.typeChecking, 'the API server type-checked the policy');
  assert.deepEqual(status.typeChecking.expressionWarnings ?? [], []);
});

test('spec §8: each rule rejects with Argo CD message, the first broken entry wins', async () => {
  const cases: [string, DestinationServiceAccount[], string][] = [
    [
      'rule 1: ! in server',
      [{ server: 'https://!x', namespace: 'a', defaultServiceAccount: 'sa' }],
      "server has an invalid format, 'https://!x'",
    ],
    [
      'rule 2: ! in namespace',
      [{ server: '*', namespace: '!team', defaultServiceAccount: 'sa' }],
      "namespace has an invalid format, '!team'",
    ],
    [
      'rule 3: blank service account',
      [{ server: '*', namespace: 'a', defaultServiceAccount: '   ' }],
      "defaultServiceAccount has an invalid format, '   '",
    ],
    [
      'rule 3: disallowed character',
      [{ server: '*', namespace: 'a', defaultServiceAccount: 'team/deployer' }],
      "defaultServiceAccount has an invalid format, 'team/deployer'",
    ],
    [
      'rule 3: glob in the service account',
      [{ server: '*', namespace: 'a', defaultServiceAccount: 'sa-*' }],
      "defaultServiceAccount has an invalid format, 'sa-*'",
    ],
    [
      'rule 4: unterminated class',
      [{ server: 'https://[a', namespace: 'a', defaultServiceAccount: 'sa' }],
      "server has an invalid format, 'https://[a'",
    ],
    [
      'rule 4: range then characters',
      [{ server: '[a-bc]', defaultServiceAccount: 'sa' }],
      "server has an invalid format, '[a-bc]'",
    ],
    [
      'rule 4: reversed range',
      [{ server: '[z-a]', defaultServiceAccount: 'sa' }],
      "server has an invalid format, '[z-a]'",
    ],
    ['rule 4: empty class', [{ server: 'x[]', defaultServiceAccount: 'sa' }], "server has an invalid format, 'x[]'"],
    [
      'rule 5: bad namespace glob',
      [{ server: '*', namespace: 'team-[', defaultServiceAccount: 'sa' }],
      "namespace has an invalid format, 'team-['",
    ],
    [
      'rule 6: duplicate',
      [
        { server: '*', namespace: 'a', defaultServiceAccount: 'one' },
        { server: '*', namespace: 'a', defaultServiceAccount: 'two' },
      ],
      "destinationServiceAccount '*/a' already added",
    ],
    [
      'rule 6: duplicate with absent and empty namespace',
      [
        { server: 'https://x', defaultServiceAccount: 'one' },
        { server: 'https://x', namespace: '', defaultServiceAccount: 'two' },
      ],
      "destinationServiceAccount 'https://x/' already added",
    ],
    [
      'order: rule 3 before rule 4 in one entry',
      [{ server: '[', defaultServiceAccount: '' }],
      "defaultServiceAccount has an invalid format, ''",
    ],
    [
      'order: an earlier duplicate before a later bad entry',
      [
        { server: '*', namespace: 'a', defaultServiceAccount: 'one' },
        { server: '*', namespace: 'a', defaultServiceAccount: 'two' },
        { server: '!', defaultServiceAccount: 'three' },
      ],
      "destinationServiceAccount '*/a' already added",
    ],
    [
      'order: an earlier bad entry before a later duplicate',
      [
        { server: '*', namespace: 'b', defaultServiceAccount: 'one' },
        { server: '*', namespace: 'c', defaultServiceAccount: ' ' },
        { server: '*', namespace: 'b', defaultServiceAccount: 'two' },
      ],
      "defaultServiceAccount has an invalid format, ' '",
    ],
    [
      'order: the broken rule of a duplicate entry wins over the duplicate',
      [
        { server: '*', namespace: 'a', defaultServiceAccount: 'one' },
        { server: '*', namespace: 'a', defaultServiceAccount: 'x/y' },
      ],
      "defaultServiceAccount has an invalid format, 'x/y'",
    ],
    [
      'order: the first of two duplicated keys',
      [
        { server: 'p', defaultServiceAccount: 'one' },
        { server: 'q', defaultServiceAccount: 'one' },
        { server: 'q', defaultServiceAccount: 'two' },
        { server: 'p', defaultServiceAccount: 'two' },
      ],
      "destinationServiceAccount 'q/' already added",
    ],
  ];
  for (const [name, entries, message] of cases) {
    assert.equal(
      validateDestinationServiceAccounts(entries).failures[0]?.message,
      message,
      `${name}: the controller's validation agrees`,
    );
    assert.equal(await admit(entries), denied(message), name);
  }
});

test('good AppProjects are stored: globs, classes, escapes, namespace:name, none at all', async () => {
  const good: DestinationServiceAccount[] = [
    { server: 'https://kubernetes.default.svc', namespace: 'guestbook', defaultServiceAccount: 'guestbook-deployer' },
    { server: '*', namespace: 'team-[a-c]?-{dev,prod}', defaultServiceAccount: 'infra:deployer' },
    { server: 'https://\\[::1\\]:6443', namespace: '', defaultServiceAccount: 'sa' },
    { server: 'https://[xyz].example', namespace: '[-]', defaultServiceAccount: ' spaced ' },
    { server: '*', namespace: 'lone-\\', defaultServiceAccount: 'sa' },
    { server: '}{,]', defaultServiceAccount: 'sa' },
  ];
  assert.equal(validateDestinationServiceAccounts(good).valid, true);
  assert.equal(await admit(good, { name: 'good', persist: true }), undefined);
  const stored = await getRaw(cp.admin, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    namespace: 'argocd',
    name: 'good',
  });
  assert.deepEqual((stored?.['spec'] as { destinationServiceAccounts: unknown }).destinationServiceAccounts, good);
  assert.equal(await admit(undefined, { name: 'plain', persist: true }), undefined);
  // An update that breaks the list is rejected too.
  assert.equal(
    await admit([...good, good[0] as DestinationServiceAccount], { name: 'good', persist: true }),
    denied("destinationServiceAccount 'https://kubernetes.default.svc/guestbook' already added", 'good'),
  );
});

test('on generated lists the policy decides as the controller validation does', async () => {
  // Characters that matter to the glob lexer and the rules, and a few that do not. No NUL and no
  // U+FFFD: docs/admission.md lists them as the inexact corner.
  const piece = fc.constantFrom(
    'a',
    'b',
    'z',
    '-',
    '*',
    '?',
    '[',
    ']',
    '{',
    '}',
    ',',
    '\\',
    '!',
    '/',
    ' ',
    ':',
    '[a-z]',
    '[z-a]',
    '[]',
    '\\[',
    'é',
  );
  const text = fc.array(piece, { maxLength: 6 }).map((p) => p.join(''));
  const entry = fc.record(
    {
      server: fc.oneof(text, fc.constantFrom('*', 'https://x')),
      namespace: fc.oneof(text, fc.constantFrom('a', '')),
      defaultServiceAccount: fc.oneof(text, fc.constantFrom('sa', 'ns:sa')),
    },
    { requiredKeys: ['server', 'defaultServiceAccount'] },
  );
  // Duplicates are likely: entries are drawn from a small pool per list.
  const list = fc
    .array(entry, { minLength: 1, maxLength: 3 })
    .chain((pool) => fc.array(fc.constantFrom(...pool), { minLength: 1, maxLength: 4 }));
  let rejected = 0;
  await fc.assert(
    fc.asyncProperty(list, async (entries) => {
      const expected = validateDestinationServiceAccounts(entries).failures[0]?.message;
      const got = await admit(entries);
      if (got !== undefined) rejected++;
      assert.equal(got, expected === undefined ? undefined : denied(expected), JSON.stringify(entries));
    }),
    { numRuns: 300, seed: 6 },
  );
  // The generator exercised both outcomes.
  assert.ok(rejected > 30 && rejected < 290, `${rejected} of 300 rejected`);
});

test('size: 200 entries are checked; a list too long for the CEL cost budget is let through, not refused', async () => {
  const entries = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      server: `https://cluster-${i}.example.com:6443/[a-z]*`,
      namespace: `team-${i}-[a-z]*-{dev,prod}`,
      defaultServiceAccount: `ns-${i}:deployer-${i}`,
    }));
  const checked = entries(200);
  assert.equal(await admit(checked), undefined);
  assert.equal(
    await admit([...checked, checked[199] as DestinationServiceAccount]),
    denied(
      "destinationServiceAccount 'https://cluster-199.example.com:6443/[a-z]*/team-199-[a-z]*-{dev,prod}' already added",
    ),
  );
  // failurePolicy Ignore: the controller's validation has the last word on such a project.
  const huge = entries(1000);
  assert.equal(await admit([...huge, huge[0] as DestinationServiceAccount]), undefined);
  assert.equal(validateDestinationServiceAccounts([...huge, huge[0] as DestinationServiceAccount]).valid, false);
});
