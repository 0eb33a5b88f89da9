// Helm chart repositories and an OCI registry for the repository tests (issue 13): a chart
// repository over HTTPS with basic auth (index.yaml and archives from memory), chart archives made
// here (ustar + gzip, so that tests can also make hostile ones), and the CNCF distribution
// registry (scripts/registry-binary) with htpasswd auth (bcryptjs, test-only) and TLS.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import bcrypt from 'bcryptjs';
import { testCA } from './tls.ts';

export interface TarEntrySpec {
  path: string;
  content?: string;
  /** '0' file (default), '2' symlink, '1' hard link, '5' folder. */
  type?: string;
  linkTo?: string;
}

/** A gzipped ustar archive of these entries. */
export function tarGz(entries: readonly TarEntrySpec[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.content ?? '');
    const h = Buffer.alloc(512);
    h.write(e.path.slice(0, 100), 0, 'utf8');
    h.write('0000644\0', 100);
    h.write('0000000\0', 108);
    h.write('0000000\0', 116);
    h.write(`${body.length.toString(8).padStart(11, '0')}\0`, 124);
    h.write('00000000000\0', 136);
    h.write('        ', 148);
    h.write(e.type ?? '0', 156);
    if (e.linkTo) h.write(e.linkTo, 157);
    h.write('ustar\0', 257);
    h.write('00', 263);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    blocks.push(h, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

/** A chart archive: `<name>/Chart.yaml`, a ConfigMap template naming the version, and extra files. */
export function chartArchive(name: string, version: string, extra: Record<string, string> = {}): Buffer {
  const files: Record<string, string> = {
    'Chart.yaml': `apiVersion: v2\nname: ${name}\nversion: ${version}\n`,
    'values.yaml': 'greeting: hello\n',
    'templates/cm.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Chart.Name }}-{{ .Release.Name }}\ndata:\n  version: {{ .Chart.Version | quote }}\n  greeting: {{ .Values.greeting | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n  hasApps: {{ .Capabilities.APIVersions.Has "apps/v1/Deployment" | quote }}\n',
    ...extra,
  };
  return tarGz(Object.entries(files).map(([p, content]) => ({ path: `${name}/${p}`, content })));
}

export interface ChartSpec {
  name: string;
  version: string;
  archive: Buffer;
  /** Overrides what the index says (a digest attack, a URL on another host). */
  digest?: string;
  url?: string;
}

export interface HelmRepoServer {
  url: string;
  /** Requests by path, and the Authorization header each carried. */
  requests: Array<{ path: string; authorization: string | undefined }>;
  setCharts(charts: ChartSpec[]): void;
  close(): Promise<void>;
}

/**
 * A chart repository on 127.0.0.1: HTTPS with the test CA unless `plain`, basic auth when `auth`,
 * a client certificate signed by the test CA required when `requireClientCert`.
 */
export async function startHelmRepo(
  opts: { auth?: { username: string; password: string }; plain?: boolean; requireClientCert?: boolean } = {},
): Promise<HelmRepoServer> {
  let charts: ChartSpec[] = [];
  const requests: HelmRepoServer['requests'] = [];
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const p = new URL(req.url ?? '/', 'http://x').pathname;
    requests.push({ path: p, authorization: req.headers.authorization });
    if (opts.auth) {
      const want = `Basic ${Buffer.from(`${opts.auth.username}:${opts.auth.password}`).toString('base64')}`;
      if (req.headers.authorization !== want) {
        res.writeHead(401, { 'www-authenticate': 'Basic realm="charts"' });
        res.end();
        return;
      }
    }
    if (p === '/index.yaml') {
      const entries: Record<string, unknown[]> = {};
      for (const c of charts) {
        (entries[c.name] ??= []).push({
          apiVersion: 'v2',
          name: c.name,
          version: c.version,
          urls: [c.url ?? `${c.name}-${c.version}.tgz`],
          digest: c.digest ?? createHash('sha256').update(c.archive).digest('hex'),
        });
      }
      res.writeHead(200, { 'content-type': 'application/x-yaml' });
      res.end(JSON.stringify({ apiVersion: 'v1', entries }));
      return;
    }
    const chart = charts.find((c) => p === `/${c.name}-${c.version}.tgz`);
    if (!chart) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/gzip' });
    res.end(chart.archive);
  };
  const ca = testCA();
  const mtls = opts.requireClientCert ? { ca: ca.caCert, requestCert: true, rejectUnauthorized: true } : {};
  const server = opts.plain
    ? http.createServer(handler)
    : https.createServer({ cert: ca.cert, key: ca.key, ...mtls }, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${opts.plain ? 'http' : 'https'}://127.0.0.1:${port}`,
    requests,
    setCharts: (c) => {
      charts = c;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const registryScript = path.resolve(import.meta.dirname, '../../scripts/registry-binary');

/** The distribution registry's folder (scripts/registry-binary builds it once); throws saying how to get it. */
export function registryBinary(env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync('bash', [registryScript], { encoding: 'utf8', timeout: 40 * 60_000, env });
  const dir = (r.stdout ?? '').trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || dir === '') {
    throw new Error(
      `the OCI registry tests need the CNCF distribution registry and scripts/registry-binary could not provide it (exit ${r.status}):\n${r.stderr ?? r.error?.message}\n` +
        'Install Go 1.26+ and run scripts/registry-binary, or set IMPERSYNC_REGISTRY_DIR to a folder holding a registry binary.',
    );
  }
  return path.join(dir, 'registry');
}

export interface TestRegistry {
  /** `127.0.0.1:<port>` */
  host: string;
  close(): Promise<void>;
}

/** A registry on 127.0.0.1 with TLS (the test CA) and one htpasswd user. */
export async function startRegistry(user: { username: string; password: string }): Promise<TestRegistry> {
  const binary = registryBinary();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'impersync-registry-'));
  const ca = testCA();
  const port = await freePort();
  await writeFile(path.join(dir, 'htpasswd'), `${user.username}:${bcrypt.hashSync(user.password, 5)}\n`);
  await writeFile(path.join(dir, 'cert.pem'), ca.cert);
  await writeFile(path.join(dir, 'key.pem'), ca.key);
  await writeFile(
    path.join(dir, 'config.yml'),
    [
      'version: 0.1',
      'log: {level: error}',
      `storage: {filesystem: {rootdirectory: ${JSON.stringify(path.join(dir, 'data'))}}}`,
      'http:',
      `  addr: 127.0.0.1:${port}`,
      `  tls: {certificate: ${JSON.stringify(path.join(dir, 'cert.pem'))}, key: ${JSON.stringify(path.join(dir, 'key.pem'))}}`,
      'auth:',
      `  htpasswd: {realm: impersync, path: ${JSON.stringify(path.join(dir, 'htpasswd'))}}`,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(binary, ['serve', path.join(dir, 'config.yml')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const deadline = Date.now() + 20_000;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const req = https.get({ host: '127.0.0.1', port, path: '/v2/', ca: ca.caCert }, (res) => {
        res.resume();
        resolve(res.statusCode === 401 || res.statusCode === 200);
      });
      req.on('error', () => resolve(false));
    });
    if (up) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the registry did not start: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    host: `127.0.0.1:${port}`,
    close: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Pushes a chart archive with helm's own OCI client (login through stdin, a private registry config). */
export async function helmPush(
  helm: string,
  archive: Buffer,
  name: string,
  version: string,
  registry: string,
  user: { username: string; password: string },
): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'impersync-push-'));
  try {
    const file = path.join(dir, `${name}-${version}.tgz`);
    await writeFile(file, archive);
    const caFile = path.join(dir, 'ca.pem');
    await writeFile(caFile, testCA().caCert);
    const env = {
      ...process.env,
      HELM_REGISTRY_CONFIG: path.join(dir, 'registry.json'),
      HELM_CACHE_HOME: dir,
      HELM_CONFIG_HOME: dir,
      HELM_DATA_HOME: dir,
    };
    const run = (args: string[], input?: string) => {
      const r = spawnSync(helm, args, { env, input, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`helm ${args[0]} failed: ${r.stderr}`);
    };
    run(
      ['registry', 'login', registry, '--username', user.username, '--password-stdin', `--ca-file=${caFile}`],
      user.password,
    );
    run(['push', file, `oci://${registry}/charts`, `--ca-file=${caFile}`]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = http.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}
