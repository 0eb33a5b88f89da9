// A credential template goes only where it belongs, end to end: the controller's choice of
// credentials (repository/access.ts through controller/render.ts) and a real renderer running git
// against recording HTTPS servers on loopback. Each server answers every request with a Basic
// challenge and writes down every Authorization it is sent; git hands the template's password to
// whatever server challenges it for the URL it was given. With Argo CD's string prefix rule, a
// tenant's URL with the template's host as user information, a look-alike host, another port or a
// `..` path collects the password; here none of them does.
import assert from 'node:assert/strict';
import https from 'node:https';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseRepositorySecret } from '../../src/api/repository.ts';
import type { AppProject, Application } from '../../src/api/index.ts';
import { renderApplication } from '../../src/controller/render.ts';
import type { RepositoryState } from '../../src/repository/access.ts';
import { withTestRenderer, refused } from '../support/renderer.ts';
import { testCA } from '../support/tls.ts';

const PASSWORD = 'template-Pa55word-never-elsewhere';
const basic = Buffer.from(`corp:${PASSWORD}`).toString('base64');

interface Recorder {
  host: string;
  port: number;
  /** Authorization headers received, and the paths asked for. */
  seen: string[];
  paths: string[];
  close(): Promise<void>;
}

async function recorder(host: string): Promise<Recorder> {
  const ca = testCA();
  const seen: string[] = [];
  const paths: string[] = [];
  const server = https.createServer({ cert: ca.cert, key: ca.key }, (req, res) => {
    paths.push(req.url ?? '');
    if (req.headers.authorization) seen.push(req.headers.authorization);
    res.writeHead(401, { 'www-authenticate': 'Basic realm="recorder"' }).end('no');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    host,
    port: (server.address() as AddressInfo).port,
    seen,
    paths,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The Authorization headers that carry the template's password (decoded, as a server would read them). */
const leaked = (r: Recorder) =>
  r.seen.filter(
    (h) =>
      h.includes(PASSWORD) ||
      Buffer.from(h.replace(/^Basic /, ''), 'base64')
        .toString()
        .includes(PASSWORD),
  );

let work: string;
let home: Recorder;
let elsewhere: Recorder;
let lookAlike: Recorder;

before(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'impersync-template-hosts-'));
  [home, elsewhere, lookAlike] = await Promise.all([
    recorder('127.0.0.1'),
    recorder('127.0.0.2'),
    recorder('127.0.0.10'),
  ]);
});

after(async () => {
  await Promise.all([home.close(), elsewhere.close(), lookAlike.close()]);
  await rm(work, { recursive: true, force: true });
});

function state(templateURL: string): RepositoryState {
  const ca = testCA().caCert;
  return {
    configs: [
      parseRepositorySecret({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'corp', namespace: 'argocd', labels: { 'argocd.argoproj.io/secret-type': 'repo-creds' } },
        stringData: { url: templateURL, username: 'corp', password: PASSWORD },
      }),
    ],
    errors: [],
    knownHosts: '',
    tlsCerts: { '127.0.0.1': ca, '127.0.0.2': ca, '127.0.0.10': ca },
  };
}

const project: AppProject = {
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'AppProject',
  metadata: { name: 'tenant', namespace: 'argocd' },
  spec: { sourceRepos: ['*'] },
} as AppProject;

function app(repoURL: string): Application {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'tenant-app', namespace: 'argocd' },
    spec: {
      project: 'tenant',
      source: { repoURL, path: '.', targetRevision: 'main' },
      destination: { server: 'https://kubernetes.default.svc', namespace: 'tenant' },
    },
  } as Application;
}

/** Renders `repoURL` with the template at `templateURL`; the render fails (every server refuses). */
async function renderWith(templateURL: string, repoURL: string): Promise<string> {
  let message = '';
  await withTestRenderer({ work, repoURL, token: 'render-token' }, {}, async (client) => {
    const err = await refused(
      renderApplication(client, app(repoURL), {
        project,
        controllerNamespace: 'argocd',
        repositories: state(templateURL),
      }),
    );
    message = err.message;
  });
  assert.ok(!message.includes(PASSWORD), message);
  return message;
}

describe("a credential template's password", () => {
  it('goes to its own host, port and path: the recorder sees it (the servers do record)', async () => {
    await renderWith(`https://127.0.0.1:${home.port}/team-a`, `https://127.0.0.1:${home.port}/team-a/app.git`);
    assert.ok(home.seen.includes(`Basic ${basic}`), `the recorder saw ${JSON.stringify(home.seen)}`);
    assert.equal(leaked(home).length, home.seen.length, 'leaked() recognises the password');
    home.seen.length = 0;
  });

  it("does not go to a tenant's host written after the template's host as user information", async () => {
    const url = `https://127.0.0.1@127.0.0.2:${elsewhere.port}/x.git`;
    await renderWith('https://127.0.0.1', url);
    assert.ok(elsewhere.paths.length > 0, 'git asked the tenant host');
    assert.deepEqual(leaked(elsewhere), []);
  });

  it('does not go to a look-alike host whose name starts with the template host', async () => {
    await renderWith('https://127.0.0.1', `https://127.0.0.10:${lookAlike.port}/x.git`);
    assert.ok(lookAlike.paths.length > 0, 'git asked the look-alike host');
    assert.deepEqual(leaked(lookAlike), []);
  });

  it('does not go to another port of the template host, and the message names the template not used', async () => {
    const message = await renderWith('https://127.0.0.1', `https://127.0.0.1:${home.port}/x.git`);
    assert.deepEqual(leaked(home), []);
    assert.match(message, /credential template argocd\/corp was not used: Argo CD matches templates by string prefix/);
  });

  it("does not go to a path outside the template's through a '..' segment", async () => {
    home.paths.length = 0;
    await renderWith(`https://127.0.0.1:${home.port}/team-a`, `https://127.0.0.1:${home.port}/team-a/../evil/x.git`);
    assert.ok(
      home.paths.some((p) => p.startsWith('/evil/')),
      `git went to where the URL leads: ${home.paths.join(', ')}`,
    );
    assert.deepEqual(leaked(home), []);
  });
});
