// Finding etcd, kube-apiserver and kube-controller-manager. The script scripts/control-plane-binaries
// owns the rules (KUBEBUILDER_ASSETS first, then a cached build, then a build with Go) and the
// pinned versions; this module runs it for the binaries a caller needs (the demo of `npm start`
// needs no controller manager, so a first run builds none) and turns its failure into an
// actionable error.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const binaryNames = ['etcd', 'kube-apiserver', 'kube-controller-manager'] as const;
export type BinaryName = (typeof binaryNames)[number];
/** Paths of the binaries asked for; kube-controller-manager only when it was. */
export type Binaries = { dir: string; etcd: string; 'kube-apiserver': string; 'kube-controller-manager'?: string };

/** What a control plane without kube-controller-manager (`npm start`'s demo) runs. */
export const withoutControllerManager = ['etcd', 'kube-apiserver'] as const satisfies readonly BinaryName[];

/** The script's path, the same from src/controlplane/ and from dist/controlplane/. */
export const binariesScript = fileURLToPath(new URL('../../scripts/control-plane-binaries', import.meta.url));

export const howToGetBinaries = [
  'etcd, kube-apiserver and kube-controller-manager are needed to run the local control plane.',
  `Get them with: ${binariesScript}  (builds them with Go 1.24+ from the Go module proxy into`,
  '~/.cache/impersync/control-plane/, once: 4-15 minutes on 2 cores, seconds to check afterwards;',
  'name the ones you need, e.g. etcd kube-apiserver), or set KUBEBUILDER_ASSETS to a folder that holds',
  'them (the envtest convention).',
].join('\n');

function missingIn(dir: string, names: readonly BinaryName[]): BinaryName[] {
  return names.filter((name) => {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return false;
    } catch {
      return true;
    }
  });
}

export function binariesIn(dir: string, names: readonly BinaryName[] = binaryNames): Binaries {
  const missing = missingIn(dir, [...new Set([...withoutControllerManager, ...names])]);
  if (missing.length > 0) {
    throw new Error(`${dir} lacks ${missing.join(', ')}.\n${howToGetBinaries}`);
  }
  return {
    dir,
    etcd: join(dir, 'etcd'),
    'kube-apiserver': join(dir, 'kube-apiserver'),
    ...(names.includes('kube-controller-manager')
      ? { 'kube-controller-manager': join(dir, 'kube-controller-manager') }
      : {}),
  };
}

export type LocateOptions = {
  /** The binaries needed (default: all three); only these are built when missing. */
  names?: readonly BinaryName[];
  /** Where the script's progress goes while it builds; by default this process's stderr. */
  onProgress?: (chunk: string) => void;
  env?: NodeJS.ProcessEnv;
  script?: string;
};

/**
 * Returns the folder with the binaries asked for, building them if needed (the script serialises
 * concurrent builds with a lock, so parallel test files wait for one build). The script's progress
 * (a line at least every 30 s during a build) goes to `onProgress`.
 */
export async function locateBinaries(opts: LocateOptions = {}): Promise<Binaries> {
  const names = opts.names ?? binaryNames;
  const env = opts.env ?? process.env;
  const assets = env['KUBEBUILDER_ASSETS'];
  if (assets && missingIn(assets, names).length === 0) return binariesIn(assets, names);

  const script = opts.script ?? binariesScript;
  const onProgress = opts.onProgress ?? ((chunk: string) => process.stderr.write(chunk));
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve) => {
      let out = '';
      let err = '';
      const child = spawn(script, [...names], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
      });
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
    const tail = stderr.trim().split('\n').slice(-15).join('\n');
    throw new Error(`${script} failed (exit ${code ?? 'error'}):\n${tail}\n\n${howToGetBinaries}`);
  }
  return binariesIn(dir, names);
}
