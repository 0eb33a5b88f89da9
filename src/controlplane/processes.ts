// Child processes of the local control plane (etcd, kube-apiserver, kube-controller-manager), each
// in its own process group so that stopping a group also stops anything it forked.
//
// Nothing may outlive the Node process that started them, however it ends:
// - stop() sends SIGTERM to the group, then SIGKILL after a grace period;
// - a normal exit (or process.exit) kills every live group from an 'exit' listener;
// - SIGINT/SIGTERM/SIGHUP kill every live group that asked for it, then let the signal do what it
//   would have done (when nobody else listens to it);
// - a watchdog shell, holding a pipe from this process, kills the groups when the pipe closes,
//   which also covers SIGKILL and crashes, where no JavaScript runs.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';

export type ProcessSpec = {
  /** Short name used in messages, e.g. 'kube-apiserver'. */
  name: string;
  command: string;
  args: string[];
  /** stdout and stderr are appended to this file. */
  logPath: string;
  env?: NodeJS.ProcessEnv;
};

export type ExitInfo = { code: number | null; signal: NodeJS.Signals | null };

export type ManagedProcess = {
  name: string;
  pid: number;
  logPath: string;
  /** Resolves when the process has exited (never rejects). */
  exited: Promise<ExitInfo>;
  /** Set once the process has exited. */
  exit: ExitInfo | undefined;
  /** SIGTERM to the whole group, SIGKILL after graceMs; resolves when the leader has exited. */
  stop(graceMs?: number): Promise<ExitInfo>;
};

type Group = { pid: number; killOnSignal: boolean };

const live = new Map<number, Group>();
let exitHookInstalled = false;
let signalHooksInstalled = false;
const handledSignals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

function onExit(): void {
  for (const group of live.values()) killGroup(group.pid, 'SIGKILL');
  live.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  for (const group of [...live.values()]) {
    if (!group.killOnSignal) continue;
    killGroup(group.pid, 'SIGKILL');
    live.delete(group.pid);
  }
  // Our listener replaced the default action; restore it when nobody else handles the signal.
  if (process.listenerCount(signal) === 1) {
    for (const s of handledSignals) process.removeListener(s, onSignal);
    signalHooksInstalled = false;
    process.kill(process.pid, signal);
  }
}

/** Installs the exit and signal hooks (idempotent); exit listeners added after this run after it. */
export function installHooks(): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', onExit);
  }
  if (!signalHooksInstalled) {
    signalHooksInstalled = true;
    for (const s of handledSignals) process.on(s, onSignal);
  }
}

/** Process group ids of every process started here and not yet stopped (for tests and diagnostics). */
export function liveProcessGroups(): number[] {
  return [...live.keys()];
}

/**
 * Starts a process in a new process group. `killOnSignal: false` leaves signal handling to the
 * caller (the `cluster` command stops gracefully on SIGINT); exit and the watchdog still apply.
 */
export function startProcess(
  spec: ProcessSpec,
  opts: { killOnSignal?: boolean; watchdog?: Watchdog } = {},
): ManagedProcess {
  installHooks();
  const fd = openSync(spec.logPath, 'a');
  let child: ChildProcess;
  try {
    child = spawn(spec.command, spec.args, {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: spec.env ?? process.env,
    });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) {
    throw new Error(`could not start ${spec.name} (${spec.command}): the system refused to create the process`);
  }
  live.set(pid, { pid, killOnSignal: opts.killOnSignal ?? true });
  opts.watchdog?.watch(pid);
  // The control plane must not keep a finished test or script alive: the exit hook cleans up.
  child.unref();

  let exitInfo: ExitInfo | undefined;
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('error', () => {
      exitInfo ??= { code: null, signal: null };
      live.delete(pid);
      resolve(exitInfo);
    });
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      // The leader is gone; kill stragglers in its group before forgetting it.
      killGroup(pid, 'SIGKILL');
      live.delete(pid);
      resolve(exitInfo);
    });
  });

  const managed: ManagedProcess = {
    name: spec.name,
    pid,
    logPath: spec.logPath,
    exited,
    get exit() {
      return exitInfo;
    },
    async stop(graceMs = 10_000) {
      if (exitInfo) return exitInfo;
      killGroup(pid, 'SIGTERM');
      // A ref'd timer keeps the event loop alive while we wait (the child itself is unref'd).
      let timer: NodeJS.Timeout | undefined;
      const escalate = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          killGroup(pid, 'SIGKILL');
          resolve();
        }, graceMs);
      });
      await Promise.race([exited, escalate]);
      clearTimeout(timer);
      const keepAlive = setInterval(() => {}, 1000);
      try {
        return await exited;
      } finally {
        clearInterval(keepAlive);
      }
    },
  };
  return managed;
}

/**
 * A `sh` process in its own group that holds the read end of a pipe from this process. Each
 * watched group id is written to it; when the pipe closes without `release()`, because this
 * process ended in any way, it SIGKILLs every group it was told about.
 */
export type Watchdog = { pid: number; watch(pid: number): void; release(): void };

// `kill -KILL -<pgid>...` without `--`: dash's kill takes no `--`.
const watchdogScript =
  'groups=""; while read -r g; do groups="$groups -$g"; done; [ -n "$groups" ] && kill -KILL $groups 2>/dev/null; exit 0';

export function startWatchdog(): Watchdog {
  const child = spawn('/bin/sh', ['-c', watchdogScript], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  const pid = child.pid;
  if (pid === undefined || !child.stdin) throw new Error('could not start the control-plane watchdog (/bin/sh)');
  const stdin = child.stdin;
  stdin.on('error', () => {});
  child.on('error', () => {});
  child.unref();
  (stdin as unknown as { unref?: () => void }).unref?.();
  let released = false;
  return {
    pid,
    watch(group: number) {
      if (!released) stdin.write(`${group}\n`);
    },
    release() {
      if (released) return;
      released = true;
      // Killing the watchdog first means closing the pipe can never kill a reused group id.
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      stdin.destroy();
    },
  };
}
