// The two references impersync is compared with, on the same manifests and the same identities
// (the controller's credentials impersonating each namespace's `deployer`):
//   (a) what a user would script: `kubectl apply --server-side --as=<sa>` per Application, 8 at a time;
//   (b) the practical limit: the minimal client (bench/common/direct.ts) sending only the
//       server-side applies, as many in flight as the sweep level; the best level is the limit.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestControlPlane } from '../../test/support/index.ts';
import { applyDirect } from '../common/direct.ts';
import { mapLimit } from '../../src/sync/util.ts';
import { deployerUser, manifestObjects, writeManifests } from '../common/tenants.ts';

export type ReferenceResult = { label: string; ms: number; from: number; to: number; childCpu?: number };

/** CPU seconds of this process's exited children (kubectl), from /proc/self/stat cutime+cstime. */
function childrenCpu(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return ((f[13] ?? 0) + (f[14] ?? 0)) / 100;
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err.slice(0, 2000)}`)),
    );
  });
}

/** (a) kubectl, one process per Application, 8 at a time, discovery cache warm after the first. */
export async function kubectlReference(
  cp: TestControlPlane,
  kubectl: string,
  names: string[],
): Promise<ReferenceResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'impersync-bench-kubectl-'));
  try {
    await writeManifests(dir, names);
    const cacheDir = path.join(dir, '.kube-cache');
    const cpuBefore = childrenCpu();
    const from = Date.now();
    await mapLimit(names, 8, (ns) =>
      run(kubectl, [
        '--kubeconfig',
        cp.controllerKubeconfigPath,
        '--cache-dir',
        cacheDir,
        'apply',
        '--server-side',
        '--field-manager',
        'kubectl-bench',
        `--as=${deployerUser(ns)}`,
        '-n',
        ns,
        '-f',
        path.join(dir, ns),
      ]),
    );
    const to = Date.now();
    return {
      label: '(a) kubectl apply --server-side --as, 8 at a time',
      ms: to - from,
      from,
      to,
      childCpu: childrenCpu() - cpuBefore,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** (b) every object of every Application applied with `concurrency` requests in flight. */
export async function directReference(
  cp: TestControlPlane,
  names: string[],
  concurrency: number,
): Promise<ReferenceResult> {
  const writes = names.flatMap((ns) => manifestObjects(ns, ns).map((object) => ({ object, asUser: deployerUser(ns) })));
  return { label: `(b) minimal client, ${concurrency} in flight`, ...(await applyDirect(cp, writes, concurrency)) };
}
