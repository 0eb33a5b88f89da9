// `impersync health -f FILE... [--argocd-cm FILE] [-o json|text]` (issue 15).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { run } from '../../src/cli/health.ts';
import { runCommand, writeFiles } from './helpers.ts';

const objects = [
  'apiVersion: apps/v1',
  'kind: Deployment',
  'metadata: {name: web, namespace: shop, generation: 1}',
  'spec: {replicas: 2}',
  'status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2}',
  '---',
  'apiVersion: cert-manager.io/v1',
  'kind: Certificate',
  'metadata: {name: tls, namespace: shop}',
  'status: {conditions: [{type: Ready, status: "False", message: expired}]}',
].join('\n');
const configMap = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}';
const argocdCm = [
  'apiVersion: v1',
  'kind: ConfigMap',
  'metadata: {name: argocd-cm}',
  'data:',
  '  resource.customizations.health.cert-manager.io_Certificate: |',
  '    print("looking at " .. obj.metadata.name)',
  '    for _, c in ipairs(obj.status.conditions) do',
  '      if c.type == "Ready" and c.status == "False" then return { status = "Degraded", message = c.message } end',
  '    end',
  '    return { status = "Healthy" }',
].join('\n');

test('-o json: one entry per object in input order, across files; no status when the kind has no health', async () => {
  const f = writeFiles({ 'a.yaml': objects, 'b.json': configMap, 'cm.yaml': argocdCm });
  const r = await runCommand(run, ['-f', f['a.yaml']!, '-f', f['b.json']!, '--argocd-cm', f['cm.yaml']!, '-o', 'json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), [
    { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web', status: 'Healthy' },
    {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      namespace: 'shop',
      name: 'tls',
      status: 'Degraded',
      message: 'expired',
    },
    { apiVersion: 'v1', kind: 'ConfigMap', namespace: '', name: 'settings' },
  ]);
  assert.equal(r.stderr, `${f['a.yaml']}: document 2: looking at tls\n`, 'what the check printed, naming its object');
});

test('without --argocd-cm only the built-in checks apply: the custom resource has no health', async () => {
  const f = writeFiles({ 'a.yaml': objects });
  const r = await runCommand(run, ['-f', f['a.yaml']!, '-o', 'json']);
  assert.equal(r.code, 0);
  assert.equal((JSON.parse(r.stdout) as Array<{ status?: string }>)[1]?.status, undefined);
});

test('text output: group/Kind, namespace/name, status, message', async () => {
  const f = writeFiles({ 'a.yaml': objects, 'cm.yaml': argocdCm });
  const r = await runCommand(run, ['-f', f['a.yaml']!, '--argocd-cm', f['cm.yaml']!]);
  assert.equal(r.code, 0);
  assert.equal(
    r.stdout,
    'apps/Deployment              shop/web  Healthy\n' + 'cert-manager.io/Certificate  shop/tls  Degraded  expired\n',
  );
});

test('a failing Lua check is still an assessment: Unknown with the error, exit 0', async () => {
  const cm = argocdCm.replace('print("looking at " .. obj.metadata.name)', 'error("no luck")');
  const f = writeFiles({ 'a.yaml': objects, 'cm.yaml': cm });
  const r = await runCommand(run, ['-f', f['a.yaml']!, '--argocd-cm', f['cm.yaml']!, '-o', 'json']);
  assert.equal(r.code, 0);
  assert.deepEqual((JSON.parse(r.stdout) as unknown[])[1], {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    namespace: 'shop',
    name: 'tls',
    status: 'Unknown',
    message: '<string>:1: no luck',
  });
});

test('unusable input is exit 2 with one stderr line naming the file and document', async () => {
  const f = writeFiles({
    'a.yaml': objects,
    'bad.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nmetadata: {name: b}\n',
    'cm.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm}\ndata:\n  resource.customizations.colour.x: z\n',
  });
  const bad = await runCommand(run, ['-f', f['a.yaml']!, '-f', f['bad.yaml']!]);
  assert.equal(bad.code, 2);
  assert.equal(bad.stdout, '');
  assert.equal(bad.stderr.trimEnd().split('\n').length, 1);
  assert.match(bad.stderr, new RegExp(`^impersync health: ${f['bad.yaml']}: document 2`));
  const missing = await runCommand(run, ['-f', '/nonexistent/x.yaml']);
  assert.equal(missing.code, 2);
  assert.equal(missing.stderr, 'impersync health: /nonexistent/x.yaml: cannot read: no such file\n');
  const cm = await runCommand(run, ['-f', f['a.yaml']!, '--argocd-cm', f['cm.yaml']!]);
  assert.equal(cm.code, 2);
  assert.equal(cm.stderr, `impersync health: ${f['cm.yaml']}: resource customization type colour not supported\n`);
  const none = await runCommand(run, []);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /^impersync health: -f FILE is required/);
});

test('a document without metadata is unusable input, as for every impersync command reading files', async () => {
  const f = writeFiles({ 'a.yaml': 'apiVersion: v1\nkind: Pod\nstatus: {phase: Pending}\n' });
  const r = await runCommand(run, ['-f', f['a.yaml']!, '-o', 'json']);
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr,
    `impersync health: ${f['a.yaml']}: document 1 is not a Kubernetes object: metadata is missing (Pod)\n`,
  );
});
