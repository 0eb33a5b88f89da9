// A process's memory limit, read the same way by the controller (controller/memory.ts) and the
// renderer (renderer/memory.ts): a flag, else IMPERSYNC_MEMORY_LIMIT (the chart sets it from the
// container's resources.limits.memory), else cgroup v2's memory.max, else a quarter of the machine's.
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { parseByteSize } from './sizes.ts';

export interface MemoryLimitSources {
  /** --memory-limit, as written. */
  flag?: string | undefined;
  /** IMPERSYNC_MEMORY_LIMIT. */
  env?: string | undefined;
  /** The cgroup v2 file (default /sys/fs/cgroup/memory.max). */
  cgroupFile?: string;
  /** With no limit found: a quarter of the machine's memory (the controller's default), or all of it. */
  noneFound?: 'quarter' | 'machine';
}

/** A limit, where it was read, and whether none was found (`guessed`: the machine's memory stands in). */
export type MemoryLimit = { ok: true; bytes: number; from: string; guessed?: boolean } | { ok: false; error: string };

/** The memory limit: the flag, else the variable, else cgroup v2's memory.max, else (a quarter of) the machine's memory. */
export function memoryLimit(src: MemoryLimitSources): MemoryLimit {
  for (const [raw, from] of [
    [src.flag, '--memory-limit'],
    [src.env, 'IMPERSYNC_MEMORY_LIMIT'],
  ] as const) {
    if (raw === undefined || raw === '') continue;
    const size = parseByteSize(raw);
    if (!size.ok) return { ok: false, error: `${from}: ${size.error}` };
    if (size.bytes <= 0) return { ok: false, error: `${from}: must be more than 0` };
    return { ok: true, bytes: size.bytes, from };
  }
  const file = src.cgroupFile ?? '/sys/fs/cgroup/memory.max';
  try {
    const text = readFileSync(file, 'utf8').trim();
    if (/^\d+$/.test(text) && Number(text) > 0) return { ok: true, bytes: Number(text), from: file };
  } catch {
    // No cgroup v2 limit here (not in a container, or cgroup v1).
  }
  if (src.noneFound === 'machine')
    return { ok: true, bytes: totalmem(), from: 'the machine memory (no limit found)', guessed: true };
  return {
    ok: true,
    bytes: Math.floor(totalmem() / 4),
    from: 'a quarter of the machine memory (no limit found)',
    guessed: true,
  };
}
