// `impersync health -f FILE... [--argocd-cm FILE] [-o json|text]` (issue 15).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { run } from '../../src/cli/health.ts';
import { healthScriptsDir } from '../support/health-scripts.ts';
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

/** Runs with IMPERSYNC_HEALTH_SCRIPTS_DIR set to `dir` (undefined: unset), as a user's shell would. */
async function withScriptsDir<T>(dir: string | undefined, fn: () => Promise<T>): Promise<T> {
  const before = process.env['IMPERSYNC_HEALTH_SCRIPTS_DIR'];
  if (dir === undefined) delete process.env['IMPERSYNC_HEALTH_SCRIPTS_DIR'];
  else process.env['IMPERSYNC_HEALTH_SCRIPTS_DIR'] = dir;
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env['IMPERSYNC_HEALTH_SCRIPTS_DIR'];
    else process.env['IMPERSYNC_HEALTH_SCRIPTS_DIR'] = before;
  }
}

test("without --argocd-cm, Argo CD's bundled check assesses the custom resource (the default library)", async () => {
  const f = writeFiles({ 'a.yaml': objects });
  const r = await withScriptsDir(healthScriptsDir(), () => runCommand(run, ['-f', f['a.yaml']!, '-o', 'json']));
  assert.equal(r.code, 0, r.stderr);
  const cert = (JSON.parse(r.stdout) as Array<{ status?: string; message?: string }>)[1];
  assert.deepEqual([cert?.status, cert?.message], ['Degraded', 'expired']);
});

test('with IMPERSYNC_HEALTH_SCRIPTS_DIR=none only the built-in checks apply: the custom resource has no health', async () => {
  const f = writeFiles({ 'a.yaml': objects });
  const r = await withScriptsDir('none', () => runCommand(run, ['-f', f['a.yaml']!, '-o', 'json']));
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

test('an object without metadata is assessed, as Argo CD assesses it; without a kind it is unusable input', async () => {
  const f = writeFiles({
    'a.yaml': 'apiVersion: v1\nkind: Pod\nstatus: {phase: Pending}\n',
    'b.yaml': 'apiVersion: v1\nstatus: {phase: Pending}\n',
  });
  const r = await runCommand(run, ['-f', f['a.yaml']!, '-o', 'json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), [
    { apiVersion: 'v1', kind: 'Pod', namespace: '', name: '', status: 'Progressing' },
  ]);
  const bad = await runCommand(run, ['-f', f['b.yaml']!, '-o', 'json']);
  assert.equal(bad.code, 2);
  assert.equal(
    bad.stderr,
    `impersync health: ${f['b.yaml']}: document 1 is not a Kubernetes object: kind is missing\n`,
  );
});
