// argocd-cm's kustomize.buildOptions are the operator's, but some `kustomize build` flags undo the
// renderer's defences: a load restrictor other than LoadRestrictionsRootOnly lets a kustomization
// read any file of the renderer, the plugin flags run programs named by the repository, the
// function flags give those programs the network or the disk, and --output writes files. So the
// options are an allow-list: flags that only change how manifests are made are let through, and
// anything else is refused with the reason.

/** Flags that take a value (as `--flag=value` or as the next option). */
const WITH_VALUE = new Set(['--helm-command', '--helm-api-versions', '--helm-kube-version', '--reorder']);
const PLAIN = new Set(['--enable-helm', '--enable-managedby-label', '--helm-debug']);

const REFUSED: [RegExp, string][] = [
  [/^--load-restrictor\b/, 'the renderer keeps kustomize to LoadRestrictionsRootOnly'],
  [
    /^--(enable-alpha-plugins|enable-exec|enable-star)\b/,
    'exec and KRM-function plugins would run programs from the repository',
  ],
  [
    /^(--network|--network-name|--mount|--env|-e|--as-current-user)\b/,
    'these only serve KRM functions, which are refused',
  ],
  [/^(-o|--output)\b/, 'the renderer reads the output, kustomize writes no files'],
];

export interface BuildOptions {
  /** The options, each flag with its value joined by `=`. */
  args: string[];
  /** --enable-helm: kustomize may inflate helmCharts (operator's choice). */
  enableHelm: boolean;
}

/** The checked options, or the reason one is refused (a message naming it). */
export function checkBuildOptions(options: readonly string[] | undefined): BuildOptions | { refused: string } {
  const args: string[] = [];
  let enableHelm = false;
  const list = [...(options ?? [])];
  for (let i = 0; i < list.length; i++) {
    const option = list[i] as string;
    const flag = option.split('=')[0] as string;
    const refused = REFUSED.find(([re]) => re.test(flag));
    if (refused) return { refused: `kustomize build option '${option}' is refused: ${refused[1]}` };
    if (PLAIN.has(flag) && flag === option) {
      if (flag === '--enable-helm') enableHelm = true;
      args.push(option);
    } else if (WITH_VALUE.has(flag)) {
      if (flag !== option) {
        args.push(option);
      } else {
        const value = list[++i];
        if (value === undefined) return { refused: `kustomize build option '${option}' needs a value` };
        args.push(`${flag}=${value}`);
      }
    } else {
      const allowed = [...PLAIN, ...WITH_VALUE].sort().join(', ');
      return { refused: `kustomize build option '${option}' is not allowed by the renderer (allowed: ${allowed})` };
    }
  }
  return { args, enableHelm };
}
