// The controller as a separate process (`impersync run`), so that its memory and CPU time are its
// own: read from /proc/<pid>/status (VmRSS, VmHWM) and /proc/<pid>/stat (utime, stime, and
// cutime+cstime for the git processes it waited for).
// It runs as it ships: the JavaScript `npm run build` compiles to dist/ (the image's entrypoint is
// dist/cli/main.js), built once per bench run. Run from the TypeScript sources, each process and
// each render thread would also hold Node's type stripper and the stripped sources, about 28 MiB
// more in the controller alone. IMPERSYNC_BENCH_FROM_SOURCE=1 runs src/cli/main.ts instead. Its
// container is the install's (installContainer: its memory limit and NODE_OPTIONS, the V8 heap
// settings), unless IMPERSYNC_BENCH_CONTROLLER_NODE_OPTIONS gives other options ('' for Node's
// defaults) or IMPERSYNC_MEMORY_LIMIT another limit. IMPERSYNC_BENCH_CONTROLLER_NODE_FLAGS adds
// node flags before the script (split at whitespace): V8 flags that NODE_OPTIONS may not carry,
// `--optimize-for-size` say. IMPERSYNC_BENCH_CONTROLLER_ARGS adds flags of `impersync run` (split
// at whitespace), `--workers 32` say.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { parseByteSize } from '../../src/renderer/sizes.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TICKS_PER_SECOND = 100; // getconf CLK_TCK on Linux x86-64

export type ProcSample = {
  /** Resident set size now, bytes. */
  rss: number;
  /** Peak resident set size so far (VmHWM), bytes. */
  peakRss: number;
  /** CPU seconds of the process itself (user + system). */
  cpu: number;
  /** CPU seconds of its exited, waited-for children (git). */
  childCpu: number;
};

/** A `Key:   123 kB` line of /proc/<pid>/status or smaps_rollup, in bytes (0 when absent). */
function kbField(text: string, key: string): number {
  return Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
}

export function sample(pid: number): ProcSample {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => kbField(status, key);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14 .. cstime 17.
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  const at = (field: number) => f[field - 3] ?? 0;
  return {
    rss: kb('VmRSS'),
    peakRss: kb('VmHWM'),
    cpu: (at(14) + at(15)) / TICKS_PER_SECOND,
    childCpu: (at(16) + at(17)) / TICKS_PER_SECOND,
  };
}

export type PairPeak = {
  /** The highest sum of the processes' RSS seen at one sample, bytes. */
  rss: number;
  /** The highest sum of their PSS (/proc/<pid>/smaps_rollup) seen at one sample, bytes. */
  pss: number;
};

function rollup(pid: number): { rss: number; pss: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  return { rss: kbField(text, 'Rss'), pss: kbField(text, 'Pss') };
}

/** `read` of each of `pids` still running; a process that exited since it was listed (a git) is left out. */
function eachLive<T>(pids: number[], read: (pid: number) => T): T[] {
  const out: T[] = [];
  for (const p of pids) {
    try {
      out.push(read(p));
    } catch {
      // exited since it was listed
    }
  }
  return out;
}

/** The processes whose parent is `pid` (the controller's child renderer, and the git it runs while it runs). */
export function childPids(pid: number): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

export type ControllerProcess = {
  child: ChildProcess;
  pid: number;
  sample(): ProcSample;
  /** The peak RSS (VmHWM) of its child renderer so far, bytes (0 before it started). */
  rendererPeakRss(): number;
  /**
   * CPU seconds so far of its running children (the renderer), with the git processes they waited
   * for; a renderer that exited and was waited for is in the controller's own childCpu instead.
   */
  rendererCpu(): number;
  /**
   * Samples the controller and its children together every `everyMs` until the returned function
   * is called, which gives the peaks of their sums: RSS, and PSS, which charges each shared page
   * (the node binary both processes map, say) once across them instead of once per process.
   */
  samplePair(everyMs?: number): () => PairPeak;
  /** Log lines seen so far (JSON, from stdout and stderr). */
  lines: string[];
  /** One sample of a gauge or counter from its /metrics (NaN when absent). */
  metric(name: string): Promise<number>;
  stop(): Promise<void>;
};

/**
 * The controller container of the install at `root` (deploy/install/base/deployment.yaml), as this
 * machine can stand in for it: its memory limit (IMPERSYNC_MEMORY_LIMIT, which the install sets
 * from it) and its NODE_OPTIONS, with a heap limit given as a share of the container's memory
 * (`--max-old-space-size-percentage`, which Node takes of the cgroup's limit) turned into MiB of
 * that limit, since a bench process has no cgroup limit and Node would take the share of the
 * machine's memory. V8 sizes its heap growth by that limit: 75 % of this machine's 24 GiB let the
 * controller's heap grow to 387 MiB of RSS at 500 Applications, 75 % of 1Gi to 258.
 */
export function installContainer(root: string = ROOT): { nodeOptions: string; memoryLimit: string } {
  const file = path.join(root, 'deploy', 'install', 'base', 'deployment.yaml');
  type Container = {
    name?: string;
    env?: Array<{ name?: string; value?: string }>;
    resources?: { limits?: { memory?: string } };
  };
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const obj = doc.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: Container[] } } } } | null;
    if (obj?.kind !== 'Deployment') continue;
    const ctl = obj.spec?.template?.spec?.containers?.find((c) => c.name === 'controller');
    if (!ctl) continue;
    const memoryLimit = ctl.resources?.limits?.memory;
    const limit = memoryLimit === undefined ? undefined : parseByteSize(memoryLimit);
    if (!limit?.ok) throw new Error(`${file}: the controller container has no memory limit the bench can read`);
    const options = (ctl.env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '').replace(
      /--max-old-space-size-percentage=(\d+(?:\.\d+)?)/,
      (_, pct: string) => `--max-old-space-size=${Math.floor((limit.bytes * Number(pct)) / 100 / 1024 ** 2)}`,
    );
    return { nodeOptions: options, memoryLimit: String(limit.bytes) };
  }
  throw new Error(`${file}: no Deployment with a container named controller`);
}

/** The words of an environment variable, split at whitespace (none when it is unset or blank). */
function envWords(name: string): string[] {
  return (process.env[name] ?? '').split(/\s+/).filter(Boolean);
}

const built = new Set<string>();

/** The CLI of the checkout at `root`: dist/cli/main.js, compiled first (once per root), or the source. */
function entryPoint(root: string): string {
  if (process.env['IMPERSYNC_BENCH_FROM_SOURCE'] === '1') return path.join(root, 'src', 'cli', 'main.ts');
  if (!built.has(root)) {
    const npm = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    if (npm.status !== 0)
      throw new Error(`npm run build failed in ${root} (exit ${npm.status}); IMPERSYNC_BENCH_FROM_SOURCE=1 skips it`);
    built.add(root);
  }
  return path.join(root, 'dist', 'cli', 'main.js');
}

/** Starts `impersync run` against `kubeconfig` and resolves once it logged 'controller started'. */
export async function startControllerProcess(
  kubeconfig: string,
  extraArgs: string[] = [],
  /** Another checkout to run the controller from (with its own node_modules), for a before/after run. */
  root: string = ROOT,
): Promise<ControllerProcess> {
  const cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-bench-cache-'));
  const node = path.join(root, 'node_modules', '.bin', 'node');
  const container = installContainer(root);
  const child = spawn(
    node,
    [
      '--disable-warning=ExperimentalWarning',
      ...envWords('IMPERSYNC_BENCH_CONTROLLER_NODE_FLAGS'),
      entryPoint(root),
      'run',
      '--kubeconfig',
      kubeconfig,
      '--namespace',
      'argocd',
      '--health-port',
      '0',
      '--log-level',
      'info',
      ...extraArgs,
      ...envWords('IMPERSYNC_BENCH_CONTROLLER_ARGS'),
    ],
    {
      env: {
        ...process.env,
        IMPERSYNC_CACHE_DIR: cacheDir,
        // The controller's own Node options (its V8 heap limit, say), not the bench's.
        NODE_OPTIONS: process.env['IMPERSYNC_BENCH_CONTROLLER_NODE_OPTIONS'] ?? container.nodeOptions,
        IMPERSYNC_MEMORY_LIMIT: process.env['IMPERSYNC_MEMORY_LIMIT'] ?? container.memoryLimit,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const lines: string[] = [];
  let started!: () => void;
  let failed!: (err: Error) => void;
  const ready = new Promise<void>((res, rej) => {
    started = res;
    failed = rej;
  });
  const take = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      if (lines.length < 200_000) lines.push(line);
      if (line.includes('controller started')) started();
    }
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  const exited = new Promise<void>((res) => child.once('exit', () => res()));
  child.once('exit', (code, signal) =>
    failed(new Error(`impersync run exited early (code ${code}, signal ${signal}):\n${lines.slice(-20).join('\n')}`)),
  );
  const timer = setTimeout(
    () =>
      failed(new Error(`impersync run did not log 'controller started' within 60 s:\n${lines.slice(-20).join('\n')}`)),
    60_000,
  );
  try {
    await ready;
  } finally {
    clearTimeout(timer);
  }
  const pid = child.pid as number;
  const portLine = lines.find((l) => l.includes('serving /healthz'));
  const port = portLine ? (JSON.parse(portLine) as { port?: number }).port : undefined;
  return {
    child,
    pid,
    lines,
    metric: async (name) => {
      if (port === undefined) return Number.NaN;
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      // `name`, with any labels; or a series named with its labels (`name{state="used"}`) exactly.
      const literal = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const series = name.includes('{') ? literal : `${literal}(?:\\{[^}]*\\})?`;
      const m = new RegExp(`^${series} (\\S+)$`, 'm').exec(text);
      return m ? Number(m[1]) : Number.NaN;
    },
    sample: () => sample(pid),
    rendererPeakRss: () => Math.max(0, ...eachLive(childPids(pid), (p) => sample(p).peakRss)),
    rendererCpu: () => eachLive(childPids(pid), (p) => sample(p)).reduce((sum, s) => sum + s.cpu + s.childCpu, 0),
    samplePair: (everyMs = 500) => {
      const peak: PairPeak = { rss: 0, pss: 0 };
      const once = () => {
        const now = eachLive([pid, ...childPids(pid)], rollup);
        peak.rss = Math.max(
          peak.rss,
          now.reduce((sum, r) => sum + r.rss, 0),
        );
        peak.pss = Math.max(
          peak.pss,
          now.reduce((sum, r) => sum + r.pss, 0),
        );
      };
      once();
      const timer = setInterval(once, everyMs);
      return () => {
        clearInterval(timer);
        once();
        return { ...peak };
      };
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timeout = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timeout);
      await rm(cacheDir, { recursive: true, force: true });
    },
  };
}
