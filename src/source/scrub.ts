// What a tool prints is shown to tenants (conditions, events, the CLI), and helm, kustomize and git
// print absolute paths: the renderer's cache, its work folders, trees/<pid>-<random> names. Every
// tool's stderr passes through one Scrubber (exec.ts run) before any message is made of it: paths
// inside the checkout become relative to the repository root, the renderer's own folders become
// placeholders, and a password in a URL is hidden. Messages made here from Node errors go through
// the same function.
import { realpathSync } from 'node:fs';
import path from 'node:path';

export interface PathRename {
  /** An absolute folder (or any literal text). */
  from: string;
  /** What to show instead: '' makes paths under `from` relative to it (the repository root). */
  to: string;
}

export type Scrub = (text: string) => string;

/**
 * A scrubber for these renames (and their physical forms, looked up when first used, since the
 * folders may not exist yet), longest first so that nested folders win over their parents.
 */
export function scrubber(renames: readonly PathRename[]): Scrub {
  let all: PathRename[] | undefined;
  const prepare = (): PathRename[] => {
    const list: PathRename[] = [];
    for (const r of renames) {
      if (r.from === '' || r.from === '/' || r.from === '.') continue;
      list.push(r);
      if (path.isAbsolute(r.from)) {
        const physical = realpathOrSelf(r.from);
        if (physical !== r.from) list.push({ from: physical, to: r.to });
      }
    }
    return list.sort((a, b) => b.from.length - a.from.length);
  };
  return (text) => {
    all ??= prepare();
    let out = text;
    for (const { from, to } of all) {
      out = out.split(`${from}/`).join(to === '' ? '' : `${to}/`);
      out = out.split(from).join(to === '' ? '.' : to);
    }
    return redactURLsIn(hideRendererNames(out));
  };
}

/** Tree folder names (trees/<pid>-<random>) and render folders left by anything not renamed. */
function hideRendererNames(text: string): string {
  return text
    .replace(/\btrees\/\d+-[0-9a-f]{8}\b/g, 'trees/<renderer>')
    .replace(/\brender-[0-9a-f]{12}\b/g, '<render>');
}

/**
 * `scheme://user:password@` anywhere in a text becomes `scheme://user:***@`, and `http(s)://token@`
 * becomes `http(s)://***@` (as redactURL).
 */
export function redactURLsIn(text: string): string {
  return text
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)([^\s/'"@:]*):([^\s/'"]*)@/gi, '$1$2:***@')
    .replace(/\b(https?:\/\/)([^\s/'"@:*][^\s/'"@:]*)@/gi, '$1***@');
}

function realpathOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}
