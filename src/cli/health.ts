// `impersync health`: the health of every object in the files, exactly as the controller assesses
// it (built-in checks, Argo CD's bundled checks, the Lua customizations of an argocd-cm file), so
// that an admin can try a Lua check before rolling it out (Argo CD: `argocd admin settings
// resource-overrides health`).
// Exit 0 when every object was assessed, 2 when the input is unusable.
import { parseConfigMap } from '../api/index.ts';
import type { KubeObject } from '../api/index.ts';
import type { HealthLibraries, HealthStatus } from '../sync/index.ts';
import { LuaRunner, createHealthAssessor, defaultHealthScriptsDir, readHealthCustomizations } from '../sync/index.ts';
import { listFlag, startCommand } from './args.ts';
import type { RawDocument } from './documents.ts';
import { describeWhere, readDocuments } from './documents.ts';
import { processIO, type CommandIO } from './io.ts';

export const HEALTH_USAGE = `usage: impersync health -f FILE [-f FILE ...] [--argocd-cm FILE] [-o json|text]

Assesses the health of every object in the files as the controller would: Argo CD's built-in
checks, the Lua checks Argo CD bundles (the default library: IMPERSYNC_HEALTH_SCRIPTS_DIR, or
scripts/health-scripts' download; 'none' for none), and the Lua checks of resource.customizations
in the given argocd-cm (and of the folder its impersync.health.customizationsDir names), which win.
Any object with an apiVersion and a kind is assessed. What a Lua check prints goes to stderr.

  -f, --filename FILE   YAML or JSON documents, several per file; '-' reads stdin
      --argocd-cm FILE  the argocd-cm ConfigMap whose customizations apply (default: none)
  -o, --output FORMAT   text (default) or json: an array of {apiVersion, kind, namespace, name,
                        status, message} in input order; no status when the kind has no health

Exit status: 0 when every object was assessed, 2 when the input is unusable.
`;

const FLAGS = {
  filename: { type: 'string', short: 'f', multiple: true },
  'argocd-cm': { type: 'string' },
  output: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface HealthReport {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  status?: string;
  message?: string;
}

type Result<T> = { ok: true; value: T } | { ok: false; error: string };

function asObject(doc: RawDocument): Result<KubeObject> {
  const o = doc.object;
  if (typeof o.apiVersion !== 'string' || typeof o.kind !== 'string' || o.apiVersion === '' || o.kind === '')
    return {
      ok: false,
      error: `${describeWhere(doc.where)}: not a Kubernetes object: apiVersion and kind are required`,
    };
  return { ok: true, value: o as unknown as KubeObject };
}

/** The data of the first ConfigMap in an argocd-cm file, as --argocd-cm reads it. */
export async function readSettings(file: string, io: CommandIO): Promise<Result<Record<string, string>>> {
  const docs = await readDocuments([file], io);
  if (!docs.ok) return docs;
  const cm = docs.value.find((d) => d.object.kind === 'ConfigMap');
  if (!cm) return { ok: false, error: `${file}: no ConfigMap in the file` };
  try {
    return { ok: true, value: parseConfigMap(cm.object).data ?? {} };
  } catch (err) {
    return { ok: false, error: `${describeWhere(cm.where)}: ${(err as Error).message}` };
  }
}

function report(o: KubeObject, health: HealthStatus | null): HealthReport {
  const meta = (o.metadata ?? {}) as Record<string, unknown>;
  return {
    apiVersion: o.apiVersion,
    kind: o.kind,
    namespace: typeof meta['namespace'] === 'string' ? meta['namespace'] : '',
    name: typeof meta['name'] === 'string' ? meta['name'] : '',
    ...(health && health.status !== '' ? { status: health.status } : {}),
    ...(health?.message ? { message: health.message } : {}),
  };
}

export function formatHealth(reports: readonly HealthReport[]): string {
  const rows = reports.map((r) => [
    `${r.apiVersion.includes('/') ? `${r.apiVersion.slice(0, r.apiVersion.indexOf('/'))}/` : ''}${r.kind}`,
    r.namespace ? `${r.namespace}/${r.name}` : r.name,
    r.status ?? '(no health)',
    r.message ?? '',
  ]);
  const widths = [0, 1, 2].map((i) => Math.max(0, ...rows.map((row) => (row[i] as string).length)));
  return rows
    .map(
      (row) =>
        row
          .map((c, i) => (i < 3 ? c.padEnd(widths[i] as number) : c))
          .join('  ')
          .trimEnd() + '\n',
    )
    .join('');
}

export interface AssessFilesOptions {
  files: readonly string[];
  /** The argocd-cm file whose customizations apply. */
  argocdCm?: string | undefined;
  /** That file's data, when already read with readSettings (several calls with one file). */
  settings?: Record<string, string> | undefined;
  /** The default library of Argo CD's bundled checks (default: defaultHealthScriptsDir()). */
  defaultLibraryDir?: string | undefined;
  /** Runs the Lua checks; the caller closes it. */
  runner: LuaRunner;
  /** Folders of checks already read (several calls in one process); default: read them afresh. */
  libraries?: HealthLibraries | undefined;
  io: CommandIO;
}

/** The health of every object in the files, in input order, as `impersync health` reports it. */
export async function assessFiles(opts: AssessFilesOptions): Promise<Result<HealthReport[]>> {
  const { argocdCm: cmFile, io } = opts;
  const data: Result<Record<string, string>> = opts.settings
    ? { ok: true, value: opts.settings }
    : cmFile
      ? await readSettings(cmFile, io)
      : { ok: true, value: {} };
  if (!data.ok) return data;
  const customizations = readHealthCustomizations(data.value);
  if (customizations.error) return { ok: false, error: `${cmFile}: ${customizations.error}` };
  // Any object with an apiVersion and a kind is assessed, metadata or not, as Argo CD's checks do.
  const docs = await readDocuments(opts.files, io, { anyObject: true });
  if (!docs.ok) return docs;
  const objects: Array<{ obj: KubeObject; doc: RawDocument }> = [];
  for (const doc of docs.value) {
    const obj = asObject(doc);
    if (!obj.ok) return obj;
    objects.push({ obj: obj.value, doc });
  }
  const where = new Map(objects.map(({ obj, doc }) => [obj, describeWhere(doc.where)]));
  const assess = createHealthAssessor({
    customizations,
    runner: opts.runner,
    libraries: opts.libraries,
    defaultLibraryDir: 'defaultLibraryDir' in opts ? opts.defaultLibraryDir : defaultHealthScriptsDir(),
    onPrint: (obj, line) => io.stderr(`${where.get(obj) ?? ''}: ${line}\n`),
  });
  const reports: HealthReport[] = [];
  for (const { obj } of objects) reports.push(report(obj, await assess(obj)));
  return { ok: true, value: reports };
}

export async function run(argv: string[], io: CommandIO): Promise<number> {
  const flags = startCommand('health', argv, FLAGS, HEALTH_USAGE, io);
  if (flags.done) return flags.code;
  const fail = (error: string) => {
    io.stderr(`impersync health: ${error}\n`);
    return 2;
  };
  const files = listFlag(flags.values, 'filename');
  if (files.length === 0) return fail(`-f FILE is required\n${HEALTH_USAGE}`);
  const argocdCm = typeof flags.values['argocd-cm'] === 'string' ? flags.values['argocd-cm'] : undefined;
  const runner = new LuaRunner();
  try {
    const reports = await assessFiles({ files, argocdCm, runner, io });
    if (!reports.ok) return fail(reports.error);
    io.stdout(flags.format === 'json' ? JSON.stringify(reports.value, null, 2) + '\n' : formatHealth(reports.value));
    return 0;
  } finally {
    await runner.close();
  }
}

export function main(argv: string[]): Promise<number> {
  return run(argv, processIO);
}
