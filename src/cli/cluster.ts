// `impersync cluster`: a local control plane (etcd, kube-apiserver, kube-controller-manager) for a
// person or a script, up until SIGINT or SIGTERM. Files in --state-dir (see src/controlplane/layout.ts);
// `ready` is written last, so a script can wait for it.
import { writeFile, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { ControlPlane } from '../controlplane/controlplane.ts';
import { startControlPlane } from '../controlplane/controlplane.ts';

const help = `usage: impersync cluster [--state-dir DIR] [--remote] [--nodes N]

Starts etcd, kube-apiserver and kube-controller-manager on free 127.0.0.1 ports and keeps them up
until SIGINT (Ctrl-C) or SIGTERM, then stops them all.

  --state-dir DIR  where to write admin.kubeconfig, controller.kubeconfig, audit.log, logs/ and,
                   last, ready (default: .state/cluster); any earlier state there is replaced
  --remote         also start a second, independent instance under DIR/remote/ (a stand-in for a
                   remote cluster)
  --nodes N        N simulated nodes (kube-scheduler + kwok), so that pods run: Deployments become
                   Available, Jobs complete, or fail when their container command says \`exit N\`
                   (default 0: no nodes, pods stay Pending)

Binaries come from scripts/control-plane-binaries (KUBEBUILDER_ASSETS, or a Go build cached in
~/.cache/impersync/control-plane/; the first build takes several minutes), and for --nodes from
scripts/kwok-binary (IMPERSYNC_KWOK_DIR, or a Go build cached in ~/.cache/impersync/kwok/).
`;

function describe(label: string, cp: ControlPlane): string {
  return [
    `${label}: ${cp.server}  (up in ${(cp.startupMs / 1000).toFixed(1)} s)`,
    `  export KUBECONFIG=${cp.adminKubeconfigPath}    # admin: impersync-admin, group system:masters`,
    `  kubectl --kubeconfig ${cp.controllerKubeconfigPath} auth can-i --list    # impersync-controller: no rights until granted`,
    `  audit log: ${cp.auditLogPath}    logs: ${cp.files.logs}`,
  ].join('\n');
}

function readyFile(cp: ControlPlane): string {
  return (
    JSON.stringify(
      {
        server: cp.server,
        adminKubeconfig: cp.adminKubeconfigPath,
        controllerKubeconfig: cp.controllerKubeconfigPath,
        auditLog: cp.auditLogPath,
        pid: process.pid,
        startupMs: cp.startupMs,
      },
      null,
      2,
    ) + '\n'
  );
}

export async function main(argv: string[]): Promise<number> {
  let values: { 'state-dir'?: string; remote?: boolean; nodes?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        'state-dir': { type: 'string' },
        remote: { type: 'boolean' },
        nodes: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    process.stderr.write(`impersync cluster: ${(err as Error).message}\n\n${help}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(help);
    return 0;
  }
  const nodes = values.nodes === undefined ? 0 : Number(values.nodes);
  if (!Number.isInteger(nodes) || nodes < 0 || nodes > 100) {
    process.stderr.write(`impersync cluster: --nodes must be a whole number from 0 to 100, not '${values.nodes}'\n`);
    return 2;
  }
  const dir = resolve(values['state-dir'] ?? '.state/cluster');
  const remoteDir = join(dir, 'remote');

  // Until everything is up, a signal just ends the process: the exit hook kills what was started.
  let stopRequested: (signal: NodeJS.Signals) => void = (signal) => process.exit(signal === 'SIGINT' ? 130 : 143);
  const onSignal = (signal: NodeJS.Signals) => stopRequested(signal);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const started: ControlPlane[] = [];
  try {
    await rm(join(dir, 'ready'), { force: true });
    const starts = [startControlPlane({ dir, keepDir: true, killOnSignal: false, nodes })];
    if (values.remote) starts.push(startControlPlane({ dir: remoteDir, keepDir: true, killOnSignal: false }));
    const results = await Promise.allSettled(starts);
    for (const r of results) if (r.status === 'fulfilled') started.push(r.value);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;

    const [local, remote] = started as [ControlPlane, ControlPlane | undefined];
    const lines = [describe('control plane', local)];
    if (remote) {
      lines.push(describe('remote control plane', remote));
      await writeFile(remote.files.ready, readyFile(remote));
    }
    await writeFile(local.files.ready, readyFile(local));
    process.stdout.write(`${lines.join('\n\n')}\n\nReady (${local.files.ready}). Press Ctrl-C to stop.\n`);

    // The child processes are unref'd (they must not keep tests alive); this timer keeps us up.
    const keepAlive = setInterval(() => {}, 1 << 30);
    const signal = await new Promise<NodeJS.Signals>((resolveSignal) => {
      stopRequested = resolveSignal;
    });
    clearInterval(keepAlive);
    process.stdout.write(`\n${signal}: stopping\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`impersync cluster: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  } finally {
    for (const cp of started) await rm(cp.files.ready, { force: true });
    await Promise.all(started.map((cp) => cp.stop()));
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}
