// The CPUs a process may use, for the renderer's default of renders at once: cgroup v2's cpu.max
// (its quota over its period, rounded up; the container's CPU limit), else the CPUs Node sees
// (os.availableParallelism(), which a container without a limit shares with its node).
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

export interface CpuLimitSources {
  /** The cgroup v2 file (default /sys/fs/cgroup/cpu.max). */
  cgroupFile?: string;
  /** The CPUs Node sees (default os.availableParallelism()). */
  available?: number;
}

/** Whole CPUs this process may use, and where that was read. */
export function cpuLimit(src: CpuLimitSources = {}): { cpus: number; from: string } {
  const file = src.cgroupFile ?? '/sys/fs/cgroup/cpu.max';
  const available = src.available ?? availableParallelism();
  try {
    // "<quota> <period>" in microseconds, or "max <period>" for none.
    const m = /^(\d+)\s+(\d+)$/.exec(readFileSync(file, 'utf8').trim());
    if (m && Number(m[1]) > 0 && Number(m[2]) > 0) {
      const cpus = Math.min(available, Math.ceil(Number(m[1]) / Number(m[2])));
      return { cpus: Math.max(1, cpus), from: file };
    }
  } catch {
    // No cgroup v2 CPU limit here (not in a container, or cgroup v1).
  }
  return { cpus: Math.max(1, available), from: 'the CPUs this machine has (no limit found)' };
}

/** The fewest and most renders at once the default gives (--max-renders sets any number). */
export const DEFAULT_RENDERS_MIN = 2;
export const DEFAULT_RENDERS_MAX = 4;

/**
 * Renders at once when --max-renders is not given: one per CPU, at least two (so that one slow
 * render never holds every slot, and the tenants' share has two to share), at most four. Each
 * render holds a thread with its own heap, so threads beyond the CPUs cost memory and give no
 * speed: a render's work (parsing, helm, kustomize) is CPU work.
 */
export function defaultMaxRenders(cpus: number): number {
  return Math.min(DEFAULT_RENDERS_MAX, Math.max(DEFAULT_RENDERS_MIN, Math.floor(cpus)));
}
