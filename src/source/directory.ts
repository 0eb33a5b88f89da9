// The "Directory" source type: the YAML and JSON files of a folder, read as Argo CD reads them
// (reposerver's findManifests): sub-folders only with directory.recurse, include/exclude as globs on
// the path relative to the app folder, files carrying `+argocd:skip-file-rendering` left out, and a
// YAML file that does not parse but does not look like a manifest either (no `apiVersion:`, `kind:`
// and `metadata:`) ignored as unrelated, and each `.jsonnet` file evaluated (source/jsonnet.ts),
// unless argocd-cm's jsonnet.enable is off. Anything else that fails is an error: never a partial
// render.
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { globMatch } from '../impersonation/glob.ts';
import { SourceError } from './errors.ts';
import { formatBytes } from './exec.ts';
import { physicalRelative } from './paths.ts';
import type { DocumentLimits } from './expand.ts';
import { parseManifests, type ParsedObject } from './parse.ts';

export interface DirectoryOptions {
  recurse: boolean;
  include?: string | undefined;
  exclude?: string | undefined;
  /** Largest single file read. */
  maxFileBytes: number;
  /** Largest sum of the files read. */
  maxTotalBytes: number;
  /** What one document may hold, or expand to. */
  documents?: DocumentLimits | undefined;
  /** argocd-cm jsonnet.enable is off: .jsonnet files are left out, as Argo CD leaves them. */
  skipJsonnet?: boolean | undefined;
  /** Evaluates one .jsonnet file (absolute; `shown` relative to the repository root), in walk order. */
  jsonnet?: ((file: string, shown: string) => Promise<ParsedObject[]>) | undefined;
}

const MANIFEST = /\.(ya?ml|json)$/i;
const SKIP_MARKER = '+argocd:skip-file-rendering';

/**
 * Objects from the manifest files under `appDir` (inside `repoRoot`, a physical path), in path order. Locations are
 * relative to the repository root (`guestbook/deploy.yaml`), as users know them.
 */
export async function readDirectory(repoRoot: string, appDir: string, opts: DirectoryOptions): Promise<ParsedObject[]> {
  const files = await listFiles(appDir, opts.recurse);
  const out: ParsedObject[] = [];
  let total = 0;
  for (const abs of files) {
    const rel = path.relative(appDir, abs).split(path.sep).join('/');
    const shown = path.relative(repoRoot, abs).split(path.sep).join('/');
    // Argo CD's test is case-sensitive: `x.JSONNET` is no manifest at all.
    const jsonnet = rel.endsWith('.jsonnet');
    if (!MANIFEST.test(rel) && !jsonnet) continue;
    if (opts.exclude && globMatch(opts.exclude, rel)) continue;
    if (opts.include && !globMatch(opts.include, rel)) continue;
    if (jsonnet && opts.skipJsonnet) continue;
    // A symlinked file is read only when it really leads to a file of the repository.
    if ((await physicalRelative(repoRoot, abs)) === undefined) {
      throw new SourceError('InvalidSource', `${shown} is a symlink that leads outside the repository`);
    }
    const info = await stat(abs);
    if (!info.isFile()) continue;
    if (info.size > opts.maxFileBytes) {
      throw new SourceError(
        'TooLarge',
        `${shown} is ${formatBytes(info.size)}, over the ${formatBytes(opts.maxFileBytes)} limit for one manifest file`,
      );
    }
    // Argo CD counts no .jsonnet file in the total: its evaluation is held to the tool limits.
    if (!jsonnet) total += info.size;
    if (total > opts.maxTotalBytes) {
      throw new SourceError(
        'TooLarge',
        `the manifests under '${path.relative(repoRoot, appDir) || '.'}' add up to more than ${formatBytes(opts.maxTotalBytes)}`,
      );
    }
    const text = await readFile(abs, 'utf8');
    if (text.includes(SKIP_MARKER)) continue;
    if (jsonnet) {
      if (!opts.jsonnet) throw new Error(`${shown}: no jsonnet evaluator was given`);
      for (const p of await opts.jsonnet(abs, shown)) out.push(p);
      continue;
    }
    try {
      for (const p of parseManifests(text, shown, { limits: opts.documents })) out.push(p);
    } catch (err) {
      // A file over a limit is never "unrelated": skipping it would hide the attack.
      if (err instanceof SourceError && err.reason !== 'TooLarge' && !/\.json$/i.test(rel) && !looksLikeManifest(text))
        continue;
      throw err;
    }
  }
  return out;
}

function looksLikeManifest(text: string): boolean {
  return text.includes('apiVersion:') && text.includes('kind:') && text.includes('metadata:');
}

/** Files under `dir` in lexical path order (as filepath.Walk); symlinked folders are not entered. */
async function listFiles(dir: string, recurse: boolean): Promise<string[]> {
  const out: string[] = [];
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  for (const e of entries) {
    const abs = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (recurse) out.push(...(await listFiles(abs, true)));
    } else if (e.isFile() || e.isSymbolicLink()) {
      out.push(abs);
    }
  }
  return out;
}
