// Argo CD's own argocd-cmp-server, as its CMP sidecar runs it, for the plugin tests: a plugin.yaml
// in its config folder, its socket in a folder of sockets the renderer is pointed at. The binary
// comes from scripts/argocd-binaries (Argo CD v3.6.1, built once); without it the test fails
// saying how to get it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const repoRoot = path.resolve(import.meta.dirname, '../..');
let cached: string | undefined;

/** The folder holding argocd-cmp-server (IMPERSYNC_ARGOCD_DIR, or what scripts/argocd-binaries prints). */
export function argocdDir(): string {
  if (cached) return cached;
  const res = spawnSync('bash', [path.join(repoRoot, 'scripts/argocd-binaries')], {
    encoding: 'utf8',
    timeout: 60 * 60_000,
  });
  const dir = res.stdout.trim().split('\n').at(-1) ?? '';
  if (res.status !== 0 || dir === '' || !existsSync(path.join(dir, 'argocd-cmp-server'))) {
    throw new Error(
      `argocd-cmp-server is needed and scripts/argocd-binaries could not provide it (exit ${res.status}):\n${res.stderr}\n` +
        'Install Go (https://go.dev/doc/install) and run scripts/argocd-binaries (it builds Argo CD v3.6.1 once), or set ' +
        'IMPERSYNC_ARGOCD_DIR to a folder holding argocd-cmp-server (Argo CD image: /usr/local/bin).',
    );
  }
  cached = dir;
  return dir;
}

export interface CmpSidecars {
  /** The folder of sockets, for the renderer's --plugin-sockets. */
  socketDir: string;
  stop(): Promise<void>;
}

/**
 * Starts one argocd-cmp-server per plugin.yaml text, each with its own config folder and work
 * folder, sharing one folder of sockets; resolves when every socket is there.
 */
export async function startCmpSidecars(plugins: Record<string, string>): Promise<CmpSidecars> {
  const binary = path.join(argocdDir(), 'argocd-cmp-server');
  // Short: a socket path is limited to about 100 bytes.
  const top = await mkdtemp(path.join(os.tmpdir(), 'cmp-'));
  const socketDir = path.join(top, 'p');
  await mkdir(socketDir);
  const children: ChildProcess[] = [];
  const logs: string[] = [];
  const stop = async () => {
    // argocd-cmp-server stops gracefully on SIGTERM, waiting for its clients; a test does not wait.
    const exits = children.map((c) =>
      c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r)) : undefined,
    );
    for (const c of children) c.kill('SIGKILL');
    await Promise.all(exits);
    await rm(top, { recursive: true, force: true });
  };
  try {
    for (const [name, yaml] of Object.entries(plugins)) {
      const config = path.join(top, `c-${name}`);
      const work = path.join(top, `w-${name}`);
      await mkdir(config);
      await mkdir(work);
      await writeFile(path.join(config, 'plugin.yaml'), yaml);
      const child = spawn(binary, ['--config-dir-path', config, '--logformat', 'text', '--loglevel', 'info'], {
        env: {
          PATH: process.env['PATH'] ?? '/usr/bin:/bin',
          HOME: work,
          ARGOCD_PLUGINSOCKFILEPATH: socketDir,
          ARGOCD_CMP_WORKDIR: work,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout?.on('data', (d: Buffer) => logs.push(String(d)));
      child.stderr?.on('data', (d: Buffer) => logs.push(String(d)));
      children.push(child);
    }
    const expected = Object.keys(plugins).length;
    const end = Date.now() + 30_000;
    for (;;) {
      if ((await readdir(socketDir)).length >= expected) break;
      const dead = children.find((c) => c.exitCode !== null);
      if (dead || Date.now() > end) {
        throw new Error(
          `argocd-cmp-server did not listen (${dead ? `exit ${dead.exitCode}` : 'timeout'}):\n${logs.join('')}`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return { socketDir, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A plugin.yaml whose generate command is `script` run by sh in the app folder. */
export function pluginYaml(name: string, script: string, extra = ''): string {
  return [
    'apiVersion: argoproj.io/v1alpha1',
    'kind: ConfigManagementPlugin',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    '  generate:',
    '    command: [sh, -c]',
    `    args: [${JSON.stringify(script)}]`,
    extra,
  ].join('\n');
}
