// Property: explain and validate never throw, whatever the documents: they explain, or they exit 2
// with one line on stderr (issue 2: "never throw on arbitrary documents").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { buildInventory } from '../../src/cli/inventory.ts';
import { explain } from '../../src/cli/explain-core.ts';
import { validateInventory, run as validateRun } from '../../src/cli/validate.ts';
import { run as explainRun } from '../../src/cli/explain.ts';
import { runCommand, writeFiles } from './helpers.ts';

// Documents shaped like the objects explain reads, with arbitrary values in every field.
const anyValue = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }));
const entry = fc.record(
  {
    server: fc.oneof(fc.constantFrom('*', 'https://kubernetes.default.svc', '[', '{a,b', '!x'), anyValue),
    namespace: fc.oneof(fc.constantFrom('*', 'guestbook', ''), anyValue),
    defaultServiceAccount: fc.oneof(fc.constantFrom('sa', 'ns:sa', ' ', 'a/b'), anyValue),
  },
  { requiredKeys: [] },
);
const meta = fc.record(
  {
    name: fc.oneof(fc.constantFrom('guestbook', 'my-project', 'argocd-cm', 'default'), anyValue),
    namespace: fc.oneof(fc.constant('argocd'), anyValue),
    labels: fc.oneof(fc.dictionary(fc.string(), fc.string()), anyValue),
  },
  { requiredKeys: [] },
);
const application = fc.record(
  {
    apiVersion: fc.constant('argoproj.io/v1alpha1'),
    kind: fc.constant('Application'),
    metadata: meta,
    spec: fc.oneof(
      fc.record(
        {
          project: fc.oneof(fc.constantFrom('my-project', ''), anyValue),
          destination: fc.oneof(
            fc.record(
              {
                server: fc.oneof(fc.constant('https://kubernetes.default.svc'), anyValue),
                name: fc.oneof(fc.constantFrom('in-cluster', 'remote'), anyValue),
                namespace: fc.oneof(fc.constant('guestbook'), anyValue),
              },
              { requiredKeys: [] },
            ),
            anyValue,
          ),
        },
        { requiredKeys: [] },
      ),
      anyValue,
    ),
  },
  { requiredKeys: ['apiVersion', 'kind'] },
);
const project = fc.record(
  {
    apiVersion: fc.constant('argoproj.io/v1alpha1'),
    kind: fc.constant('AppProject'),
    metadata: meta,
    spec: fc.oneof(
      fc.record(
        { destinationServiceAccounts: fc.oneof(fc.array(entry, { maxLength: 4 }), anyValue) },
        { requiredKeys: [] },
      ),
      anyValue,
    ),
  },
  { requiredKeys: ['apiVersion', 'kind'] },
);
const configMap = fc.record(
  {
    apiVersion: fc.constant('v1'),
    kind: fc.constant('ConfigMap'),
    metadata: meta,
    data: fc.oneof(
      fc.dictionary(
        fc.constantFrom(
          'application.sync.impersonation.enabled',
          'application.sync.impersonation.enforced',
          'globalProjects',
          'timeout.reconciliation',
        ),
        fc.oneof(fc.constantFrom('true', 'false', '- projectName: x', '[', '3m'), fc.string()),
      ),
      anyValue,
    ),
  },
  { requiredKeys: ['apiVersion', 'kind'] },
);
const secret = fc.record(
  {
    apiVersion: fc.constant('v1'),
    kind: fc.constant('Secret'),
    metadata: fc.record({
      name: fc.constant('c'),
      labels: fc.constant({ 'argocd.argoproj.io/secret-type': 'cluster' }),
    }),
    data: fc.oneof(fc.dictionary(fc.constantFrom('name', 'server', 'config'), fc.string()), anyValue),
    stringData: fc.oneof(
      fc.dictionary(
        fc.constantFrom('name', 'server', 'config'),
        fc.oneof(fc.constantFrom('remote', 'https://r', '{"bearerToken":1}', '{'), fc.string()),
      ),
      anyValue,
    ),
  },
  { requiredKeys: ['apiVersion', 'kind', 'metadata'] },
);
const document = fc.oneof(application, project, configMap, secret, fc.anything(), fc.jsonValue());

test('property: the explain and validate cores never throw on arbitrary documents', () => {
  fc.assert(
    fc.property(fc.array(document, { maxLength: 6 }), fc.option(fc.string(), { nil: undefined }), (docs, app) => {
      const raw = docs.map((object, i) => ({
        object: object as Record<string, unknown>,
        where: { file: 'f.yaml', document: i + 1 },
      }));
      const inventory = buildInventory(raw);
      if (!inventory.ok) {
        assert.equal(typeof inventory.error, 'string');
        return;
      }
      const result = explain(inventory.value, { app, namespace: 'argocd', source: 'f.yaml' });
      if (result.ok) JSON.stringify(result.value.report);
      else assert.equal(typeof result.error, 'string');
      validateInventory(inventory.value);
    }),
    { numRuns: 1500 },
  );
});

test('property: `impersync explain` exits 0, 2 or 3 and `validate` 0, 1 or 2 on arbitrary files, and never throw', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(document, { maxLength: 4 }),
      fc.constantFrom('yaml', 'json', 'text'),
      async (docs, form) => {
        const text =
          form === 'json'
            ? JSON.stringify(docs)
            : form === 'yaml'
              ? docs.map((d) => stringify(d ?? null)).join('---\n')
              : docs.map((d) => JSON.stringify(d) ?? '').join('\n');
        const f = writeFiles({ [`in.${form === 'json' ? 'json' : 'yaml'}`]: text });
        const path = Object.values(f)[0]!;
        for (const [run, codes] of [
          [explainRun, [0, 2, 3]],
          [validateRun, [0, 1, 2]],
        ] as const) {
          const r = await runCommand(run, ['-f', path, '-o', 'json']);
          assert.ok((codes as readonly number[]).includes(r.code), `exit ${r.code}`);
          if (r.code === 2) assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
          else JSON.parse(r.stdout);
        }
      },
    ),
    { numRuns: 150 },
  );
});
