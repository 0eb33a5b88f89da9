// Argo CD's build environment: the ARGOCD_APP_* variables a render may refer to, and the one way
// they are substituted into an Application's helm, kustomize and jsonnet fields (`$VAR`, `${VAR}`,
// `$$`).
//
// Argo CD substitutes them (repo-server's newEnv and Env.Envsubst) into helm parameter values, helm
// value file paths, kustomize images, commonLabels and, with commonAnnotationsEnvsubst,
// commonAnnotations, and directory.jsonnet's ext var and TLA values (source/jsonnet.ts); kustomize
// also runs with them in its environment. Substitution follows Go's
// os.Expand to the letter, so the same text means the same thing here: a name that is not one of
// these variables becomes "", `$$` is one `$`, `${}` and a `${` without its `}` are dropped.

export interface BuildEnvInput {
  appName: string;
  /** spec.destination.namespace ("" when none). */
  destinationNamespace?: string | undefined;
  /** The AppProject's name. */
  project?: string | undefined;
  /** The revision rendered: a commit SHA, or a chart version. */
  revision: string;
  repoURL: string;
  /** spec.source.path as written (not the folder of an unpacked chart). */
  path?: string | undefined;
  /** spec.source.targetRevision as written. */
  targetRevision?: string | undefined;
}

/**
 * The variables by name, in Argo CD's order. A plain record, so that it crosses to a render's
 * worker thread as it is; read only through own properties (a name like `constructor` is none).
 */
export type BuildEnv = Readonly<Record<string, string>>;

export function buildEnv(input: BuildEnvInput): BuildEnv {
  return {
    ARGOCD_APP_NAME: input.appName,
    ARGOCD_APP_NAMESPACE: input.destinationNamespace ?? '',
    ARGOCD_APP_PROJECT_NAME: input.project ?? '',
    ARGOCD_APP_REVISION: input.revision,
    ARGOCD_APP_REVISION_SHORT: input.revision.slice(0, 7),
    ARGOCD_APP_REVISION_SHORT_8: input.revision.slice(0, 8),
    ARGOCD_APP_SOURCE_REPO_URL: input.repoURL,
    ARGOCD_APP_SOURCE_PATH: input.path ?? '',
    ARGOCD_APP_SOURCE_TARGET_REVISION: input.targetRevision ?? '',
  };
}

const SPECIAL = new Set('*#$@!?-0123456789');
const isNameChar = (c: string) => /^[A-Za-z0-9_]$/.test(c);

/**
 * The name after the `$` before `s[at]`, and how many characters it takes (Go's getShellName):
 * `{name}`, one special character, or a run of letters, digits and `_`. An empty name with a width
 * is bad syntax to drop; an empty name of width 0 leaves the `$` as it is. Indexes, not slices, so
 * that a long run of `$` stays linear.
 */
function shellName(s: string, at: number, noCloseAfter: boolean): [string, number] {
  if (s[at] === '{') {
    if (at + 2 < s.length && SPECIAL.has(s[at + 1] ?? '') && s[at + 2] === '}') return [s.slice(at + 1, at + 2), 3];
    // Go scans to the end for a `}` every time; knowing there is none left keeps `${${${…` linear.
    const close = noCloseAfter ? -1 : s.indexOf('}', at + 1);
    if (close === at + 1) return ['', 2];
    if (close > at + 1) return [s.slice(at + 1, close), close - at + 1];
    return ['', 1];
  }
  if (SPECIAL.has(s[at] ?? '')) return [s.slice(at, at + 1), 1];
  let i = at;
  while (i < s.length && isNameChar(s[i] ?? '')) i++;
  return [s.slice(at, i), i - at];
}

/** `s` with the build variables substituted, as Argo CD's Env.Envsubst (os.Expand) does. */
export function envsubst(s: string, env: BuildEnv | undefined): string {
  if (env === undefined || !s.includes('$')) return s;
  let out = '';
  let from = 0;
  const lastClose = s.lastIndexOf('}');
  for (let j = 0; j < s.length; j++) {
    if (s[j] !== '$' || j + 1 >= s.length) continue;
    out += s.slice(from, j);
    const [name, width] = shellName(s, j + 1, j + 1 >= lastClose);
    if (name === '' && width === 0) out += '$';
    else if (name !== '') out += name === '$' ? '$' : Object.hasOwn(env, name) ? (env[name] ?? '') : '';
    j += width;
    from = j + 1;
  }
  return out + s.slice(from);
}
