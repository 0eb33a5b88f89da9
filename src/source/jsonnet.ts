// The .jsonnet files of a Directory source, evaluated as Argo CD v3.6.1's repo-server evaluates
// them (findManifests, makeJsonnetVM): one go-jsonnet VM per file, with spec.source.directory.
// jsonnet's ext vars and top-level arguments (`code: true`: Jsonnet code, else a string), the app
// folder and then each of `libs` (relative to the repository root, never outside it) as library
// paths. The evaluation runs in impersync-jsonnet (tools/jsonnet, the same go-jsonnet), a separate
// process under the tool limits, whose importer refuses any import that resolves, symlinks
// followed, outside the repository. Its result is read as Argo CD reads it: an array of objects,
// or one object; a List among them is expanded like any other (parse.ts).
//
// Argo CD substitutes the build variables ($ARGOCD_APP_NAME, ...) into the ext vars and TLAs in
// place, on the Application's own list, once for each .jsonnet file it evaluates: the n-th file of
// a directory sees the values substituted n times (`$$` is `$` for the first file, and `$` plus
// whatever follows for the second). That is reproduced, since it is what Argo CD deploys.
import { readlink } from 'node:fs/promises';
import path from 'node:path';
import type { ApplicationSource } from '../api/application.ts';
import { envsubst, type BuildEnv } from './build-env.ts';
import { SourceError, formatBytes } from './errors.ts';
import { run, tail } from './exec.ts';
import type { DocumentLimits } from './expand.ts';
import type { ToolLimits } from './limits.ts';
import { parseJSONValues, type ParsedObject } from './parse.ts';
import { isInside } from './paths.ts';
import { scrubber, type PathRename } from './scrub.ts';
import { howToGet } from './tools.ts';

export type JsonnetSpec = NonNullable<NonNullable<ApplicationSource['directory']>['jsonnet']>;
type JsonnetVar = NonNullable<JsonnetSpec['extVars']>[number];

export interface JsonnetOptions {
  binary: string;
  /** The physical repository root: no import may resolve outside it. */
  repoRoot: string;
  /** The physical app folder: the first library path. */
  appDir: string;
  jsonnet: JsonnetSpec | undefined;
  buildEnv: BuildEnv | undefined;
  renames: readonly PathRename[];
  limits: ToolLimits;
  timeoutMs: number;
  maxOutputBytes: number;
  /** What all of the directory's evaluations may print together (a render's objects' limit). */
  maxTotalOutputBytes: number;
  documents: DocumentLimits;
  env: NodeJS.ProcessEnv;
  signal?: AbortSignal | undefined;
}

/** Evaluates the .jsonnet files of one directory, in the order they are given (Argo CD's walk). */
export class JsonnetEvaluator {
  readonly #opts: JsonnetOptions;
  /** The ext vars and TLAs as Argo CD leaves them after the files evaluated so far. */
  #extVars: JsonnetVar[];
  #tlas: JsonnetVar[];
  #jpaths: Promise<string[]> | undefined;
  #printed = 0;

  constructor(opts: JsonnetOptions) {
    this.#opts = opts;
    this.#extVars = (opts.jsonnet?.extVars ?? []).map((v) => ({ ...v }));
    this.#tlas = (opts.jsonnet?.tlas ?? []).map((v) => ({ ...v }));
  }

  /** The objects of `file` (absolute, in the app folder); `shown` names it relative to the repository root. */
  async evaluate(file: string, shown: string): Promise<ParsedObject[]> {
    const name = path.basename(file);
    const jpaths = await (this.#jpaths ??= libraryPaths(this.#opts.repoRoot, this.#opts.appDir, this.#opts.jsonnet));
    const substitute = (v: JsonnetVar): JsonnetVar => ({ ...v, value: envsubst(v.value, this.#opts.buildEnv ?? {}) });
    this.#tlas = this.#tlas.map(substitute);
    this.#extVars = this.#extVars.map(substitute);
    // Substituted again for each file, a value whose build variables hold references to themselves
    // doubles each time: held to what one evaluation may print.
    const held = [...this.#tlas, ...this.#extVars].reduce((n, v) => n + v.value.length, 0);
    if (held > this.#opts.maxOutputBytes)
      throw new SourceError(
        'TooLarge',
        `spec.source.directory.jsonnet: the ext vars and top-level arguments reach ${formatBytes(held)} at '${shown}' (build variables are substituted in them again for each .jsonnet file, as Argo CD does), over the ${formatBytes(this.#opts.maxOutputBytes)} limit`,
      );
    const request = {
      file,
      root: this.#opts.repoRoot,
      jpaths,
      extVars: this.#extVars.map(plain),
      tlas: this.#tlas.map(plain),
    };
    const scrub = scrubber(this.#opts.renames);
    const r = await run(this.#opts.binary, [], {
      cwd: this.#opts.appDir,
      // go-jsonnet reads no variable (std.extVar is only what is passed): nothing of the renderer's
      // environment is handed to tenant code but the PATH prlimit is found by.
      env: { PATH: this.#opts.env.PATH },
      stdin: JSON.stringify(request),
      timeoutMs: this.#opts.timeoutMs,
      signal: this.#opts.signal,
      maxStdoutBytes: this.#opts.maxOutputBytes,
      label: `jsonnet evaluation of '${shown}'`,
      howToGet: howToGet('impersync-jsonnet'),
      limits: this.#opts.limits,
      scrub,
    });
    this.#printed += r.stdout.length;
    if (this.#printed > this.#opts.maxTotalOutputBytes)
      throw new SourceError(
        'TooLarge',
        `the jsonnet evaluations of '${path.dirname(shown)}' print more than ${formatBytes(this.#opts.maxTotalOutputBytes)} together (at '${shown}'), the limit of a render's objects`,
      );
    const out = r.stdout.toString('utf8');
    // Argo CD's words (FailedPrecondition), with the file's base name as it quotes it.
    if (r.code === EXIT_EVALUATION)
      throw new SourceError('InvalidManifest', `Failed to evaluate jsonnet ${goQuote(name)}: ${scrub(out)}`);
    if (r.code === EXIT_UNMARSHAL)
      throw new SourceError('InvalidManifest', `Failed to unmarshal generated json ${goQuote(name)}: ${scrub(out)}`);
    if (r.code !== 0)
      throw new SourceError('ToolFailed', `jsonnet evaluation of '${shown}' failed: ${crashReason(r.stderr, r.code)}`);
    const lines = out.split('\n');
    if (lines.at(-1) === '') lines.pop();
    return parseJSONValues(lines, shown, this.#opts.documents);
  }
}

/** impersync-jsonnet's exit codes (tools/jsonnet/main.go). */
const EXIT_EVALUATION = 10;
const EXIT_UNMARSHAL = 11;

/** Why the Go program stopped: the runtime's own lines (a stack overflow, a panic), not its goroutine dump. */
function crashReason(stderr: string, code: number): string {
  const lines = stderr
    .split('\n')
    .filter((l) => /^(runtime: goroutine stack exceeds|fatal error:|panic:|impersync-jsonnet:)/.test(l));
  return lines.length > 0 ? lines.slice(0, 3).join('\n') : tail(stderr) || `exit code ${code}`;
}

function plain(v: JsonnetVar): { name: string; value: string; code: boolean } {
  return { name: v.name, value: v.value, code: v.code === true };
}

/**
 * The library paths: the app folder, then each of `libs` joined to the repository root (a leading
 * `/` is the root too), its last symlinks followed; one that leaves the root is an error in Argo
 * CD's words (pathutil.ResolveFileOrDirectoryPath). A lib need not exist.
 */
async function libraryPaths(root: string, appDir: string, spec: JsonnetSpec | undefined): Promise<string[]> {
  const out = [appDir];
  for (const lib of spec?.libs ?? []) {
    let p = path.join(root, lib);
    for (let depth = 0; ; depth++) {
      const target = await readlink(p).catch(() => undefined);
      if (target === undefined) break;
      // Argo CD gives up after 10 links, with a message that names nothing.
      if (depth === 10)
        throw new SourceError('InvalidSource', 'internal error: failed to resolve path. Check logs for more details');
      p = path.resolve(path.dirname(p), target);
    }
    if (!isInside(root, p)) throw new SourceError('InvalidSource', `file '${lib}' resolved to outside repository root`);
    // A lib that is missing, or a file, is passed on as Argo CD passes it: nothing is found in it.
    out.push(p);
  }
  return out;
}

/** A string as Go's %q prints the common case (quotes and backslashes escaped). */
function goQuote(s: string): string {
  return JSON.stringify(s);
}
