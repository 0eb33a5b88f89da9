// Which kubectl the reference uses: $KUBECTL, else a kubectl within one minor version of the
// control plane (1.34): ~/.cache/impersync/tools/kubectl-*, the Cloud SDK's versioned kubectl.1.33,
// then whatever `kubectl` is on PATH. /usr/bin/kubectl here is the Cloud SDK dispatcher (it picks
// a version and execs it); calling the versioned binary directly skips that hop.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function findKubectl(): { path: string; version: string } {
  const candidates: string[] = [];
  if (process.env['KUBECTL']) candidates.push(process.env['KUBECTL']);
  const tools = path.join(os.homedir(), '.cache', 'impersync', 'tools');
  if (existsSync(tools))
    candidates.push(
      ...readdirSync(tools)
        .filter((f) => f.startsWith('kubectl'))
        .map((f) => path.join(tools, f)),
    );
  candidates.push('/usr/lib/google-cloud-sdk/bin/kubectl.1.33', 'kubectl');
  for (const c of candidates) {
    const r = spawnSync(c, ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
    if (r.status !== 0) continue;
    try {
      const v =
        (JSON.parse(r.stdout) as { clientVersion?: { gitVersion?: string } }).clientVersion?.gitVersion ?? 'unknown';
      return { path: c, version: v };
    } catch {
      continue;
    }
  }
  throw new Error(
    'no kubectl found: set KUBECTL=/path/to/kubectl (1.33-1.35), or build one with `go build -o ~/.cache/impersync/tools/kubectl k8s.io/kubernetes/cmd/kubectl` in ~/.cache/impersync/control-plane/build/kube',
  );
}
