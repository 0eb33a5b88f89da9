// The "Kustomize" source type: `kustomize build` on a folder holding a kustomization file. The
// overrides of spec.source.kustomize (Argo CD runs `kustomize edit` for them) are applied through a
// small overlay in a private folder that points at the app folder, because the checked-out commit is
// shared with other renders and must not be edited. replicas, patches and components, whose
// meaning depends on being in the app's own kustomization file, are edited into it in a private
// copy of the checkout instead (kustomize-edits.ts), which the overlay and the build then use.
//
// Before kustomize runs, the build options are held to an allow-list (kustomize-options.ts) and
// every kustomization the app folder reaches is checked (kustomize-check.ts); kustomize then runs
// with the load restrictor explicitly LoadRestrictionsRootOnly, the renderer's git configuration
// and a git of ours first on its PATH for remote bases (kustomize-git.ts), a helm of ours as its
// --helm-command when the operator enabled Helm charts (kustomize-helm.ts), and its temporary files
// (remote clones) in the render's own folder.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ApplicationSource } from '../api/application.ts';
import { SourceError } from './errors.ts';
import { scrubber, type PathRename } from './scrub.ts';
import { refuseUnsupported } from './spec.ts';
import { run, tail } from './exec.ts';
import { envsubst, type BuildEnv } from './build-env.ts';
import { howToGet } from './tools.ts';
import { genericKubeVersion } from './helm.ts';
import { checkBuildOptions } from './kustomize-options.ts';
import { checkKustomization } from './kustomize-check.ts';
import { kustomizeEnvironment, writeGitShim } from './kustomize-git.ts';
import { HELM_GUARD_POLICY_ENV, writeHelmShim, type HelmGuardPolicy } from './kustomize-helm.ts';
import { resolveCommand, type ToolLimits } from './limits.ts';
import { editKustomization, hasKustomizationEdits, linkTree } from './kustomize-edits.ts';
import type { DocumentLimits } from './expand.ts';
import type { CheckoutLimits } from './materialise.ts';

export { KUSTOMIZATION_FILES } from './kustomize-check.ts';

type KustomizeSpec = NonNullable<ApplicationSource['kustomize']>;

export interface KustomizeBuildInput {
  binary: string;
  /** The physical root of the checkout: no local path of a kustomization may leave it. */
  repoRoot: string;
  appDir: string;
  /** The app path as written in the Application, for messages. */
  shownPath: string;
  kustomize: KustomizeSpec | undefined;
  /** Substituted into images, commonLabels and (commonAnnotationsEnvsubst) commonAnnotations, and set in kustomize's environment (build-env.ts). */
  buildEnv?: BuildEnv | undefined;
  /** Extra `kustomize build` flags (argo-cd's kustomize.buildOptions), e.g. ['--enable-helm']. */
  buildOptions?: readonly string[] | undefined;
  /** The AppProject's sourceRepos: the only repositories remote bases and resources may come from. */
  sourceRepos: readonly string[] | undefined;
  /** The real git, for kustomize's remote bases. */
  gitBinary: string;
  /**
   * The destination's versions, passed to helmCharts when the build options enable helm (Argo CD's
   * parseKubeVersion and its --helm-kube-version/--helm-api-versions, for kustomize 5.3.0 and newer).
   */
  helmCapabilities?: { kubeVersion?: string | undefined; apiVersions?: readonly string[] | undefined } | undefined;
  /** The renderer's helm, for helmCharts when the operator's --helm-command names none. */
  helmBinary?: string | undefined;
  /** Remote bases over these are not checked out. */
  checkoutLimits: CheckoutLimits;
  /** A private folder for the overlay, removed by the caller. Must be on the same filesystem tree as appDir. */
  workDir: string;
  /** Folders to name differently in messages (scrub.ts): the checkout root, the work folders. */
  renames: readonly PathRename[];
  /** Memory and file-size limits of the tool's processes. */
  limits: ToolLimits;
  /** Largest kustomization file read to append spec.source.kustomize.patches. */
  maxFileBytes: number;
  documents: DocumentLimits;
  timeoutMs: number;
  /** Stops the tool (the render's time limit). */
  signal?: AbortSignal | undefined;
  maxOutputBytes: number;
  env: NodeJS.ProcessEnv;
}

/** Fields of spec.source.kustomize that are honoured; anything else set is an error, not a silent no-op. */
const SUPPORTED = new Set([
  'namePrefix',
  'nameSuffix',
  'images',
  'commonLabels',
  'commonAnnotations',
  'commonAnnotationsEnvsubst',
  'namespace',
  'version',
  'replicas',
  'patches',
  'components',
  'ignoreMissingComponents',
]);

/** Runs `kustomize build` and returns its output (multi-document YAML). */
export async function kustomizeBuild(input: KustomizeBuildInput): Promise<string> {
  const spec = input.kustomize ?? {};
  refuseUnsupported('kustomize', spec, SUPPORTED);
  const options = checkBuildOptions(input.buildOptions);
  if ('refused' in options) throw new SourceError('InvalidSource', options.refused);
  await checkKustomization(input.appDir, {
    root: input.repoRoot,
    sourceRepos: input.sourceRepos,
    enableHelm: options.enableHelm,
  });

  const overlayDir = path.join(input.workDir, 'overlay');
  const binDir = path.join(input.workDir, 'bin');
  const tmpDir = path.join(input.workDir, 'tmp');
  for (const dir of [overlayDir, binDir, tmpDir]) await mkdir(dir, { recursive: true });
  const shim = await writeGitShim(binDir);
  // Argo CD runs kustomize with the build variables in its environment.
  const env = kustomizeEnvironment({ ...input.env, ...input.buildEnv }, binDir, {
    git: input.gitBinary,
    sourceRepos: input.sourceRepos ?? null,
    enableHelm: options.enableHelm,
    checkout: input.checkoutLimits,
  });
  env.TMPDIR = tmpDir;
  const renames: PathRename[] = [];
  const scrubbing = (extra: readonly PathRename[]) =>
    scrubber([
      ...renames,
      { from: shim, to: 'git' },
      { from: tmpDir, to: '<kustomize tmp>' },
      ...extra,
      ...input.renames,
    ]);

  // replicas, patches and components are edits of the app's own kustomization file, made in a
  // private copy of the checkout (kustomize-edits.ts); everything the edited file reaches is then
  // checked as the commit's was.
  let root = input.repoRoot;
  let appDir = input.appDir;
  if (hasKustomizationEdits(spec)) {
    root = path.join(input.workDir, 'tree');
    await linkTree(input.repoRoot, root);
    appDir = path.join(root, path.relative(input.repoRoot, input.appDir));
    renames.push({ from: root, to: '' });
    await editKustomization({
      binary: input.binary,
      root,
      appDir,
      shownPath: input.shownPath,
      spec,
      maxFileBytes: input.maxFileBytes,
      documents: input.documents,
      run: {
        env,
        timeoutMs: input.timeoutMs,
        signal: input.signal,
        maxStdoutBytes: input.maxOutputBytes,
        howToGet: howToGet('kustomize'),
        limits: input.limits,
        scrub: scrubbing([]),
      },
    });
    await checkKustomization(appDir, { root, sourceRepos: input.sourceRepos, enableHelm: options.enableHelm });
  }

  const fromOverlay = path.relative(overlayDir, appDir).split(path.sep).join('/');
  const overlay = overlayFor(spec, fromOverlay, input.buildEnv);
  let target = appDir;
  if (overlay) {
    await writeFile(path.join(overlayDir, 'kustomization.yaml'), JSON.stringify(overlay, null, 2));
    target = overlayDir;
  }
  let buildArgs = options.args;
  if (options.enableHelm) {
    // kustomize runs our helm (kustomize-helm.ts); the operator's --helm-command is the real one.
    const configured = buildArgs.find((a) => a.startsWith('--helm-command='))?.slice('--helm-command='.length);
    const real = resolveCommand(configured ?? input.helmBinary ?? 'helm', input.env.PATH);
    const helmShim = await writeHelmShim(path.join(input.workDir, 'helm-bin'));
    const home = path.join(input.workDir, 'helm-home');
    await mkdir(home, { recursive: true });
    const policy: HelmGuardPolicy = {
      helm: real ? path.resolve(real) : '',
      roots: [root, tmpDir],
      sourceRepos: input.sourceRepos ?? null,
      home,
    };
    env[HELM_GUARD_POLICY_ENV] = JSON.stringify(policy);
    buildArgs = [...buildArgs.filter((a) => !a.startsWith('--helm-command=')), `--helm-command=${helmShim}`];
    // After the operator's options, as Argo CD appends them: the destination's versions win.
    const kubeVersion = genericKubeVersion(input.helmCapabilities?.kubeVersion);
    if (kubeVersion) buildArgs.push(`--helm-kube-version=${kubeVersion}`);
    for (const v of input.helmCapabilities?.apiVersions ?? []) buildArgs.push(`--helm-api-versions=${v}`);
    renames.push({ from: helmShim, to: 'helm' }, { from: home, to: '<helm home>' });
  }
  const args = ['build', ...buildArgs, '--load-restrictor=LoadRestrictionsRootOnly', '--', target];
  const r = await run(input.binary, args, {
    cwd: appDir,
    env,
    timeoutMs: input.timeoutMs,
    signal: input.signal,
    maxStdoutBytes: input.maxOutputBytes,
    label: `kustomize build of '${input.shownPath}'`,
    howToGet: howToGet('kustomize'),
    limits: input.limits,
    // The overlay's folder, and the relative path it reaches the app folder by (which runs through
    // the renderer's trees/<pid>-<random> folder), are named as the tenant knows them.
    scrub: scrubbing([
      { from: overlayDir, to: '<overlay>' },
      { from: fromOverlay, to: input.shownPath },
    ]),
  });
  if (r.code !== 0) {
    const stderr = tail(r.stderr);
    throw new SourceError(
      'ToolFailed',
      `kustomize build of '${input.shownPath}' failed: ${stderr || `exit code ${r.code}`}`,
    );
  }
  return r.stdout.toString('utf8');
}

/** The overlay kustomization for the overrides, or undefined when there are none. */
function overlayFor(
  spec: KustomizeSpec,
  base: string,
  vars: BuildEnv | undefined,
): Record<string, unknown> | undefined {
  const k: Record<string, unknown> = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: [base],
  };
  let any = false;
  const set = (key: string, value: unknown): void => {
    k[key] = value;
    any = true;
  };
  if (spec.namePrefix) set('namePrefix', spec.namePrefix);
  if (spec.nameSuffix) set('nameSuffix', spec.nameSuffix);
  if (typeof spec.namespace === 'string' && spec.namespace !== '') set('namespace', spec.namespace);
  // Build variables go into images and label values always, into annotation values when asked (Argo CD).
  if (spec.images && spec.images.length > 0)
    set(
      'images',
      spec.images.map((image) => parseImageOverride(envsubst(image, vars))),
    );
  // `kustomize edit add label` adds to selectors as well, like the old commonLabels.
  if (spec.commonLabels && Object.keys(spec.commonLabels).length > 0)
    set('labels', [{ pairs: substituted(spec.commonLabels, vars), includeSelectors: true }]);
  const annotations = spec.commonAnnotations;
  if (annotations && typeof annotations === 'object' && Object.keys(annotations).length > 0)
    set(
      'commonAnnotations',
      spec.commonAnnotationsEnvsubst === true ? substituted(annotations as Record<string, string>, vars) : annotations,
    );
  return any ? k : undefined;
}

/** The values of a string map with the build variables substituted. */
function substituted(map: Record<string, string>, vars: BuildEnv | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, envsubst(String(v), vars)]));
}

/**
 * An Argo CD image override, as `kustomize edit set image` takes it: `[old=]new[:tag][@digest]`,
 * e.g. `nginx:1.25`, `nginx=registry.local/nginx:1.25`, `nginx@sha256:...`.
 */
export function parseImageOverride(spec: string): Record<string, string> {
  const eq = spec.indexOf('=');
  const name = eq >= 0 ? spec.slice(0, eq) : undefined;
  let rest = eq >= 0 ? spec.slice(eq + 1) : spec;
  const entry: Record<string, string> = {};
  const at = rest.indexOf('@');
  if (at >= 0) {
    entry.digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    entry.newTag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  if (name !== undefined && name !== rest) entry.newName = rest;
  return { name: name ?? rest, ...entry };
}
