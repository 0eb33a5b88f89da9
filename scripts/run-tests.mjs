// Runs the whole test suite with Node's built-in runner: unit tests under test/ and the end-to-end
// tests under test/e2e/ (which start a real etcd + kube-apiserver + kube-controller-manager).
// Test files are TypeScript, run directly by Node 24's type stripping.
//
// The binaries the tests need (control plane; helm and kustomize for rendering; kwok and
// kube-scheduler for simulated nodes; the distribution registry for the OCI tests; Argo CD's bundled
// health checks, the controller's default library and their test suite; Argo CD's
// argocd binaries for the plugin and drop-in tests, and the same release's CRDs and notifications
// catalog for the drop-in tests; Debian's redis-server for Argo CD's cache) are obtained first, each
// once, so that a fresh machine builds them with their progress visible instead of inside a test
// (`npm start` builds only etcd and kube-apiserver; the control-plane script then adds
// kube-controller-manager alone). A failure here does not stop the run: the tests that need a binary
// then fail with a message saying how to get it.
//
// One after the other on small machines, in parallel chains on larger ones. A `go build` already
// compiles as many packages at once as there are cores (-p defaults to GOMAXPROCS), so on 2 cores
// one build keeps both busy and a second one would only share them, and hold more memory. With 4 or
// more cores the builds' serial stretches (linking, the largest packages, downloads) leave cores
// idle that an independent build can use. kwok's script stays after the control plane's: its
// kube-scheduler reuses the k8s.io/kubernetes packages that build leaves in the Go build cache,
// which two builds at once would both compile.
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

// The tools' folder is handed to the tests, so that an `impersync run` a test starts finds helm and
// kustomize as the test itself does.
const exported = {
  'scripts/tool-binaries': 'IMPERSYNC_TOOLS_DIR',
  'scripts/registry-binary': 'IMPERSYNC_REGISTRY_DIR',
  'scripts/health-scripts': 'IMPERSYNC_HEALTH_SCRIPTS_DIR',
  'scripts/argocd-dashboard': 'IMPERSYNC_ARGOCD_DASHBOARD',
  'scripts/argocd-binaries': 'IMPERSYNC_ARGOCD_DIR',
  'scripts/argocd-data': 'IMPERSYNC_ARGOCD_DATA_DIR',
  'scripts/redis-server': 'IMPERSYNC_REDIS_SERVER',
};
const chains = [
  ['scripts/control-plane-binaries', 'scripts/kwok-binary'],
  ['scripts/tool-binaries'],
  ['scripts/registry-binary'],
  ['scripts/health-scripts', 'scripts/argocd-dashboard', 'scripts/argocd-data'],
  ['scripts/argocd-binaries'],
  ['scripts/redis-server'],
];
const parallel = availableParallelism() >= 4;
const env = { ...process.env };

function prepare(script) {
  const started = Date.now();
  return new Promise((resolve) => {
    let stdout = '';
    const child = spawn('bash', [script], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.on('error', (err) => process.stderr.write(`run-tests: ${script}: ${err.message}\n`));
    child.on('close', (code) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      const folder = stdout.trim().split('\n').pop();
      if (code === 0 && folder) {
        if (exported[script]) env[exported[script]] ??= folder;
        process.stderr.write(`run-tests: ${script} ready in ${seconds} s: ${folder}\n`);
      } else {
        process.stderr.write(
          `run-tests: ${script} failed after ${seconds} s; the tests that need it will fail and say how to get it\n`,
        );
      }
      resolve();
    });
  });
}

if (parallel) {
  await Promise.all(
    chains.map(async (chain) => {
      for (const script of chain) await prepare(script);
    }),
  );
} else {
  for (const script of chains.flat()) await prepare(script);
}

// The Helm 3 folder of the tests that render under both helm majors (test/source/tools.ts
// helm3ToolsDir), made here so that its build shows its progress; only Helm 3.22 is built.
spawnSync('bash', ['scripts/tool-binaries'], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
  env: { ...process.env, IMPERSYNC_HELM_VERSION: 'v3.22.0', IMPERSYNC_TOOLS_DIR: '' },
});

// A test that hangs fails after 20 min (the longest passes in under 5) instead of holding CI to
// its deadline; a file whose tests are done but that leaves a timer or socket open (a prober not
// stopped on a failure path) exits a minute later instead of hanging the run (test-exit-guard.mjs:
// --test-force-exit did that, and lost the verdicts of a file's last tests).
const args = [
  '--disable-warning=ExperimentalWarning',
  '--import',
  './scripts/test-exit-guard.mjs',
  '--test',
  '--test-concurrency=2',
  '--test-timeout=1200000',
  '--test-reporter=spec',
  ...(process.argv.length > 2 ? process.argv.slice(2) : ['test/**/*.test.ts']),
];
const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', env });
process.exit(result.status ?? 1);
