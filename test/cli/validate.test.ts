// `impersync validate`: spec §8 over every AppProject found; exit 0 / 1 / 2.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { run } from '../../src/cli/validate.ts';
import { projectYaml, repoFile, runCommand, writeFiles } from './helpers.ts';

const IN = 'https://kubernetes.default.svc';

describe('impersync validate', () => {
  test('all valid: exit 0, -o json is an array of {project, valid, errors, warnings}', async () => {
    const f = writeFiles({
      'p.yaml':
        projectYaml('a', `\n    - {server: '${IN}', namespace: guestbook, defaultServiceAccount: sa}`) +
        '---\n' +
        projectYaml('b', '[]'),
    });
    const r = await runCommand(run, ['-f', f['p.yaml']!, '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), [
      { project: 'a', valid: true, errors: [], warnings: [] },
      { project: 'b', valid: true, errors: [], warnings: [] },
    ]);
  });

  test("any invalid: exit 1, every failure listed in order, the first being Argo CD's", async () => {
    const f = writeFiles({
      'p.yaml':
        projectYaml('good', '[]') +
        '---\n' +
        projectYaml(
          'bad',
          `
    - {server: '!${IN}', namespace: '[', defaultServiceAccount: 'a/b'}
    - {server: '${IN}', namespace: x, defaultServiceAccount: ok}
    - {server: '${IN}', namespace: x, defaultServiceAccount: again}`,
        ),
    });
    const r = await runCommand(run, ['-f', f['p.yaml']!, '-o', 'json']);
    assert.equal(r.code, 1);
    assert.deepEqual(JSON.parse(r.stdout), [
      { project: 'good', valid: true, errors: [], warnings: [] },
      {
        project: 'bad',
        valid: false,
        warnings: [],
        errors: [
          `server has an invalid format, '!${IN}'`,
          "defaultServiceAccount has an invalid format, 'a/b'",
          "namespace has an invalid format, '['",
          `destinationServiceAccount '${IN}/x' already added`,
        ],
      },
    ]);
  });

  test('text output names each entry and field', async () => {
    const f = writeFiles({
      'p.yaml': projectYaml('bad', `\n    - {server: '${IN}', namespace: '!x', defaultServiceAccount: sa}`),
    });
    const r = await runCommand(run, ['-f', f['p.yaml']!]);
    assert.equal(r.code, 1);
    assert.equal(
      r.stdout,
      "bad: INVALID\n  spec.destinationServiceAccounts[0].namespace: namespace has an invalid format, '!x'\n1 AppProject checked, 0 invalid\n".replace(
        '0 invalid',
        '1 invalid',
      ),
    );
  });

  test('beyond Argo CD: entries that always name a system-namespace ServiceAccount are warned about, validity unchanged', async () => {
    const entries = `
    - {server: '${IN}', namespace: guestbook, defaultServiceAccount: 'kube-system:generic-garbage-collector'}
    - {server: '${IN}', namespace: kube-public, defaultServiceAccount: reader}
    - {server: '${IN}', namespace: 'kube-*', defaultServiceAccount: deployer}
    - {server: '${IN}', namespace: '', defaultServiceAccount: deployer}
    - {server: '${IN}', namespace: other, defaultServiceAccount: 'kube-node-lease:x'}
    - {server: '${IN}', namespace: team, defaultServiceAccount: ' kube-system:spaced'}`;
    const refusal = (sa: string) =>
      `refusing to impersonate system:serviceaccount:${sa}: ServiceAccounts in kube-system, kube-public and kube-node-lease are not impersonated unless argocd-cm sets impersync.impersonation.allowSystemNamespaces: "true"`;
    const f = writeFiles({
      'p.yaml': projectYaml('sys', entries),
      'allow.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata:\n  impersync.impersonation.allowSystemNamespaces: "true"\n',
      'almost.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata:\n  impersync.impersonation.allowSystemNamespaces: "True"\n',
    });
    const r = await runCommand(run, ['-f', f['p.yaml']!, '-o', 'json']);
    assert.equal(r.code, 0, 'still valid: Argo CD accepts these entries');
    // A glob or an empty namespace depends on the Application (explain shows it); spaces name another namespace.
    assert.deepEqual(JSON.parse(r.stdout), [
      {
        project: 'sys',
        valid: true,
        errors: [],
        warnings: [
          refusal('kube-system:generic-garbage-collector'),
          refusal('kube-public:reader'),
          refusal('kube-node-lease:x'),
        ],
      },
    ]);
    const text = await runCommand(run, ['-f', f['p.yaml']!]);
    assert.match(
      text.stdout,
      /^ {2}spec\.destinationServiceAccounts\[1\]\.defaultServiceAccount: warning: refusing to impersonate system:serviceaccount:kube-public:reader: /m,
    );
    const almost = await runCommand(run, ['-f', f['p.yaml']!, '-f', f['almost.yaml']!, '-o', 'json']);
    assert.equal((JSON.parse(almost.stdout) as { warnings: string[] }[])[0]?.warnings.length, 3, 'exactly "true" only');
    const allowed = await runCommand(run, ['-f', f['p.yaml']!, '-f', f['allow.yaml']!, '-o', 'json']);
    assert.deepEqual((JSON.parse(allowed.stdout) as { warnings: string[] }[])[0]?.warnings, []);
  });

  test('the examples are valid', async () => {
    const files = [
      '01-all-namespaces',
      '02-specific-namespace',
      '03-remote-cluster-argocd-manager',
      '04-remote-cluster-custom-sa',
      '05-service-account-in-another-namespace',
      '06-several-matching-entries',
      '07-no-destination-namespace',
      '08-no-destination-namespace-matching',
    ];
    const r = await runCommand(
      run,
      files.flatMap((f) => ['-f', repoFile(`examples/${f}.yaml`)]),
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /9 AppProjects checked, 0 invalid/);
  });

  test('unusable input: exit 2 with one stderr line', async () => {
    const missing = await runCommand(run, ['-f', '/nonexistent.yaml']);
    assert.equal(missing.code, 2);
    assert.equal(missing.stderr, 'impersync validate: /nonexistent.yaml: cannot read: no such file\n');
    const f = writeFiles({
      'none.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n',
      'bad.yaml': projectYaml('p', '[{server: 1, defaultServiceAccount: sa}]'),
    });
    const none = await runCommand(run, ['-f', f['none.yaml']!]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^impersync validate: no AppProject in .*none\.yaml\n$/);
    const bad = await runCommand(run, ['-f', f['bad.yaml']!]);
    assert.equal(bad.code, 2);
    assert.match(
      bad.stderr,
      /bad\.yaml: document 1: AppProject argocd\/p: spec\.destinationServiceAccounts\[0\]\.server: expected string, got number\n$/,
    );
    const flag = await runCommand(run, ['-o', 'xml', '-f', f['bad.yaml']!]);
    assert.equal(flag.code, 2);
  });
});
