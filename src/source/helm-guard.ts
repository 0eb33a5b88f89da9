// The `helm` kustomize runs (kustomize-helm.ts says why): a program of its own, started by the shim
// with the policy in IMPERSYNC_KUSTOMIZE_HELM_POLICY. It reads the command line the way kustomize
// writes it (`version --short`, `pull --untar --untardir DIR [--repo URL] NAME ...`, `template
// RELEASE CHART [flags]`), refuses anything else, and runs the real helm with the same command
// rebuilt: every value as `--flag=value`, positional arguments after `--`. A refusal is a message on
// stderr, which kustomize puts in its error.
//
// A pull unpacks into a folder of its own first: helm writes a chart to `<untardir>/<the name its
// Chart.yaml gives>`, whatever name kustomize asked for, so a chart could name a folder of the
// repository and replace its files (through the hard links of a private copy, into the commit's
// checkout). The unpacked chart is moved into the chart home only where nothing is yet, and only
// once its own kustomizations (which a kustomization may list as a base, read after the pull, when
// the renderer's check of the tree has long run) pass the same check, inside the chart.
import { spawnSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readdir, realpath, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { redactURL } from './errors.ts';
import { Refused, runGuard } from './guard-main.ts';
import { isReleaseName } from './helm.ts';
import { findSchemaReference, schemaRefusal } from './helm-schema.ts';
import { HELM_GUARD_POLICY_ENV, type HelmGuardPolicy } from './kustomize-helm.ts';
import { chartRepositoryRefusal } from './kustomize-remote.ts';
import { isInside, resolvePhysical } from './paths.ts';

/** The variables the real helm gets: enough to reach a chart repository, nothing of the renderer's. */
const KEPT = [
  'PATH',
  'HOME',
  'TMPDIR',
  'LANG',
  'LC_ALL',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
];

function policyFromEnv(): HelmGuardPolicy {
  try {
    const p = JSON.parse(process.env[HELM_GUARD_POLICY_ENV] ?? '') as HelmGuardPolicy;
    if (typeof p.helm === 'string' && path.isAbsolute(p.helm) && Array.isArray(p.roots)) return p;
  } catch {
    // fall through: no policy, nothing is allowed
  }
  throw new Refused('kustomize ran helm without the renderer policy (or the real helm was not found)');
}

/** `p` (a folder or file kustomize names) must lead inside one of the roots, physically. */
async function inside(policy: HelmGuardPolicy, p: string | undefined, what: string): Promise<string> {
  if (p === undefined || p === '') throw new Refused(`helm ${what} is missing`);
  if (!path.isAbsolute(p)) throw new Refused(`helm ${what} '${p}' is not an absolute path`);
  const r = await resolvePhysical(p);
  if (r.kind === 'path' && policy.roots.some((root) => isInside(root, r.path))) return p;
  throw new Refused(`helm ${what} '${p}' is outside the repository`);
}

function chartRepository(policy: HelmGuardPolicy, url: string | undefined): string {
  if (url === undefined || url === '') throw new Refused('helm pull names no chart repository');
  const why = chartRepositoryRefusal(url, policy.sourceRepos ?? undefined);
  if (why) throw new Refused(`helm chart repository '${redactURL(url)}' is refused: ${why}`);
  return url;
}

interface Pull {
  /** The chart home kustomize named. */
  dir: string;
  /** The chart as kustomize named it. */
  chart: string;
  /** helm's command line but its --untardir. */
  args: string[];
}

/** `helm pull --untar --untardir DIR (--repo URL NAME | oci://REF) [--version V] [--devel]`. */
async function pull(policy: HelmGuardPolicy, args: string[]): Promise<Pull> {
  if (args[0] !== '--untar' || args[1] !== '--untardir') throw new Refused('unexpected helm pull');
  const dir = await inside(policy, args[2], 'chart home');
  let rest = args.slice(3);
  const out = ['pull', '--untar'];
  let chart: string;
  if (rest[0] === '--repo') {
    out.push(`--repo=${chartRepository(policy, rest[1])}`);
    chart = rest[2] ?? '';
    rest = rest.slice(3);
  } else {
    chart = chartRepository(policy, rest[0]);
    if (!/^oci:\/\//i.test(chart)) throw new Refused(`helm pull of '${chart}' names no chart repository`);
    rest = rest.slice(1);
  }
  if (chart === '' || chart.startsWith('-')) throw new Refused(`helm chart name '${chart}' is not a chart name`);
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i];
    if (flag === '--version' && rest[i + 1] !== undefined) out.push(`--version=${rest[++i]}`);
    else if (flag === '--devel') out.push(flag);
    else throw new Refused(`helm pull option '${flag}' is not one kustomize gives`);
  }
  return { dir, chart, args: [...out, '--', chart] };
}

/**
 * Runs the pull into a new folder of `p.dir`, then moves what it unpacked where nothing is yet,
 * once the kustomizations it carries pass the renderer's check with the chart as their root.
 */
async function pullApart(policy: HelmGuardPolicy, p: Pull, run: (args: string[]) => number): Promise<number> {
  await mkdir(p.dir, { recursive: true });
  const fresh = await mkdtemp(path.join(p.dir, '.impersync-pull-'));
  const chart = redactURL(p.chart);
  try {
    const code = run([...p.args.slice(0, 2), `--untardir=${fresh}`, ...p.args.slice(2)]);
    if (code !== 0) return code;
    const entries = await readdir(fresh);
    for (const entry of entries) {
      const target = path.join(p.dir, entry);
      const taken = await lstat(target).then(
        () => true,
        () => false,
      );
      if (taken) {
        throw new Refused(
          `the chart pulled for '${chart}' unpacks as ${JSON.stringify(entry)}, which is already in its chart home '${p.dir}': a pulled chart never replaces files of the repository`,
        );
      }
      await checkPulled(policy, chart, path.join(fresh, entry));
    }
    for (const entry of entries) await rename(path.join(fresh, entry), path.join(p.dir, entry));
    return 0;
  } finally {
    await rm(fresh, { recursive: true, force: true });
  }
}

/** The kustomizations of a pulled chart, held to the rules of the checkout's, inside the chart. */
async function checkPulled(policy: HelmGuardPolicy, chart: string, dir: string): Promise<void> {
  // Loaded only for a pull: template and version start faster without the YAML parser.
  const { checkAllKustomizations } = await import('./kustomize-check.ts');
  try {
    await checkAllKustomizations({
      root: await realpath(dir),
      describe: (rel) => `the chart pulled for '${chart}', ${rel}`,
      sourceRepos: policy.sourceRepos ?? undefined,
      enableHelm: true,
    });
  } catch (err) {
    throw new Refused(err instanceof Error ? err.message : String(err));
  }
}

const TEMPLATE_VALUES = new Set(['--namespace', '--name-template', '-f', '--api-versions', '--kube-version']);
const TEMPLATE_FLAGS = new Set(['--include-crds', '--skip-tests', '--no-hooks', '--debug', '--devel']);

/** `helm template (RELEASE | --generate-name) CHART [flags]`, CHART's schemas checked. */
async function template(policy: HelmGuardPolicy, args: string[]): Promise<string[]> {
  const [first, chartDir, ...rest] = args;
  const release = first === '--generate-name' ? undefined : first;
  if (release !== undefined && !isReleaseName(release)) {
    throw new Refused(
      `helm release name ${JSON.stringify(release)} is invalid: it must be a DNS-1123 subdomain of at most 53 characters (helmCharts[].releaseName)`,
    );
  }
  const chart = await inside(policy, chartDir, 'chart');
  const out = ['template'];
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i] as string;
    if (TEMPLATE_VALUES.has(flag)) {
      const value = rest[++i];
      if (value === undefined) throw new Refused(`helm template option '${flag}' has no value`);
      if (flag === '-f') out.push(`--values=${await inside(policy, value, 'values file')}`);
      else out.push(`${flag}=${value}`);
    } else if (TEMPLATE_FLAGS.has(flag)) out.push(flag);
    else throw new Refused(`helm template option '${flag}' is not one kustomize gives`);
  }
  const bad = await findSchemaReference(chart);
  if (bad) throw new Refused(`helm chart '${chart}': ${schemaRefusal(bad)}`);
  return release === undefined ? [...out, '--generate-name', '--', chart] : [...out, '--', release, chart];
}

async function guard(argv: string[]): Promise<number> {
  const policy = policyFromEnv();
  const [sub, ...rest] = argv;
  const env: NodeJS.ProcessEnv = {};
  for (const key of KEPT) if (process.env[key] !== undefined) env[key] = process.env[key];
  env.HELM_CONFIG_HOME = path.join(policy.home, 'config');
  env.HELM_CACHE_HOME = path.join(policy.home, 'cache');
  env.HELM_DATA_HOME = path.join(policy.home, 'data');
  const run = (args: string[]): number => {
    const r = spawnSync(policy.helm, args, { stdio: 'inherit', env });
    if (r.error) throw new Refused(`helm could not be started: ${r.error.message}`);
    if (r.signal) {
      process.stderr.write(`helm ${sub} was killed by ${r.signal}\n`);
      return 1;
    }
    return r.status ?? 1;
  };

  if (sub === 'version' && (rest.length === 0 || (rest.length === 1 && rest[0] === '--short'))) return run(argv);
  if (sub === 'pull') return pullApart(policy, await pull(policy, rest), run);
  if (sub === 'template') return run(await template(policy, rest));
  throw new Refused(`helm ${argv.join(' ')} is not a command kustomize runs for a chart`);
}

await runGuard(guard);
