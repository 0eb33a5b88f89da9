// Runs the whole test suite with Node's built-in runner: unit tests under test/ and the end-to-end
// tests under test/e2e/ (which start a real etcd + kube-apiserver + kube-controller-manager).
// Test files are TypeScript, run directly by Node 24's type stripping.
import { spawnSync } from 'node:child_process';

const args = [
  '--disable-warning=ExperimentalWarning',
  '--test',
  '--test-concurrency=2',
  '--test-reporter=spec',
  ...(process.argv.length > 2 ? process.argv.slice(2) : ['test/**/*.test.ts']),
];
const result = spawnSync(process.execPath, args, { stdio: 'inherit' });
process.exit(result.status ?? 1);
