// Static-token identities and the kubeconfigs written for them (src/controlplane/identities.ts).
import assert from 'node:assert/strict';
import { KubeConfig } from '@kubernetes/client-node';
import { test } from 'node:test';
import { parse } from 'yaml';
import {
  adminUser,
  auditPolicyYaml,
  controllerUser,
  kubeconfigYaml,
  tokenFile,
  withTokens,
} from '../../src/controlplane/identities.ts';

test('the token file lists token, user, uid and quoted groups; users without groups have three fields', () => {
  const users = withTokens([adminUser, controllerUser, { name: 'alice', groups: ['team-a', 'team-b'] }]);
  const lines = tokenFile(users).trimEnd().split('\n');
  assert.equal(lines.length, 3);
  assert.match(lines[0]!, /^[0-9a-f]{48},impersync-admin,static-0,"system:masters"$/);
  assert.match(lines[1]!, /^[0-9a-f]{48},impersync-controller,static-1$/);
  assert.match(lines[2]!, /^[0-9a-f]{48},alice,static-2,"team-a,team-b"$/);
  assert.equal(new Set(users.map((u) => u.token)).size, 3, 'every user gets its own token');
});

test('the controller identity has no groups, so it starts with no rights', () => {
  assert.deepEqual(controllerUser.groups ?? [], []);
});

test('names that would break the token file are refused with the offending value', () => {
  assert.throws(() => withTokens([{ name: 'a,b' }]), /user name "a,b" must be non-empty/);
  assert.throws(() => withTokens([{ name: '' }]), /user name "" must be non-empty/);
  assert.throws(() => withTokens([{ name: 'bob', groups: ['x y'] }]), /group "x y" of user bob/);
  assert.throws(() => withTokens([{ name: 'bob' }, { name: 'bob' }]), /user bob is listed twice/);
});

test('a kubeconfig verifies the server with the CA and carries the token and impersonation', () => {
  const caPem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const text = kubeconfigYaml({
    server: 'https://127.0.0.1:6443',
    caPem,
    name: 'controller',
    token: 't0k',
    impersonate: 'system:serviceaccount:a:b',
    namespace: 'a',
  });
  const kc = new KubeConfig();
  kc.loadFromString(text);
  assert.equal(kc.getCurrentCluster()?.server, 'https://127.0.0.1:6443');
  assert.equal(Buffer.from(kc.getCurrentCluster()?.caData ?? '', 'base64').toString(), caPem);
  assert.equal(kc.getCurrentCluster()?.skipTLSVerify, false);
  assert.equal(kc.getCurrentUser()?.token, 't0k');
  assert.equal(kc.getCurrentUser()?.impersonateUser, 'system:serviceaccount:a:b');
  assert.equal(kc.getContextObject(kc.getCurrentContext())?.namespace, 'a');
});

test('the audit policy logs every request at Metadata level', () => {
  const policy = parse(auditPolicyYaml) as { kind: string; rules: { level: string }[] };
  assert.equal(policy.kind, 'Policy');
  assert.deepEqual(policy.rules, [{ level: 'Metadata' }]);
});
