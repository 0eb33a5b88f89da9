// The folders of checked-out commits belong to the process that made them (trees/<pid>-<random>/):
// a renderer that died leaves its folder behind, and the next one on the same cacheDir removes it.
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';

/** Removes the tree folders left by processes that are gone (named `<pid>-<random>`). */
export async function removeDeadOwners(treesRoot: string): Promise<void> {
  const owners = await readdir(treesRoot).catch(() => [] as string[]);
  for (const owner of owners) {
    const pid = Number.parseInt(owner, 10);
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && !isAlive(pid)) {
      await rm(path.join(treesRoot, owner), { recursive: true, force: true });
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
