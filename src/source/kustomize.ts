// The "Kustomize" source type: `kustomize build` on a folder holding a kustomization file. The
// overrides of spec.source.kustomize (namePrefix, images, commonLabels, replicas, patches, ...) are
// edits of the app's own kustomization file, as Argo CD makes them with `kustomize edit`: since the
// checked-out commit is shared with other renders and must not be edited, they are made in a private
// copy of the checkout (kustomize-edits.ts), which the build then uses.
//
// Before kustomize runs, the build options are held to an allow-list (kustomize-options.ts) and
// every kustomization the app folder reaches is checked (kustomize-check.ts); kustomize then runs
// with the load restrictor explicitly LoadRestrictionsRootOnly, the renderer's git configuration
// and a git of ours first on its PATH for remote bases (kustomize-git.ts), a helm of ours as its
// --helm-command when the operator enabled Helm charts (kustomize-helm.ts), and its temporary files
// (remote clones) in the render's own folder.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ApplicationSource } from '../api/application.ts';
import { SourceError } from './errors.ts';
import { scrubber, type PathRename } from './scrub.ts';
import { refuseUnsupported } from './spec.ts';
import { run, tail } from './exec.ts';
import type { BuildEnv } from './build-env.ts';
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
  /** A private folder for the copy of the checkout, removed by the caller. Must be on the same filesystem tree as appDir. */
  workDir: string;
  /** Folders to name differently in messages (scrub.ts): the checkout root, the work folders. */
  renames: readonly PathRename[];
  /** Memory and file-size limits of the tool's processes. */
  limits: ToolLimits;
  /** Largest kustomization file read to append spec.source.kustomize.patches (or copied to edit). */
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
  'forceCommonLabels',
  'forceCommonAnnotations',
  'labelWithoutSelector',
  'labelIncludeTemplates',
  'version',
  'kubeVersion',
  'apiVersions',
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
  const capabilities = helmCapabilities(spec, input.helmCapabilities);
  const reach = await checkKustomization(input.appDir, {
    root: input.repoRoot,
    sourceRepos: input.sourceRepos,
    enableHelm: options.enableHelm,
  });

  const binDir = path.join(input.workDir, 'bin');
  const tmpDir = path.join(input.workDir, 'tmp');
  for (const dir of [binDir, tmpDir]) await mkdir(dir, { recursive: true });
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

  // The overrides are edits of the app's own kustomization file, made in a private copy of the
  // checkout (kustomize-edits.ts); everything the edited file reaches is then checked as the
  // commit's was. A build that reaches Helm charts runs in a private copy too: kustomize pulls a
  // chart into the tree, where it would stay for every later render of the commit to use (a
  // project that may not pull it among them), and the helm guard moves a pull only into places
  // where nothing is yet, so the copy's hard links are never written through.
  let root = input.repoRoot;
  let appDir = input.appDir;
  const edits = hasKustomizationEdits(spec);
  if (edits || reach.helmCharts) {
    root = path.join(input.workDir, 'tree');
    await linkTree(input.repoRoot, root);
    appDir = path.join(root, path.relative(input.repoRoot, input.appDir));
    renames.push({ from: root, to: '' });
  }
  if (edits) {
    await editKustomization({
      binary: input.binary,
      root,
      appDir,
      shownPath: input.shownPath,
      spec,
      buildEnv: input.buildEnv,
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
    // After the operator's options, as Argo CD appends them: the Application's versions, or else
    // the destination's, win.
    if (capabilities) {
      if (capabilities.kubeVersion) buildArgs.push(`--helm-kube-version=${capabilities.kubeVersion}`);
      for (const v of capabilities.apiVersions) buildArgs.push(`--helm-api-versions=${v}`);
    }
    renames.push({ from: helmShim, to: 'helm' }, { from: home, to: '<helm home>' });
  }
  const args = ['build', ...buildArgs, '--load-restrictor=LoadRestrictionsRootOnly', '--', appDir];
  const r = await run(input.binary, args, {
    cwd: appDir,
    env,
    timeoutMs: input.timeoutMs,
    signal: input.signal,
    maxStdoutBytes: input.maxOutputBytes,
    label: `kustomize build of '${input.shownPath}'`,
    howToGet: howToGet('kustomize'),
    limits: input.limits,
    scrub: scrubbing([]),
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

/**
 * The versions helmCharts are inflated for, as Argo CD's repo-server gives them to Build:
 * spec.source.kustomize.kubeVersion (else the destination's) through parseKubeVersion, whose error
 * comes whether or not helm is enabled, and kustomize.apiVersions when not empty (else the
 * destination's). Undefined when the renderer passes none (a `kustomize.path.<version>` binary).
 */
function helmCapabilities(
  spec: KustomizeSpec,
  destination: KustomizeBuildInput['helmCapabilities'],
): { kubeVersion: string | undefined; apiVersions: readonly string[] } | undefined {
  const own = spec.kubeVersion as unknown;
  if (own !== undefined && own !== null && typeof own !== 'string')
    throw new SourceError(
      'InvalidSource',
      `spec.source.kustomize.kubeVersion: expected a string, got ${JSON.stringify(own)}`,
    );
  const list = spec.apiVersions as unknown;
  if (list !== undefined && list !== null && !(Array.isArray(list) && list.every((v) => typeof v === 'string')))
    throw new SourceError(
      'InvalidSource',
      `spec.source.kustomize.apiVersions: expected a list of strings, got ${JSON.stringify(list)}`,
    );
  const kubeVersion = genericKubeVersion(own || destination?.kubeVersion);
  if (!destination) return undefined;
  const apiVersions = Array.isArray(list) && list.length > 0 ? (list as string[]) : (destination.apiVersions ?? []);
  return { kubeVersion, apiVersions };
}
