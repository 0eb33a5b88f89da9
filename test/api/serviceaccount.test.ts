// A ServiceAccount reference and the user name the API server knows it by: one pair of functions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serviceAccountFromUser, serviceAccountToUser } from '../../src/api/index.ts';

test('a ServiceAccount is the user system:serviceaccount:<namespace>:<name>, and back', () => {
  const ref = { namespace: 'team-a', name: 'deployer' };
  assert.equal(serviceAccountToUser(ref), 'system:serviceaccount:team-a:deployer');
  assert.deepEqual(serviceAccountFromUser(serviceAccountToUser(ref)), ref);
});

test('spec §3.4 keeps ns:name verbatim: what follows the namespace is the name, colons and all', () => {
  assert.deepEqual(serviceAccountFromUser('system:serviceaccount:a:b:c'), { namespace: 'a', name: 'b:c' });
  assert.equal(serviceAccountToUser({ namespace: 'a', name: 'b:c' }), 'system:serviceaccount:a:b:c');
  assert.deepEqual(serviceAccountFromUser('system:serviceaccount:lonely'), { namespace: 'lonely', name: '' });
});

test('any other user is no ServiceAccount', () => {
  assert.equal(serviceAccountFromUser('alice'), null);
  assert.equal(serviceAccountFromUser('system:serviceaccounts:team-a'), null);
});
