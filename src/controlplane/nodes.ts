// Simulated nodes for the local control plane: kube-scheduler puts pods on them and kwok plays
// their kubelet (kwok-stages.ts), so Deployments roll out and become Available and Jobs complete or
// fail as their pod specs ask. scripts/kwok-binary provides both binaries (IMPERSYNC_KWOK_DIR, a
// cached build, or a build with Go), as scripts/control-plane-binaries does for the control plane.
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Endpoint } from './http.ts';
import { request, sendRequest } from './http.ts';
import type { StaticUser } from './identities.ts';
import { kwokStagesYaml } from './kwok-stages.ts';
import type { Layout } from './layout.ts';
import { freeLoopbackPorts } from './ports.ts';
import type { ManagedProcess } from './processes.ts';
import { waitFor } from './wait.ts';

export const nodesScript = fileURLToPath(new URL('../../scripts/kwok-binary', import.meta.url));

export const howToGetNodeBinaries = [
  'kwok and kube-scheduler are needed for simulated nodes (pods that run, Jobs that complete).',
  `Get them with: ${nodesScript}  (builds them with Go 1.26+ from the Go module proxy into`,
  '~/.cache/impersync/kwok/, once: about 6 minutes on 2 cores, half a minute when the control-plane',
  "build's Go caches are warm), or set IMPERSYNC_KWOK_DIR to a folder that holds both.",
].join('\n');

/** kube-scheduler's identity: the bootstrap RBAC binds system:kube-scheduler to this user name. */
export const schedulerUser: StaticUser = { name: 'system:kube-scheduler' };
/** kwok updates nodes, leases and pod status as every kubelet would: simplest as system:masters. */
export const kwokUser: StaticUser = { name: 'impersync-kwok', groups: ['system:masters'] };

export type NodeBinaries = { kwok: string; 'kube-scheduler': string };

/** Runs scripts/kwok-binary; its failure becomes an error saying how to get the binaries. */
export async function locateNodeBinaries(
  env: NodeJS.ProcessEnv = process.env,
  onProgress: (chunk: string) => void = (chunk) => process.stderr.write(chunk),
): Promise<NodeBinaries> {
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve) => {
      let out = '';
      let err = '';
      const child = spawn(nodesScript, [], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        err += d;
        onProgress(d);
      });
      child.on('error', (e) => resolve({ code: null, stdout: out, stderr: `${err}${e.message}\n` }));
      child.on('close', (c) => resolve({ code: c, stdout: out, stderr: err }));
    },
  );
  const dir = stdout.trim().split('\n').pop() ?? '';
  if (code !== 0 || dir === '') {
    const tail = stderr.trim().split('\n').slice(-10).join('\n');
    throw new Error(`${nodesScript} failed (exit ${code ?? 'error'}):\n${tail}\n\n${howToGetNodeBinaries}`);
  }
  return { kwok: join(dir, 'kwok'), 'kube-scheduler': join(dir, 'kube-scheduler') };
}

export type NodesInput = {
  l: Layout;
  admin: Endpoint;
  /** Kubeconfig text for a static user of the control plane. */
  kubeconfig: (userName: string) => string;
  start: (name: string, command: string, args: string[]) => ManagedProcess;
  binaries: NodeBinaries;
  count: number;
  timeoutMs: number;
};

export function nodeName(i: number): string {
  return `kwok-node-${i}`;
}

/** Starts the scheduler and kwok, registers `count` nodes and waits until every one is Ready. */
export async function startNodes(n: NodesInput): Promise<void> {
  const [schedulerPort] = await freeLoopbackPorts(1);
  const schedulerKubeconfig = join(n.l.state, 'kube-scheduler.kubeconfig');
  const kwokKubeconfig = join(n.l.state, 'kwok.kubeconfig');
  const stages = join(n.l.state, 'kwok-stages.yaml');
  await writeFile(schedulerKubeconfig, n.kubeconfig(schedulerUser.name), { mode: 0o600 });
  await writeFile(kwokKubeconfig, n.kubeconfig(kwokUser.name), { mode: 0o600 });
  await writeFile(stages, kwokStagesYaml);
  const scheduler = n.start('kube-scheduler', n.binaries['kube-scheduler'], [
    `--kubeconfig=${schedulerKubeconfig}`,
    `--authentication-kubeconfig=${schedulerKubeconfig}`,
    `--authorization-kubeconfig=${schedulerKubeconfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${schedulerPort}`,
    `--cert-dir=${n.l.certDir}/kube-scheduler`,
    '--leader-elect=false',
    '--profiling=false',
    '--v=1',
  ]);
  const kwok = n.start('kwok', n.binaries.kwok, [
    `--kubeconfig=${kwokKubeconfig}`,
    `--config=${stages}`,
    '--manage-all-nodes=true',
    '--cidr=10.244.0.0/16',
    '--node-ip=127.0.0.1',
    // kwok renews each node's Lease, so the node lifecycle controller never finds them gone.
    '--node-lease-duration-seconds=40',
  ]);
  for (let i = 0; i < n.count; i++) {
    const res = await request(n.admin, {
      method: 'POST',
      path: '/api/v1/nodes',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name: nodeName(i),
          labels: { 'kubernetes.io/hostname': nodeName(i), 'kubernetes.io/os': 'linux', type: 'kwok' },
          annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
        },
      }),
    });
    if (res.status !== 201 && res.status !== 409)
      throw new Error(`creating node ${nodeName(i)}: ${res.status} ${res.text}`);
  }
  await waitFor(kwok, `${n.count} kwok node(s) to become Ready`, n.timeoutMs, async () => {
    const res = await request(n.admin, { path: '/api/v1/nodes', timeoutMs: 5000 }).catch(() => undefined);
    if (res?.status !== 200) return false;
    const nodes = (
      JSON.parse(res.text) as {
        items: Array<{
          spec?: { taints?: Array<{ key: string }> };
          status?: { conditions?: Array<{ type: string; status: string }> };
        }>;
      }
    ).items;
    // Ready, and the controller manager has lifted its not-ready taint: pods can be scheduled.
    const ready = nodes.filter(
      (node) =>
        node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') &&
        !node.spec?.taints?.some((t) => t.key.startsWith('node.kubernetes.io/')),
    );
    return ready.length >= n.count;
  });
  await waitFor(scheduler, 'kube-scheduler to become healthy (/healthz)', n.timeoutMs, async () => {
    const res = await sendRequest(
      `https://127.0.0.1:${schedulerPort}`,
      { rejectUnauthorized: false, agent: false },
      { path: '/healthz', timeoutMs: 5000 },
    ).catch(() => undefined);
    return res?.status === 200;
  });
}
