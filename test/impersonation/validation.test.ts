// spec §8: validating an AppProject.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { validateDestinationServiceAccounts } from '../../src/impersonation/validation.ts';

const IN = 'https://kubernetes.default.svc';
const messages = (entries: { server: string; namespace?: string; defaultServiceAccount: string }[]) =>
  validateDestinationServiceAccounts(entries).failures.map((f) => f.message);

describe('spec §8: validating an AppProject', () => {
  test('a valid list', () => {
    const r = validateDestinationServiceAccounts([
      { server: IN, namespace: 'guestbook', defaultServiceAccount: 'guestbook-deployer' },
      { server: '*', namespace: '*', defaultServiceAccount: 'default' },
    ]);
    assert.deepEqual(r, { valid: true, failures: [] });
  });

  test('"1. server contains ! anywhere → server has an invalid format, \'<server>\'"', () => {
    assert.deepEqual(messages([{ server: 'https://a!b', namespace: 'x', defaultServiceAccount: 'sa' }]), [
      "server has an invalid format, 'https://a!b'",
    ]);
    assert.deepEqual(messages([{ server: '!*', namespace: 'x', defaultServiceAccount: 'sa' }]), [
      "server has an invalid format, '!*'",
    ]);
  });

  test('"2. namespace contains ! anywhere → namespace has an invalid format, \'<namespace>\'"', () => {
    assert.deepEqual(messages([{ server: IN, namespace: '!kube-system', defaultServiceAccount: 'sa' }]), [
      "namespace has an invalid format, '!kube-system'",
    ]);
  });

  test('"3. defaultServiceAccount blank after trimming spaces, or contains any of ! * [ ] { } \\ / → defaultServiceAccount has an invalid format, \'<sa>\'"', () => {
    for (const sa of ['', '   ', 'a!', 'a*', 'a[', 'a]', 'a{', 'a}', 'a\\b', 'ns/sa']) {
      assert.deepEqual(
        messages([{ server: IN, namespace: 'x', defaultServiceAccount: sa }]),
        [`defaultServiceAccount has an invalid format, '${sa}'`],
        JSON.stringify(sa),
      );
    }
  });

  test('"4. server does not compile as a glob → server has an invalid format, \'<server>\'"', () => {
    assert.deepEqual(messages([{ server: 'https://[a-', namespace: 'x', defaultServiceAccount: 'sa' }]), [
      "server has an invalid format, 'https://[a-'",
    ]);
  });

  test('"5. namespace does not compile as a glob → namespace has an invalid format, \'<namespace>\'"', () => {
    assert.deepEqual(messages([{ server: IN, namespace: '[z-a]', defaultServiceAccount: 'sa' }]), [
      "namespace has an invalid format, '[z-a]'",
    ]);
  });

  test('"6. <server>/<namespace> already seen in this list → destinationServiceAccount \'<server>/<namespace>\' already added"', () => {
    assert.deepEqual(
      messages([
        { server: IN, namespace: 'guestbook', defaultServiceAccount: 'a' },
        { server: IN, namespace: 'guestbook', defaultServiceAccount: 'b' },
      ]),
      [`destinationServiceAccount '${IN}/guestbook' already added`],
    );
    assert.deepEqual(
      messages([
        { server: IN, defaultServiceAccount: 'a' },
        { server: IN, namespace: '', defaultServiceAccount: 'b' },
      ]),
      [`destinationServiceAccount '${IN}/' already added`],
      'an absent namespace is the empty one',
    );
  });

  test('"Empty namespace is valid. : is valid in defaultServiceAccount."', () => {
    assert.deepEqual(messages([{ server: IN, namespace: '', defaultServiceAccount: 'ns:sa' }]), []);
    assert.deepEqual(messages([{ server: IN, defaultServiceAccount: 'sa' }]), []);
  });

  test('"Checked per entry, in this order; the first failure is reported": every failure is listed, the first is Argo CD\'s', () => {
    const r = validateDestinationServiceAccounts([
      { server: IN, namespace: 'ok', defaultServiceAccount: 'sa' },
      { server: '[', namespace: '!x', defaultServiceAccount: ' ' },
      { server: IN, namespace: 'ok', defaultServiceAccount: 'other' },
    ]);
    assert.equal(r.valid, false);
    assert.deepEqual(r.failures, [
      { index: 1, field: 'namespace', message: "namespace has an invalid format, '!x'" },
      { index: 1, field: 'defaultServiceAccount', message: "defaultServiceAccount has an invalid format, ' '" },
      { index: 1, field: 'server', message: "server has an invalid format, '['" },
      { index: 2, field: 'server', message: `destinationServiceAccount '${IN}/ok' already added` },
    ]);
  });

  test('a server with ! that also fails to compile is reported once for that entry', () => {
    assert.deepEqual(messages([{ server: '![', namespace: 'x', defaultServiceAccount: 'sa' }]), [
      "server has an invalid format, '!['",
    ]);
  });
});
