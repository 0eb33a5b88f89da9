import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { Cluster } from '../../src/api/index.ts';
import { IN_CLUSTER } from '../../src/api/index.ts';
import { CredentialError, credentialForCluster, credentialFromKubeConfig } from '../../src/kube/credentials.ts';
import { errorFromException, errorFromResponse, parseWarnings } from '../../src/kube/errors.ts';
import { describeIdentity } from '../../src/kube/types.ts';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const b64 = (s: string) => Buffer.from(s).toString('base64');

test("a Status body keeps the API server's reason and message verbatim", () => {
  const body = JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    reason: 'Forbidden',
    code: 403,
    message:
      'configmaps "x" is forbidden: User "system:serviceaccount:team:deployer" cannot patch resource "configmaps"',
  });
  const e = errorFromResponse(403, body);
  assert.equal(e.code, 403);
  assert.equal(e.reason, 'Forbidden');
  assert.match(e.message, /system:serviceaccount:team:deployer/);
  assert.equal(e.status?.['kind'], 'Status');
});

test('a non-Status body becomes the message; an empty one names the code', () => {
  assert.deepEqual(errorFromResponse(502, 'bad gateway\n'), { code: 502, reason: 'Unknown', message: 'bad gateway' });
  assert.deepEqual(errorFromResponse(404, ''), { code: 404, reason: 'NotFound', message: 'HTTP 404' });
});

test('a network failure is a value naming the server', () => {
  const e = errorFromException(
    'https://127.0.0.1:1',
    Object.assign(new Error('connect failed'), {
      cause: { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' },
    }),
  );
  assert.equal(e.code, 0);
  assert.equal(e.reason, 'ConnectionError');
  assert.match(e.message, /^cannot reach https:\/\/127\.0\.0\.1:1: connect failed: connect ECONNREFUSED/);
});

test('Warning headers are read as the texts they quote', () => {
  assert.deepEqual(parseWarnings('299 - "unknown field \\"spec.foo\\""'), ['unknown field "spec.foo"']);
  assert.deepEqual(parseWarnings(['299 - "a"', '299 - "b", 299 - "c"']), ['a', 'b', 'c']);
  assert.deepEqual(parseWarnings(undefined), []);
});

test('who a client acts as reads as the ServiceAccount user or the controller’s own credential', () => {
  assert.equal(describeIdentity({ impersonate: 'system:serviceaccount:a:b' }), 'system:serviceaccount:a:b');
  assert.equal(describeIdentity({ controller: true }), "controller's own credential");
});

test('a cluster Secret gives its own credential; in-cluster without one uses the controller', () => {
  const controller = { server: 'https://127.0.0.1:6443', bearerToken: 'controller-token' };
  assert.equal(credentialForCluster(IN_CLUSTER, controller), controller);
  const remote: Cluster = {
    name: 'remote',
    server: 'https://remote.example:6443/',
    secret: 'argocd/remote',
    config: {
      bearerToken: 'remote-token',
      tlsClientConfig: { caData: b64(PEM), serverName: 'kubernetes', insecure: false },
    },
  };
  assert.deepEqual(credentialForCluster(remote, controller), {
    server: 'https://remote.example:6443',
    bearerToken: 'remote-token',
    ca: PEM,
    serverName: 'kubernetes',
  });
  const basic: Cluster = {
    name: 'b',
    server: 'https://b',
    secret: 'argocd/b',
    config: { username: 'u', password: 'p', tlsClientConfig: { insecure: true } },
  };
  assert.deepEqual(credentialForCluster(basic, controller), {
    server: 'https://b',
    basic: { username: 'u', password: 'p' },
    insecure: true,
  });
  const bad: Cluster = {
    name: 'c',
    server: 'https://c',
    secret: 'argocd/c',
    config: { bearerToken: 't', tlsClientConfig: { caData: b64('not pem') } },
  };
  assert.throws(
    () => credentialForCluster(bad, controller),
    (e: unknown) =>
      e instanceof CredentialError &&
      /argocd\/c: config.tlsClientConfig.caData is not base64-encoded PEM/.test(e.message),
  );
});

test('a kubeconfig context gives server, CA, token; none of its impersonation settings', async () => {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:6443/', caData: b64(PEM), skipTLSVerify: false }],
    users: [{ name: 'u', token: 'abc', impersonateUser: 'someone-else' }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
  const cred = await credentialFromKubeConfig(kc);
  assert.deepEqual(cred, { server: 'https://127.0.0.1:6443', ca: PEM, bearerToken: 'abc' });
});
