// The controller's own kubeconfig loader (src/kube/kubeconfig.ts) against client-node 2.0.1's
// KubeConfig on the same files: the same clusters, users and contexts, the same credential, the
// same errors; then what only ours does (token files read again) and the exec user handed to
// client-node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { Kubeconfig, SERVICEACCOUNT_DIR } from '../../src/kube/kubeconfig.ts';
import {
  CredentialError,
  credentialFromKubeConfig,
  credentialThroughClientNode,
  loadKubeConfig,
  needsClientNode,
  type Credential,
} from '../../src/kube/credentials.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'impersync-kubeconfig-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Sets process.env keys for one test (client-node reads only process.env). */
function withEnv(t: { after(fn: () => void): void }, vars: Record<string, string | undefined>): void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const set = (v: Record<string, string | undefined>) => {
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) delete process.env[k];
      else process.env[k] = x;
    }
  };
  set(vars);
  t.after(() => set(saved));
}

const MAIN = `apiVersion: v1
kind: Config
current-context: token
clusters:
- name: files
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority: certs/ca.crt
    tls-server-name: api.internal
- name: inline
  cluster:
    server: https://api.example:443
    certificate-authority-data: ${b64('INLINE CA')}
- name: insecure
  cluster:
    server: http://127.0.0.1:8080
    insecure-skip-tls-verify: true
- name: plain-http
  cluster:
    server: http://127.0.0.1:8080
- name: yes-is-a-string
  cluster:
    server: https://10.0.0.2
    insecure-skip-tls-verify: yes
users:
- name: token
  user:
    token: abc.def
    as: someone-else
- name: cert-files
  user:
    client-certificate: certs/client.crt
    client-key: /abs/client.key
- name: cert-data
  user:
    client-certificate-data: ${b64('CERT DATA')}
    client-key-data: ${b64('KEY DATA')}
- name: basic
  user:
    username: admin
    password: secret
- name: nothing
- name: custom
  user:
    auth-provider:
      name: custom
      config: { some: setting }
contexts:
- name: token
  context: { cluster: inline, user: token, namespace: team-a }
- name: files
  context: { cluster: files, user: cert-files }
- name: data
  context: { cluster: insecure, user: cert-data }
- name: basic
  context: { cluster: yes-is-a-string, user: basic }
- name: no-user
  context: { cluster: files }
- name: http
  context: { cluster: plain-http, user: nothing }
- name: custom
  context: { cluster: inline, user: custom }
- name: dangling
  context: { cluster: missing, user: token }
`;

function fixture(t: { after(fn: () => void): void }): { dir: string; file: string } {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'certs'));
  writeFileSync(join(dir, 'certs', 'ca.crt'), 'FILE CA');
  writeFileSync(join(dir, 'certs', 'client.crt'), 'FILE CERT');
  const file = join(dir, 'config');
  writeFileSync(file, MAIN);
  return { dir, file };
}

/** What both loaders hold, with nulls and absent fields alike and our own tokenFile left out. */
function shape(kc: {
  getClusters(): readonly object[];
  getUsers(): readonly object[];
  getContexts(): readonly object[];
  getCurrentContext(): string;
}): unknown {
  return JSON.parse(
    JSON.stringify({
      clusters: kc.getClusters(),
      users: kc.getUsers().map((u) => ({ ...u, tokenFile: undefined })),
      contexts: kc.getContexts(),
      current: kc.getCurrentContext(),
    }),
  );
}

/** A credential without its functions, and what its authorization gives now. */
async function plain(c: Credential): Promise<unknown> {
  const { authorization, exec, ...rest } = c;
  void exec;
  return { ...rest, authorization: authorization ? await authorization() : undefined };
}

async function errorOf(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    return (err as Error).message;
  }
  return 'no error';
}

test('one file: the same clusters, users, contexts and current context as client-node, paths made absolute', (t) => {
  const { dir, file } = fixture(t);
  const ours = new Kubeconfig();
  ours.loadFromFile(file);
  const theirs = new KubeConfig();
  theirs.loadFromFile(file);
  assert.deepEqual(shape(ours), shape(theirs));
  assert.equal(ours.getCluster('files')?.caFile, join(dir, 'certs', 'ca.crt'));
  assert.equal(ours.getUser('cert-files')?.certFile, join(dir, 'certs', 'client.crt'));
  assert.equal(ours.getUser('cert-files')?.keyFile, '/abs/client.key');
  // js-yaml's reading, which client-node has: `yes` is no boolean.
  assert.equal(ours.getCluster('yes-is-a-string')?.skipTLSVerify, false);
});

test("every context's credential is client-node's (token, CA and cert files or data, basic, insecure, server name)", async (t) => {
  const { file } = fixture(t);
  writeFileSync(join(file, '..', 'client.key'), 'unused');
  for (const context of ['token', 'data', 'basic', 'no-user']) {
    const ours = loadKubeConfig({ kubeconfig: file, context });
    const theirs = new KubeConfig();
    theirs.loadFromFile(file);
    theirs.setCurrentContext(context);
    assert.equal(needsClientNode(ours.getCurrentUser()), false, context);
    assert.deepEqual(
      await plain(await credentialFromKubeConfig(ours)),
      await plain(await credentialThroughClientNode(theirs)),
      context,
    );
  }
  const token = await credentialFromKubeConfig(loadKubeConfig({ kubeconfig: file }));
  assert.deepEqual(token, { server: 'https://api.example:443', ca: 'INLINE CA', bearerToken: 'abc.def' });
  const basic = await credentialFromKubeConfig(loadKubeConfig({ kubeconfig: file, context: 'basic' }));
  assert.deepEqual(basic, { server: 'https://10.0.0.2', basic: { username: 'admin', password: 'secret' } });
  const data = await credentialFromKubeConfig(loadKubeConfig({ kubeconfig: file, context: 'data' }));
  assert.deepEqual(data, { server: 'http://127.0.0.1:8080', cert: 'CERT DATA', key: 'KEY DATA', insecure: true });
  // client-node reads no TLS file for a context without a user; neither do we.
  const noUser = await credentialFromKubeConfig(loadKubeConfig({ kubeconfig: file, context: 'no-user' }));
  assert.deepEqual(noUser, { server: 'https://10.0.0.1:6443', serverName: 'api.internal' });
});

test("the errors are client-node's, under the CLI's words", async (t) => {
  const { file } = fixture(t);
  const same = async (context: string) => {
    const theirs = new KubeConfig();
    theirs.loadFromFile(file);
    theirs.setCurrentContext(context);
    const ours = loadKubeConfig({ kubeconfig: file });
    ours.setCurrentContext(context);
    const mine = await errorOf(credentialFromKubeConfig(ours));
    assert.equal(mine, await errorOf(credentialThroughClientNode(theirs)), context);
    return mine;
  };
  // The key file /abs/client.key does not exist.
  assert.match(await same('files'), /^cannot read the credentials of kubeconfig context 'files': ENOENT.*client\.key/);
  assert.equal(
    await same('http'),
    "cannot read the credentials of kubeconfig context 'http': HTTP protocol is not allowed when skipTLSVerify is not set or false",
  );
  assert.equal(await same('dangling'), "kubeconfig context 'dangling' names no cluster");
  assert.equal(await same('nowhere'), "kubeconfig context 'nowhere' names no cluster");
  assert.equal(
    await errorOf(() => loadKubeConfig({ kubeconfig: file, context: 'nowhere' })),
    "kubeconfig has no context 'nowhere'",
  );
  const missing = join(file, '..', 'absent');
  assert.equal(
    await errorOf(() => loadKubeConfig({ kubeconfig: missing })),
    `cannot load kubeconfig ${missing}: ${await errorOf(() => new KubeConfig().loadFromFile(missing))}`,
  );
  for (const [text, message] of [
    ['clusters: [{ cluster: { server: x } }]', 'clusters[0].name is missing'],
    ['clusters: [{ name: a }]', 'clusters[0].cluster is missing'],
    ['clusters: [{ name: a, cluster: {} }]', 'clusters[0].cluster.server is missing'],
    ['users: [{ name: a }, { user: {} }]', 'users[1].name is missing'],
    ['contexts: [{ name: a, context: { user: u } }]', 'contexts[0].context.cluster is missing'],
    ['contexts: [{ name: a }]', 'contexts[0].context is missing'],
  ] as const) {
    writeFileSync(file, text);
    assert.equal(await errorOf(() => new KubeConfig().loadFromFile(file)), message);
    assert.equal(
      await errorOf(() => loadKubeConfig({ kubeconfig: file })),
      `cannot load kubeconfig ${file}: ${message}`,
    );
  }
  assert.ok(new CredentialError('x') instanceof Error);
});

test('KUBECONFIG: its files merged as client-node merges them (a later current-context wins, names may not repeat)', (t) => {
  const dir = tempDir(t);
  const a = join(dir, 'a', 'config');
  const b = join(dir, 'b', 'config');
  mkdirSync(join(dir, 'a'));
  mkdirSync(join(dir, 'b'));
  writeFileSync(
    a,
    'current-context: one\nclusters: [{ name: c1, cluster: { server: "https://one", certificate-authority: ca.crt } }]\n' +
      'users: [{ name: u1, user: { token: t1 } }]\ncontexts: [{ name: one, context: { cluster: c1, user: u1 } }]\n',
  );
  writeFileSync(
    b,
    'current-context: two\nclusters: [{ name: c2, cluster: { server: "https://two", certificate-authority: ca.crt } }]\n' +
      'users: [{ name: u2, user: { client-certificate: c.crt, client-key: c.key } }]\n' +
      'contexts: [{ name: two, context: { cluster: c2, user: u2 } }]\n',
  );
  const list = ['', a, '', b].join(delimiter);
  withEnv(t, { KUBECONFIG: list });
  const ours = new Kubeconfig();
  ours.loadFromDefault({ env: { KUBECONFIG: list } });
  const theirs = new KubeConfig();
  theirs.loadFromDefault();
  assert.deepEqual(shape(ours), shape(theirs));
  assert.equal(ours.getCurrentContext(), 'two');
  // Each file's relative paths from its own directory.
  assert.equal(ours.getCluster('c1')?.caFile, join(dir, 'a', 'ca.crt'));
  assert.equal(ours.getUser('u2')?.keyFile, join(dir, 'b', 'c.key'));

  writeFileSync(b, 'clusters: [{ name: c1, cluster: { server: "https://again" } }]\n');
  const dup = (() => {
    try {
      new Kubeconfig().loadFromDefault({ env: { KUBECONFIG: list } });
      return 'no error';
    } catch (err) {
      return (err as Error).message;
    }
  })();
  assert.equal(dup, 'Duplicate cluster: c1');
  assert.throws(() => new KubeConfig().loadFromDefault(), { message: dup });
});

test('no KUBECONFIG: ~/.kube/config, else in-cluster (IPv6 bracketed, token read again), else localhost:8080', async (t) => {
  const dir = tempDir(t);
  const home = join(dir, 'home');
  mkdirSync(join(home, '.kube'), { recursive: true });
  writeFileSync(
    join(home, '.kube', 'config'),
    'current-context: h\nclusters: [{ name: c, cluster: { server: "https://home" } }]\ncontexts: [{ name: h, context: { cluster: c } }]\n',
  );
  const fromHome = new Kubeconfig();
  fromHome.loadFromDefault({ env: { HOME: home }, serviceAccountDir: join(dir, 'none') });
  assert.equal(fromHome.getCurrentCluster()?.server, 'https://home');

  // client-node's in-cluster files sit under a prefix it is given; ours in a directory.
  const sa = join(dir, SERVICEACCOUNT_DIR);
  mkdirSync(sa, { recursive: true });
  writeFileSync(join(sa, 'token'), 'sa-token-1');
  writeFileSync(join(sa, 'ca.crt'), 'SA CA');
  writeFileSync(join(sa, 'namespace'), 'argocd');
  const env = { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443', HOME: join(dir, 'nohome') };
  withEnv(t, env);
  const ours = new Kubeconfig();
  ours.loadFromDefault({ env, serviceAccountDir: sa });
  const theirs = new KubeConfig();
  theirs.loadFromCluster(dir);
  assert.deepEqual(shape(ours), shape(theirs));
  assert.equal(ours.getCurrentCluster()?.server, 'https://[fd00::1]:443');
  assert.equal(needsClientNode(ours.getCurrentUser()), false);

  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const cred = await credentialFromKubeConfig(ours);
  assert.equal(cred.ca, 'SA CA');
  assert.equal(cred.server, 'https://[fd00::1]:443');
  assert.equal(await cred.authorization?.(), 'Bearer sa-token-1');
  assert.equal(await (await credentialThroughClientNode(theirs)).authorization?.(), 'Bearer sa-token-1');
  // The kubelet rotates the projected token: read again once the last read is 30 s old.
  writeFileSync(join(sa, 'token'), 'sa-token-2\n');
  t.mock.timers.tick(29_000);
  assert.equal(await cred.authorization?.(), 'Bearer sa-token-1');
  t.mock.timers.tick(1_001);
  assert.equal(await cred.authorization?.(), 'Bearer sa-token-2');
  rmSync(join(sa, 'token'));
  t.mock.timers.tick(30_001);
  await assert.rejects(cred.authorization?.() ?? Promise.resolve(), /ENOENT/);

  const http = new Kubeconfig();
  http.loadFromCluster({
    env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '80' },
    serviceAccountDir: sa,
  });
  assert.equal(http.getCurrentCluster()?.server, 'http://10.96.0.1:80');

  // Nothing at all: client-node's last resort, which its agent then refuses.
  const last = new Kubeconfig();
  last.loadFromDefault({ env: { HOME: join(dir, 'nohome') }, serviceAccountDir: join(dir, 'none') });
  assert.equal(last.getCurrentCluster()?.server, 'http://localhost:8080');
  assert.equal(
    await errorOf(credentialFromKubeConfig(last)),
    "cannot read the credentials of kubeconfig context 'loaded-context': HTTP protocol is not allowed when skipTLSVerify is not set or false",
  );
});

test("a user's token file (client-node's token-file, client-go's tokenFile) is read again as it rotates", async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'tok'), 'first\n');
  const file = join(dir, 'config');
  writeFileSync(
    file,
    'current-context: a\nclusters: [{ name: c, cluster: { server: "https://x" } }]\n' +
      'users: [{ name: go, user: { tokenFile: tok } }, { name: node, user: { token-file: ' +
      JSON.stringify(join(dir, 'tok')) +
      ' } }, { name: both, user: { token: inline, tokenFile: tok } }]\n' +
      'contexts: [{ name: a, context: { cluster: c, user: go } }, { name: b, context: { cluster: c, user: node } }, ' +
      '{ name: c, context: { cluster: c, user: both } }]\n',
  );
  t.mock.timers.enable({ apis: ['Date'], now: 5_000_000 });
  const go = await credentialFromKubeConfig(loadKubeConfig({ kubeconfig: file }));
  const node = await credentialFromKubeConfig(loadKubeConfig({ kubeconfig: file, context: 'b' }));
  assert.equal(go.bearerToken, undefined);
  assert.equal(await go.authorization?.(), 'Bearer first');
  assert.equal(await node.authorization?.(), 'Bearer first');
  writeFileSync(join(dir, 'tok'), 'second');
  t.mock.timers.tick(30_001);
  assert.equal(await go.authorization?.(), 'Bearer second');
  assert.equal(await node.authorization?.(), 'Bearer second');
  // An inline token wins, as in client-go and client-node.
  assert.deepEqual(await credentialFromKubeConfig(loadKubeConfig({ kubeconfig: file, context: 'c' })), {
    server: 'https://x',
    bearerToken: 'inline',
  });
  rmSync(join(dir, 'tok'));
  // client-node reads token-file as it loads the file, so a missing one fails the load; tokenFile
  // is read when the credential is made.
  assert.match(await errorOf(async () => loadKubeConfig({ kubeconfig: file })), /^cannot load kubeconfig .*: ENOENT/);
  writeFileSync(
    file,
    'current-context: a\nclusters: [{ name: c, cluster: { server: "https://x" } }]\n' +
      'users: [{ name: go, user: { tokenFile: tok } }]\ncontexts: [{ name: a, context: { cluster: c, user: go } }]\n',
  );
  assert.match(
    await errorOf(credentialFromKubeConfig(loadKubeConfig({ kubeconfig: file }))),
    /^cannot read the credentials of kubeconfig context 'a': ENOENT/,
  );
});

test("an exec user is still client-node's: loaded on demand, its plugin run for the header", async (t) => {
  const dir = tempDir(t);
  const plugin = join(dir, 'plugin.mjs');
  writeFileSync(
    plugin,
    'console.log(JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", status: { token: "from-exec" } }))\n',
  );
  const file = join(dir, 'config');
  writeFileSync(
    file,
    'current-context: e\nclusters: [{ name: c, cluster: { server: "https://x", certificate-authority-data: ' +
      b64('EXEC CA') +
      ' } }]\nusers: [{ name: e, user: { exec: { apiVersion: client.authentication.k8s.io/v1, command: ' +
      JSON.stringify(process.execPath) +
      ', args: [' +
      JSON.stringify(plugin) +
      '], interactiveMode: Never } } }]\ncontexts: [{ name: e, context: { cluster: c, user: e } }]\n',
  );
  const kc = loadKubeConfig({ kubeconfig: file });
  assert.equal(needsClientNode(kc.getCurrentUser()), true);
  const cred = await credentialFromKubeConfig(kc);
  assert.equal(cred.ca, 'EXEC CA');
  assert.equal(await cred.authorization?.(), 'Bearer from-exec');
  const theirs = new KubeConfig();
  theirs.loadFromFile(file);
  assert.deepEqual(await plain(cred), await plain(await credentialThroughClientNode(theirs)));
  assert.equal(needsClientNode(loadKubeConfig({ kubeconfig: file }).getCurrentUser()), true);
});

test('an auth provider other than a token file goes to client-node too; a client-node KubeConfig is taken as it is', async (t) => {
  const { file } = fixture(t);
  const ours = loadKubeConfig({ kubeconfig: file, context: 'custom' });
  assert.equal(needsClientNode(ours.getCurrentUser()), true);
  const theirs = new KubeConfig();
  theirs.loadFromFile(file);
  theirs.setCurrentContext('custom');
  const cred = await credentialFromKubeConfig(ours);
  assert.deepEqual(await plain(cred), await plain(await credentialThroughClientNode(theirs)));
  assert.equal(typeof cred.authorization, 'function');
  // The tests' client-node KubeConfigs: read as they are.
  theirs.setCurrentContext('token');
  assert.deepEqual(await credentialFromKubeConfig(theirs), {
    server: 'https://api.example:443',
    ca: 'INLINE CA',
    bearerToken: 'abc.def',
  });
});
