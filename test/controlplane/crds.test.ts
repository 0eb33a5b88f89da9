// The CRD files in deploy/crds/ as the harness reads them (the API server's own checks are in
// test/e2e/controlplane.test.ts).
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadCrds } from '../../src/controlplane/crds.ts';

type Version = {
  subresources?: { status?: object };
  additionalPrinterColumns?: { name: string; jsonPath: string }[];
  schema: { openAPIV3Schema: { properties: Record<string, { properties?: Record<string, unknown> }> } };
};

test('deploy/crds holds the Application and AppProject CRDs of argoproj.io/v1alpha1', async () => {
  const crds = (await loadCrds()) as unknown as {
    metadata: { name: string };
    spec: { group: string; versions: Version[] };
  }[];
  assert.deepEqual(crds.map((c) => c.metadata.name).sort(), ['applications.argoproj.io', 'appprojects.argoproj.io']);
  for (const crd of crds)
    assert.deepEqual(
      [crd.spec.group, crd.spec.versions.map((v) => (v as unknown as { name: string }).name)],
      ['argoproj.io', ['v1alpha1']],
    );
});

test("Application has no status subresource, as Argo CD's CRD, and the sync, health and project columns", async () => {
  const crds = (await loadCrds()) as unknown as { metadata: { name: string }; spec: { versions: Version[] } }[];
  const app = crds.find((c) => c.metadata.name === 'applications.argoproj.io')!.spec.versions[0]!;
  assert.equal(app.subresources?.status, undefined, "Argo CD's server terminates with an ordinary update");
  const columns = Object.fromEntries((app.additionalPrinterColumns ?? []).map((c) => [c.name, c.jsonPath]));
  assert.equal(columns['Sync Status'], '.status.sync.status');
  assert.equal(columns['Health Status'], '.status.health.status');
  assert.equal(columns['Project'], '.spec.project');
});

test("YAML anchors are resolved: spec.sources[] and operation.sync.source share spec.source's schema", async () => {
  const crds = (await loadCrds()) as unknown as { metadata: { name: string }; spec: { versions: Version[] } }[];
  const props = crds.find((c) => c.metadata.name === 'applications.argoproj.io')!.spec.versions[0]!.schema
    .openAPIV3Schema.properties;
  const source = props['spec']!.properties!['source'];
  assert.deepEqual((props['spec']!.properties!['sources'] as { items: unknown }).items, source);
  const sync = (props['operation']!.properties!['sync'] as { properties: Record<string, unknown> }).properties;
  assert.deepEqual(sync['source'], source);
});

test('a file that is not a CRD is refused with its path and kind', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'crds-test-'));
  try {
    await writeFile(join(dir, 'x.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n');
    await assert.rejects(
      loadCrds(dir),
      /x\.yaml: expected a CustomResourceDefinition with metadata\.name, got kind ConfigMap/,
    );
    await writeFile(join(dir, 'x.yaml'), 'kind: [\n');
    await assert.rejects(loadCrds(dir), /x\.yaml: /);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
