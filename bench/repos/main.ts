// Benchmark (issue 13): 100 Applications sharing one private Git repository (HTTPS, basic auth,
// private CA), and 100 Applications of one chart in a private Helm repository (HTTPS, basic auth),
// rendered through a real renderer process (the controller's child renderer) the way the
// controller asks: a cold pass (empty cache), then warm passes side by side in one run, with refs
// and indexes reused within the refresh interval (what a periodic refresh sends) and without (what a
// refresh would cost if every Application asked the remote itself). Prints time, requests to the
// servers (Git ref advertisements, index.yaml downloads) and the ratios. Not a test: it asserts
// nothing. About a minute.
//   node bench/repos/main.ts [--apps 100] [--concurrency 20]
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { RepositoryAccess } from '../../src/api/repository.ts';
import { ChildRenderer } from '../../src/renderer/child.ts';
import type { RenderInput } from '../../src/source/index.ts';
import { TestRepo, startGitHttpServer } from '../../test/support/git.ts';
import { chartArchive, startHelmRepo } from '../../test/support/helm.ts';
import { testCA } from '../../test/support/tls.ts';
import { toolsDir } from '../../test/source/tools.ts';
import { fixed, intFlags, table } from '../common/report.ts';

const USAGE =
  'usage: node bench/repos/main.ts [--apps N (default 100)] [--concurrency C (default 20, the status processors)]';
const flags = intFlags(USAGE, { apps: 100, concurrency: 20 });
const N = flags.apps;
const REFRESH_MS = 180_000;
const PASSWORD = 'bench-password';

async function pool<T>(items: T[], concurrency: number, fn: (t: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

const ca = testCA();
const repo = await TestRepo.create();
const files: Record<string, string> = {};
for (let i = 0; i < N; i++) {
  files[`apps/app-${i}/cm.yaml`] = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-${i}\ndata:\n  i: "${i}"\n`;
}
await repo.commit(files);
const git = await startGitHttpServer('/', {
  tls: { cert: ca.cert, key: ca.key },
  auth: { username: 'bench', password: PASSWORD },
});
const helm = await startHelmRepo({ auth: { username: 'bench', password: PASSWORD } });
helm.setCharts([{ name: 'shared', version: '1.0.0', archive: chartArchive('shared', '1.0.0') }]);
const gitURL = `${git.baseURL}${repo.dir}`;
const gitAccess: RepositoryAccess = { url: gitURL, username: 'bench', password: PASSWORD, caCerts: ca.caCert };
const helmAccess: RepositoryAccess = {
  url: helm.url,
  type: 'helm',
  username: 'bench',
  password: PASSWORD,
  caCerts: ca.caCert,
};

const cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-bench-repos-'));
const renderer = new ChildRenderer({ cacheDir, toolsDir: toolsDir() });
await renderer.start();

const scenarios = {
  git: (i: number, maxAge: number): RenderInput => ({
    source: { repoURL: gitURL, path: `apps/app-${i}`, targetRevision: 'main' },
    appName: `app-${i}`,
    repository: gitAccess,
    ...(maxAge ? { revisionMaxAgeMs: maxAge } : {}),
  }),
  helm: (i: number, maxAge: number): RenderInput => ({
    source: { repoURL: helm.url, chart: 'shared', targetRevision: '>=1.0.0' },
    appName: `app-${i}`,
    destinationNamespace: `ns-${i}`,
    repository: helmAccess,
    ...(maxAge ? { revisionMaxAgeMs: maxAge } : {}),
  }),
};
const remoteAsks = {
  git: () => git.requestLog().filter((r) => r.includes('/info/refs')).length,
  helm: () => helm.requests.filter((r) => r.path === '/index.yaml').length,
};

const rows: string[][] = [];
const summary: string[] = [];
for (const name of ['git', 'helm'] as const) {
  const ids = Array.from({ length: N }, (_, i) => i);
  const pass = async (label: string, maxAge: number) => {
    const before = remoteAsks[name]();
    const started = performance.now();
    await pool(ids, flags.concurrency, (i) => renderer.render(scenarios[name](i, maxAge)));
    const ms = performance.now() - started;
    const asks = remoteAsks[name]() - before;
    rows.push([
      name === 'git' ? 'private Git repository' : 'private Helm chart',
      label,
      fixed(ms, 0),
      fixed(ms / N, 1),
      String(asks),
    ]);
    return { ms, asks };
  };
  await pass('cold (empty cache)', REFRESH_MS);
  const coalesced = await pass('warm, refs/index reused within the refresh interval', REFRESH_MS);
  const perApp = await pass('warm, every Application asks the remote', 0);
  summary.push(
    `${name}: a warm refresh of ${N} Applications asking the remote each time takes ${fixed(perApp.ms / Math.max(1, coalesced.ms), 1)}x ` +
      `the time of one reusing what was fetched within the refresh interval, and sends ${perApp.asks} requests instead of ${coalesced.asks}`,
  );
}
table(
  `bench/repos: ${N} Applications, ${flags.concurrency} renders asked at once, one renderer process; remote requests: Git ref advertisements (GET info/refs, a 401 challenge and the authenticated one per ls-remote or fetch), Helm index.yaml downloads (one request each, the credentials sent up front)`,
  ['scenario', 'pass', 'total ms', 'ms per app', 'remote requests'],
  rows,
);
process.stdout.write(`${summary.join('\n')}\n`);
await renderer.close();
await git.close();
await helm.close();
await repo.remove();
await rm(cacheDir, { recursive: true, force: true });
