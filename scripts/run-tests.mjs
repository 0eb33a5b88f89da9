// Runs the whole test suite with Node's built-in runner: unit tests under test/ and the end-to-end
// tests under test/e2e/ (which start a real etcd + kube-apiserver + kube-controller-manager).
// Test files are TypeScript, run directly by Node 24's type stripping.
//
// The binaries the tests need (control plane; helm and kustomize for rendering; kwok and
// kube-scheduler for simulated nodes; the distribution registry for the OCI tests; Argo CD's
// argocd-cmp-server for the plugin tests) are obtained first,
// one build at a time, so that a fresh machine builds them once with its progress visible instead of
// inside a test. A failure here does not stop the run: the tests that need a binary then fail with a
// message saying how to get it.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

// The tools' folder is handed to the tests, so that an `impersync run` a test starts finds helm and
// kustomize as the test itself does.
const exported = {
  'scripts/tool-binaries': 'IMPERSYNC_TOOLS_DIR',
  'scripts/registry-binary': 'IMPERSYNC_REGISTRY_DIR',
  'scripts/argocd-binaries': 'IMPERSYNC_ARGOCD_DIR',
};
const env = { ...process.env };
for (const script of [
  'scripts/control-plane-binaries',
  'scripts/tool-binaries',
  'scripts/kwok-binary',
  'scripts/registry-binary',
  'scripts/argocd-binaries',
]) {
  const started = Date.now();
  const built = spawnSync('bash', [script], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (built.status === 0) {
    const folder = built.stdout.trim().split('\n').pop();
    if (exported[script]) env[exported[script]] ??= folder;
    process.stderr.write(`run-tests: ${script} ready in ${seconds} s: ${folder}\n`);
  } else {
    process.stderr.write(
      `run-tests: ${script} failed after ${seconds} s; the tests that need it will fail and say how to get it\n`,
    );
  }
}

const args = [
  '--disable-warning=ExperimentalWarning',
  '--test',
  '--test-concurrency=2',
  '--test-reporter=spec',
  ...(process.argv.length > 2 ? process.argv.slice(2) : ['test/**/*.test.ts']),
];
const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', env });
process.exit(result.status ?? 1);
