// `impersync validate`: spec §8 over every AppProject found; exit 0 / 1 / 2.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { run } from '../../src/cli/validate.ts';
import { projectYaml, repoFile, runCommand, writeFiles } from './helpers.ts';

const IN = 'https://kubernetes.default.svc';

describe('impersync validate', () => {
  test('all valid: exit 0, -o json is an array of {project, valid, errors}', async () => {
    const f = writeFiles({
      'p.yaml':
        projectYaml('a', `\n    - {server: '${IN}', namespace: guestbook, defaultServiceAccount: sa}`) +
        '---\n' +
        projectYaml('b', '[]'),
    });
    const r = await runCommand(run, ['-f', f['p.yaml']!, '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), [
      { project: 'a', valid: true, errors: [] },
      { project: 'b', valid: true, errors: [] },
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
      { project: 'good', valid: true, errors: [] },
      {
        project: 'bad',
        valid: false,
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
